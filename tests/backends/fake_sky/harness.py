"""Test harness for the skypilot backend: the fake SkyPilot's tool environment, a locked project,
a real ``sshd`` on 127.0.0.1 and a real S3-compatible server (moto) on 127.0.0.1.

The fake ``sky`` package is installed the way ``uv tool install skypilot`` installs the real one:
a virtual environment of its own whose ``bin/sky`` script has that environment's ``python`` as its
``#!`` line, linked from a ``bin`` directory elsewhere (as ``~/.local/bin/sky``). Its ``python``
is a link to the base interpreter, so the backend finds SkyPilot's interpreter only if it resolves
the ``sky`` link and not the ``python`` one. Like ``skypilot[aws]``, it has the AWS SDK (boto3 and
what it needs, linked from this interpreter's packages) unless made without.
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import free_port

FAKE_SKY_DIR = Path(__file__).resolve().parent
"""This directory, which holds the fake ``sky`` package."""

LOCKED_PYPROJECT = """\
[project]
name = "sky-demo"
version = "0.1.0"
requires-python = ">=3.10"
dependencies = []

[tool.uv]
package = false
"""


@dataclass(frozen=True, kw_only=True, slots=True)
class SkyTool:
    """The fake SkyPilot's tool environment.

    Attributes:
        venv: The environment.
        link: The ``sky`` link on a ``bin`` directory, as ``uv tool`` makes it.
    """

    venv: Path
    link: Path

    @property
    def python(self) -> Path:
        """The environment's ``python`` (a link to the base interpreter)."""
        return self.venv / "bin" / "python"


AWS_SDK = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "urllib3", "six")
"""The top-level modules ``skypilot[aws]`` brings for S3: boto3 and what it imports."""


def make_sky_tool(root: Path, *, aws_sdk: bool = True) -> SkyTool:
    """Make the fake SkyPilot's tool environment under ``root`` (``aws_sdk``: with boto3)."""
    venv = root / "tools" / "skypilot"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    where = {"base": str(venv), "platbase": str(venv)}
    purelib = Path(sysconfig.get_path("purelib", vars=where, scheme="venv"))
    purelib.mkdir(parents=True, exist_ok=True)
    paths = [str(FAKE_SKY_DIR)]
    if aws_sdk:
        sdk = venv / "aws-sdk"
        sdk.mkdir()
        for name in AWS_SDK:
            spec = importlib.util.find_spec(name)
            if spec is None or spec.origin is None:
                raise RuntimeError(f"{name} is not installed here (it comes with moto)")
            origin = Path(spec.origin)
            found = origin.parent if origin.name == "__init__.py" else origin
            (sdk / found.name).symlink_to(found)
        paths.append(str(sdk))
    (purelib / "fake_sky.pth").write_text("".join(f"{path}\n" for path in paths), encoding="utf-8")
    script = venv / "bin" / "sky"
    body = (FAKE_SKY_DIR / "bin" / "sky").read_text(encoding="utf-8").split("\n", 1)[1]
    script.write_text(f"#!{venv / 'bin' / 'python'}\n{body}", encoding="utf-8")
    script.chmod(0o755)
    bin_dir = root / "bin"
    bin_dir.mkdir()
    link = bin_dir / "sky"
    link.symlink_to(script)
    return SkyTool(venv=venv, link=link)


