"""A log cut into pieces of lines reads back exactly as its lines, however it was chunked."""

from __future__ import annotations

import random

import pytest

from x_tui.compute.log_pieces import LineSplitter, LogPiece, lines_of
from x_tui.compute.sanitize import MAX_LINE_CHARS, LineCap, cap_line


def _pieces(data: bytes, sizes: list[int]) -> list[LogPiece]:
    splitter = LineSplitter()
    pieces: list[LogPiece] = []
    at = 0
    for size in sizes:
        pieces += splitter.feed(data[at : at + size])
        at += size
    pieces += splitter.feed(data[at:])
    pieces += splitter.finish()
    return pieces


def _whole(data: bytes) -> list[str]:
    """The lines as the log's bytes read whole give them: CRLF endings dropped, UTF-8 replaced."""
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return [line.removesuffix(b"\r").decode("utf-8", "replace") for line in lines]


LOG = (
    "[a] first\r\n[b] é and 日本 and 🎉\n[a] 10%\r[a] 50%\r[a] 100%\n\n"
    "[b] bad \xff byte and a CR at the end\r"
).encode("utf-8", "surrogateescape") + b"\xff\xfe\n[a] no newline at the end \xe6\x97"


@pytest.mark.parametrize("seed", range(30))
def test_any_chunking_gives_the_lines_of_the_whole_log(seed: int) -> None:
    chooser = random.Random(seed)
    sizes = [chooser.randint(1, 7) for _ in range(40)]

    lines = list(lines_of(_pieces(LOG, sizes)))

    assert lines == _whole(LOG)
    assert lines[-1] == "[a] no newline at the end \ufffd"


def test_a_crlf_split_between_two_chunks_is_one_line_ending() -> None:
    splitter = LineSplitter()

    pieces = [*splitter.feed(b"[a] one\r"), *splitter.feed(b"\n[a] two\r"), *splitter.feed(b"x\n")]

    assert list(lines_of(pieces)) == ["[a] one", "[a] two\rx"]


def test_a_long_line_comes_in_pieces_no_longer_than_a_chunk() -> None:
    splitter = LineSplitter()
    chunk = b"x" * 65536

    pieces = [piece for _ in range(50) for piece in splitter.feed(chunk)]
    pieces += splitter.feed(b"\n")

    assert max(len(piece.text) for piece in pieces) == 65536
    assert [piece.ends_line for piece in pieces] == [False] * 50 + [True]
    assert sum(len(piece.text) for piece in pieces) == 50 * 65536


def test_a_log_that_ends_on_a_newline_has_nothing_left_to_finish() -> None:
    splitter = LineSplitter()

    assert list(splitter.feed(b"[a] done\n")) == [LogPiece("[a] done", True)]
    assert list(splitter.finish()) == []


@pytest.mark.parametrize("seed", range(40))
def test_a_line_capped_in_pieces_is_capped_as_it_would_be_whole(seed: int) -> None:
    chooser = random.Random(seed)
    limit = chooser.choice([5, 10, 50])
    line = "".join(chooser.choice("ab\r") for _ in range(chooser.randint(0, 200)))
    cap = LineCap(limit)
    at = 0
    while at < len(line):
        step = chooser.randint(1, 30)
        cap.feed(line[at : at + step])
        at += step

    assert cap.finish() == cap_line(line, limit)
    assert cap.finish() == ("", False), "finishing starts a new, empty line"


def test_a_capped_line_keeps_its_start_and_its_last_state() -> None:
    cap = LineCap()
    for _ in range(1000):
        cap.feed("s" * 997 + "\r")
    cap.feed("last state")

    line, cut = cap.finish()

    assert line == ("s" * 997 + "\r") * 10 + "s" * (MAX_LINE_CHARS - 9980) + "\rlast state"
    assert not cut
