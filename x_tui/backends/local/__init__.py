"""The ``local`` backend: runs a job on this machine (registered as ``local``).

Modules: :mod:`.backend` (``LocalBackend``), :mod:`.process` (finding, proving and stopping a
run's processes), :mod:`.machine` (what this machine offers: its GPUs) and :mod:`.plan` (what a
plan on this machine says).
"""
