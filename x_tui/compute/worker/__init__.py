"""The worker and every module it ships with: standard library only, Python 3.10 and later.

The worker (:mod:`x_tui.compute.worker.main`) runs each job's tasks on the machine a backend
provisioned, inside the user's project environment, where x-tui is not installed.
:mod:`x_tui.compute.worker_bundle` ships this whole subpackage, and nothing else of x-tui, as one
zipapp, so every module here imports only the standard library and its siblings (an import-linter
contract in ``pyproject.toml`` keeps it so). The records these modules define (the spec, the
manifest, the run handle's record helpers, the errors) are substrax's on-disk formats; the rest of
x-tui imports them from here.
"""
