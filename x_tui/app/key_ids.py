"""Every binding id of x-tui, for ``[keys]`` in the settings file: found, checked, tabulated.

The ids come from the ``BINDINGS`` of every screen, widget and app class in ``x_tui.app`` and
``x_tui.widgets`` (nothing is listed by hand), so the README's table (``python -m
x_tui.app.key_ids`` prints it), the check of the user's ``[keys]`` and the bindings cannot drift
apart; a test compares the README with :func:`keys_table`.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from textual.app import App
from textual.binding import Binding
from textual.dom import DOMNode

PACKAGES = ("x_tui.app", "x_tui.widgets")
"""The packages whose classes declare x-tui's bindings."""


@dataclass(frozen=True, slots=True)
class KeyId:
    """One binding id.

    Attributes:
        id: The id, as ``[keys]`` names it (``"main.submit"``).
        keys: Its default keys, comma separated, as Textual names them.
        description: What it does.
        where: The classes that bind it (their help titles where they have one).
    """

    id: str
    keys: str
    description: str
    where: str


def _subclasses(cls: type) -> Iterator[type]:
    sub: type
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _import_all() -> None:
    for name in PACKAGES:
        package = importlib.import_module(name)
        for module in pkgutil.iter_modules(package.__path__, f"{name}."):
            if module.name.rsplit(".", 1)[-1] != "__main__":
                importlib.import_module(module.name)


def _where(cls: type) -> str:
    title = getattr(cls, "HELP_TITLE", None)
    return title if isinstance(title, str) and title else cls.__name__


def key_ids() -> dict[str, KeyId]:
    """Every binding id x-tui declares, by id (the first class declaring an id names it)."""
    _import_all()
    found: dict[str, KeyId] = {}
    classes = sorted(
        {cls for cls in _subclasses(DOMNode) if cls.__module__.startswith("x_tui.")},
        key=lambda cls: (not issubclass(cls, App), cls.__module__, cls.__qualname__),
    )
    for cls in classes:
        for binding in cls.__dict__.get("BINDINGS", ()):
            if not isinstance(binding, Binding) or binding.id is None:
                continue
            earlier = found.get(binding.id)
            if earlier is not None:
                if _where(cls) not in earlier.where.split(", "):
                    where = f"{earlier.where}, {_where(cls)}"
                    found[binding.id] = KeyId(earlier.id, earlier.keys, earlier.description, where)
                continue
            found[binding.id] = KeyId(
                id=binding.id,
                keys=binding.key,
                description=binding.description or binding.action,
                where=_where(cls),
            )
    return dict(sorted(found.items()))


def keys_table(ids: Mapping[str, KeyId] | None = None) -> str:
    """The README's table of binding ids, in Markdown.

    Args:
        ids: The ids; :func:`key_ids` when ``None``.
    """
    rows = ["| id | default keys | what | where |", "| --- | --- | --- | --- |"]
    for key_id in (ids or key_ids()).values():
        keys = ", ".join(f"`{key.strip()}`" for key in key_id.keys.split(","))
        rows.append(f"| `{key_id.id}` | {keys} | {key_id.description} | {key_id.where} |")
    return "\n".join(rows)


def unknown_key_ids(path: object, wanted: Iterable[str], known: Iterable[str]) -> list[str]:
    """A problem line for each id in ``wanted`` that is not a binding id, with "did you mean".

    Args:
        path: The settings file, named in each line.
        wanted: The ids the user's ``[keys]`` table names.
        known: Every binding id.

    Returns:
        One line per unknown id.
    """
    ids = sorted(known)
    problems = []
    for name in wanted:
        if name in ids:
            continue
        close = difflib.get_close_matches(name, ids, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else " (see the README for the ids)"
        problems.append(f"{path}: [keys] {name!r} is not a key id{hint}")
    return problems


if __name__ == "__main__":
    print(keys_table())
