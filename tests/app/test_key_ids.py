"""The README's table of key ids is the bindings' own, and ``[keys]`` ids are checked."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support import asynchronous, wait_until
from x_tui.app.key_ids import key_ids, keys_table, unknown_key_ids
from x_tui.app.settings import load_settings

from .app_support import make_app

README = Path(__file__).resolve().parents[2] / "README.md"
BEGIN = "<!-- key ids: begin (generated: python -m x_tui.app.key_ids) -->"
END = "<!-- key ids: end -->"


def _readme_table() -> str:
    text = README.read_text(encoding="utf-8")
    assert BEGIN in text, "the README has no key ids table"
    assert END in text, "the README's key ids table has no end"
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip()


def test_every_key_id_the_readme_lists_exists_and_every_binding_id_is_listed() -> None:
    listed = set(re.findall(r"^\| `([a-z_.]+)` \|", _readme_table(), flags=re.MULTILINE))
    known = set(key_ids())
    assert listed - known == set(), "the README lists ids no binding has"
    assert known - listed == set(), "bindings whose ids the README does not list"
    assert {"main.submit", "app.quit", "log.follow", "runs.sort", "run.cancel"} <= known


def test_the_readme_table_is_the_generated_one() -> None:
    assert _readme_table() == keys_table(), "regenerate it: python -m x_tui.app.key_ids"


def test_an_unknown_key_id_is_named_with_what_was_meant(tmp_path: Path) -> None:
    problems = unknown_key_ids(tmp_path, ["main.submti", "log.follow", "zzz"], key_ids())
    assert problems == [
        f"{tmp_path}: [keys] 'main.submti' is not a key id; did you mean 'main.submit'?",
        f"{tmp_path}: [keys] 'zzz' is not a key id (see the README for the ids)",
    ]


@asynchronous
async def test_the_app_warns_about_unknown_key_ids_and_themes_with_did_you_mean(
    state_dir: Path, project: Path, tmp_path: Path
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        'theme = "textual-drak"\n[keys]\n"main.fitler" = "f2"\n"app.quit" = "f10"\n',
        encoding="utf-8",
    )
    app = make_app(project, settings=load_settings(path))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: len(app._notifications) == 2, "two toasts")
        messages = [notification.message for notification in app._notifications]
        assert any(
            "'main.fitler' is not a key id; did you mean 'main.filter'?" in message
            for message in messages
        )
        assert any("did you mean 'textual-dark'?" in message for message in messages)
