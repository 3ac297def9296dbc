"""Running the command-line tools the transports use (``aws``, ``gcloud``, ``ssh``, ``rsync``).

Every tool runs without a shell, with its output captured and a deadline. A tool that is not
installed is a :class:`~x_tui.compute.worker.errors.BackendUnavailableError` saying how to get it;
one that fails is a :class:`~x_tui.compute.worker.errors.ProviderError` holding the command and the
end of its standard error, on one line.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from x_tui.compute.sanitize import one_line
from x_tui.compute.worker.errors import BackendUnavailableError, ProviderError

TOOL_SECONDS: Final = 3600.0
"""How long one tool may run (a large fetch is one rsync or one bucket sync)."""

INSTALL: Final[Mapping[str, str]] = {
    "aws": "install the AWS CLI (`uv tool install awscli`) and configure its credentials",
    "gcloud": "install the Google Cloud CLI (https://cloud.google.com/sdk) and run"
    " `gcloud auth login`",
    "ssh": "install an OpenSSH client (apt-get install openssh-client)",
    "rsync": "install rsync (apt-get install rsync)",
}


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolResult:
    """What a tool did.

    Attributes:
        returncode: Its exit status.
        stdout: Its standard output.
        stderr: Its standard error, decoded.
    """

    returncode: int
    stdout: bytes
    stderr: str


def run_tool(
    command: Sequence[str],
    *,
    what: str,
    input_bytes: bytes | None = None,
    seconds: float = TOOL_SECONDS,
    check: bool = True,
) -> ToolResult:
    """Run a tool and return what it did.

    Args:
        command: The command; its first word is looked up on ``PATH``.
        what: What it does, for messages ("downloading s3://b/run").
        input_bytes: Its standard input, if any.
        seconds: Its deadline.
        check: Raise when it exits non-zero.

    Returns:
        Its exit status and output.

    Raises:
        BackendUnavailableError: If the tool is not installed.
        ProviderError: If it exits non-zero (with ``check``) or runs past its deadline.
    """
    tool = command[0]
    if shutil.which(tool) is None:
        name = tool.rsplit("/", 1)[-1]
        hint = INSTALL.get(name, f"install {name}")
        raise BackendUnavailableError(f"{what} needs the {name!r} command, not found here; {hint}")
    try:
        done = subprocess.run(
            list(command),
            input=input_bytes,
            stdin=None if input_bytes is not None else subprocess.DEVNULL,
            capture_output=True,
            timeout=seconds,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ProviderError(f"{shlex.join(command)} ran past {seconds:g} s while {what}") from None
    stderr = done.stderr.decode("utf-8", "replace")
    if check and done.returncode != 0:
        raise ProviderError(
            f"{what} failed: {shlex.join(command)} exited {done.returncode}:"
            f" {one_line(stderr, keep_end=True)}"
        )
    return ToolResult(returncode=done.returncode, stdout=done.stdout, stderr=stderr)
