"""A stand-in for the ``modal`` package (1.6.4), for the tests only: never on ``sys.path`` else.

It stands at the narrowest boundary, the SDK calls the modal backend makes. Images record their
layers and bake ``copy=True`` directories into ``$FAKE_MODAL_ROOT/images`` (honouring ``ignore``);
``App.run`` "builds" them and mints an app id; ``Function.spawn`` runs the function for real in a
child interpreter (the "container", where ``x_tui`` cannot be imported), with the container paths
in its arguments mapped to the baked directories, the project interpreter and one directory per
Volume, and the function's Secrets in its environment (never in a file: a named Secret's values
come from ``$FAKE_MODAL_ROOT/secrets/<name>.json``, the fake's own store, which a test writes as a
user would create a Secret in Modal's dashboard). What the real SDK raises, this raises: the
builtin ``TimeoutError`` from
``FunctionCall.get(timeout=0)`` while a call runs, ``AuthError`` from any RPC without a token,
``FileNotFoundError`` from ``Volume.read_file`` of a missing file, and so on. Every public call is
recorded in ``api.jsonl`` so a test can check each one against the real SDK's signatures.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from modal import exception, types
from modal._fake import (
    alive,
    kill_container,
    new_id,
    read_json,
    recorded,
    root,
    rpc,
    settle,
    stop_app,
    write_json,
)

__version__ = "1.6.4+fake"
__all__ = ["App", "Function", "FunctionCall", "Image", "Secret", "Volume", "exception", "types"]

LAST: dict[str, Any] = {}
"""What was last built: ``function`` (its options), ``image`` (its layers), ``spawn``."""

VENV_PYTHON = "/.uv/.venv/bin/python"
IMAGE_PYTHON = "/usr/local/bin/python"
BUILDER_TEXT = (
    "Image builder version <= 2024.10 requires modal to be specified in your pyproject.toml file"
)


def _pattern(pattern: str) -> re.Pattern[str]:
    out = ""
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if pattern.startswith("**/", index):
            out += "(?:.*/)?"
            index += 3
            continue
        if pattern.startswith("**", index):
            out += ".*"
            index += 2
            continue
        out += "[^/]*" if char == "*" else "[^/]" if char == "?" else re.escape(char)
        index += 1
    return re.compile(out)


def ignored(relative: str, patterns: list[str]) -> bool:
    """Whether ``.dockerignore`` patterns leave a path out (it, or a parent, matches last)."""
    matched = False
    parts = relative.split("/")
    candidates = ["/".join(parts[: end + 1]) for end in range(len(parts))]
    for raw in patterns:
        text = raw.strip().strip("/")
        if not text:
            continue
        exclusion = text.startswith("!")
        text = os.path.normpath(text[1:] if exclusion else text)
        if exclusion != matched:
            continue
        if any(_pattern(text).fullmatch(candidate) for candidate in candidates):
            matched = not exclusion
    return matched


def _copy_tree(source: Path, target: Path, patterns: list[str]) -> None:
    for directory, dirnames, filenames in os.walk(source):
        here = Path(directory)
        for name in list(dirnames):
            relative = (here / name).relative_to(source).as_posix()
            if ignored(relative, patterns) and not any(p.startswith("!") for p in patterns):
                dirnames.remove(name)
        for name in filenames:
            path = here / name
            relative = path.relative_to(source).as_posix()
            if ignored(relative, patterns):
                continue
            destination = target / relative
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, destination, follow_symlinks=False)


def _flat(method: str, packages: tuple[Any, ...]) -> tuple[str, ...]:
    """Packages as modal flattens them; an option among them is refused, as modal refuses it."""
    flat: list[str] = []
    for package in packages:
        flat.extend(package if isinstance(package, list) else [package])
    for package in flat:
        if not isinstance(package, str):
            raise exception.InvalidError(f"{method}: expected strings, got {package!r}")
        if package.startswith("-"):
            raise exception.InvalidError(
                f"Package list for `Image.{method}` cannot contain other arguments;"
                " try the `extra_options` parameter instead."
            )
    return tuple(flat)


class Secret:
    """A Secret: values given here (``from_dict``), or one kept by the service (``from_name``).

    Its values are held in memory only, and reach a container's environment at spawn.
    """

    def __init__(self, *, values: dict[str, str] | None, name: str | None, environment: Any):
        self._values = values
        self.name = name
        self.environment_name = environment

    def __repr__(self) -> str:
        return f"Secret(name={self.name!r})"

    @staticmethod
    @recorded("Secret.from_dict", bound=False)
    def from_dict(env_dict: dict[str, str | None] = {}) -> Secret:  # noqa: B006 - modal's own
        """A Secret of these values (``None`` values are left out, as modal leaves them)."""
        if not isinstance(env_dict, dict):
            raise exception.InvalidError("the env_dict argument to Secret.from_dict must be a dict")
        values = {key: value for key, value in env_dict.items() if value is not None}
        for key, value in values.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise exception.InvalidError(f"Secret.from_dict: {key!r} must map a str to a str")
        return Secret(values=values, name=None, environment=None)

    @staticmethod
    @recorded("Secret.from_name", bound=False)
    def from_name(
        name: str,
        *,
        environment_name: str | None = None,
        required_keys: list[str] = [],  # noqa: B006 - modal's own default
        client: Any = None,
    ) -> Secret:
        """A lazy reference to a Secret the service keeps; looked up when the app runs."""
        return Secret(values=None, name=name, environment=environment_name)

    def describe(self) -> dict[str, Any]:
        """What a test may see of it: its name, or the names of its values; never a value."""
        if self._values is not None:
            return {"from_dict": sorted(self._values)}
        return {"from_name": self.name, "environment_name": self.environment_name}

    def resolve(self) -> dict[str, str]:
        """Its values, looking a named one up in the fake's store as the app starts.

        Raises:
            NotFoundError: If the service keeps no Secret of that name.
        """
        if self._values is not None:
            return dict(self._values)
        rpc("Secret.from_name")
        stored = read_json(root() / "secrets" / f"{self.name}.json")
        if stored is None:
            environment = self.environment_name or "main"
            raise exception.NotFoundError(
                f"Secret '{self.name}' not found in environment '{environment}'"
            )
        return {str(key): str(value) for key, value in stored.items()}


class Image:
    """An image: the layers asked for, in order."""

    def __init__(self, steps: list[tuple[str, tuple[Any, ...], dict[str, Any]]]) -> None:
        self.steps = steps

    def _then(self, method: str, args: tuple[Any, ...], options: dict[str, Any]) -> Image:
        return Image([*self.steps, (method, args, options)])

    @staticmethod
    @recorded("Image.debian_slim", bound=False)
    def debian_slim(python_version: str | None = None, force_build: bool = False) -> Image:
        """The base layer."""
        if python_version is not None and not isinstance(python_version, str):
            raise TypeError("python_version must be a string such as '3.12'")
        return Image(
            [("debian_slim", (), {"python_version": python_version, "force_build": force_build})]
        )

    @recorded("Image.uv_sync")
    def uv_sync(
        self,
        uv_project_dir: str = "./",
        *,
        force_build: bool = False,
        groups: list[str] | None = None,
        extras: list[str] | None = None,
        frozen: bool = True,
        extra_options: str = "",
        uv_version: str | None = None,
        env: dict[str, str | None] | None = None,
        secrets: Any = None,
        gpu: str | None = None,
    ) -> Image:
        """The locked dependencies."""
        return self._then(
            "uv_sync",
            (uv_project_dir,),
            {"extras": extras, "groups": groups, "frozen": frozen, "extra_options": extra_options},
        )

    @recorded("Image.add_local_dir")
    def add_local_dir(
        self,
        local_path: str | Path,
        remote_path: str,
        *,
        copy: bool = False,
        ignore: Any = [],  # noqa: B006 - modal's own default
    ) -> Image:
        """A local directory."""
        if not str(remote_path).startswith("/"):
            raise exception.InvalidError("add_local_dir: remote_path must be an absolute path")
        return self._then(
            "add_local_dir",
            (str(local_path), remote_path),
            {"copy": copy, "ignore": list(ignore) if not callable(ignore) else repr(ignore)},
        )

    @recorded("Image.add_local_file")
    def add_local_file(
        self, local_path: str | Path, remote_path: str, *, copy: bool = False
    ) -> Image:
        """A local file."""
        if not str(remote_path).startswith("/"):
            raise exception.InvalidError("add_local_file: remote_path must be an absolute path")
        return self._then("add_local_file", (str(local_path), remote_path), {"copy": copy})

    @recorded("Image.apt_install")
    def apt_install(
        self,
        *packages: str | list[str],
        force_build: bool = False,
        env: dict[str, str | None] | None = None,
        secrets: Any = None,
        gpu: str | None = None,
    ) -> Image:
        """Debian packages (recorded, not installed)."""
        return self._then("apt_install", _flat("apt_install", packages), {})

    @recorded("Image.pip_install")
    def pip_install(
        self,
        *packages: str | list[str],
        find_links: str | None = None,
        index_url: str | None = None,
        extra_index_url: str | None = None,
        pre: bool = False,
        extra_options: str = "",
        force_build: bool = False,
        env: dict[str, str | None] | None = None,
        secrets: Any = None,
        gpu: str | None = None,
    ) -> Image:
        """Python packages with pip (recorded, not installed)."""
        return self._then("pip_install", _flat("pip_install", packages), {})

    @recorded("Image.uv_pip_install")
    def uv_pip_install(
        self,
        *packages: str | list[str],
        requirements: list[str] | None = None,
        find_links: str | None = None,
        index_url: str | None = None,
        extra_index_url: str | None = None,
        pre: bool = False,
        extra_options: str = "",
        force_build: bool = False,
        uv_version: str | None = None,
        env: dict[str, str | None] | None = None,
        secrets: Any = None,
        gpu: str | None = None,
    ) -> Image:
        """Python packages with uv, into the first ``python`` on ``PATH`` (recorded only)."""
        return self._then("uv_pip_install", _flat("uv_pip_install", packages), {})

    @recorded("Image.run_commands")
    def run_commands(
        self,
        *commands: str | list[str],
        env: dict[str, str | None] | None = None,
        secrets: Any = None,
        volumes: Any = None,
        gpu: str | None = None,
        force_build: bool = False,
    ) -> Image:
        """Shell commands (recorded, not run)."""
        return self._then("run_commands", tuple(commands), {})

    def build(self) -> dict[str, str]:
        """Build the image: bake its local files in, and map container paths to local ones.

        Raises:
            InvalidError: If ``uv_sync`` has no ``pyproject.toml``, or the workspace's image
                builder is 2024.10 or older and the project does not depend on ``modal``.
        """
        builder = os.environ.get("FAKE_MODAL_BUILDER_VERSION", "2026.10")
        baked = root() / "images" / new_id("im-", 12)
        paths = {IMAGE_PYTHON: sys.executable}
        for method, args, options in self.steps:
            if method == "uv_sync":
                pyproject = Path(os.path.expanduser(args[0])) / "pyproject.toml"
                if not pyproject.exists():
                    raise exception.InvalidError(f"Expected {pyproject} to exist")
                if builder <= "2024.10" and "modal" not in pyproject.read_text():
                    raise exception.InvalidError(BUILDER_TEXT)
                paths[VENV_PYTHON] = sys.executable
            elif method == "add_local_dir":
                target = baked / args[1].lstrip("/")
                target.mkdir(parents=True, exist_ok=True)
                _copy_tree(Path(args[0]), target, list(options["ignore"]))
                paths[args[1]] = str(target)
            elif method == "add_local_file":
                target = baked / args[1].lstrip("/")
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(args[0], target)
                paths[args[1]] = str(target)
        return paths


class Volume:
    """A Volume: the directory ``$FAKE_MODAL_ROOT/volumes/<name>``."""

    def __init__(self, name: str, environment_name: str | None, create: bool) -> None:
        self.name = name
        self.environment_name = environment_name
        self.create_if_missing = create
        self.is_read_only = False

    @property
    def directory(self) -> Path:
        """Where the Volume's files are."""
        return root() / "volumes" / self.name

    @classmethod
    @recorded("Volume.from_name")
    def from_name(
        cls,
        name: str,
        *,
        environment_name: str | None = None,
        create_if_missing: bool = False,
        version: Any = None,
        create_options: Any = None,
        client: Any = None,
    ) -> Volume:
        """A lazy reference: nothing is asked of the server yet."""
        return cls(name, environment_name, create_if_missing)

    @recorded("Volume.read_only")
    def read_only(self) -> Volume:
        """The same Volume, mounted read-only."""
        copy = Volume(self.name, self.environment_name, self.create_if_missing)
        copy.is_read_only = True
        return copy

    @recorded("Volume.hydrate")
    def hydrate(self, client: Any = None) -> Volume:
        """Look the Volume up, creating it when asked to."""
        rpc("Volume.hydrate")
        self._exists()
        return self

    def _exists(self) -> None:
        if self.directory.is_dir():
            return
        if not self.create_if_missing:
            raise exception.NotFoundError(f"Volume '{self.name}' not found")
        self.directory.mkdir(parents=True, exist_ok=True)

    @recorded("Volume.iterdir")
    def iterdir(self, path: str, *, recursive: bool = True) -> Iterator[types.FileEntry]:
        """The entries under ``path``, sorted, paths relative to the Volume's root."""
        rpc("Volume.iterdir")
        if path.endswith("*"):
            raise exception.InvalidError("Glob patterns in `Volume.listdir()` are deprecated.")
        start = self.directory / path.lstrip("/")
        if not start.exists():
            raise exception.NotFoundError(f"No such file or directory: {path}")
        found = sorted(start.rglob("*")) if recursive else sorted(start.iterdir())
        for entry in found:
            kind = (
                types.FileEntryType.SYMLINK
                if entry.is_symlink()
                else types.FileEntryType.DIRECTORY
                if entry.is_dir()
                else types.FileEntryType.FILE
            )
            stat = entry.lstat()
            yield types.FileEntry(
                path=entry.relative_to(self.directory).as_posix(),
                type=kind,
                mtime=int(stat.st_mtime),
                size=stat.st_size,
            )

    @recorded("Volume.read_file")
    def read_file(self, path: str) -> Iterator[bytes]:
        """The file's bytes, in chunks; the builtin ``FileNotFoundError`` when it is missing."""
        rpc("Volume.read_file")
        target = self.directory / path.lstrip("/")
        if not target.is_file() or target.is_symlink():
            raise FileNotFoundError(f"No such file: {path}")
        with target.open("rb") as handle:
            while chunk := handle.read(64 * 1024):
                yield chunk

    @recorded("Volume.commit")
    def commit(self) -> None:
        """Commit the Volume's changes (counted; a directory needs none)."""
        with (root() / f"commits-{self.name}").open("a") as handle:
            handle.write("commit\n")


