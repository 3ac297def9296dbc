"""x-tui's side of the SkyPilot bridge: find SkyPilot's interpreter and talk JSON with sky_sdk.py.

SkyPilot is never imported into x-tui's process. Each operation starts ``<sky python> -I
sky_sdk.py`` (see that module for the protocol), sends one request and reads JSON events back.
SkyPilot's interpreter is the ``sky_python`` setting, else the ``python`` beside the ``sky``
command: only the ``sky`` link is resolved, never the ``python`` (in a uv or pipx tool
environment ``bin/python`` links to the base interpreter, which cannot import ``sky``), and when
there is no ``python`` beside it the ``sky`` script's ``#!`` line names it.

Failures become :class:`~x_tui.compute.errors.UserError` subclasses with one line each:
SkyPilot missing or unusable and no enabled cloud are ``BackendUnavailableError``; anything
SkyPilot refused or did not answer in time is ``ProviderError``. A cluster SkyPilot does not
know is :class:`ClusterGone`, which the backend handles.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

from x_tui.compute.errors import BackendUnavailableError, ProviderError
from x_tui.compute.records import JsonValue

SCRIPT: Final = Path(__file__).with_name("sky_sdk.py")
"""The bridge script SkyPilot's interpreter runs."""

_STDERR_TAIL = 4000


def install_hint(cloud: str | None) -> str:
    """How to install SkyPilot, as one sentence."""
    extra = cloud or "<cloud>"
    return (
        f'install it with `uv tool install "skypilot[{extra}]"` (the extra is your cloud:'
        " gcp, aws, azure, kubernetes, runpod...), or set sky or sky_python in"
        " [tool.substrax.compute.backends.skypilot]"
    )


