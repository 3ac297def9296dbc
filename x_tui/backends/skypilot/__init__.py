"""The skypilot backend: runs a job through SkyPilot (https://docs.skypilot.ai) on its clouds.

Registered as ``skypilot`` (``x_tui.backends.skypilot.backend:SkyPilotBackend``). SkyPilot is a
separate tool, installed in an environment of its own (``uv tool install "skypilot[gcp]"``) and
never imported into x-tui's process: every operation (launch, queue, logs, cancel, teardown,
catalog) runs ``sky_sdk.py`` in SkyPilot's own interpreter, which calls SkyPilot's public SDK and
answers in JSON. Choosing the backend starts nothing, so ``x-tui plan --backend skypilot`` works
without SkyPilot; without it the first operation that needs it says how to install it.

Settings, from ``[tool.substrax.compute.backends.skypilot]`` (the seed's table, all optional but
the transport): ``infra``, ``use_spot``, ``setup_commands``, ``sky``, ``sky_python``,
``worker_python``, ``state_dir``, and exactly one of the ``bucket`` and ``copy`` tables.

Modules: :mod:`.settings` (the table), :mod:`.task` (the SkyPilot task), :mod:`.transports`
(the protocol and the bucket transport), :mod:`.copy_transport` and :mod:`.listing` (the copy
transport and its verified fetch), :mod:`.bridge` (x-tui's side of the bridge) and
:mod:`.sky_sdk` (SkyPilot's side), :mod:`.launch_records` (launch intent and what was seen),
:mod:`.logs`, :mod:`.catalog` (accelerators and prices, offline), :mod:`.tools`,
:mod:`.backend` (``SkyPilotBackend``).
"""
