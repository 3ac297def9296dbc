"""The fake service's state, kept on disk under ``$FAKE_MODAL_ROOT`` so child processes share it.

- ``api.jsonl``: every public fake API call (name, positional count, keyword names), and every
  call that would reach Modal's server (``{"rpc": ...}``);
- ``volumes/<name>/``: a directory per Volume;
- ``apps/<app_id>.json``, ``.log`` (the containers' output), ``.stopped``;
- ``calls/<call_id>.json`` (the container's pid), ``.payload``, ``.result``;
- ``images/<n>/``: what ``copy=True`` layers baked in.

Behaviours the tests switch on through the environment:

- no ``MODAL_TOKEN_ID``/``MODAL_TOKEN_SECRET``: every RPC raises ``AuthError("Token missing...")``;
- ``FAKE_MODAL_UNREACHABLE=SECONDS``: every RPC waits that long, then raises ``ConnectionError``;
- ``FAKE_MODAL_BUILDER_VERSION``: the workspace's image builder (``2026.10`` by default);
- ``FAKE_MODAL_APP_LINGERS=1``: a detached app does not stop when its last call ends;
- ``FAKE_MODAL_BUILD_SECONDS=SECONDS``: building an app's images takes that long;
- ``FAKE_MODAL_LOGS_START_SECONDS=SECONDS``: ``modal app logs`` takes that long to connect.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import secrets
import signal
import string
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

TOKEN_MISSING = (
    "Token missing. Could not authenticate client. If you have token credentials, see"
    " modal.com/docs/reference/modal.config for setup help. If you are a new user, register an"
    " account at modal.com, then run `modal token new`."
)


def root() -> Path:
    """The fake service's directory."""
    value = os.environ.get("FAKE_MODAL_ROOT")
    if not value:
        raise RuntimeError("FAKE_MODAL_ROOT is not set: the fake modal runs only in the tests")
    path = Path(value)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _append(record: dict[str, Any]) -> None:
    with (root() / "api.jsonl").open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")


def recorded(name: str, *, bound: bool = True) -> Callable[[F], F]:
    """Record each call of the wrapped API as ``name`` with its argument shapes.

    Args:
        name: The API's name, such as ``"Image.uv_sync"``.
        bound: Whether the first argument is ``self`` or ``cls``, which is not counted.
    """

    def wrap(function: F) -> F:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            positional = len(args) - (1 if bound else 0)
            _append({"api": name, "positional": positional, "keywords": sorted(kwargs)})
            return function(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return wrap


def rpc(what: str) -> None:
    """A call that reaches Modal's server: refuse it as Modal would, or let it through."""
    _append({"rpc": what})
    from modal import exception

    delay = os.environ.get("FAKE_MODAL_UNREACHABLE")
    if delay:
        time.sleep(float(delay))
        raise exception.ConnectionError("Could not connect to the Modal server.")
    if not (os.environ.get("MODAL_TOKEN_ID") and os.environ.get("MODAL_TOKEN_SECRET")):
        raise exception.AuthError(TOKEN_MISSING)


def new_id(prefix: str, length: int) -> str:
    """An id in Modal's form, such as ``ap-`` and 22 letters or digits."""
    alphabet = string.ascii_letters + string.digits
    return prefix + "".join(secrets.choice(alphabet) for _ in range(length))


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` as JSON atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    partial.write_text(json.dumps(data), encoding="utf-8")
    os.replace(partial, path)


def read_json(path: Path) -> Any:
    """Read a JSON file, or ``None`` when it is not there."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


def app_stopped(app_id: str) -> bool:
    """Whether the app was stopped."""
    return (root() / "apps" / f"{app_id}.stopped").exists()


def stop_app(app_id: str) -> None:
    """Stop an app: mark it and kill what runs in its containers."""
    (root() / "apps").mkdir(parents=True, exist_ok=True)
    (root() / "apps" / f"{app_id}.stopped").touch()
    for record in (root() / "calls").glob("*.json"):
        data = read_json(record)
        if data and data.get("app_id") == app_id:
            kill_container(int(data["pid"]))
            settle(record.stem, {"ok": False, "kind": "terminated"})


def settle(call_id: str, result: dict[str, Any]) -> None:
    """Record a call's result unless it already has one."""
    path = root() / "calls" / f"{call_id}.result"
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(result))


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(parent, []).append(int(entry.name))
    return tree


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def kill_container(pid: int) -> None:
    """Kill a container: its process and every process below it, as Modal's terminate does."""
    tree = _children()
    doomed = [pid]
    index = 0
    while index < len(doomed):
        doomed.extend(tree.get(doomed[index], []))
        index += 1
    for victim in doomed:
        with contextlib.suppress(ProcessLookupError):
            os.kill(victim, signal.SIGKILL)
