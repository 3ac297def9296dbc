"""Untrusted text to ``rich.text.Text``, the only way such text reaches a widget.

Run ids, job and task names, log lines, provider messages, file names and manifest values come
from outside x-tui. Passed as a ``str`` to a widget they would be parsed as markup (``[/x]``
crashes the app, ``[@click=app.quit]`` binds an action) or, in ``Log``/``RichLog``, sent to the
terminal with their escape sequences. These functions sanitise the text
(``x_tui.compute.sanitize``) and build the ``Text`` themselves, so no markup is ever parsed and no
control character survives. In names and messages (:func:`safe_text`) invisible characters (bidi
controls, zero-width characters) are shown as escapes such as ``\u202e``, so two names that look
alike are told apart and no text is shown reordered; in log lines (:func:`ansi_text`) bidi controls
are removed.
"""

from __future__ import annotations

import re

from rich.text import Text

from x_tui.compute.sanitize import clean, clean_counted, plain, revealed

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""A control character a widget must never receive (tab and newline are allowed)."""


def safe_text(untrusted: str, style: str = "") -> Text:
    """Plain text for a widget: every escape sequence and control character removed, no markup.

    Args:
        untrusted: Text from outside x-tui.
        style: A Rich style for the whole text (x-tui's own, never taken from the input).

    Returns:
        A ``Text`` whose characters are exactly the printable characters of the input, each
        invisible formatting character written as an escape (``\\u202e``, ``\\u200b``).
    """
    return Text(plain(revealed(untrusted)), style=style)


def ansi_text(untrusted: str) -> Text:
    """Text with its SGR colours kept as styles; every other sequence removed, no markup.

    Args:
        untrusted: Text from outside x-tui, such as a log line with colours.

    Returns:
        A ``Text`` with the colours of the input as spans. If Rich's ANSI parser ever left a
        control character or a link in, the plain text is returned instead.
    """
    return _from_clean(clean(untrusted), untrusted)


def ansi_text_counted(untrusted: str) -> tuple[Text, int]:
    """Like :func:`ansi_text`, and count the control sequences removed.

    Args:
        untrusted: Text from outside x-tui.

    Returns:
        The text and how many sequences or control characters were removed.
    """
    cleaned, removed = clean_counted(untrusted)
    return _from_clean(cleaned, untrusted), removed


def _from_clean(cleaned: str, untrusted: str) -> Text:
    text = Text.from_ansi(cleaned, end="") if "\x1b" in cleaned else Text(cleaned, end="")
    if _CONTROL.search(text.plain) is not None or any(
        not isinstance(span.style, str) and span.style.link for span in text.spans
    ):
        return safe_text(untrusted)
    return text
