"""Line assembly, the combined log and its times file, on bytes as a task's pipes deliver them."""

from __future__ import annotations

import io
import struct
from pathlib import Path
from typing import IO, cast

import pytest

from x_tui.compute.sanitize import clean
from x_tui.compute.worker.echo import MAX_REDRAWN_LINE_BYTES, CombinedLog
from x_tui.compute.worker.line_assembly import CONTINUED_MARK, LineAssembler, Piece, PieceKind
from x_tui.compute.worker.log_times import MAGIC, LogTimes, TimesWriter, times_path

LINE, STATE, CONTINUED, CLOSE = (
    PieceKind.LINE,
    PieceKind.STATE,
    PieceKind.CONTINUED,
    PieceKind.CLOSE,
)


def kinds(pieces: list[Piece]) -> list[tuple[PieceKind, bytes]]:
    return [(piece.kind, piece.text) for piece in pieces]


# --- the assembler -----------------------------------------------------------------------------


def test_a_line_split_over_chunks_is_handed_over_once_whole() -> None:
    lines = LineAssembler()
    assert lines.feed(b"step 3: ", 0.0) == []
    assert lines.feed(b"val_loss", 0.1) == []
    assert kinds(lines.feed(b"=0.5\nnext", 0.2)) == [(LINE, b"step 3: val_loss=0.5")]
    assert lines.holding


def test_each_state_of_a_redrawn_line_is_a_piece_and_the_newline_closes_it() -> None:
    lines = LineAssembler()
    pieces = lines.feed(b"\r 10%|#\r 20%|##\r 30%", 0.0)
    assert kinds(pieces) == [(STATE, b" 10%|#"), (STATE, b" 20%|##")]
    assert kinds(lines.feed(b"|###\n", 0.1)) == [(LINE, b" 30%|###")]
    assert kinds(lines.feed(b"a\r\n", 0.2)) == [(STATE, b"a"), (CLOSE, b"")]


def test_an_empty_line_is_a_line() -> None:
    assert kinds(LineAssembler().feed(b"\n\n", 0.0)) == [(LINE, b""), (LINE, b"")]


def test_an_unfinished_line_is_handed_over_marked_after_the_stream_was_quiet() -> None:
    lines = LineAssembler(idle_seconds=1.0, max_wait_seconds=10.0)
    lines.feed(b"loading...", 5.0)
    assert lines.due() == 6.0
    assert lines.flush_due(5.9) == []
    assert kinds(lines.flush_due(6.0)) == [(CONTINUED, b"loading...")]
    assert not lines.holding
    assert kinds(lines.feed(b" done\n", 7.0)) == [(LINE, b" done")]


def test_a_line_growing_slowly_is_handed_over_after_the_longest_wait() -> None:
    lines = LineAssembler(idle_seconds=1.0, max_wait_seconds=3.0)
    for tick in range(4):
        lines.feed(b".", float(tick) * 0.9)
    assert lines.due() == 3.0
    assert kinds(lines.flush_due(3.0)) == [(CONTINUED, b"....")]


def test_a_quiet_bar_hands_over_its_latest_state_as_a_state() -> None:
    lines = LineAssembler(idle_seconds=1.0)
    assert kinds(lines.feed(b"\r 10%", 0.0)) == []
    assert kinds(lines.flush_due(1.0)) == [(STATE, b" 10%")]
    assert kinds(lines.feed(b"\r 20%\n", 2.0)) == [(LINE, b" 20%")]


def test_the_end_of_a_stream_hands_over_what_is_left_and_closes_a_bar() -> None:
    lines = LineAssembler()
    lines.feed(b"half a li", 0.0)
    assert kinds(lines.finish()) == [(CONTINUED, b"half a li")]
    bar = LineAssembler()
    bar.feed(b"\r 10%\r 20%", 0.0)
    assert kinds(bar.finish()) == [(STATE, b" 20%"), (CLOSE, b"")]
    assert LineAssembler().finish() == []