@dataclass(frozen=True, kw_only=True, slots=True)
class FakeSky:
    """One test's fake SkyPilot: its state directory and the switches a test flips.

    Attributes:
        tool: The tool environment.
        root: ``$FAKE_SKY_ROOT``.
    """

    tool: SkyTool
    root: Path

    def launches(self) -> list[str]:
        """Each cluster the fake ever provisioned, in order."""
        path = self.root / "launches.log"
        return path.read_text().split("\n")[:-1] if path.exists() else []

    def clusters(self) -> list[str]:
        """The clusters that exist now."""
        return sorted(path.parent.name for path in self.root.glob("clusters/*/cluster.json"))

    def fail(self, step: str, message: str) -> None:
        """Make ``provision``, ``cancel`` or ``down`` fail with SkyPilot saying ``message``."""
        (self.root / f"fail-{step}").write_text(message)

    def hold(self, switch: str) -> None:
        """Hold the fake at ``hold-launch`` or ``hold-request-id`` until :meth:`release`."""
        (self.root / switch).touch()

    def release(self, switch: str) -> None:
        """Let the fake go on past ``switch``."""
        (self.root / switch).unlink(missing_ok=True)

    def enable_clouds(self, *clouds: str) -> None:
        """The clouds the fake says are enabled (none: ``sky check`` finds no cloud)."""
        (self.root / "clouds.json").write_text(json.dumps(list(clouds)))

    def requests(self, name: str) -> list[dict[str, object]]:
        """The fake API server's requests of one kind."""
        found = []
        for path in sorted((self.root / "requests").glob("*.json")):
            data = json.loads(path.read_text())
            if data.get("name") == name:
                found.append(data)
        return found

    def down(self, cluster: str) -> None:
        """Tear a cluster down behind x-tui's back (its autostop timer ran out)."""
        subprocess.run(
            [str(self.tool.python), "-c", f"import sky; sky.get(sky.down({cluster!r}))"],
            env={**os.environ, "FAKE_SKY_ROOT": str(self.root)},
            check=True,
            capture_output=True,
        )

    def preempt(self, cluster: str) -> None:
        """Take a spot cluster away as its cloud would: its processes die mid-job and SkyPilot
        reads it ``STOPPED``."""
        subprocess.run(
            [str(self.tool.python), "-m", "sky._fake.server", "preempt", cluster],
            env={**os.environ, "FAKE_SKY_ROOT": str(self.root)},
            check=True,
            capture_output=True,
        )

    def remote(self, cluster: str, path: str) -> Path:
        """Where a file of a cluster's home is on this machine (``path`` relative to ``~``)."""
        return self.root / "clusters" / cluster / "home" / path

    def cleanup(self) -> None:
        """End every process the fake started."""
        subprocess.run(
            [str(self.tool.python), "-m", "sky._fake.server", "cleanup"],
            env={**os.environ, "FAKE_SKY_ROOT": str(self.root)},
            check=False,
            capture_output=True,
        )


