"""What a job is: ``JobSpec`` and its parts, validated on construction and on read (version 2).

The layout and messages are substrax's (see the seed), so a spec written here is read by substrax
and the other way round. Standard library only: the worker reads specs on the remote machine.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from x_tui.compute.worker.records import JsonValue, RecordError, read_record

JOB_SPEC_VERSION = 2
"""The job spec layout this release writes and reads."""

NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
"""A job, task or mount name: one path component of letters, digits, '.', '_', '-'."""

_MATMUL_PRECISIONS = ("default", "high", "highest", "bfloat16", "tensorfloat32", "float32")

MAX_NAME_LENGTH = 200
"""The longest job or task name: each becomes a directory (a job's with its run id's suffix)."""

MAX_PROCESS_TEXT_BYTES = 32 * 4096
"""Linux's ``MAX_ARG_STRLEN``: one argument or ``NAME=value``, with its NUL, is shorter."""

MAX_TIMEOUT_SECONDS = 366 * 24 * 3600.0
"""The longest job or task budget, a year: beyond it no run is meant, and timers overflow."""


def check_name(kind: str, name: str) -> None:
    """Refuse a name that is not one safe path component.

    Args:
        kind: What is named (``job``, ``task``, ``mount``), for the message.
        name: The name.

    Raises:
        ValueError: If ``name`` is not one path component of letters, digits, '.', '_', '-'.
    """
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name) or name in (".", ".."):
        raise ValueError(
            f"{kind} name {name!r} is not one path component of letters, digits, '.', '_', '-'"
        )


def _check_timeout(owner: str, seconds: float) -> None:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise ValueError(
            f"{owner} timeout must be a positive finite number of seconds, not {seconds!r}"
        )
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(
            f"{owner} timeout must be a positive finite number of seconds, not {seconds}"
        )
    if seconds > MAX_TIMEOUT_SECONDS:
        raise ValueError(
            f"{owner} timeout {seconds:g} s is beyond the longest budget a run may have,"
            f" {MAX_TIMEOUT_SECONDS:.0f} s (366 days)"
        )


def _check_length(kind: str, name: str) -> None:
    if len(name) > MAX_NAME_LENGTH:
        raise ValueError(
            f"{kind} name {name[:20]!r}... is {len(name)} characters long;"
            f" at most {MAX_NAME_LENGTH} make a directory name"
        )


def check_process_text(what: str, text: str) -> None:
    """Refuse text that no process can be given: a NUL byte, no bytes, or too many bytes.

    Args:
        what: What the text is (``task 't' argv[1]``), for the message.
        text: An argument, an environment variable's name or value, or a path.

    Raises:
        ValueError: If ``text`` holds a NUL byte or a lone surrogate that has no bytes, or is
            :data:`MAX_PROCESS_TEXT_BYTES` bytes or longer.
    """
    if "\0" in text:
        raise ValueError(f"{what} {_shown(text)} holds a NUL byte, which no process can be given")
    try:
        size = len(text.encode("utf-8", "surrogateescape"))
    except UnicodeEncodeError:
        raise ValueError(
            f"{what} {_shown(text)} holds a lone surrogate, which has no bytes"
        ) from None
    if size >= MAX_PROCESS_TEXT_BYTES:
        raise ValueError(
            f"{what} {_shown(text)} is {size} bytes long; a process is given at most"
            f" {MAX_PROCESS_TEXT_BYTES - 1} bytes in one argument or variable"
        )


def check_environment_name(name: str) -> None:
    """Refuse an environment variable name that no process can be given.

    Raises:
        ValueError: If ``name`` is empty, holds ``=`` or a NUL byte, or cannot be encoded.
    """
    if not name or "=" in name:
        raise ValueError(
            f"env name {_shown(name)} is empty or holds '=', which no environment can hold"
        )
    check_process_text("env name", name)


def _shown(text: str) -> str:
    shown = repr(text)
    return shown if len(shown) <= 60 else shown[:57] + "..."


def _check_unique(kind: str, values: Iterable[str]) -> None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise ValueError(f"two entries share the {kind} {value!r}")
        seen.add(value)


@dataclass(frozen=True, kw_only=True, slots=True)
class Accelerator:
    """The accelerators a job runs on.

    Attributes:
        kind: The accelerator's name as providers spell it, such as ``"L4"`` or ``"A100-80GB"``.
        count: How many.
    """

    kind: str
    count: int = 1

    def __post_init__(self) -> None:
        """Validate the kind and count.

        Raises:
            ValueError: If ``kind`` is not one word or ``count`` is below one.
        """
        if not isinstance(self.kind, str) or not NAME_PATTERN.fullmatch(self.kind):
            raise ValueError(
                f"accelerator kind {self.kind!r} is not one word such as 'L4' or 'A100-80GB'"
            )
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 1:
            raise ValueError(f"accelerator count must be at least 1, not {self.count}")

    def __str__(self) -> str:
        return self.kind if self.count == 1 else f"{self.kind}:{self.count}"