class FunctionCall:
    """A spawned call."""

    def __init__(self, object_id: str) -> None:
        self.object_id = object_id

    @classmethod
    @recorded("FunctionCall.from_id")
    def from_id(cls, function_call_id: str, client: Any = None) -> FunctionCall:
        """A lazy reference to a call."""
        return cls(function_call_id)

    def _result(self) -> Any:
        return read_json(root() / "calls" / f"{self.object_id}.result")

    @recorded("FunctionCall.get")
    def get(self, timeout: float | None = None, *, index: int = 0) -> Any:
        """The call's result; the builtin ``TimeoutError`` while it has none."""
        rpc("FunctionCall.get")
        record = read_json(root() / "calls" / f"{self.object_id}.json")
        if record is None:
            raise exception.NotFoundError(f"Function call {self.object_id} not found")
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            result = self._result()
            if result is None and not alive(int(record["pid"])):
                result = self._result() or {"ok": False, "kind": "lost"}
            if result is not None:
                break
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError()
            time.sleep(0.05)
        if result["ok"]:
            return result["value"]
        if result["kind"] == "error":
            raise exception.ExecutionError(result["error"])
        raise exception.RemoteError(f"Function call {self.object_id} was {result['kind']}")

    @recorded("FunctionCall.cancel")
    def cancel(self, terminate_containers: bool = False) -> None:
        """Cancel the call; with ``terminate_containers``, kill its container."""
        rpc("FunctionCall.cancel")
        record = read_json(root() / "calls" / f"{self.object_id}.json")
        if record is None:
            raise exception.NotFoundError(f"Function call {self.object_id} not found")
        LAST["cancel"] = {"terminate_containers": terminate_containers}
        if self._result() is None:
            kill_container(int(record["pid"]))
            settle(self.object_id, {"ok": False, "kind": "cancelled"})


