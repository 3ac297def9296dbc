"""How a run's state looks, in one place: a glyph and a word, and a colour from the theme.

Each state has a label that does not rest on colour (``▶ running``, ``✗ failed``) and a component
class (``run-state--running``) whose colour comes from the theme's variables (``$success``,
``$error``, ``$warning``, ``$primary``, ``$text-muted``, ``$accent``), so a light theme, a
colour-blind friendly theme or ``NO_COLOR`` restyles every state at once. A widget that shows
states adds :data:`STATE_COMPONENTS` to its ``COMPONENT_CLASSES`` and :func:`state_css` to its
``DEFAULT_CSS``, then builds its ``Text`` with the styles :func:`state_styles` resolves from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rich.style import Style
from textual.widget import Widget

from x_tui.compute.backend import RunState

STATE_LABELS: Mapping[RunState | None, str] = {
    RunState.SUBMITTING: "… submitting",
    RunState.PENDING: "… pending",
    RunState.RUNNING: "▶ running",
    RunState.SUCCEEDED: "✓ succeeded",
    RunState.FAILED: "✗ failed",
    RunState.CANCELLED: "■ cancelled",
    RunState.PREEMPTED: "⚡ preempted",
    None: "· checking",
}
"""Each state's glyph and word (``None``: before its backend has answered)."""


def state_label(state: RunState | None) -> str:
    """The glyph and word of ``state`` (a state added later reads ``· <its name>``)."""
    label = STATE_LABELS.get(state)
    return label if label is not None else f"· {state.value if state is not None else ''}"


UNKNOWN_LABEL = "? unknown"
"""A run whose backend could not say where it is."""

UNKNOWN = "unknown"
"""The name of the component class of a run whose backend could not say."""


def component(state: RunState | str | None) -> str:
    """The component class of a state (or of :data:`UNKNOWN`): ``run-state--running``."""
    name = state.value if isinstance(state, RunState) else state or "checking"
    return f"run-state--{name}"


STATE_COMPONENTS: frozenset[str] = frozenset(
    {*(component(state) for state in STATE_LABELS), component(UNKNOWN)}
)
"""Every state's component class, for a widget's ``COMPONENT_CLASSES``."""

_RULES: Mapping[str, str] = {
    component(RunState.RUNNING): "color: $primary; text-style: bold;",
    component(RunState.SUCCEEDED): "color: $success;",
    component(RunState.FAILED): "color: $error; text-style: bold;",
    component(RunState.CANCELLED): "color: $warning;",
    component(RunState.PREEMPTED): "color: $warning; text-style: bold;",
    component(RunState.SUBMITTING): "color: $text-muted;",
    component(RunState.PENDING): "color: $text-muted;",
    component(None): "color: $text-muted;",
    component(UNKNOWN): "color: $accent; text-style: bold;",
}


def state_css(widget: str) -> str:
    """The state component classes' rules for the widget type named ``widget``, in Textual CSS."""
    return "\n".join(f"{widget} > .{name} {{ {rule} }}" for name, rule in _RULES.items())


@dataclass(frozen=True, slots=True)
class StateStyles:
    """The states' styles as one widget's CSS resolves them now (only what the rules set).

    Attributes:
        styles: Each state's style, and :data:`UNKNOWN`'s.
    """

    styles: Mapping[RunState | str | None, Style]

    def of(self, state: RunState | None, *, unknown: bool = False) -> Style:
        """The style of ``state``, or of an unknown state (a state without a rule: no style)."""
        return self.styles.get(UNKNOWN if unknown else state, Style())


def state_styles(widget: Widget) -> StateStyles:
    """The states' styles from ``widget``'s component classes (see :func:`state_css`)."""
    keys: list[RunState | str | None] = [*STATE_LABELS, UNKNOWN]
    return StateStyles(
        {key: widget.get_component_rich_style(component(key), partial=True) for key in keys}
    )
