"""The processes of one run: the marker they inherit, how they are found, how they are signalled.

Every process a local run starts carries ``X_TUI_RUN=<run_id>:<nonce>`` in its environment: the
worker gets it at spawn, and every task and grandchild inherits it. The nonce is random and kept
in the run directory (:data:`MARKER_FILE`), so a process that merely mentions the run id, or
copies the variable's name, is never taken for one of the run's. The marker is read from
``/proc/<pid>/environ``, which Linux shows only for processes of the same user; where there is
no ``/proc`` nothing is found this way, and the backend falls back on the worker's pid.

While the worker lives it is the child subreaper of everything it starts
(``PR_SET_CHILD_SUBREAPER``, Linux only): a grandchild that calls ``setsid`` and loses its
parent moves to the worker, not to init, so the worker still finds it by walking its own tree.

What cannot be found: a process that clears its environment and leaves the worker's tree after
the worker is gone. Nothing on the machine then ties it to the run.

Standard library only, for Python 3.10 and later: it ships inside the worker zipapp. It never
reads or writes a run's files but its marker.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path

MARKER_VARIABLE = "X_TUI_RUN"
"""The environment variable that marks every process of a run."""

MARKER_FILE = "process-marker"
"""The file in the run directory that holds the run's marker, the variable's whole value."""

_PROC = Path("/proc")
_ENVIRON_CAP = 1 << 22  # Linux caps a process's arguments and environment far below this
_MARKER_CAP = 1024
_NONCE = re.compile(r"[0-9a-f]{32}")
_PR_SET_CHILD_SUBREAPER = 36
_KILL_ROUNDS = 20
_POLL_SECONDS = 0.02
_SUBREAPER = False  # set once by become_subreaper()
_SPARED: set[int] = set()  # the worker's own helpers (its nvidia-smi), never a task's stray
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def new_marker(run_id: str) -> str:
    """A fresh marker for run ``run_id``: its id and a random nonce.

    The nonce is 16 bytes of ``os.urandom``, as ``secrets.token_hex(16)`` gives, without importing
    ``secrets`` (``hmac``, ``hashlib``, ``random``, ``base64``): about 6 ms of each worker's start.
    """
    return f"{run_id}:{os.urandom(16).hex()}"


def write_marker(run_dir: Path, marker: str) -> None:
    """Keep ``marker`` in ``run_dir``, readable by this user only.

    Raises:
        OSError: If the file cannot be written (it exists already, or the directory is not
            writable).
    """
    fd = os.open(run_dir / MARKER_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as file:
        file.write(marker)


def read_marker(run_dir: Path, run_id: str) -> str | None:
    """The marker kept in ``run_dir``; ``None`` when there is none or it is not one of ``run_id``.

    A run that substrax started has none: its processes carry no marker.
    """
    try:
        # Never blocks (a FIFO put there) nor follows a link; reads a regular file only.
        fd = os.open(run_dir / MARKER_FILE, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        raw = os.read(fd, _MARKER_CAP + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        marker = raw.decode("ascii")
    except UnicodeDecodeError:
        return None
    prefix = f"{run_id}:"
    if not marker.startswith(prefix) or not _NONCE.fullmatch(marker[len(prefix) :]):
        return None
    return marker


def has_proc() -> bool:
    """Whether processes can be read through ``/proc`` here."""
    return _PROC.joinpath("self", "stat").exists()


def proc_stat(pid: int) -> tuple[str, int, int, str] | None:
    """Process ``pid``'s state letter, parent pid, session id and start time, from ``/proc``.

    Returns:
        The four fields (the start time in clock ticks since boot, as text); ``None`` when there
        is no such process or its record cannot be read.
    """
    try:
        record = (_PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold anything, ')' included.
    fields = record[record.rfind(b")") + 2 :].split()
    if len(fields) < 20:
        return None
    try:
        return fields[0].decode("ascii"), int(fields[1]), int(fields[3]), fields[19].decode("ascii")
    except (UnicodeDecodeError, ValueError):
        return None


def proc_cmdline(pid: int) -> bytes | None:
    """Process ``pid``'s arguments as ``/proc`` gives them, each ended by a NUL byte."""
    try:
        with (_PROC / str(pid) / "cmdline").open("rb") as file:
            return file.read(_ENVIRON_CAP)
    except OSError:
        return None


def carries_marker(pid: int, marker: str) -> bool:
    """Whether live process ``pid`` belongs to this user and carries exactly ``marker``."""
    return _carries(str(pid), f"{MARKER_VARIABLE}={marker}".encode(), os.getuid())


def marked_processes(marker: str) -> list[int]:
    """Every live process of this user, this one excepted, that carries ``marker``.

    Empty where there is no ``/proc``. An exited process awaiting its reaper shows no
    environment, and so is never among them.
    """
    entry = f"{MARKER_VARIABLE}={marker}".encode()
    uid, me = os.getuid(), os.getpid()
    return [pid for pid in process_ids() if pid != me and _carries(str(pid), entry, uid)]


def _carries(pid: str, entry: bytes, uid: int) -> bool:
    base = f"{_PROC}/{pid}"
    try:
        if os.stat(base).st_uid != uid:
            return False
        fd = os.open(f"{base}/environ", os.O_RDONLY)
    except OSError:
        return False
    try:
        chunks = []
        size = 0
        while size < _ENVIRON_CAP:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError:
        return False
    finally:
        os.close(fd)
    environ = b"".join(chunks)
    if entry not in environ:  # the common case, without splitting
        return False
    return entry in environ.split(b"\0")


