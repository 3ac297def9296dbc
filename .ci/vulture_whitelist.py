"""Names vulture reports as unused in x_tui that are used all the same (read by a framework or a
library, or public API for others): each with the reason. Checked by .ci/run (`uv run vulture`)."""

# Set for Rich or Textual to read.
_.no_wrap  # rich.text.Text attribute (run_header.py, _log_texts.py)
_.overflow  # rich.text.Text attribute (run_header.py)
_.placeholder  # textual Input attribute (_log_bar.py)
_.cursor_position  # textual Input attribute (_log_bar.py)
_._require_update_dimensions  # textual DataTable flag, read by its next refresh (runs_table.py)
_.virtual_size  # textual ScrollView attribute (_log_lines.py)
_.AUTO_FOCUS  # textual Screen class variable, read once the screen is composed (main_screen.py)
_.control  # textual Message.control, read by @on(..., selector) (log_view.py)
_.compress_type  # zipfile.ZipInfo attribute (worker_bundle.py)
_.writable  # io.RawIOBase method (sky_sdk.py)
exc_info  # a context manager's __exit__ parameter (logindex.py)

# Public API for backends outside x-tui.
BackendFactory  # compute/backend.py: the type a third-party backend's entry point has

# Declared by the SkyPilot transports and not read yet: left to the SkyPilot backend's owners.
_.down_with_job  # backends/skypilot/transports.py, copy_transport.py

# Run-action handlers: named in x_tui/app/actions.py's RUN_ACTIONS, imported on first use.
ask_cancel_sweep  # cancelling.py
ask_delete  # deleting.py
ask_fetch  # fetching.py
ask_rerun  # rerunning.py
open_shell  # run_shell.py
