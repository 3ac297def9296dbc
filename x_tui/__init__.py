"""x-tui: launch and watch compute runs declared in pyproject.toml."""

__version__ = "0.1.0"
