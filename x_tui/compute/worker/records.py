"""Strict JSON read and write of the frozen record dataclasses (standard library only).

The on-disk encoding is substrax's: keys in field order, every field written (``null`` included),
tuples as arrays, enums as their values, floats always as JSON floats, UTC datetimes with a ``Z``.
Reading is strict: unknown keys are refused (unless a record opts out), a string is never read as
a number, a bool is not a number, an ``int`` field refuses ``1.0``, a ``float`` field accepts an
integer. Every refusal is a :class:`RecordError` naming the field's path and the value it got.

This module runs inside the worker on the remote machine, on any Python 3.10 or later: it must
import nothing outside the standard library.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import enum
import json
import math
import os
import sys
import tempfile
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar, Union

T = TypeVar("T")

JsonValue = Any
"""Any value JSON can hold: str, int, float, bool, None, lists and objects of them."""

IGNORES_UNKNOWN_KEYS = "__ignores_unknown_keys__"
"""Set this class attribute to ``True`` on a record that silently ignores undeclared keys."""


class RecordError(ValueError):
    """A record that cannot be read: a missing, unknown or mistyped field, or a failed check."""


def dump_record(record: object) -> dict[str, JsonValue]:
    """Turn a record into the JSON object substrax writes for it.

    Args:
        record: A dataclass instance.

    Returns:
        A dict whose keys follow the field order, with every field present.

    Raises:
        TypeError: If ``record`` is not a dataclass instance.
    """
    if not dataclasses.is_dataclass(record) or isinstance(record, type):
        raise TypeError(f"a record is a dataclass instance, not {type(record).__name__}")
    hints = _hints(type(record))
    return {
        field.name: _dump_value(getattr(record, field.name), hints[field.name])
        for field in dataclasses.fields(record)
    }


def dumps_compact(record: object) -> str:
    """The record as substrax writes ``spec.json``: one line, default separators, no newline."""
    return json.dumps(dump_record(record))


def dumps_pretty(record: object) -> str:
    """The record as substrax writes handles and manifests: indented by 2, ending in a newline."""
    return json.dumps(dump_record(record), indent=2) + "\n"


def read_record(cls: type[T], data: object, *, where: str = "") -> T:
    """Read a record of type ``cls`` from its parsed JSON object, strictly.

    Args:
        cls: The record's dataclass.
        data: The parsed JSON value.
        where: The path of ``data`` inside a larger record, used in messages.

    Returns:
        The record, validated by its ``__post_init__`` like a constructed one.

    Raises:
        RecordError: If a key is missing, unknown or of the wrong type, or a check fails.
    """
    return typing.cast(T, _read_dataclass(cls, data, where))


def write_atomic(
    path: Path, text: str | bytes, *, step: Callable[[str], None] | None = None
) -> None:
    """Write ``text`` to ``path`` through a uniquely named partial file and a rename.

    Readers see the old file or the new one, never a torn one, even with concurrent writers.

    Args:
        path: The file to write.
        text: Its new content (text is written as UTF-8, bytes as they are).
        step: Called after each step (partial file made, written, renamed), with what was done;
            fault-injection tests stop the process there.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, partial = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    try:
        if step is not None:
            step(f"{path.name}: partial file made")
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8") if isinstance(text, str) else text)
            handle.flush()
            os.fsync(handle.fileno())
        if step is not None:
            step(f"{path.name}: partial file written")
        os.replace(partial, path)
        if step is not None:
            step(f"{path.name}: renamed into place")
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise


def format_datetime(value: dt.datetime) -> str:
    """ISO-8601 text, with ``Z`` for UTC and the fraction only when it is not zero."""
    text = value.isoformat()
    if text.endswith("+00:00"):
        text = text[: -len("+00:00")] + "Z"
    return text


def parse_datetime(text: str) -> dt.datetime:
    """Read ISO-8601 text with a ``Z`` or an offset; text without one is taken as UTC.

    Raises:
        ValueError: If the text is not an ISO-8601 date and time.
    """
    value = dt.datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    return value


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    cached = _HINTS.get(cls)
    if cached is None:
        module = sys.modules[cls.__module__]
        cached = typing.get_type_hints(cls, vars(module))
        _HINTS[cls] = cached
    return cached


def _dump_value(value: object, hint: Any) -> JsonValue:
    if value is None:
        return None
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dump_record(value)
    if isinstance(value, dt.datetime):
        return format_datetime(value)
    if isinstance(value, bool):
        return value
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, float) or (isinstance(value, int) and _expects_float(hint)):
        return float(value)
    if isinstance(value, (tuple, list)):
        item_hint = _item_hint(hint)
        return [_dump_value(item, item_hint) for item in value]
    if isinstance(value, Mapping):
        value_hint = _mapping_value_hint(hint)
        return {str(key): _dump_value(item, value_hint) for key, item in value.items()}
    return typing.cast(JsonValue, value)


def _expects_float(hint: Any) -> bool:
    return hint is float or float in _union_args(hint)


def _union_args(hint: Any) -> tuple[Any, ...]:
    if typing.get_origin(hint) in (Union, types.UnionType):
        return typing.get_args(hint)
    return ()


def _item_hint(hint: Any) -> Any:
    for candidate in (hint, *_union_args(hint)):
        args = typing.get_args(candidate)
        if typing.get_origin(candidate) in (tuple, list) and args:
            return args[0]
    return Any


