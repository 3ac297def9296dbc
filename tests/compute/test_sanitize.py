"""The sanitiser: what untrusted text may and may not bring to the terminal."""

from __future__ import annotations

import re
import unicodedata

import pytest

from x_tui.compute.sanitize import (
    CUT_MARK,
    MAX_LINE_CHARS,
    cap_line,
    clean,
    clean_counted,
    decode,
    escaped,
    plain,
    plain_counted,
    terminal_log_line,
)

ESC = "\x1b"
BEL = "\x07"
ST = "\x1b\\"

FORBIDDEN = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""What may never leave the sanitiser: every control character but tab and newline."""


def only_sgr_left(text: str) -> bool:
    """Whether every ESC left in ``text`` starts an SGR sequence, and no other control is there."""
    without_sgr = re.sub(r"\x1b\[[0-9;:]*m", "", text)
    return FORBIDDEN.search(without_sgr) is None


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        pytest.param(f"before{ESC}]0;pwned title{BEL}after", "beforeafter", id="osc0-bel"),
        pytest.param(f"before{ESC}]2;title{ST}after", "beforeafter", id="osc2-st"),
        pytest.param(f"x{ESC}]52;c;cm0gLXJmIH4={BEL}y", "xy", id="osc52-clipboard-bel"),
        pytest.param(f"x{ESC}]52;c;cm0gLXJmIH4={ST}y", "xy", id="osc52-clipboard-st"),
        pytest.param(
            f"{ESC}]8;;https://evil.example{ST}click me{ESC}]8;;{ST}", "click me", id="osc8-link"
        ),
        pytest.param(f"{ESC}[2J{ESC}[Hfake prompt$ ", "fake prompt$ ", id="csi-clear-home"),
        pytest.param(f"ok{ESC}[?25l{ESC}[1A{ESC}[K", "ok", id="csi-cursor-private"),
        pytest.param("a\x9b31mb\x9b2Jc", "abc", id="c1-csi"),
        pytest.param("a\x90q payload\x9cb", "ab", id="c1-dcs"),
        pytest.param("a\x9d0;title\x07b", "ab", id="c1-osc"),
        pytest.param(f"a{ESC}Pq#0;2;0;0;0{ST}b", "ab", id="dcs-sixel"),
        pytest.param(
            f"a{ESC}_apc payload{ST}b{ESC}^pm{ST}c{ESC}Xsos{ST}d", "abcd", id="apc-pm-sos"
        ),
        pytest.param(f"a{ESC}(Bb{ESC}7c{ESC}cd", "abcd", id="other-escapes"),
        pytest.param(f"trailing{ESC}", "trailing", id="lone-esc"),
        pytest.param("del\x7fete", "delete", id="del"),
        pytest.param("nul\x00 bs\x08 bell\x07 ff\x0c", "nul bs bell ff", id="c0"),
        pytest.param("tab\tstays", "tab\tstays", id="tab"),
        pytest.param(f"unterminated{ESC}]0;title to the end", "unterminated", id="osc-open"),
    ],
)
def test_dangerous_sequences_are_removed_and_text_kept(raw: str, shown: str) -> None:
    assert clean(raw) == shown
    assert plain(raw) == shown


def test_an_unterminated_osc_stops_at_the_end_of_its_line() -> None:
    assert clean(f"one{ESC}]0;title\ntwo") == "one\ntwo"


def test_bel_terminated_osc_payload_never_shows_as_text() -> None:
    # Rich's own ANSI parser leaves "0;pwned" visible here; the sanitiser must not.
    assert "pwned" not in clean(f"{ESC}]0;pwned{BEL}visible")


def test_sgr_colours_are_kept_by_clean_and_dropped_by_plain() -> None:
    raw = f"{ESC}[1;31mFAILED{ESC}[0m test_x {ESC}[38;2;10;20;30mrgb{ESC}[m"
    assert clean(raw) == raw
    assert plain(raw) == "FAILED test_x rgb"


def test_markup_is_left_as_text_for_the_widget_to_show_literally() -> None:
    raw = "[/x] [@click=app.quit]quit[/] [bold]b[/bold]"
    assert clean(raw) == raw
    assert plain(raw) == raw


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        pytest.param("loading 10%\rloading 55%\rloading 100%", "loading 100%", id="bar"),
        pytest.param("step 1/3\rstep 3/3\r\n", "step 3/3\n", id="crlf-after-bar"),
        pytest.param("windows line\r\nnext\r\n", "windows line\nnext\n", id="crlf"),
        pytest.param("a long status text\rshort", "shortg status text", id="partial-overwrite"),
        pytest.param("done\r", "done", id="trailing-cr"),
    ],
)
def test_carriage_return_shows_the_last_state_of_the_line(raw: str, shown: str) -> None:
    assert clean(raw) == shown
    assert "\r" not in clean(raw)


def test_carriage_return_over_colours_keeps_the_styles_where_text_shows() -> None:
    raw = f"{ESC}[32m########{ESC}[0m\r{ESC}[31mXX{ESC}[0m"
    result = clean(raw)
    assert plain(result) == "XX######"
    assert result.startswith(f"{ESC}[31mXX")
    # The six '#' still showing are green again after the red overwrite.
    assert f"{ESC}[32m######" in result
    assert only_sgr_left(result)


def test_removed_sequences_are_counted() -> None:
    raw = f"a{ESC}]0;t{BEL}b{ESC}[2Jc\x9b6nd\x7fe{ESC}[31mred{ESC}[0m"
    text, removed = clean_counted(raw)
    assert text == f"abcde{ESC}[31mred{ESC}[0m"
    assert removed == 4
    assert plain_counted(raw) == ("abcdered", 4)
    assert clean_counted("just text\n") == ("just text\n", 0)


def test_decode_replaces_invalid_utf8_and_bare_c1_bytes() -> None:
    assert decode(b"caf\xc3\xa9 \xff") == "café \ufffd"
    # A raw 8-bit CSI byte is not UTF-8: it can never decode to U+009B.
    assert "\x9b" not in decode(b"\x9b31m")
    # An encoded U+009B decodes to it, and clean removes it.
    assert clean(decode("\x9b2J".encode())) == ""


def test_nothing_but_sgr_survives_a_hostile_mix() -> None:
    hostile = "".join(
        [
            f"{ESC}]52;c;ZWNobyBwd25lZA=={BEL}",
            f"{ESC}]0;title{ST}",
            f"{ESC}]8;;http://x{ESC}\\link{ESC}]8;;{ESC}\\",
            f"{ESC}[2J{ESC}[31mred{ESC}[0m\x9b6n\x90dcs\x9c\x7f\x00",
            f"{ESC}P{ESC}[",
            "\r\x08\x0b",
        ]
    )
    assert only_sgr_left(clean(hostile))
    assert FORBIDDEN.search(plain(hostile)) is None


def test_a_very_long_line_is_cut_and_marked() -> None:
    line = "x" * (MAX_LINE_CHARS * 5)
    result = clean(line)
    assert result == "x" * MAX_LINE_CHARS + CUT_MARK


def test_a_long_progress_line_keeps_its_latest_state() -> None:
    states = [f"progress {i:6d}/100000" for i in range(100_000)]
    line = "\r".join(states)
    capped, cut = cap_line(line)
    assert len(capped) < 2 * MAX_LINE_CHARS + 2
    # Only redrawn states were dropped: what a terminal shows is all there, not marked as cut.
    assert not cut
    assert clean(line) == "progress  99999/100000"


def test_a_megabyte_line_of_unterminated_introducers_is_cut_before_any_pattern_runs() -> None:
    hostile = (f"{ESC}]0;" + f"{ESC}[" * 3 + "a") * ((1 << 20) // 10)
    result, removed = clean_counted(hostile)
    assert FORBIDDEN.search(result) is None
    assert result.endswith(CUT_MARK)
    assert len(result) <= MAX_LINE_CHARS + len(CUT_MARK)
    assert removed > 0


def test_escaped_shows_every_control_and_invisible_formatting_character() -> None:
    hidden = [
        chr(code)
        for code in range(0x110000)
        if unicodedata.category(chr(code)) in ("Cc", "Cf", "Zl", "Zp")
    ]

    left = [f"U+{ord(char):04X}" for char in hidden if escaped(char) == char]

    assert left == []
    assert escaped("job\u202eevil\u200b\x1b]0;t\x07") == "job\\u202eevil\\u200b\\x1b]0;t\\x07"
    assert escaped("plain name, 日本, é") == "plain name, 日本, é"


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        pytest.param("[train] \repoch 3/3: 2%", "[train] epoch 3/3: 2%", id="old-log-cr-state"),
        pytest.param("[train] 10%\r[train] 20%\r[train] 30%", "[train] 30%", id="prefixed-states"),
        pytest.param("[train] done 100%\r[eval] forged", "[train] [eval] forged", id="forged"),
        pytest.param("[train] \r\x1b[2K[eval] forged", "[train] [eval] forged", id="erase-line"),
        pytest.param("[train] a\u202e[eval] b", "[train] a\\u202e[eval] b", id="bidi-override"),
        pytest.param("[t] x\u2066y\u2069\u200bz", "[t] x\\u2066y\\u2069\\u200bz", id="isolate-zw"),
        pytest.param("[t] \x1b]0;title\x07\x1b[31mred\x1b[0m\tok", "[t] red\tok", id="sequences"),
        pytest.param("no prefix\rover", "overrefix", id="no-prefix"),
        pytest.param("[b\x07ad] x", "[bad] x", id="not-a-prefix"),
    ],
)
def test_a_log_line_on_a_terminal_keeps_its_prefix_in_front(line: str, shown: str) -> None:
    assert terminal_log_line(line) == shown


def test_a_cut_log_line_on_a_terminal_is_marked() -> None:
    line, cut = cap_line("[t] " + "x" * (2 * MAX_LINE_CHARS))

    shown = terminal_log_line(line, cut=cut)

    assert shown == "[t] " + "x" * (MAX_LINE_CHARS - 4) + CUT_MARK


def test_clean_removes_bidi_controls_so_text_reads_in_the_order_it_was_written() -> None:
    assert clean_counted("[t] ok \u202etxet\u202c \u2067x\u2069") == ("[t] ok txet x", 4)
