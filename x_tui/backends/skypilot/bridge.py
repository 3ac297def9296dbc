"""x-tui's side of the SkyPilot bridge: find SkyPilot's interpreter and talk JSON with sky_sdk.py.

SkyPilot is never imported into x-tui's process. One bridge, ``<sky python> -I sky_sdk.py
--serve``, is started the first time x-tui asks SkyPilot anything and then answers every request
of this x-tui process over its pipes (one JSON line per request and per event, tagged with the
request's id; see that module for the protocol), so SkyPilot is imported once, not once per
question. It is shared by every :class:`Bridge` of the process with the same interpreter and
environment, and it is restarted after a crash or a hang: a request whose bridge died is sent
again to a fresh one if it only reads (:data:`IDEMPOTENT`), and one that ran past its deadline
retires its bridge (it ends once its other requests have), so the next request gets a fresh one.
The bridge ends when x-tui closes its standard input (at exit, :func:`close_bridges`) or dies
(standard input ends, and the bridge also watches its parent's pid), never left behind.

A launch is never sent to the serving bridge: it runs one-shot as before, in a session of its own
(see :meth:`Bridge.launch`), so its crash safety does not depend on x-tui's.
SkyPilot's interpreter is the ``sky_python`` setting, else the ``python`` beside the ``sky``
command: only the ``sky`` link is resolved, never the ``python`` (in a uv or pipx tool
environment ``bin/python`` links to the base interpreter, which cannot import ``sky``), and when
there is no ``python`` beside it the ``sky`` script's ``#!`` line names it.

Failures become :class:`~x_tui.compute.worker.errors.UserError` subclasses with one line each:
SkyPilot missing or unusable and no enabled cloud are ``BackendUnavailableError``; anything
SkyPilot refused or did not answer in time is ``ProviderError``. A cluster SkyPilot does not
know is :class:`ClusterGone`, which the backend handles.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import json
import os
import queue
import shlex
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

from x_tui.compute.worker.errors import BackendUnavailableError, ProviderError
from x_tui.compute.worker.records import JsonValue

SCRIPT: Final = Path(__file__).with_name("sky_sdk.py")
"""The bridge script SkyPilot's interpreter runs."""

_STDERR_TAIL = 4000

IDEMPOTENT: Final = frozenset(
    {
        "probe",
        "launch_state",
        "launch_wait",
        "poll",
        "queue",
        "logs",
        "ssh_config",
        "catalog",
        "read_object",
    }
)
"""Operations that only read: sent again, once, to a fresh bridge when theirs died."""

CLOSE_SECONDS: Final = 2.0
"""How long a bridge is given to end after its standard input is closed, before it is killed."""


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


class Unsupported(Exception):
    """SkyPilot's environment lacks what the operation needs (a cloud's SDK, say)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Event:
    """One line the bridge script wrote.

    Attributes:
        kind: ``request``, ``chunk``, ``done`` or ``error``.
        data: The whole event.
    """

    kind: str
    data: Mapping[str, JsonValue]

    @property
    def request(self) -> JsonValue:
        """The id of the request it answers (``None`` from a one-shot bridge)."""
        return self.data.get("id")


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


_DIED: Final = object()
"""Put on a request's queue when its bridge ended without answering it."""