def test_a_100_mb_line_is_never_held_whole_and_no_byte_is_lost() -> None:
    lines = LineAssembler(max_bytes=16384)
    chunk = b"x" * 65536
    total = 0
    largest = 0
    for _ in range(100 * 1024 * 1024 // len(chunk)):
        for piece in lines.feed(chunk, 0.0):
            assert piece.kind is CONTINUED
            largest = max(largest, len(piece.text))
            total += len(piece.text)
        assert len(lines._pending) <= 16384
    total += sum(len(piece.text) for piece in lines.finish())
    assert total == 100 * 1024 * 1024
    assert largest == 16384


def test_a_long_line_is_not_cut_inside_a_character() -> None:
    lines = LineAssembler(max_bytes=10)
    pieces = lines.feed(("é" * 12).encode(), 0.0) + lines.finish()
    assert b"".join(piece.text for piece in pieces).decode() == "é" * 12
    for piece in pieces:
        piece.text.decode()  # each piece is whole characters


# --- the combined log --------------------------------------------------------------------------


class Stream(io.StringIO):
    """A worker stream whose bytes land in a shared buffer (stdout and stderr in one file)."""

    def __init__(self, sink: bytearray) -> None:
        super().__init__()
        self.buffer = self
        self.sink = sink

    def write(self, data: object) -> int:  # type: ignore[override]
        assert isinstance(data, bytes)
        self.sink.extend(data)
        return len(data)


def combined() -> tuple[CombinedLog, bytearray]:
    sink = bytearray()
    out, err = Stream(sink), Stream(sink)
    return CombinedLog(cast("IO[str]", out), cast("IO[str]", err)), sink


def test_a_line_from_the_other_stream_ends_an_open_bar_line_first() -> None:
    log, sink = combined()
    bar, metrics = LineAssembler(), LineAssembler()
    log.write("fit", 1, bar.feed(b"\r 10%|#\r 20%|##\r", 0.0))
    log.write("fit", 0, metrics.feed(b"step 1: loss=0.5\n", 0.0))
    log.write("fit", 1, bar.feed(b" 30%|###\n", 0.0))
    assert bytes(sink) == (b"[fit]  10%|#\r[fit]  20%|##\n[fit] step 1: loss=0.5\n[fit]  30%|###\n")
    assert [clean(line) for line in sink.decode().split("\n")[:-1]] == [
        "[fit]  20%|##",
        "[fit] step 1: loss=0.5",
        "[fit]  30%|###",
    ]


def test_a_notice_is_always_a_line_of_its_own() -> None:
    log, sink = combined()
    log.write("over", 0, LineAssembler().feed(b"\r 50%\r", 0.0))
    log.note_on(1, "over", "x-tui: ran past its 1 s budget; its group was killed")
    assert bytes(sink).split(b"\n")[-2] == (
        b"[over] x-tui: ran past its 1 s budget; its group was killed"
    )
    assert bytes(sink).startswith(b"[over]  50%\n")


def test_a_continued_piece_is_marked_and_ends_its_line() -> None:
    log, sink = combined()
    log.write("dies", 0, [Piece(CONTINUED, b"half a li")])
    assert bytes(sink) == b"[dies] half a li" + CONTINUED_MARK + b"\n"


# --- the times file ----------------------------------------------------------------------------


def test_lines_written_to_a_file_get_their_offsets_and_receive_times(tmp_path: Path) -> None:
    log_path = tmp_path / "worker.log"
    times = TimesWriter(times_path(log_path), base=1000.0)
    with open(log_path, "w", encoding="utf-8") as out:
        log = CombinedLog(out, out, times=times)
        log.write("a", 0, [Piece(LINE, b"one"), Piece(LINE, b"two")], received=1000.5)
        log.write("a", 1, [Piece(STATE, b" 10%")], received=1001.0)
        log.write("a", 1, [Piece(STATE, b" 20%")], received=1002.0)  # same line: no record
        log.write("a", 0, [Piece(LINE, b"three")], received=1003.25)
        log.note("a", "x-tui: attempt 2 of 3")  # now: more than 49 days after the base
    times.close()
    data = log_path.read_bytes()
    starts = {line: data.index(line) for line in (b"[a] one", b"[a] two", b"[a] three")}
    with LogTimes(times_path(log_path)) as read:
        assert read.count == 3
        assert read.time_at(starts[b"[a] one"]) == 1000.5
        assert read.time_at(starts[b"[a] two"]) == 1000.5
        assert read.time_at(data.index(b"[a]  10%")) == 1001.0
        assert read.time_at(starts[b"[a] three"]) == 1003.25
        assert read.time_at(data.index(b"[a] x-tui")) == 1003.25  # not recorded: too late


def test_a_record_cut_short_is_ignored_and_an_offset_before_any_record_has_no_time(
    tmp_path: Path,
) -> None:
    path = tmp_path / "x.log.times"
    writer = TimesWriter(path, base=50.0)
    writer.mark(10, 51.0)
    writer.mark(20, 52.0)
    writer.close()
    with path.open("ab") as out:
        out.write(b"\x01\x02\x03")
    with LogTimes(path) as read:
        assert read.count == 2
        assert read.time_at(9) is None
        assert read.time_at(15) == 51.0
        assert read.time_at(10**9) == 52.0


def test_a_file_that_is_not_a_times_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.times"
    path.write_bytes(b"nonsense")
    with pytest.raises(ValueError, match="not a times file"):
        LogTimes(path)
    path.write_bytes(struct.pack("<8sQ", b"XTTIMES9", 0))
    with pytest.raises(ValueError, match="not a times file of this version"):
        LogTimes(path)
    assert MAGIC == b"XTTIMES1"


def test_many_lines_in_one_chunk_are_each_prefixed_and_a_long_one_among_them_is_cut() -> None:
    log, sink = combined()
    lines = LineAssembler(max_bytes=8)
    log.write("t", 0, lines.feed(b"a\n\nbb\nccc\n0123456789ab\nd\ntail", 0.0))
    log.write("t", 0, lines.finish())
    assert bytes(sink).split(b"\n") == [
        b"[t] a",
        b"[t] ",
        b"[t] bb",
        b"[t] ccc",
        b"[t] 01234567" + CONTINUED_MARK,
        b"[t] 89ab",
        b"[t] d",
        b"[t] tail" + CONTINUED_MARK,
        b"",
    ]


def test_a_bar_redrawn_for_hours_goes_on_on_new_lines_each_ending_on_a_whole_state() -> None:
    log, sink = combined()
    bar = LineAssembler()
    for step in range(20_000):
        log.write("fit", 1, bar.feed(b"\r%6d/20000 |####| it/s" % step, 0.0))
    log.write("fit", 1, bar.finish())
    lines = bytes(sink).split(b"\n")[:-1]
    assert len(lines) > 1
    assert max(len(line) for line in lines) < MAX_REDRAWN_LINE_BYTES + 100
    for line in lines:
        assert line.endswith(b"it/s")
        assert all(state.startswith(b"[fit] ") for state in line.split(b"\r") if state)
    assert clean(lines[-1].decode()) == "[fit]  19999/20000 |####| it/s"
