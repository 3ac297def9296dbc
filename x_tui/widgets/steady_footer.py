"""Textual's footer, built again only when the keys it would show change.

Textual's ``Footer`` rebuilds every key it shows each time its screen says its bindings were
updated: a focus change, a screen resumed, each ``refresh_bindings``. Most of those leave the
keys as they were, and on a screen with twenty keys each rebuild mounts and styles twenty widgets
(several times while the app starts). :class:`SteadyFooter` rebuilds only when a key, its label,
its display, whether it is enabled or its tooltip changed.

Each key it builds also comes with its compact style already set. Textual's ``FooterKey`` starts
compact and is told the footer's style once mounted, so every key's style was worked out three
times (mounted, made compact, made not compact) at each rebuild.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

KeysShown = tuple[tuple[object, ...], ...]
"""What the footer shows of a screen's active bindings (compared, never displayed)."""


class SteadyFooter(Footer):
    """A ``Footer`` that skips a rebuild when its keys are unchanged; see the module docs."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        """Make the footer.

        Args:
            id: The widget's id.
            classes: Its CSS classes.
        """
        super().__init__(id=id, classes=classes)
        self._keys_shown: KeysShown | None = None

    def compose(self) -> ComposeResult:
        """Textual's keys, each with its compact style set before it is mounted."""
        for widget in super().compose():
            if isinstance(widget, FooterKey):
                # The palette's key stays compact, as Textual has it; the others follow the footer.
                compact = self.compact or widget.has_class("-command-palette")
                widget.set_reactive(FooterKey.compact, compact)
                widget.set_class(compact, "-compact", update=False)
            yield widget

    def bindings_changed(self, screen: Screen[Any]) -> None:
        """Rebuild the keys if they changed (as Textual's footer does, only then).

        Args:
            screen: The screen whose bindings were updated.
        """
        if not (screen.app.app_focus and self.is_attached and screen is self.screen):
            super().bindings_changed(screen)  # no rebuild now: the next change decides
            return
        keys = keys_shown(screen)
        if keys == self._keys_shown:
            return
        self._keys_shown = keys
        super().bindings_changed(screen)


def keys_shown(screen: Screen[Any]) -> KeysShown:
    """What a footer on ``screen`` would show: each active binding's key, display, action,
    label, whether shown and enabled, its group and tooltip, in order."""
    app = screen.app
    return tuple(
        (
            binding.key,
            app.get_key_display(binding),
            binding.action,
            binding.description,
            binding.show,
            binding.group,
            enabled,
            tooltip,
        )
        for _node, binding, enabled, tooltip in screen.active_bindings.values()
    )