@dataclass(frozen=True, kw_only=True, slots=True)
class Resources:
    """What the machine a job runs on must have; each request is the least it gets.

    Attributes:
        accelerator: The accelerators; ``None`` runs on CPUs.
        cpu: The CPU cores, fractional allowed; ``None`` takes the provider's default.
        memory_mib: The memory, in MiB; ``None`` takes the provider's default.
    """

    accelerator: Accelerator | None = None
    cpu: float | None = None
    memory_mib: int | None = None

    def __post_init__(self) -> None:
        """Validate the requests.

        Raises:
            ValueError: If a CPU or memory request is not a positive finite number.
        """
        for name in ("cpu", "memory_mib"):
            value = getattr(self, name)
            if value is None:
                continue
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value <= 0
            ):
                raise ValueError(
                    f"the {name} request must be a positive finite number, not {value}"
                )


class MountAccess(str, enum.Enum):
    """Whether a job may change what a mount holds."""

    READ_ONLY = "read-only"
    READ_WRITE = "read-write"


@dataclass(frozen=True, kw_only=True, slots=True)
class Mount:
    """Named storage a job sees at a path; each backend maps the name to its own storage.

    Attributes:
        name: The storage's name in the backend's settings, such as ``"datasets"``.
        path: The absolute directory the job sees it at.
        access: Whether the job may write to it.
    """

    name: str
    path: str
    access: MountAccess

    def __post_init__(self) -> None:
        """Validate the name and path.

        Raises:
            ValueError: If the name is not one path component, or the path is not an absolute,
                normalised directory below the root.
        """
        check_name("mount", self.name)
        if isinstance(self.path, str):
            check_process_text("mount path", self.path)
        if not isinstance(self.path, str):
            raise ValueError(
                f"mount path {self.path!r} is not an absolute directory below the root"
            )
        # substrax reads the path as a PurePosixPath: "//data" keeps its two slashes.
        posix = PurePosixPath(self.path)
        if not posix.is_absolute() or ".." in posix.parts or str(posix) in {"/", ""}:
            raise ValueError(
                f"mount path {self.path!r} is not an absolute directory below the root"
            )
        if str(posix) != self.path:
            raise ValueError(f"mount path {self.path!r} is not normalised; write {str(posix)!r}")
        if not isinstance(self.access, MountAccess):
            raise ValueError(
                f"mount access {self.access!r} is not one of 'read-only', 'read-write'"
            )


