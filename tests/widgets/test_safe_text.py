"""Untrusted text becomes Text with no markup parsed and no control character left."""

from __future__ import annotations

import re

from rich.text import Text

from x_tui.widgets.safe_text import ansi_text, ansi_text_counted, safe_text

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def test_markup_in_a_name_is_shown_literally() -> None:
    for name in ("[/x]", "[@click=app.quit]quit[/]", "[link=https://x]y[/link]", "[bold"):
        text = safe_text(name)
        assert text.plain == name
        assert text.spans == []


def test_safe_text_drops_colours_and_controls_and_keeps_our_style() -> None:
    text = safe_text("\x1b[31mred\x1b[0m \x1b]0;title\x07run\x9b2J", "bold")
    assert text.plain == "red run"
    assert text.style == "bold"


def test_ansi_text_keeps_colours_as_styles() -> None:
    text = ansi_text("\x1b[1;31mFAILED\x1b[0m test")
    assert text.plain == "FAILED test"
    [span] = text.spans
    assert (span.start, span.end) == (0, 6)
    assert not isinstance(span.style, str)
    assert span.style.bold
    assert span.style.color is not None


def test_ansi_text_never_makes_links_or_keeps_controls() -> None:
    hostile = (
        "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\ "
        "\x1b]52;c;ZWNobw==\x07\x1b]0;pwned\x07\x1b[2J\x90dcs\x9c\x7f done"
    )
    text, removed = ansi_text_counted(hostile)
    assert text.plain == "click  done"
    assert removed == 7
    assert CONTROL.search(text.plain) is None
    assert all(isinstance(span.style, str) or not span.style.link for span in text.spans)
    assert ansi_text(hostile).plain == text.plain


def test_a_progress_bar_reads_as_its_last_state() -> None:
    assert ansi_text("10%\r55%\r100%").plain == "100%"
    assert isinstance(safe_text("a\rb"), Text)
    assert safe_text("abc\rX").plain == "Xbc"


def test_invisible_characters_in_a_name_are_shown_as_escapes() -> None:
    name = "train\u202eevil\u202c\u2066x\u2069\u200bz\ufeff\u2028"

    text = safe_text(name, "bold")

    assert text.plain == "train\\u202eevil\\u202c\\u2066x\\u2069\\u200bz\\ufeff\\u2028"
    assert text.style == "bold"


def test_bidi_controls_in_a_log_line_are_removed_so_it_reads_in_written_order() -> None:
    text, removed = ansi_text_counted("[t] ok \u202e[other] desrever\u202c \x1b[31mred\x1b[0m")

    assert text.plain == "[t] ok [other] desrever red"
    assert removed == 2
