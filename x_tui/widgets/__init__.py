"""Reusable widgets: the log view, and the safe conversion of untrusted text for every widget.

Import the widget modules themselves (``x_tui.widgets.log_view``); this package imports nothing,
so loading one widget never loads the others.
"""