@dataclass(frozen=True, kw_only=True, slots=True)
class JaxRuntime:
    """The JAX settings of every task, applied as environment variables.

    Unknown keys are ignored when read, as substrax reads them.

    Attributes:
        platforms: ``JAX_PLATFORMS``, the names joined by commas.
        cpu_devices: ``JAX_NUM_CPU_DEVICES``.
        enable_x64: ``JAX_ENABLE_X64``.
        matmul_precision: ``JAX_DEFAULT_MATMUL_PRECISION``.
        compilation_cache_dir: ``JAX_COMPILATION_CACHE_DIR``, an absolute path.
        xla_flags: Flags merged into ``XLA_FLAGS`` by name.
        preallocate: ``XLA_PYTHON_CLIENT_PREALLOCATE``.
        memory_fraction: ``XLA_CLIENT_MEM_FRACTION``, in (0, 1].
    """

    __ignores_unknown_keys__ = True

    platforms: tuple[str, ...] | None = None
    cpu_devices: int | None = None
    enable_x64: bool | None = None
    matmul_precision: str | None = None
    compilation_cache_dir: str | None = None
    xla_flags: tuple[str, ...] = ()
    preallocate: bool | None = None
    memory_fraction: float | None = None

    def __post_init__(self) -> None:
        """Validate every setting.

        Raises:
            ValueError: If a setting is out of its range or malformed.
        """
        if self.platforms is not None:
            if not self.platforms:
                raise ValueError("runtime platforms must name at least one platform")
            for name in self.platforms:
                if not name.strip() or "," in name:
                    raise ValueError(f"runtime platform {name!r} is blank or holds a comma")
        if self.cpu_devices is not None and self.cpu_devices < 1:
            raise ValueError(f"runtime cpu_devices must be at least 1, not {self.cpu_devices}")
        if self.matmul_precision is not None and self.matmul_precision not in _MATMUL_PRECISIONS:
            raise ValueError(
                f"runtime matmul_precision {self.matmul_precision!r} is not one of "
                + ", ".join(map(repr, _MATMUL_PRECISIONS))
            )
        if self.compilation_cache_dir is not None:
            if (
                not isinstance(self.compilation_cache_dir, str)
                or not PurePosixPath(self.compilation_cache_dir).is_absolute()
            ):
                raise ValueError(
                    f"runtime compilation_cache_dir {self.compilation_cache_dir!r} is not absolute"
                )
            # substrax holds it as a Path: "/tmp//cache/" is written "/tmp/cache".
            object.__setattr__(
                self, "compilation_cache_dir", str(PurePosixPath(self.compilation_cache_dir))
            )
        seen: dict[str, str | None] = {}
        for flag in self.xla_flags:
            # As substrax splits a flag: "--name" or "--name=value", no whitespace anywhere;
            # "--a" and "--a=" are two different values.
            name, separator, value = flag.partition("=")
            if not name.startswith("--") or name == "--" or any(c.isspace() for c in flag):
                raise ValueError(f"XLA flag {flag!r} is not --name or --name=value")
            given = value if separator else None
            if name in seen and seen[name] != given:
                raise ValueError(f"XLA flag {name} is set to two different values")
            seen[name] = given
        if self.memory_fraction is not None and not 0 < self.memory_fraction <= 1:
            raise ValueError(
                f"runtime memory_fraction must be in (0, 1], not {self.memory_fraction}"
            )

    def environment(self) -> dict[str, str]:
        """The variables this runtime sets, except ``XLA_FLAGS`` (see :meth:`merge_xla_flags`)."""
        env: dict[str, str] = {}
        if self.platforms is not None:
            env["JAX_PLATFORMS"] = ",".join(self.platforms)
        if self.cpu_devices is not None:
            env["JAX_NUM_CPU_DEVICES"] = str(self.cpu_devices)
        if self.enable_x64 is not None:
            env["JAX_ENABLE_X64"] = "true" if self.enable_x64 else "false"
        if self.matmul_precision is not None:
            env["JAX_DEFAULT_MATMUL_PRECISION"] = self.matmul_precision
        if self.compilation_cache_dir is not None:
            env["JAX_COMPILATION_CACHE_DIR"] = self.compilation_cache_dir
        if self.preallocate is not None:
            env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "true" if self.preallocate else "false"
        if self.memory_fraction is not None:
            env["XLA_CLIENT_MEM_FRACTION"] = str(float(self.memory_fraction))
        return env

    def merge_xla_flags(self, existing: str) -> str:
        """Merge this runtime's flags into an ``XLA_FLAGS`` value by flag name.

        Raises:
            ValueError: If a flag is set to two different values.
        """
        flags = existing.split()
        names = {flag.partition("=")[0]: flag for flag in flags}
        for flag in self.xla_flags:
            name = flag.partition("=")[0]
            if name in names:
                if names[name] != flag:
                    raise ValueError(f"XLA flag {name} is set to two different values")
                continue
            names[name] = flag
            flags.append(flag)
        return " ".join(flags)


@dataclass(frozen=True, kw_only=True, slots=True)
class Task:
    """One command a job runs, from the project's root, in the project's environment.

    Attributes:
        name: The task's name, and the directory its logs and outputs go to.
        argv: The command. A leading ``"python"`` is the project environment's interpreter.
        timeout_seconds: Seconds before the task is killed.
    """

    name: str
    argv: tuple[str, ...]
    timeout_seconds: float

    def __post_init__(self) -> None:
        """Validate the name, command and timeout.

        Raises:
            ValueError: If the name is not one path component, the command is empty, or the
                timeout is not a positive finite number.
        """
        check_name("task", self.name)
        _check_length("task", self.name)
        if not self.argv:
            raise ValueError(f"task {self.name!r} has an empty argv")
        for index, argument in enumerate(self.argv):
            if isinstance(argument, str):
                check_process_text(f"task {self.name!r} argv[{index}]", argument)
        _check_timeout(f"task {self.name!r}", self.timeout_seconds)


