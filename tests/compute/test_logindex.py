"""The log index: tail first, then the whole file; appends; resets; search on what is shown."""

from __future__ import annotations

import os
import random
import threading
from pathlib import Path

import pytest

from x_tui.compute.logindex import FOLD_LINES, LogIndex
from x_tui.compute.logindex_search import ERROR_QUERY, InvalidSearchError, SearchQuery
from x_tui.compute.sanitize import MAX_LINE_CHARS
from x_tui.compute.worker.errors import UserError


def write_lines(path: Path, lines: list[str], mode: str = "w") -> None:
    with path.open(mode, encoding="utf-8", newline="") as out:
        out.writelines(f"{line}\n" for line in lines)


def numbered(count: int, start: int = 0) -> list[str]:
    return [f"line {n:07d} of the log" for n in range(start, start + count)]


def catch_up(index: LogIndex) -> None:
    """Refresh until nothing appended is left unindexed."""
    while index.refresh().more:
        pass


def all_text(index: LogIndex) -> list[str]:
    return [line.text for line in index.lines(0, index.line_count)]


@pytest.fixture
def big_log(tmp_path: Path) -> Path:
    path = tmp_path / "big.log"
    write_lines(path, numbered(200_000))
    return path


def test_opening_shows_the_tail_before_the_whole_file_is_counted(big_log: Path) -> None:
    with LogIndex(big_log, tail_bytes=4096) as index:
        # Right after open: only the tail is known, numbered from its first line.
        tail_count = index.line_count
        assert 0 < tail_count < 1000
        assert index.line(tail_count - 1).text == "line 0199999 of the log"
        first_tail = index.line(0).text
        assert index.wait_indexed(timeout=60)
        change = index.refresh()
        assert index.complete
        assert change.prepended == 200_000 - tail_count
        assert index.line_count == 200_000
        # The same lines, now numbered from the file's first line.
        assert index.line(change.prepended).text == first_tail
        assert index.line(0).text == "line 0000000 of the log"
        assert index.line(123_456).text == "line 0123456 of the log"


def test_line_spans_and_offsets_agree(big_log: Path) -> None:
    with LogIndex(big_log, block_size=4096, tail_bytes=4096) as index:
        index.wait_indexed(timeout=60)
        index.refresh()
        width = len("line 0000000 of the log\n")
        for number in (0, 1, 170, 171, 99_999, 199_999):
            start, end = index.span(number)
            assert (start, end) == (number * width, number * width + width - 1)
            assert index.line_number_at(start) == number
            assert index.line_number_at(end) == number  # its newline belongs to it
        with pytest.raises(IndexError):
            index.span(200_000)


def test_appended_lines_are_indexed_on_refresh(tmp_path: Path) -> None:
    path = tmp_path / "grow.log"
    write_lines(path, numbered(10))
    with LogIndex(path) as index:
        assert index.line_count == 10
        assert not index.refresh().changed
        write_lines(path, numbered(5, start=10), mode="a")
        change = index.refresh()
        assert change.appended == 5
        assert not change.reset
        assert index.line(14).text == "line 0000014 of the log"


def test_an_unfinished_last_line_is_shown_and_grows(tmp_path: Path) -> None:
    path = tmp_path / "partial.log"
    path.write_text("done\nwork", encoding="utf-8")
    with LogIndex(path) as index:
        assert [line.text for line in index.lines(0, 9)] == ["done", "work"]
        with path.open("a", encoding="utf-8") as out:
            out.write("ing 50%")
        change = index.refresh()
        assert change.appended == 0
        assert change.last_changed
        assert index.line(1).text == "working 50%"
        with path.open("a", encoding="utf-8") as out:
            out.write("\nnext\n")
        change = index.refresh()
        assert change.appended == 1
        assert all_text(index) == ["done", "working 50%", "next"]


def test_a_truncated_file_resets_the_index(tmp_path: Path) -> None:
    path = tmp_path / "trunc.log"
    write_lines(path, numbered(1000))
    with LogIndex(path) as index:
        write_lines(path, ["fresh start", "second"])  # truncates, then writes less
        change = index.refresh()
        assert change.reset
        assert all_text(index) == ["fresh start", "second"]


def test_a_file_rewritten_longer_between_refreshes_resets(tmp_path: Path) -> None:
    path = tmp_path / "rewrite.log"
    write_lines(path, ["aaaa", "bbbb"])
    with LogIndex(path) as index:
        write_lines(path, ["cccc", "dddd", "eeee"])  # same inode, longer, different bytes
        change = index.refresh()
        assert change.reset
        assert all_text(index) == ["cccc", "dddd", "eeee"]