def signal_proven(pid: int, signum: int, proof: Callable[[int], bool]) -> bool:
    """Send ``signum`` to ``pid`` only if ``proof(pid)`` holds, without a pid-reuse race.

    Where the system has pidfds, the process is pinned first and the proof checked after, so a
    process that ends and whose pid is reused meanwhile is never the one signalled.

    Returns:
        Whether the signal was sent.
    """
    opener = getattr(os, "pidfd_open", None)
    sender = getattr(signal, "pidfd_send_signal", None)
    if opener is None or sender is None:
        if not proof(pid):
            return False
        return _kill(pid, signum)
    try:
        fd = opener(pid)
    except OSError:
        return False
    try:
        if not proof(pid):
            return False
        sender(fd, signum)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def become_subreaper() -> bool:
    """Make this process the child subreaper of its descendants (Linux only).

    Returns:
        Whether it now is; elsewhere, or when the call fails, ``False`` and nothing changes.
    """
    global _SUBREAPER  # one flag per process, set once by the worker's main
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes  # only where it is needed: a minimal Python may lack it

        libc = ctypes.CDLL(None, use_errno=True)
        done = bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (ImportError, OSError, AttributeError):
        return False
    _SUBREAPER = done
    return done


def spare(pid: int, *, spared: bool = True) -> None:
    """Keep (or no longer keep) one of the worker's own children out of :func:`end_strays`.

    Args:
        pid: The child, such as the worker's long-lived ``nvidia-smi``.
        spared: ``False`` to forget it once it has ended.
    """
    if spared:
        _SPARED.add(pid)
    else:
        _SPARED.discard(pid)


def end_strays(keep: int) -> None:
    """SIGKILL every descendant of this process but ``keep``, and reap those it adopted.

    The worker calls it once a task's child has exited: then whatever is left below it is what
    that task left running, ``setsid`` grandchildren included (they were reparented to the
    worker). Does nothing unless :func:`become_subreaper` succeeded in this process, so a caller
    that runs tasks in-process never touches its own other children.

    Args:
        keep: The task's child, exited but not reaped yet; it is left for its owner to reap.
    """
    if not _SUBREAPER:
        return
    me = os.getpid()
    for _ in range(_KILL_ROUNDS):
        _reap_adopted(me, keep)
        strays = [pid for pid in _descendants(me) if pid != keep and pid not in _SPARED]
        if not strays:
            return
        for pid in strays:
            _kill(pid, signal.SIGKILL)
        time.sleep(_POLL_SECONDS)
    _reap_adopted(me, keep)


def wait_group_gone(pgid: int, seconds: float = 1.0) -> None:
    """Wait up to ``seconds`` until no live process is left in process group ``pgid``.

    For a group just sent SIGKILL whose leader was reaped: the signal is delivered at once but
    acted on when each process next runs. Returns at once when the group is empty; where there
    is no ``/proc``, as soon as the group has no member at all, zombies included.
    """
    deadline = time.monotonic() + seconds
    while True:
        try:
            os.killpg(pgid, 0)
        except OSError:
            return  # no member left, not even an unreaped one
        if has_proc() and not any(_live_in_group(pid, pgid) for pid in process_ids()):
            return
        if time.monotonic() >= deadline:
            return
        time.sleep(_POLL_SECONDS / 4)


def _live_in_group(pid: int, pgid: int) -> bool:
    try:
        record = (_PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return False
    fields = record[record.rfind(b")") + 2 :].split()
    return len(fields) > 2 and fields[0] not in (b"Z", b"X") and fields[2] == str(pgid).encode()


def _reap_adopted(parent: int, keep: int) -> None:
    """Reap the exited children of ``parent`` (this process) but ``keep``; live ones stay."""
    for pid in _children(parent):
        if pid != keep and pid not in _SPARED:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)


def descendants(root: int) -> list[int]:
    """Process ``root``'s descendants, from ``/proc``; empty where there is none."""
    return _descendants(root)


def _descendants(root: int) -> list[int]:
    found: list[int] = []
    pending = _children(root)
    while pending:
        pid = pending.pop()
        if pid not in found:
            found.append(pid)
            pending.extend(_children(pid))
    return found


def _children(pid: int) -> list[int]:
    """Process ``pid``'s children: from its threads' ``children`` files, else from every stat."""
    task = _PROC / str(pid) / "task"
    try:
        threads = os.listdir(task)
    except OSError:
        return []
    found: list[int] = []
    listed = False
    for thread in threads:
        try:
            with open(task / thread / "children", "rb") as file:
                found.extend(int(child) for child in file.read().split())
            listed = True
        except (OSError, ValueError):
            continue
    if listed:
        return found
    # A kernel without CONFIG_PROC_CHILDREN: every process's parent, from its stat.
    return [child for child in process_ids() if (proc_stat(child) or ("", -1))[1] == pid]


def process_ids() -> list[int]:
    """The pids ``/proc`` lists; empty where there is none."""
    try:
        return [int(entry.name) for entry in _PROC.iterdir() if entry.name.isdigit()]
    except OSError:
        return []


def _kill(pid: int, signum: int) -> bool:
    try:
        os.kill(pid, signum)
    except OSError:
        return False
    return True
