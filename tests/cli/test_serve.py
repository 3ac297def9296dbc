"""``x-tui serve``: a real browser (headless Chromium) reaches the runs table through the token
URL only; without the token every request is refused; sessions are read-only by default."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support import free_port

if TYPE_CHECKING:
    from tests.cli.cli_support import Cli

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--remote-debugging-port=0",
)


def _status(url: str, cookie: str | None = None) -> tuple[int, str, str]:
    request = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode(), response.headers.get("Set-Cookie", "")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(), ""


def _session_environments(state: Path) -> list[dict[str, str]]:
    """The environments of the ``python -m x_tui`` TUI session processes on the store ``state``.

    Other tests run x-tui sessions at the same time (the suite runs in parallel): only those of
    this test's own state directory are its web view's.
    """
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            raw = (entry / "environ").read_bytes()
        except OSError:
            continue
        if b"x_tui" in argv and b"serve" not in argv and b"--project" in argv:
            pairs = (item.partition(b"=") for item in raw.split(b"\0") if item)
            env = {key.decode(): value.decode() for key, _, value in pairs}
            if env.get("SUBSTRAX_STATE_DIR") == str(state):
                found.append(env)
    return found


def test_a_browser_reaches_the_runs_table_only_through_the_token_url(
    cli: Cli, tmp_path: Path
) -> None:
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("Debian's chromium package is not installed (.ci/run installs it)")
    run_id = cli.submitted_id(cli("run", "failing", "--detach").stdout)
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "x_tui", "serve", "--port", str(port)],
        cwd=cli.project,
        env=cli.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    browser: subprocess.Popen[bytes] | None = None
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line.startswith("x-tui web view (read-only): http://127.0.0.1:"), line
        url = line.split(": ", 1)[1].strip()
        base = f"http://127.0.0.1:{port}/"
        for _ in range(300):  # the line is printed just before the server listens
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)

        assert _status(base)[0] == 403
        assert _status(base + "?token=wrong")[0] == 403
        assert _status(base + "static/js/textual.js")[0] == 403
        code, page, cookie = _status(url)
        assert code == 200
        assert f"ws://127.0.0.1:{port}/ws" in page
        assert "HttpOnly" in cookie
        assert _status(base + "static/js/textual.js", cookie.split(";")[0])[0] == 200

        browser = subprocess.Popen(
            [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'chromium'}", url],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        # The browser's session is an x-tui process of its own; what its runs table has
        # selected, it keeps in the view file.
        view = cli.state / "x-tui" / "view.json"
        for _ in range(600):
            if view.exists() and json.loads(view.read_text()).get("selected_run") == run_id:
                break
            time.sleep(0.1)
        else:
            raise AssertionError(f"the browser's session never showed {run_id}")
        sessions = _session_environments(cli.state)
        assert sessions, "no session process found"
        assert all(env.get("X_TUI_READ_ONLY") == "1" for env in sessions)
    finally:
        if browser is not None:
            os.killpg(browser.pid, signal.SIGKILL)
            browser.wait()
        os.killpg(server.pid, signal.SIGINT)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