def test_a_rotated_file_is_followed_by_name(tmp_path: Path) -> None:
    path = tmp_path / "rot.log"
    write_lines(path, numbered(50))
    with LogIndex(path) as index:
        path.rename(tmp_path / "rot.log.1")
        write_lines(path, ["after rotation"])
        change = index.refresh()
        assert change.reset
        assert all_text(index) == ["after rotation"]


def test_a_file_that_does_not_exist_yet_is_picked_up_when_it_appears(tmp_path: Path) -> None:
    path = tmp_path / "later.log"
    with LogIndex(path) as index:
        assert index.line_count == 0
        assert not index.refresh().changed
        write_lines(path, ["hello"])
        change = index.refresh()
        assert change.changed
        assert all_text(index) == ["hello"]


def test_large_appends_are_counted_in_blocks_and_read_back_exactly(tmp_path: Path) -> None:
    path = tmp_path / "burst.log"
    write_lines(path, numbered(100))
    with LogIndex(path, block_size=8192) as index:
        write_lines(path, numbered(FOLD_LINES + 5000, start=100), mode="a")
        change = index.refresh(max_bytes=64 * 1024)  # far less than was appended
        while change.more:
            change = index.refresh(max_bytes=64 * 1024)
        total = FOLD_LINES + 5100
        assert index.line_count == total
        for number in (0, 99, 100, 4242, FOLD_LINES, total - 1):
            assert index.line(number).text == f"line {number:07d} of the log"
            assert index.line_number_at(index.span(number)[0]) == number


def test_random_files_match_a_plain_split(tmp_path: Path) -> None:
    rng = random.Random(7)
    for trial in range(25):
        path = tmp_path / f"random-{trial}.log"
        chunks = [
            f"{n}:" + "y" * rng.choice([0, 1, 30, 200, 3000]) + "\n"
            for n in range(rng.randint(0, 3000))
        ]
        data = "".join(chunks) + rng.choice(["", "unfinished"])
        path.write_text(data, encoding="utf-8")
        with LogIndex(
            path,
            block_size=rng.choice([64, 4096]),
            tail_bytes=rng.choice([128, 8192]),
            max_line_bytes=1 << 20,
        ) as index:
            index.wait_indexed(timeout=60)
            catch_up(index)
            for _ in range(2):
                extra = "".join(f"more {k}\n" for k in range(rng.randint(0, 500)))
                with path.open("a", encoding="utf-8") as out:
                    out.write(extra)
                data += extra
                while index.refresh(max_bytes=rng.choice([16, 4096])).more:
                    pass
            expected = data.split("\n")
            if expected[-1] == "":
                expected.pop()
            assert index.line_count == len(expected), trial
            assert all_text(index) == expected, trial


def test_a_huge_line_is_capped_for_display(tmp_path: Path) -> None:
    path = tmp_path / "huge.log"
    path.write_text("before\n" + "z" * (1 << 20) + "\nafter\n", encoding="utf-8")
    with LogIndex(path) as index:
        index.wait_indexed(timeout=60)
        catch_up(index)
        huge = index.line(1)
        assert huge.cut
        assert len(huge.text) <= MAX_LINE_CHARS
        assert huge.end - huge.start == 1 << 20
        assert index.line(2).text == "after"


def test_a_long_progress_bar_line_reads_as_its_latest_state(tmp_path: Path) -> None:
    path = tmp_path / "bar.log"
    bar = "\r".join(f"epoch {i:06d}" for i in range(100_000))
    path.write_text(bar + "\n", encoding="utf-8")
    with LogIndex(path) as index:
        line = index.line(0)
        assert line.text.endswith("\repoch 099999")


def search(index: LogIndex, query: SearchQuery) -> list[str]:
    return [index.line(n).text for n in index.matching_lines(query)]


def test_search_plain_text_ignores_case_unless_asked(tmp_path: Path) -> None:
    path = tmp_path / "s.log"
    write_lines(path, ["Epoch 1 loss 3.2", "epoch 2 loss 2.1", "done", "EPOCH 3"])
    with LogIndex(path) as index:
        assert search(index, SearchQuery(text="epoch")) == [
            "Epoch 1 loss 3.2",
            "epoch 2 loss 2.1",
            "EPOCH 3",
        ]
        assert search(index, SearchQuery(text="epoch", ignore_case=False)) == ["epoch 2 loss 2.1"]
        # Plain text is literal: the dot is not "any character".
        assert search(index, SearchQuery(text="3.2")) == ["Epoch 1 loss 3.2"]
        assert search(index, SearchQuery(text="3.")) == ["Epoch 1 loss 3.2"]
        assert search(index, SearchQuery(text="2.", regex=True)) == ["epoch 2 loss 2.1"]


