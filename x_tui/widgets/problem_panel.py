"""The problem panel: why the project has no jobs to show (no pyproject.toml, bad TOML, bad key).

Hidden while there is no problem. The message is a ``UserError``'s, which names the file, the key
and the value and what would be accepted; it is shown as plain text (file paths and values are
untrusted), and the panel says the runs table keeps working, so a broken configuration never
hides the runs.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from x_tui.compute.worker.errors import NoComputeTable, UserError
from x_tui.widgets.safe_text import safe_text


class ProblemPanel(Static):
    """A bordered panel naming what is wrong with the project's configuration."""

    DEFAULT_CSS = """
    ProblemPanel {
        display: none;
        height: auto;
        border: round $error;
        border-title-color: $error;
        padding: 0 1;
    }
    ProblemPanel.-shown { display: block; }
    ProblemPanel.-no-project { border: round $warning; border-title-color: $warning; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        """Make a hidden panel.

        Args:
            id: The widget's id.
            classes: Its CSS classes.
        """
        super().__init__(id=id, classes=classes)
        self.problem: UserError | None = None

    def show_problem(self, problem: UserError | None) -> None:
        """Show ``problem``, or hide the panel when it is ``None``.

        Args:
            problem: Why the project has no jobs.
        """
        self.problem = problem
        classes = {
            "-shown": problem is not None,
            "-no-project": isinstance(problem, NoComputeTable),
        }
        if any(self.has_class(name) != wanted for name, wanted in classes.items()):
            # One restyle for both classes: each is a pass over the panel's rules.
            for name, wanted in classes.items():
                self.set_class(wanted, name, update=False)
            self.update_node_styles()
        if problem is None:
            self.update("")
            return
        if isinstance(problem, NoComputeTable):
            self.border_title = Text("No jobs here")
            hint = (
                "The runs in the store are listed; declare jobs under [tool.substrax.compute]"
                " in a project's pyproject.toml and open x-tui there to submit them."
            )
        else:
            self.border_title = Text("Configuration problem")
            hint = "Fix the file and save it: the jobs reload. The runs keep updating meanwhile."
        self.update(Text.assemble(safe_text(str(problem)), "\n", (hint, "dim")))
