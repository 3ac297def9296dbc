"""Shared SSH connections: every ``ssh`` to a cluster rides one connection, opened once.

The copy transport reads a running run's small files (manifest, devices, attempts) over SSH, and
each read opening its own connection (a TCP and key exchange, a login on the cluster) makes a
peek cost a second. With OpenSSH's connection sharing (``ControlMaster``), the first ``ssh`` to
a cluster leaves a master connection behind (``ControlPersist``) and every later one, rsync's
included, opens a session on it. The masters' sockets live in a private directory of this
process (mode 0700), and the masters are told to end when x-tui exits; one left by an x-tui that
was killed ends by itself once idle for :data:`PERSIST_SECONDS`.
"""

from __future__ import annotations

import atexit
import hashlib
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Final

PERSIST_SECONDS: Final = 60
"""How long an idle master connection outlives its last use."""

_LOCK = threading.Lock()
_DIRECTORY: list[Path] = []


def _directory() -> Path:
    with _LOCK:
        if not _DIRECTORY:
            _DIRECTORY.append(Path(tempfile.mkdtemp(prefix="x-tui-ssh-")))
        return _DIRECTORY[0]


def shared_connection_options(destination: str) -> list[str]:
    """The ``ssh`` options that share one connection to ``destination`` (a cluster's name).

    The socket is named by a digest of the destination as x-tui names it, not by where SSH's
    configuration leads (two clusters behind one proxy never share a connection), and is short
    whatever the name's length.
    """
    digest = hashlib.sha256(destination.encode("utf-8")).hexdigest()[:20]
    return [
        "-o",
        "ControlMaster=auto",
        "-o",
        f"ControlPath={_directory() / digest}",
        "-o",
        f"ControlPersist={PERSIST_SECONDS}",
    ]


def shared_sockets() -> list[Path]:
    """The sockets of this process's master connections that are open now."""
    with _LOCK:
        directory = _DIRECTORY[0] if _DIRECTORY else None
    return sorted(directory.iterdir()) if directory is not None else []


def close_shared_connections(ssh: str = "ssh") -> None:
    """End every master connection this process opened and remove their directory."""
    with _LOCK:
        directory = _DIRECTORY.pop() if _DIRECTORY else None
    if directory is None:
        return
    for socket in directory.iterdir():
        try:
            subprocess.run(
                [ssh, "-o", f"ControlPath={socket}", "-O", "exit", "x-tui-shared"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=5,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
    shutil.rmtree(directory, ignore_errors=True)


atexit.register(close_shared_connections)