def _mapping_value_hint(hint: Any) -> Any:
    for candidate in (hint, *_union_args(hint)):
        args = typing.get_args(candidate)
        if len(args) == 2 and typing.get_origin(candidate) in (dict, Mapping):
            return args[1]
    return Any


def _describe(value: object) -> str:
    text = json.dumps(value) if _is_json(value) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_json(value: object) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _at(where: str) -> str:
    return f"{where}: " if where else ""


def _read_dataclass(cls: type, data: object, where: str) -> object:
    if not isinstance(data, Mapping):
        raise RecordError(f"{_at(where)}expected an object, got {_describe(data)}")
    hints = _hints(cls)
    fields = {field.name: field for field in dataclasses.fields(cls) if field.init}
    unknown = [key for key in data if key not in fields]
    if unknown and not getattr(cls, IGNORES_UNKNOWN_KEYS, False):
        key = unknown[0]
        accepted = ", ".join(fields)
        raise RecordError(
            f"{_at(_join(where, str(key)))}unknown key {key!r}{_suggest(str(key), list(fields))}"
            f" (accepted: {accepted})"
        )
    values: dict[str, object] = {}
    for name, field in fields.items():
        path = _join(where, name)
        if name not in data:
            if (
                field.default is dataclasses.MISSING
                and field.default_factory is dataclasses.MISSING
            ):
                raise RecordError(f"{_at(path)}missing required key {name!r}")
            continue
        values[name] = _read_value(hints[name], data[name], path)
    try:
        return cls(**values)
    except RecordError:
        raise
    except (ValueError, TypeError) as error:
        raise RecordError(f"{_at(where)}{error}") from None


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _suggest(key: str, accepted: list[str]) -> str:
    import difflib

    close = difflib.get_close_matches(key, accepted, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _read_value(hint: Any, value: object, where: str) -> object:
    if hint is Any:
        if not _is_json(value):
            raise RecordError(f"{_at(where)}expected a JSON value, got {_describe(value)}")
        return value
    options = _union_args(hint)
    if options:
        if value is None and type(None) in options:
            return None
        concrete = [option for option in options if option is not type(None)]
        errors: list[RecordError] = []
        for option in concrete:
            try:
                return _read_value(option, value, where)
            except RecordError as error:
                errors.append(error)
        if len(errors) == 1:
            raise errors[0]
        raise RecordError(f"{_at(where)}expected {_type_name(hint)}, got {_describe(value)}")
    if hint is type(None):
        if value is not None:
            raise RecordError(f"{_at(where)}expected null, got {_describe(value)}")
        return None
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _read_dataclass(hint, value, where)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        accepted_values = [member.value for member in hint]
        if value not in accepted_values or isinstance(value, bool):
            raise RecordError(
                f"{_at(where)}expected one of {', '.join(map(repr, accepted_values))}, "
                f"got {_describe(value)}"
            )
        return hint(value)
    if hint in _SCALAR_READERS:
        return _SCALAR_READERS[hint](value, where)
    origin = typing.get_origin(hint)
    if origin in (tuple, list):
        if not isinstance(value, list):
            raise RecordError(f"{_at(where)}expected an array, got {_describe(value)}")
        item_hint = typing.get_args(hint)[0]
        items = [
            _read_value(item_hint, item, f"{where}[{index}]") for index, item in enumerate(value)
        ]
        return tuple(items) if origin is tuple else items
    if origin in (dict, Mapping):
        if not isinstance(value, Mapping):
            raise RecordError(f"{_at(where)}expected an object, got {_describe(value)}")
        value_hint = typing.get_args(hint)[1]
        return {
            str(key): _read_value(value_hint, item, _join(where, str(key)))
            for key, item in value.items()
        }
    raise TypeError(f"records cannot hold a field of type {hint!r}")


def _read_bool(value: object, where: str) -> object:
    if not isinstance(value, bool):
        raise RecordError(f"{_at(where)}expected true or false, got {_describe(value)}")
    return value


def _read_int(value: object, where: str) -> object:
    if isinstance(value, bool) or not isinstance(value, int):
        raise RecordError(f"{_at(where)}expected an integer, got {_describe(value)}")
    return value


def _read_float(value: object, where: str) -> object:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RecordError(f"{_at(where)}expected a number, got {_describe(value)}")
    if not math.isfinite(value):
        raise RecordError(f"{_at(where)}expected a finite number, got {_describe(value)}")
    return float(value)


def _read_str(value: object, where: str) -> object:
    if not isinstance(value, str):
        raise RecordError(f"{_at(where)}expected a string, got {_describe(value)}")
    return value


def _read_datetime(value: object, where: str) -> object:
    message = f"{_at(where)}expected an ISO-8601 date and time, got {_describe(value)}"
    if not isinstance(value, str):
        raise RecordError(message)
    try:
        return parse_datetime(value)
    except ValueError:
        raise RecordError(message) from None


_SCALAR_READERS: dict[Any, Any] = {
    bool: _read_bool,
    int: _read_int,
    float: _read_float,
    str: _read_str,
    dt.datetime: _read_datetime,
}


def _type_name(hint: Any) -> str:
    names = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}
    options = _union_args(hint) or (hint,)
    parts = []
    for option in options:
        if option is type(None):
            parts.append("null")
        elif option in names:
            parts.append(names[option])
        elif isinstance(option, type) and dataclasses.is_dataclass(option):
            parts.append("an object")
        else:
            parts.append(getattr(option, "__name__", str(option)))
    return " or ".join(parts)