class _Server:
    """One serving bridge process and the requests it is answering."""

    def __init__(self, command: list[str], *, cloud: str | None) -> None:
        try:
            self.process = subprocess.Popen(
                [*command, "-I", str(SCRIPT), "--serve"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                encoding="utf-8",
                errors="replace",
                start_new_session=True,  # a terminal's Ctrl-C or hangup reaches x-tui only
            )
        except OSError as error:
            raise BackendUnavailableError(
                f"SkyPilot's interpreter {command[0]} cannot start ({error.strerror or error}); "
                + install_hint(cloud)
            ) from None
        self.environment = _environment_key()
        self.retiring = False
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._pending: dict[int, queue.SimpleQueue[object]] = {}
        self._ended = False
        self._stderr, self._stderr_thread = _drain(self.process.stderr)
        threading.Thread(target=self._read, name="x-tui sky bridge", daemon=True).start()

    @property
    def usable(self) -> bool:
        """Whether new requests may go to it."""
        return not self._ended and not self.retiring and self.process.poll() is None

    def stderr_tail(self) -> str:
        """The end of what it wrote on standard error (all of it, once it has ended)."""
        # Once the process is gone, the rest of its standard error is near: a send can find the
        # process dead (a broken pipe) before the reading thread has seen it end.
        if self._ended or self.process.poll() is not None:
            self._stderr_thread.join(5.0)
        return "".join(self._stderr)

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            event = _parse(line)
            if event is None or not isinstance(event.request, int):
                continue
            with self._lock:
                answers = self._pending.get(event.request)
            if answers is not None:
                answers.put(event)
        with self._lock:
            self._ended = True
            waiting = list(self._pending.values())
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(CLOSE_SECONDS)
        for answers in waiting:
            answers.put(_DIED)

    def send(self, op: str, args: Mapping[str, JsonValue]) -> tuple[int, queue.SimpleQueue[object]]:
        """Send a request; its id and the queue its events arrive on (``_DIED`` if it ends)."""
        answers: queue.SimpleQueue[object] = queue.SimpleQueue()
        with self._lock:
            request_id = next(self._ids)
            self._pending[request_id] = answers
            ended = self._ended
            if not ended:
                ended = not self._write({"id": request_id, "op": op, "args": dict(args)})
        if ended:
            answers.put(_DIED)
        return request_id, answers

    def _write(self, message: Mapping[str, JsonValue]) -> bool:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(message) + "\n")
            self.process.stdin.flush()
        except (OSError, ValueError):
            return False
        return True

    def cancel(self, request_id: int) -> None:
        """Tell it nobody reads this request's answer any more (a stream stops there)."""
        with self._lock:
            if not self._ended:
                self._write({"id": request_id, "cancel": True})

    def done(self, request_id: int) -> None:
        """Forget the request; a retiring bridge with nothing left to answer is closed."""
        with self._lock:
            self._pending.pop(request_id, None)
            idle = not self._pending
        if idle and self.retiring:
            self.close(wait=False)

    def retire(self) -> None:
        """Take no new requests; close once those in flight are answered (now, if none are)."""
        self.retiring = True
        with self._lock:
            idle = not self._pending
        if idle:
            self.close(wait=False)

    def close(self, *, wait: bool = True) -> None:
        """Close its standard input, which ends it; kill it if it has not ended soon after."""
        with self._lock, contextlib.suppress(OSError, ValueError):
            assert self.process.stdin is not None
            self.process.stdin.close()
        if wait:
            self._reap()
        else:
            threading.Thread(target=self._reap, daemon=True).start()

    def _reap(self) -> None:
        try:
            self.process.wait(CLOSE_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


_SERVERS: dict[tuple[str, ...], _Server] = {}
_RETIRED: list[_Server] = []
_SERVERS_LOCK = threading.Lock()


def _environment_key() -> int:
    return hash(frozenset(os.environ.items()))


def _server_for(command: list[str], *, cloud: str | None) -> _Server:
    """The serving bridge of ``command`` in this environment, started if there is none."""
    key = tuple(command)
    with _SERVERS_LOCK:
        server = _SERVERS.get(key)
        if server is not None and server.usable and server.environment == _environment_key():
            return server
        if server is not None:  # ended, hung, or started with another environment
            server.retire()
            _RETIRED.append(server)
        server = _SERVERS[key] = _Server(command, cloud=cloud)
        _RETIRED[:] = [old for old in _RETIRED if old.process.poll() is None]
        return server


def bridge_pids() -> list[int]:
    """The process ids of this process's serving bridges that have not ended (for tests)."""
    with _SERVERS_LOCK:
        servers = [*_SERVERS.values(), *_RETIRED]
    return [server.process.pid for server in servers if server.process.poll() is None]


def close_bridges() -> None:
    """End every serving bridge of this process (registered to run at exit)."""
    with _SERVERS_LOCK:
        servers = [*_SERVERS.values(), *_RETIRED]
        _SERVERS.clear()
        _RETIRED.clear()
    for server in servers:
        server.close(wait=False)
    deadline = time.monotonic() + CLOSE_SECONDS
    for server in servers:
        try:
            server.process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            server.process.kill()


atexit.register(close_bridges)


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

    def _server(self) -> _Server:
        return _server_for(self.interpreter(), cloud=self._cloud)

    def call(
        self, op: str, args: Mapping[str, JsonValue], *, what: str, seconds: float | None = None
    ) -> JsonValue:
        """Run one operation in the serving bridge and return its answer.

        A read (:data:`IDEMPOTENT`) whose bridge died before answering is sent once more, to a
        fresh bridge; any other operation is never sent twice.

        Args:
            op: The operation (see ``sky_sdk.OPERATIONS``; never ``launch``).
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
        tries = 2 if op in IDEMPOTENT else 1
        for attempt in range(tries):
            server = self._server()
            request_id, answers = server.send(op, args)
            deadline = time.monotonic() + limit
            try:
                event = _next_event(answers, deadline)
                while isinstance(event, Event) and event.kind not in ("done", "error"):
                    event = _next_event(answers, deadline)
            finally:
                server.done(request_id)
            if event is None:
                server.retire()
                raise ProviderError(f"SkyPilot did not answer within {limit:g} s while {what}")
            if event is _DIED:
                if attempt + 1 < tries:
                    continue
                return _answer([], server.stderr_tail(), what=what)
            assert isinstance(event, Event)
            return _answer([event], "", what=what)
        raise AssertionError("unreachable")  # pragma: no cover

    def stream(
        self, op: str, args: Mapping[str, JsonValue], *, what: str, seconds: float | None = None
    ) -> Iterator[str]:
        """Run a streaming operation in the serving bridge, yielding each chunk; closing stops it.

        A stream whose bridge died before its first chunk is started once more.

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
        deadline = None if seconds is None else time.monotonic() + seconds
        for attempt in range(2):
            server = self._server()
            request_id, answers = server.send(op, args)
            yielded = False
            final: object = None
            try:
                while True:
                    event = _next_event(answers, deadline)
                    if isinstance(event, Event) and event.kind == "chunk":
                        text = event.data.get("text")
                        if isinstance(text, str):
                            yielded = True
                            yield text
                        continue
                    if isinstance(event, Event) and event.kind not in ("done", "error"):
                        continue
                    final = event
                    break
            finally:
                if final is None:
                    server.cancel(request_id)
                server.done(request_id)
            if final is None:
                server.retire()
                raise ProviderError(f"SkyPilot did not answer within {seconds:g} s while {what}")
            if final is _DIED:
                if attempt == 0 and not yielded:
                    continue
                _answer([], server.stderr_tail(), what=what)
                return
            assert isinstance(final, Event)
            _answer([final], "", what=what)
            return

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


def _next_event(answers: queue.SimpleQueue[object], deadline: float | None) -> object:
    """The request's next event, ``_DIED``, or ``None`` once ``deadline`` passed."""
    try:
        if deadline is None:
            return answers.get()
        return answers.get(timeout=max(0.0, deadline - time.monotonic()))
    except queue.Empty:
        return None


def _drain(stream: IO[str] | None) -> tuple[list[str], threading.Thread]:
    """Read a stream to its end in a thread, keeping its last few thousand characters."""
    kept: list[str] = []
    if stream is None:
        nothing = threading.Thread(target=lambda: None)
        nothing.start()
        return kept, nothing

    def read() -> None:
        size = 0
        for line in stream:
            kept.append(line)
            size += len(line)
            while size > _STDERR_TAIL and len(kept) > 1:
                size -= len(kept.pop(0))

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return kept, thread


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
    raise failure(final.data, what=what)


def failure(event: Mapping[str, JsonValue], *, what: str) -> Exception:
    """The exception a bridge's error event stands for.

    Args:
        event: The event (``kind``, ``type``, ``message``).
        what: What was being done, for the message.

    Returns:
        :class:`ClusterGone` for a cluster SkyPilot does not know, :class:`Unsupported` for what
        SkyPilot's environment cannot do, ``BackendUnavailableError``
        for no enabled cloud or an unusable SkyPilot, else ``ProviderError``.
    """
    kind = str(event.get("kind"))
    message = f"{event.get('type')}: {event.get('message')}"
    if kind == "missing_cluster":
        return ClusterGone(message)
    if kind == "unsupported":
        return Unsupported(message)
    if kind == "no_cloud":
        return BackendUnavailableError(str(event.get("message")))
    if kind == "incompatible":
        return BackendUnavailableError(
            f"SkyPilot's interpreter cannot be used ({event.get('message')}); " + install_hint(None)
        )
    return ProviderError(f"SkyPilot failed while {what}: {message}")
