"""The compute domain: specs, records, manifests, the run store, config and the worker.

Nothing in this package imports Textual, Rich or a provider SDK. The worker and the record code it
needs live in the :mod:`x_tui.compute.worker` subpackage, standard library only, because the worker
runs inside the user's project environment, where x-tui is not installed.
"""