def test_regex_anchors_match_at_line_boundaries(tmp_path: Path) -> None:
    path = tmp_path / "anchors.log"
    write_lines(path, ["start here", "not start", "ends with start"])
    with LogIndex(path) as index:
        assert search(index, SearchQuery(text="^start", regex=True)) == ["start here"]
        assert search(index, SearchQuery(text="start$", regex=True)) == [
            "not start",
            "ends with start",
        ]
        # A pattern that could span lines still reports only lines that match on their own.
        assert search(index, SearchQuery(text=r"here\s+not", regex=True)) == []


def test_search_matches_what_is_shown_not_the_raw_bytes(tmp_path: Path) -> None:
    path = tmp_path / "escapes.log"
    write_lines(
        path,
        [
            "\x1b[31mER\x1b[0mROR in red",  # colours split the word in the raw bytes
            "\x1b]0;secret title\x07visible",  # the payload is never shown
            "progress 10%\rprogress 100%",  # only the last state is shown
            "plain line",
        ],
    )
    with LogIndex(path) as index:
        assert search(index, SearchQuery(text="error")) == ["\x1b[31mER\x1b[0mROR in red"]
        assert search(index, SearchQuery(text="secret")) == []
        assert search(index, SearchQuery(text="10%")) == []
        assert search(index, SearchQuery(text="100%")) == ["progress 10%\rprogress 100%"]


def test_error_query_finds_tracebacks_errors_and_failures(tmp_path: Path) -> None:
    path = tmp_path / "errors.log"
    lines = [
        "all good",
        "Traceback (most recent call last):",
        '  File "x.py", line 1',
        "ValueError: bad value",
        "2024-01-01 ERROR something broke",
        "an errorless line",
        "tests/test_a.py::test_b FAILED",
        "RuntimeException raised",
        "terror is not an error word",
    ]
    write_lines(path, lines)
    with LogIndex(path) as index:
        assert list(index.matching_lines(ERROR_QUERY)) == [1, 3, 4, 6, 7]


def test_an_invalid_regex_is_a_user_error_naming_the_pattern(tmp_path: Path) -> None:
    path = tmp_path / "x.log"
    write_lines(path, ["x"])
    with LogIndex(path) as index, pytest.raises(InvalidSearchError, match=r"'\(unclosed'"):
        list(index.matching_lines(SearchQuery(text="(unclosed", regex=True)))
    assert issubclass(InvalidSearchError, UserError)


def test_search_yields_matches_as_it_goes_and_can_be_cancelled(big_log: Path) -> None:
    with LogIndex(big_log) as index:
        index.wait_indexed(timeout=60)
        index.refresh()
        cancel = threading.Event()
        found = index.matching_lines(SearchQuery(text="0 of the log"), cancel=cancel)
        assert [next(found) for _ in range(3)] == [0, 10, 20]
        cancel.set()
        # Cancelled: at most the matches of the chunk already read come out.
        assert len(list(found)) < 20_000


def test_search_of_a_range_and_of_a_long_line(tmp_path: Path) -> None:
    path = tmp_path / "range.log"
    write_lines(path, ["needle a", "x" * (3 << 20) + " needle hidden past the cap", "needle c"])
    with LogIndex(path) as index:
        index.wait_indexed(timeout=60)
        catch_up(index)
        start = index.span(2)[0]
        assert list(index.matching_lines(SearchQuery(text="needle"), start=start)) == [2]
        # The long line's shown part (its first characters) does not contain the needle.
        assert list(index.matching_lines(SearchQuery(text="needle"))) == [0, 2]


def test_reads_from_another_thread_see_whole_lines_while_the_file_grows(tmp_path: Path) -> None:
    path = tmp_path / "threads.log"
    write_lines(path, numbered(1000))
    bad: list[str] = []
    stop = threading.Event()
    with LogIndex(path, block_size=4096) as index:

        def reader() -> None:
            while not stop.is_set():
                count = index.line_count
                if count:
                    text = index.line(count - 1).text
                    if text and not text.startswith("line "):
                        bad.append(text)

        thread = threading.Thread(target=reader)
        thread.start()
        try:
            for batch in range(50):
                write_lines(path, numbered(2000, start=1000 + batch * 2000), mode="a")
                catch_up(index)
        finally:
            stop.set()
            thread.join()
        assert index.line_count == 101_000
        assert not bad


def test_close_stops_the_background_count(big_log: Path) -> None:
    index = LogIndex(big_log, tail_bytes=4096, block_size=1024)
    index.open()
    index.close()
    assert index.wait_indexed(timeout=60)
    assert index.line_count == 0
    assert not index.refresh().changed
    # No descriptor is left open for the file.
    fds = os.listdir("/proc/self/fd") if Path("/proc/self/fd").exists() else []
    assert all(os.path.realpath(f"/proc/self/fd/{fd}") != str(big_log) for fd in fds)
