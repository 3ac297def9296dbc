"""The modal backend: runs a job on Modal (https://modal.com); needs ``x-tui[modal]``.

Registered as ``modal`` (``x_tui.backends.modal.backend:ModalBackend``). Choosing it imports no
``modal``: that happens only when a run is submitted or followed, so ``x-tui plan --backend modal``
works without an account, and without the extra the backend says how to install it.

Settings, from ``[tool.substrax.compute.backends.modal]``:

- ``outputs_volume`` (required): the Modal Volume the runs' outputs go to, created when missing;
- ``volumes``: the Modal Volume behind each of a job's mounts, by mount name;
- ``environment``: the Modal environment; the profile's default when unset;
- ``ignore``: project files left out of the image, ``.dockerignore`` style (default: ``.git``,
  ``.venv``, caches, ``build``, ``dist``, ``site``, ``temp``);
- ``state_dir``: where cancellations and the worker file are kept; the default state directory
  when unset.

Modules: :mod:`.settings` (the table), :mod:`.credentials` (a token, found without RPC),
:mod:`.request` (the image layers, function options and Volumes, made without Modal),
:mod:`.ignore` (the project files the image leaves out),
:mod:`.container` (the function run in the container, pickled by value), :mod:`.sdk` (the only
import of ``modal``, and its errors), :mod:`.logs` (``modal app logs``), :mod:`.outputs`
(reading the outputs Volume), :mod:`.backend` (``ModalBackend``).
"""