def _by_reference(function: Callable[..., Any]) -> bool:
    """Whether cloudpickle would pickle ``function`` by reference (its module holds it)."""
    module = sys.modules.get(getattr(function, "__module__", "") or "")
    if module is None or function.__module__ == "__main__":
        return False
    target: Any = module
    for part in function.__qualname__.split("."):
        target = getattr(target, part, None)
    return target is function


def _mapped(value: Any, paths: dict[str, str]) -> Any:
    if not isinstance(value, str):
        return value
    for remote in sorted(paths, key=len, reverse=True):
        if value == remote or value.startswith(remote.rstrip("/") + "/"):
            return paths[remote] + value[len(remote) :]
    return value


class Function:
    """A function of an app."""

    def __init__(
        self,
        app: App,
        raw: Callable[..., Any],
        image: Image | None,
        volumes: dict[str, Volume],
        secrets: list[Secret],
    ) -> None:
        self.app = app
        self.raw = raw
        self.image = image or Image.debian_slim()
        self.volumes = volumes
        self.secrets = secrets
        self.paths: dict[str, str] | None = None
        self.environment: dict[str, str] = {}

    @recorded("Function.spawn")
    def spawn(self, *args: Any, **kwargs: Any) -> FunctionCall:
        """Run the function in a child interpreter, detached from this process."""
        rpc("Function.spawn")
        if self.paths is None or self.app.app_id is None or not self.app.running:
            raise exception.ExecutionError(
                "Function has not been hydrated with the metadata it needs to run on Modal,"
                " because the App it is defined on is not running."
            )
        paths = dict(self.paths)
        for mount, volume in self.volumes.items():
            volume._exists()
            paths[mount] = str(volume.directory)
        call_id = new_id("fc-", 26)
        raw = self.raw
        payload: dict[str, Any] = {
            "call_id": call_id,
            "app_id": self.app.app_id,
            "detached": self.app.detached,
            "args": [_mapped(value, paths) for value in args],
            "kwargs": {key: _mapped(value, paths) for key, value in kwargs.items()},
            "module": raw.__module__,
            "qualname": raw.__qualname__,
            "name": raw.__name__,
        }
        if _by_reference(raw):
            payload["by"] = "reference"
        else:
            payload["by"] = "value"
            payload["code"] = marshal.dumps(raw.__code__).hex()
            payload["defaults"] = list(raw.__defaults__) if raw.__defaults__ else None
            payload["kwdefaults"] = raw.__kwdefaults__
        LAST["spawn"] = {"args": list(args), "kwargs": dict(kwargs), "by": payload["by"]}
        calls = root() / "calls"
        calls.mkdir(parents=True, exist_ok=True)
        write_json(calls / f"{call_id}.payload", payload)
        log = (root() / "apps" / f"{self.app.app_id}.log").open("ab")
        fake_dir = str(Path(__file__).resolve().parent.parent)
        env = {**os.environ, **self.environment, "MODAL_IS_REMOTE": "1"}
        env["PYTHONPATH"] = os.pathsep.join([fake_dir, env.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        )
        process = subprocess.Popen(
            [sys.executable, "-m", "modal._container", str(calls / f"{call_id}.payload")],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )
        log.close()
        write_json(calls / f"{call_id}.json", {"pid": process.pid, "app_id": self.app.app_id})
        return FunctionCall(call_id)


class App:
    """An app: its functions, and an id once it runs."""

    @recorded("App")
    def __init__(
        self,
        name: str | None = None,
        *,
        tags: dict[str, str] | None = None,
        image: Image | None = None,
        secrets: Any = [],  # noqa: B006 - modal's own default
        volumes: Any = {},  # noqa: B006 - modal's own default
        include_source: bool = True,
    ) -> None:
        self.name = name
        self.app_id: str | None = None
        self.running = False
        self.detached = False
        self.functions: list[Function] = []

    @recorded("App.function")
    def function(
        self,
        *,
        image: Image | None = None,
        schedule: Any = None,
        env: dict[str, str | None] | None = None,
        secrets: Any = None,
        gpu: str | list[str] | None = None,
        serialized: bool = False,
        network_file_systems: Any = {},  # noqa: B006 - modal's own default
        volumes: Any = {},  # noqa: B006 - modal's own default
        cpu: float | tuple[float, float] | None = None,
        memory: int | tuple[int, int] | None = None,
        ephemeral_disk: int | None = None,
        min_containers: int | None = None,
        max_containers: int | None = None,
        buffer_containers: int | None = None,
        scaledown_window: int | None = None,
        proxy: Any = None,
        retries: Any = None,
        timeout: int = 300,
        startup_timeout: int | None = None,
        name: str | None = None,
        is_generator: bool | None = None,
        cloud: str | None = None,
        region: Any = None,
        routing_region: str | None = None,
        nonpreemptible: bool = False,
        enable_memory_snapshot: bool = False,
        block_network: bool = False,
        restrict_modal_access: bool = False,
        single_use_containers: bool = False,
        i6pn: bool | None = None,
        include_source: bool | None = None,
        experimental_options: dict[str, Any] | None = None,
        _experimental_restrict_output: bool = False,
        max_inputs: int | None = None,
    ) -> Callable[[Callable[..., Any]], Function]:
        """A decorator that registers a function with these options."""
        if timeout is None:
            raise exception.InvalidError("timeout must not be None")

        def register(raw: Callable[..., Any]) -> Function:
            if not serialized and "<locals>" in raw.__qualname__:
                raise exception.InvalidError(
                    "The @app.function decorator must apply to functions in global scope,"
                    " unless serialized=True is set."
                )
            LAST["image"] = [
                {"method": method, "args": list(args), "options": options}
                for method, args, options in (image or Image.debian_slim()).steps
            ]
            LAST["function"] = {
                "gpu": gpu,
                "cpu": cpu,
                "memory": memory,
                "timeout": timeout,
                "serialized": serialized,
                "volumes": {
                    path: {"name": volume.name, "read_only": volume.is_read_only}
                    for path, volume in volumes.items()
                },
                "secrets": [secret.describe() for secret in secrets or []],
                "module": raw.__module__,
            }
            write_json(root() / "last.json", LAST)
            for secret in secrets or []:
                if not isinstance(secret, Secret):
                    raise exception.InvalidError(f"secrets must be modal.Secret, not {secret!r}")
            function = Function(self, raw, image, dict(volumes), list(secrets or []))
            self.functions.append(function)
            return function

        return register

    @contextlib.contextmanager
    @recorded("App.run")
    def run(
        self,
        *,
        name: str | None = None,
        client: Any = None,
        detach: bool = False,
        interactive: bool = False,
        environment_name: str | None = None,
    ) -> Iterator[App]:
        """Build the app's images, then run it until the block ends (or longer, detached)."""
        rpc("App.run")
        time.sleep(float(os.environ.get("FAKE_MODAL_BUILD_SECONDS", "0")))
        for function in self.functions:
            function.paths = function.image.build()
            function.environment = {}
            for secret in function.secrets:
                function.environment.update(secret.resolve())
        self.app_id = new_id("ap-", 22)
        self.detached = detach
        write_json(
            root() / "apps" / f"{self.app_id}.json",
            {"name": self.name, "detached": detach, "environment": environment_name},
        )
        (root() / "apps" / f"{self.app_id}.log").touch()
        self.running = True
        try:
            yield self
        finally:
            self.running = False
            if not detach:
                stop_app(self.app_id)

    @classmethod
    @recorded("App.lookup")
    def lookup(
        cls,
        name: str,
        *,
        client: Any = None,
        environment_name: str | None = None,
        create_if_missing: bool = False,
    ) -> App:
        """The app with that id (or name)."""
        rpc("App.lookup")
        for record in sorted((root() / "apps").glob("*.json")):
            data = read_json(record)
            if record.stem == name or (data and data.get("name") == name):
                app = cls(data.get("name") if data else None)
                app.app_id = record.stem
                return app
        raise exception.NotFoundError(f"App '{name}' not found")

    @recorded("App.stop")
    def stop(self, *, client: Any = None) -> None:
        """Stop the app and the containers it runs."""
        rpc("App.stop")
        if self.app_id is None:
            raise exception.InvalidError("the app is not running")
        LAST["stop"] = {"app_id": self.app_id}
        stop_app(self.app_id)