class ClusterGone(Exception):
    """SkyPilot does not know the cluster (never launched, torn down, or autodowned)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Event:
    """One line the bridge script wrote.

    Attributes:
        kind: ``request``, ``chunk``, ``done`` or ``error``.
        data: The whole event.
    """

    kind: str
    data: Mapping[str, JsonValue]


def _shebang(script: Path) -> list[str] | None:
    try:
        with script.open("rb") as stream:
            first = stream.readline(4096)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = shlex.split(first[2:].decode("utf-8", "replace").strip())
    return words or None


def find_interpreter(sky: str, sky_python: str | None, *, cloud: str | None = None) -> list[str]:
    """The command that starts SkyPilot's interpreter.

    Args:
        sky: The ``sky`` setting: the command, or ``<python> <script>`` whose first word is the
            interpreter.
        sky_python: The ``sky_python`` setting, which wins when set.
        cloud: The configured cloud, for the install hint.

    Returns:
        The interpreter's argv.

    Raises:
        BackendUnavailableError: If neither names an interpreter that exists here.
    """
    if sky_python:
        path = shutil.which(os.path.expanduser(sky_python))
        if path is None:
            raise BackendUnavailableError(
                f"SkyPilot's interpreter sky_python = {sky_python!r} does not exist here; "
                + install_hint(cloud)
            )
        return [path]
    words = shlex.split(sky)
    if len(words) > 1:
        return [words[0]]
    found = shutil.which(os.path.expanduser(words[0]))
    if found is None:
        raise BackendUnavailableError(
            f"SkyPilot is not installed here (no {words[0]!r} command on PATH); "
            + install_hint(cloud)
        )
    script = Path(os.path.realpath(found))  # resolve the sky link only, never the python
    beside = script.parent / "python"
    if os.access(beside, os.X_OK):
        return [str(beside)]
    named = _shebang(script)
    if named is not None:
        return named
    raise BackendUnavailableError(
        f"cannot tell which Python runs {found}: there is no python beside it and no #! line; "
        + install_hint(cloud)
    )


class Bridge:
    """Runs operations in SkyPilot's interpreter.

    The deadlines are attributes, so a caller (or a test) may change them on an instance.
    """

    call_seconds: float = 180.0
    """How long one operation may take (the first one may start SkyPilot's API server)."""
    launch_seconds: float = 1800.0
    """How long a launch may take to be accepted (SkyPilot uploads the workdir first)."""

    def __init__(self, *, sky: str, sky_python: str | None, cloud: str | None = None) -> None:
        """Remember where SkyPilot is; nothing is started yet.

        Args:
            sky: The ``sky`` setting.
            sky_python: The ``sky_python`` setting.
            cloud: The configured cloud, for the install hint.
        """
        self._sky = sky
        self._sky_python = sky_python
        self._cloud = cloud
        self._interpreter: list[str] | None = None

    def interpreter(self) -> list[str]:
        """SkyPilot's interpreter, found once.

        Raises:
            BackendUnavailableError: If SkyPilot is not installed here.
        """
        if self._interpreter is None:
            self._interpreter = find_interpreter(self._sky, self._sky_python, cloud=self._cloud)
        return self._interpreter

    def _start(
        self,
        op: str,
        args: Mapping[str, JsonValue],
        *,
        session: bool,
        send: bool = True,
        stderr: IO[bytes] | None = None,
    ) -> subprocess.Popen[str]:
        command = [*self.interpreter(), "-I", str(SCRIPT)]
        try:
            process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr if stderr is not None else subprocess.PIPE,
                text=True,
                encoding="utf-8",
                errors="replace",
                start_new_session=session,
            )
        except OSError as error:
            raise BackendUnavailableError(
                f"SkyPilot's interpreter {command[0]} cannot start ({error.strerror or error}); "
                + install_hint(self._cloud)
            ) from None
        if send:
            assert process.stdin is not None
            process.stdin.write(_request(op, args))
            process.stdin.flush()
        return process

    def call(
        self, op: str, args: Mapping[str, JsonValue], *, what: str, seconds: float | None = None
    ) -> JsonValue:
        """Run one operation and return its answer.

        Args:
            op: The operation (see ``sky_sdk.OPERATIONS``).
            args: Its arguments.
            what: What it does, for messages ("reading the queue of sx-...").
            seconds: Its deadline; :attr:`call_seconds` when ``None``.

        Returns:
            The answer's value.

        Raises:
            BackendUnavailableError: If SkyPilot is missing or unusable, or no cloud is enabled.
            ClusterGone: If SkyPilot does not know the cluster.
            ProviderError: If SkyPilot failed or did not answer in time.
        """
        limit = self.call_seconds if seconds is None else seconds
        process = self._start(op, args, session=False, send=False)
        try:
            stdout, stderr = process.communicate(_request(op, args), timeout=limit)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise ProviderError(
                f"SkyPilot did not answer within {limit:g} s while {what}"
            ) from None
        events = [_parse(line) for line in stdout.splitlines() if line.strip()]
        return _answer([event for event in events if event is not None], stderr, what=what)

    def stream(
        self, op: str, args: Mapping[str, JsonValue], *, what: str, seconds: float | None = None
    ) -> Iterator[str]:
        """Run a streaming operation, yielding each chunk of text; closing stops it.

        Args:
            op: The operation (``logs`` or ``launch_wait``).
            args: Its arguments.
            what: What it does, for messages.
            seconds: A deadline for the whole stream (one that does not follow); none when
                ``None``.

        Yields:
            The text of each chunk, as SkyPilot wrote it.

        Raises:
            BackendUnavailableError: If SkyPilot is missing or unusable.
            ClusterGone: If SkyPilot does not know the cluster.
            ProviderError: If the stream failed.
        """
        process = self._start(op, args, session=False)
        assert process.stdin is not None
        assert process.stdout is not None
        process.stdin.close()
        stderr = _drain(process.stderr)
        final: list[Event] = []
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            process.kill()

        timer = threading.Timer(seconds, expire) if seconds is not None else None
        if timer is not None:
            timer.start()
        try:
            for line in process.stdout:
                event = _parse(line)
                if event is None:
                    continue
                if event.kind == "chunk":
                    text = event.data.get("text")
                    if isinstance(text, str):
                        yield text
                elif event.kind in ("done", "error"):
                    final.append(event)
        finally:
            if timer is not None:
                timer.cancel()
            if process.poll() is None:
                process.kill()
            process.wait()
        if expired.is_set():
            raise ProviderError(f"SkyPilot did not answer within {seconds:g} s while {what}")
        _answer(final, "".join(stderr), what=what)

    def launch(
        self,
        args: Mapping[str, JsonValue],
        *,
        log: Path,
        what: str,
        on_request: Callable[[str], None] | None = None,
    ) -> str:
        """Send a launch, and acknowledge SkyPilot's request id once it is recorded.

        The bridge records the request id itself (``args["record"]``) before it says it. It runs
        in a session of its own, with its standard error in ``log``, so neither a hangup or
        Ctrl-C of x-tui's terminal nor x-tui's death cuts a launch half-sent; if x-tui never
        acknowledges the request id, the bridge cancels the request and tears the cluster down.

        Args:
            args: The launch's arguments (task, cluster, down, idle_minutes, record, cloud).
            log: Where SkyPilot's own output goes (the end of it is quoted in a failure).
            what: What is launched, for messages.
            on_request: Called with the request id before it is acknowledged.

        Returns:
            The request id.

        Raises:
            BackendUnavailableError: If SkyPilot is missing or unusable, or no cloud is enabled.
            ProviderError: If SkyPilot refused the launch or did not accept it in time.
        """
        with log.open("ab") as stderr_file:
            process = self._start("launch", args, session=True, stderr=stderr_file)
        assert process.stdin is not None
        assert process.stdout is not None
        timer = threading.Timer(self.launch_seconds, process.kill)
        timer.start()
        events: list[Event] = []
        try:
            for line in process.stdout:
                event = _parse(line)
                if event is None:
                    continue
                if event.kind == "request":
                    if on_request is not None:
                        on_request(str(event.data.get("request_id")))
                    process.stdin.write(json.dumps({"ack": True}) + "\n")
                    process.stdin.flush()
                    process.stdin.close()
                elif event.kind in ("done", "error"):
                    events.append(event)
            process.wait()
        finally:
            timer.cancel()
            with contextlib.suppress(OSError):
                process.stdin.close()
        if not events and process.returncode is not None and process.returncode < 0:
            raise ProviderError(
                f"SkyPilot did not accept the launch within {self.launch_seconds:g} s while {what}"
            )
        value = _answer(events, _tail(log), what=what)
        if not isinstance(value, Mapping) or not isinstance(value.get("request_id"), str):
            raise ProviderError(f"SkyPilot's bridge answered {value!r} while {what}")
        return str(value["request_id"])


