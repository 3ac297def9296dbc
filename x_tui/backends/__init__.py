"""Backend adapters: local, modal, skypilot, each registered under ``x_tui.backends``."""
