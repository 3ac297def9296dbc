"""The widget the main screen focuses first is styled once, with the screen, before the first
frame (not also as it gains focus, a restyle the screen's own threw away), and looks focused in
that frame as it would after any restyle."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from rich.style import Style
from textual.css.stylesheet import Stylesheet
from textual.dom import DOMNode

from tests.support import asynchronous, wait_until
from x_tui.widgets.runs_table import RunsTable

from .app_support import make_app, pyproject_text

Looks = tuple[Style, Style, object]


def _looks(app_screen: DOMNode, table: RunsTable) -> Looks:
    """The focused table's cursor and header styles, and its pane's border."""
    pane = app_screen.query_one("#runs-pane")
    return (
        table.get_component_rich_style("datatable--cursor"),
        table.get_component_rich_style("datatable--header"),
        pane.styles.border,
    )


@pytest.mark.parametrize("in_project", [False, True], ids=["outside a project", "in a project"])
@asynchronous
async def test_the_first_focus_is_styled_once_and_looks_as_after_any_restyle(
    in_project: bool, state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = None
    if in_project:
        project = tmp_path / "project"
        project.mkdir()
        (project / "pyproject.toml").write_text(pyproject_text(), encoding="utf-8")
    styled: Counter[str] = Counter()
    apply = Stylesheet.apply

    def counted(self: Stylesheet, node: DOMNode, *args: object, **kwargs: object) -> None:
        styled[type(node).__name__] += 1
        apply(self, node, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Stylesheet, "apply", counted)
    app = make_app(project, poll=False)
    drawn: list[Counter[str]] = []
    app.call_after_refresh(lambda: drawn.append(styled.copy()))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: bool(drawn), "the first frame")
        focused = "JobOptions" if in_project else "RunsTable"
        assert type(app.screen.focused).__name__ == focused
        # Styled as mounted, and as the screen was first shown: not as it gained focus too.
        assert drawn[0][focused] == 2
        screen, table = app.main_screen, app.main_screen.runs
        if not in_project:
            first = _looks(screen, table)
            app.update_styles(screen)  # every node restyled, the focus as it is
            await pilot.pause()
            assert _looks(screen, table) == first
            table.blur()  # and focused looks otherwise than not
            await pilot.pause()
            assert _looks(screen, table) != first
