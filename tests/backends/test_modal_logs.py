"""Reading ``modal app logs``, bounded: real child processes stand in for the command, as Modal's
CLI is one. However much or however long a line a stream sends, x-tui holds a bounded part of it,
and a reader that stops ends the command."""

from __future__ import annotations

import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.support import wait_for
from x_tui.backends.modal import logs
from x_tui.backends.modal.logs import MAX_LINE, QUEUED_LINES, fetch_lines, follow_lines
from x_tui.compute.worker.errors import ProviderError


def _python(script: str, *args: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(script), *args]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


ENDLESS = """
    import os, sys
    counter = sys.argv[1]
    with open(counter + ".pid", "w") as out:
        out.write(str(os.getpid()))
    i = 0
    while True:
        sys.stdout.write(f"line {i}\\n")
        i += 1
        if i % 1000 == 0:
            with open(counter, "w") as out:
                out.write(str(i))
"""


def _written(counter: Path) -> int:
    try:
        return int(counter.read_text() or 0)
    except (FileNotFoundError, ValueError):
        return 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")
@pytest.mark.parametrize("follow", [False, True], ids=["fetch", "follow"])
def test_a_stream_that_outruns_its_reader_waits_for_it_and_ends_when_the_reader_stops(
    tmp_path: Path, follow: bool
) -> None:
    counter = tmp_path / "written"
    command = _python(ENDLESS, str(counter))
    lines = (
        follow_lines(
            command, is_final=lambda: False, poll_seconds=60, drain_seconds=1, fetch_all=list
        )
        if follow
        else fetch_lines(command, seconds=60)
    )
    assert next(lines) == "line 0"
    wait_for(lambda: _written(counter) >= 1000, "the command to write")
    time.sleep(1.0)  # the reader reads nothing: the command is soon held up
    held = _written(counter)
    time.sleep(0.5)
    # Read ahead: the queue, the pipe's buffer and the command's own; not a second's output
    # (more than a million lines here).
    assert held < 4 * QUEUED_LINES + 65536 // len("line 99999\n") + 10_000
    assert _written(counter) == held  # held up, not slowed
    assert [next(lines) for _ in range(3)] == ["line 1", "line 2", "line 3"]
    pid = int((tmp_path / "written.pid").read_text())
    lines.close()
    wait_for(lambda: not _alive(pid), "the command to end")


def test_a_line_longer_than_the_limit_comes_in_pieces_and_nothing_is_lost() -> None:
    long = "x" * (3 * MAX_LINE + 5)
    script = f"import sys; sys.stdout.write('x' * {len(long)} + '\\nafter\\n')"
    pieces = list(fetch_lines(_python(script), seconds=60))
    assert pieces[-1] == "after"
    assert "".join(pieces[:-1]) == long
    assert max(len(piece) for piece in pieces) <= MAX_LINE


def test_a_fetch_that_fails_gives_its_lines_then_says_why() -> None:
    script = "import sys; print('first'); print('boom: no such app', file=sys.stderr); sys.exit(1)"
    seen: list[str] = []
    with pytest.raises(ProviderError, match=r"exit 1\): boom: no such app"):
        seen.extend(fetch_lines(_python(script), seconds=60))
    assert seen == ["first"]


def test_a_fetch_past_its_deadline_stops_the_command(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    script = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(60)"
    with pytest.raises(ProviderError, match="reading the run's logs"):
        list(fetch_lines(_python(script, str(pid_file)), seconds=1.0))
    assert not _alive(int(pid_file.read_text()))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")
@pytest.mark.parametrize("follow", [False, True], ids=["fetch", "follow"])
def test_a_command_that_closes_its_output_but_never_exits_is_not_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, follow: bool
) -> None:
    monkeypatch.setattr(logs, "EXIT_SECONDS", 1.0)
    pid_file = tmp_path / "pid"
    script = (
        "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid()));"
        " print('one', flush=True); os.close(1); time.sleep(60)"
    )
    command = _python(script, str(pid_file))
    lines = (
        follow_lines(
            command, is_final=lambda: False, poll_seconds=60, drain_seconds=1, fetch_all=list
        )
        if follow
        else fetch_lines(command, seconds=1.0)
    )
    seen: list[str] = []
    started = time.monotonic()
    with pytest.raises(ProviderError, match=r"within 1 s while reading the run's logs"):
        seen.extend(lines)
    assert time.monotonic() - started < 30  # not the command's 60 s
    assert seen == ["one"]
    assert not _alive(int(pid_file.read_text()))