@dataclass(frozen=True, kw_only=True, slots=True)
class JobSpec:
    """A job: its tasks and everything the machine that runs them must provide.

    Attributes:
        schema_version: The layout of this record; see :data:`JOB_SPEC_VERSION`.
        name: The job's name, such as ``"examples"``.
        tasks: The commands, run in order; a failed task does not stop the ones after it.
        timeout_seconds: Seconds the whole job may take.
        resources: The accelerators, CPU cores and memory the machine must have.
        extras: The project's optional dependency groups installed with its locked ones.
        runtime: The JAX settings of every task.
        env: Variables set in every task before ``runtime`` is applied.
        mounts: The named storage the tasks read or write, besides the run's outputs.
    """

    schema_version: int = JOB_SPEC_VERSION
    name: str
    tasks: tuple[Task, ...]
    timeout_seconds: float
    resources: Resources = field(default_factory=Resources)
    extras: tuple[str, ...] = ()
    runtime: JaxRuntime = field(default_factory=JaxRuntime)
    env: Mapping[str, str] = field(default_factory=dict)
    mounts: tuple[Mount, ...] = ()

    def __post_init__(self) -> None:
        """Validate the job as a whole.

        Raises:
            ValueError: If the version is not this release's, the name is not one path
                component, there are no tasks, the timeout is not a positive finite number, or
                two tasks or two mounts share a name, or two mounts a path.
        """
        if self.schema_version != JOB_SPEC_VERSION:
            raise ValueError(_version_message(self.schema_version))
        check_name("job", self.name)
        _check_length("job", self.name)
        if not self.tasks:
            raise ValueError(f"job {self.name!r} needs at least one task")
        _check_timeout(f"job {self.name!r}", self.timeout_seconds)
        _check_unique("task name", (task.name for task in self.tasks))
        _check_unique("mount name", (mount.name for mount in self.mounts))
        _check_unique("mount path", (mount.path for mount in self.mounts))
        self._check_process_texts()

    def _check_process_texts(self) -> None:
        """Refuse what the worker could not hand to a process: env, runtime and extras text."""
        for name, value in self.env.items():
            if isinstance(name, str):
                check_environment_name(name)
            if isinstance(value, str):
                check_process_text(f"env {name!r} value", value)
                check_process_text(f"env {name!r} with its value", f"{name}={value}")
        for variable, value in self.runtime.environment().items():
            check_process_text(f"runtime setting {variable}", value)
        for flag in self.runtime.xla_flags:
            check_process_text("XLA flag", flag)
        for extra in self.extras:
            if isinstance(extra, str):
                check_process_text("extra", extra)


def _version_message(version: object) -> str:
    return (
        f"job spec version {version!r} is not the version this x-tui reads ({JOB_SPEC_VERSION});"
        " submit and run the job with the same release"
    )


def read_job_spec(data: Mapping[str, JsonValue]) -> JobSpec:
    """Read a job spec from its parsed JSON object.

    Args:
        data: The JSON object ``dump_record`` wrote.

    Returns:
        The spec.

    Raises:
        RecordError: If the spec's version is not this release's (the message names both), or
            a field is missing or holds a value its annotation does not admit.
    """
    if not isinstance(data, Mapping):
        raise RecordError(f"a job spec is a JSON object, not {type(data).__name__}")
    version = data.get("schema_version")
    if version != JOB_SPEC_VERSION or isinstance(version, bool):
        raise RecordError(_version_message(version))
    return read_record(JobSpec, data)


def example_tasks(
    paths: Iterable[Path], *, project: Path, timeout_seconds: float
) -> tuple[Task, ...]:
    """Make one task per example script, run by the project's interpreter from its root.

    Args:
        paths: The scripts, as :func:`discover_examples` lists them.
        project: The project root the paths lie under.
        timeout_seconds: Each example's budget.

    Returns:
        The tasks, in the order of ``paths``, each named by its path relative to ``project``
        with dots for separators and without the suffix.

    Raises:
        ValueError: If a path lies outside ``project``.
    """
    root = project.resolve()
    tasks = []
    for path in paths:
        resolved = path.resolve()
        try:
            relative = resolved.relative_to(root)
        except ValueError:
            raise ValueError(f"example {path} is outside the project {root}") from None
        name = ".".join(relative.with_suffix("").parts)
        tasks.append(
            Task(name=name, argv=("python", relative.as_posix()), timeout_seconds=timeout_seconds)
        )
    return tuple(tasks)


def discover_examples(root: Path) -> list[Path]:
    """The example scripts under ``root``, as substrax lists them.

    Every ``*.py`` below ``root``, in ``Path`` order, leaving out any whose path relative to
    ``root`` has a component starting with ``_``.
    """
    return [
        path
        for path in sorted(root.rglob("*.py"))
        if path.is_file() and not any(part.startswith("_") for part in path.relative_to(root).parts)
    ]