def _tail(path: Path) -> str:
    try:
        with path.open("rb") as stream:
            stream.seek(max(0, path.stat().st_size - _STDERR_TAIL))
            return stream.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _request(op: str, args: Mapping[str, JsonValue]) -> str:
    return json.dumps({"op": op, "args": dict(args)}) + "\n"


def _drain(stream: IO[str] | None) -> list[str]:
    """Read a stream to its end in a thread, keeping its last few thousand characters."""
    kept: list[str] = []
    if stream is None:
        return kept

    def read() -> None:
        size = 0
        for line in stream:
            kept.append(line)
            size += len(line)
            while size > _STDERR_TAIL and len(kept) > 1:
                size -= len(kept.pop(0))

    threading.Thread(target=read, daemon=True).start()
    return kept


def _parse(line: str) -> Event | None:
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("event"), str):
        return None
    return Event(kind=data["event"], data=data)


def _answer(events: list[Event], stderr: str, *, what: str) -> JsonValue:
    final = next((event for event in reversed(events) if event.kind in ("done", "error")), None)
    if final is None:
        tail = " ".join(stderr.split())[-600:]
        raise ProviderError(
            f"SkyPilot's interpreter ended without an answer while {what}"
            + (f": {tail}" if tail else "")
        )
    if final.kind == "done":
        return final.data.get("value")
    kind = str(final.data.get("kind"))
    message = f"{final.data.get('type')}: {final.data.get('message')}"
    if kind == "missing_cluster":
        raise ClusterGone(message)
    if kind == "no_cloud":
        raise BackendUnavailableError(str(final.data.get("message")))
    if kind == "incompatible":
        raise BackendUnavailableError(
            f"SkyPilot's interpreter cannot be used ({final.data.get('message')}); "
            + install_hint(None)
        )
    raise ProviderError(f"SkyPilot failed while {what}: {message}")