def install_fake_sky(
    tool: SkyTool, root: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[FakeSky]:
    """Point the environment at a fresh fake SkyPilot; end its processes afterwards."""
    root.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("FAKE_SKY_ROOT", str(root))
    fake = FakeSky(tool=tool, root=root)
    try:
        yield fake
    finally:
        fake.cleanup()


def _is_under_tmp(path: Path) -> bool:
    temporary = {Path("/tmp").resolve(), Path(tempfile.gettempdir()).resolve()}
    resolved = path.resolve()
    return any(resolved == top or resolved.is_relative_to(top) for top in temporary)


def outside_tmp_dir(name: str) -> Iterator[Path]:
    """A fresh directory not under /tmp, removed afterwards.

    The copy transport's worker runs under bubblewrap with a fresh ``/tmp``, so a fake cluster
    (its home, its workdir) must live elsewhere: under ``$X_TUI_TEST_CLUSTERS``, else
    ``~/.cache/x-tui-tests/fake-clusters`` (never pytest's cache, which a run may lack). Each
    directory's name is unique, so tests running in parallel never share one.
    """
    base = Path(
        os.environ.get("X_TUI_TEST_CLUSTERS")
        or Path.home() / ".cache" / "x-tui-tests" / "fake-clusters"
    )
    if _is_under_tmp(base):
        raise RuntimeError(f"X_TUI_TEST_CLUSTERS must not lie under /tmp: {base}")
    base.mkdir(parents=True, exist_ok=True)
    path = base / f"{name}-{secrets.token_hex(6)}"
    path.mkdir()
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def make_locked_project(root: Path, scripts: dict[str, str]) -> Path:
    """A project with ``uv.lock`` (no dependencies) and ``scripts/<name>.py`` for each script."""
    (root / "scripts").mkdir(parents=True)
    (root / "pyproject.toml").write_text(LOCKED_PYPROJECT, encoding="utf-8")
    for name, text in scripts.items():
        (root / "scripts" / f"{name}.py").write_text(text, encoding="utf-8")
    subprocess.run(["uv", "lock", "--offline", "-q"], cwd=root, check=True)
    return root


def sky_pyproject(sky: Path, transport: str, table: dict[str, object], jobs: str) -> str:
    """A project's pyproject.toml whose default backend is skypilot through ``sky``."""
    lines = "".join(f"{key} = {json.dumps(value)}\n" for key, value in table.items())
    return (
        LOCKED_PYPROJECT
        + '\n[tool.substrax.compute]\nbackend = "skypilot"\n\n'
        + f"[tool.substrax.compute.backends.skypilot]\nsky = {json.dumps(str(sky))}\n\n"
        + f"[tool.substrax.compute.backends.skypilot.{transport}]\n{lines}\n{jobs}\n"
    )


def run_cli(
    args: list[str], *, cwd: Path, env: dict[str, str], timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m x_tui ARGS`` in ``cwd``, its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "x_tui", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


class ServerExitedError(RuntimeError):
    """A server exited before it listened (most often: another process took its port)."""


def _wait_for_port(port: int, process: subprocess.Popen[bytes], what: str) -> None:
    """Wait until ``process`` itself listens on ``port`` (not another process that took it)."""
    for _ in range(300):
        if process.poll() is not None:
            raise ServerExitedError(f"{what} exited with {process.returncode}")
        if _listens(process.pid, port):
            return
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port}")


def _listens(pid: int, port: int) -> bool:
    """Whether process ``pid`` holds a socket listening on TCP ``port`` (read from ``/proc``)."""
    listening = set()
    with contextlib.suppress(OSError), open("/proc/net/tcp", encoding="ascii") as table:
        for line in itertools.islice(table, 1, None):
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # LISTEN
                listening.add(f"socket:[{fields[9]}]")
    if not listening:
        return False
    with contextlib.suppress(OSError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                if os.readlink(fd) in listening:
                    return True
    return False


def _serve(
    command: Callable[[int], list[str]], *, what: str, log: Path, tries: int = 3
) -> tuple[subprocess.Popen[bytes], int]:
    """Start the server ``command(port)`` on a free port of 127.0.0.1, in a session of its own.

    A server that exits before it listens is started again on another port, ``tries`` times in
    all; its output goes to ``log``, whose end the last failure names.

    Returns:
        The server's process and its port.
    """
    failures: list[str] = []
    for _ in range(tries):
        port = free_port()
        with log.open("ab") as output:
            process = subprocess.Popen(
                command(port),
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            _wait_for_port(port, process, what)
        except ServerExitedError as exited:
            said = log.read_bytes()[-300:].decode(errors="replace").strip()
            failures.append(f"port {port}: {exited} ({said})")
            continue
        except BaseException:
            _stop(process)
            raise
        return process, port
    raise RuntimeError(f"{what} did not start: " + "; ".join(failures))


def _stop(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@dataclass(frozen=True, kw_only=True, slots=True)
class SshServer:
    """A real ``sshd`` on 127.0.0.1 that lets in one key made for the tests.

    Attributes:
        port: Its port.
        user: The user it lets in (this one).
        key: The private key.
    """

    port: int
    user: str
    key: Path

    def configure(self, fake: FakeSky) -> None:
        """Have the fake write an SSH configuration for each cluster, reaching this server."""
        settings = {"port": self.port, "user": self.user, "key": str(self.key)}
        (fake.root / "ssh.json").write_text(json.dumps(settings))


def ssh_missing() -> str | None:
    """Why the copy transport cannot be tested here, or ``None``."""
    for tool in ("ssh", "ssh-keygen", "rsync", "bwrap"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (CI installs openssh-server, rsync and bubblewrap)"
    if shutil.which("sshd") is None and not Path("/usr/sbin/sshd").exists():
        return "sshd is not installed (CI installs openssh-server)"
    probe = subprocess.run(
        ["bwrap", "--ro-bind", "/", "/", "true"], capture_output=True, check=False
    )
    if probe.returncode != 0:
        return "bubblewrap cannot make a sandbox here: " + probe.stderr.decode(errors="replace")
    return None


def start_sshd(root: Path) -> Iterator[SshServer]:
    """Start ``sshd`` on a free port of 127.0.0.1 with a fresh host key and client key."""
    root.mkdir(parents=True, exist_ok=True)
    for name in ("host_key", "client_key"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(root / name)], check=True
        )
    shutil.copy(root / "client_key.pub", root / "authorized_keys")
    (root / "authorized_keys").chmod(0o600)
    user = (
        os.environ.get("USER")
        or subprocess.run(["id", "-un"], capture_output=True, text=True, check=True).stdout.strip()
    )
    config = root / "sshd_config"
    config.write_text(  # the port is given on the command line (``-p``), one per try
        f"ListenAddress 127.0.0.1\nHostKey {root / 'host_key'}\n"
        f"PidFile {root / 'sshd.pid'}\nAuthorizedKeysFile {root / 'authorized_keys'}\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        "PermitRootLogin prohibit-password\nUsePAM no\nStrictModes no\n"
        f"AcceptEnv FAKE_SKY_HOME\nForceCommand {FAKE_SKY_DIR / 'bin' / 'cluster-shell'}\n"
        # sshd runs the command with the user's login shell; bash, started by sshd at shell level
        # 1, sources this machine's ~/.bashrc (pyenv's init: half a second a session). A fake
        # cluster's session is a nested shell, so it never does.
        "SetEnv SHLVL=1\n"
        "LogLevel INFO\n",
        encoding="utf-8",
    )
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    sshd = shutil.which("sshd") or "/usr/sbin/sshd"
    process, port = _serve(
        lambda port: [sshd, "-D", "-e", "-f", str(config), "-p", str(port)],
        what="sshd",
        log=root / "sshd.log",
    )
    try:
        yield SshServer(port=port, user=user, key=root / "client_key")
    finally:
        _stop(process)


def s3_missing() -> str | None:
    """Why the bucket transport cannot be tested here, or ``None``."""
    if shutil.which("aws") is None:
        return "the aws CLI is not installed (CI: pip install awscli)"
    if shutil.which("moto_server") is None:
        return "moto's server is not installed (CI: pip install 'moto[server]')"
    return None


@dataclass(frozen=True, kw_only=True, slots=True)
class S3Server:
    """moto's S3-compatible server on 127.0.0.1.

    Attributes:
        endpoint: Its URL.
        environment: The variables that point the aws CLI at it.
    """

    endpoint: str
    environment: dict[str, str]

    def make_bucket(self, name: str) -> str:
        """Create a bucket; its ``s3://`` URI."""
        import boto3  # the tests without a bucket never load it

        boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=self.environment["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=self.environment["AWS_SECRET_ACCESS_KEY"],
            region_name=self.environment["AWS_DEFAULT_REGION"],
        ).create_bucket(Bucket=name)
        return f"s3://{name}"


def start_moto(root: Path) -> Iterator[S3Server]:
    """Start moto's server on a free port of 127.0.0.1; stop it afterwards."""
    root.mkdir(parents=True, exist_ok=True)
    process, port = _serve(
        lambda port: ["moto_server", "-H", "127.0.0.1", "-p", str(port)],
        what="moto_server",
        log=root / "moto.log",
    )
    try:
        endpoint = f"http://127.0.0.1:{port}"
        yield S3Server(
            endpoint=endpoint,
            environment={
                "AWS_ENDPOINT_URL": endpoint,
                "AWS_ACCESS_KEY_ID": "testing",
                "AWS_SECRET_ACCESS_KEY": "testing",
                "AWS_DEFAULT_REGION": "us-east-1",
                "AWS_CONFIG_FILE": str(root / "aws-config"),
                "AWS_SHARED_CREDENTIALS_FILE": str(root / "aws-credentials"),
            },
        )
    finally:
        _stop(process)
