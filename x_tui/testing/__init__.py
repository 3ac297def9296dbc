"""Test helpers for x-tui's backends and third-party ones.

:mod:`x_tui.testing.contract` holds the :class:`~x_tui.testing.contract.BackendContract` a
backend's tests inherit; :mod:`x_tui.testing.hostile_store` builds a store of malformed entries.
Importing them needs pytest and imports no Textual.
"""
