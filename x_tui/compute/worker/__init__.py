"""The worker and every module it ships with: standard library only, Python 3.10 and later.

The worker (:mod:`x_tui.compute.worker.main`) runs each job's tasks on the machine a backend
provisioned, inside the user's project environment, where x-tui is not installed.
:mod:`x_tui.compute.worker_bundle` ships this whole subpackage, and nothing else of x-tui, as one
zipapp, so every module here imports only the standard library and its siblings (an import-linter
contract in ``pyproject.toml`` keeps it so). What the worker reads and writes is defined here too,
and the rest of x-tui imports it from here: the record codec (``records``), the bounded record
reader (``record_files``), substrax's spec and manifest (``spec``, ``manifest``) and the errors a
user can fix (``errors``).
"""
