"""``x-tui serve``: the TUI in a browser (textual-serve) on 127.0.0.1, behind a random token.

Every request must carry the token: the first in the URL's query (``/?token=…``), which sets
an HttpOnly, SameSite=Strict cookie the page's later requests (its scripts, its websocket)
carry instead. Anything else is refused with 403. Each browser session runs its own
``python -m x_tui`` in a subprocess, read-only (``X_TUI_READ_ONLY=1``) unless the server was
started with ``--allow-actions``. The server binds 127.0.0.1 only; from elsewhere it is reached
through an SSH tunnel (``ssh -L PORT:127.0.0.1:PORT host``).
"""

from __future__ import annotations

import logging
import os
import secrets
import shlex
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web
from textual_serve.server import Server

from x_tui.app.read_only import READ_ONLY_ENV

HOST = "127.0.0.1"
COOKIE = "x_tui_token"
DEFAULT_PORT = 8765

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def new_token() -> str:
    """A random token (32 URL-safe characters, 192 bits)."""
    return secrets.token_urlsafe(24)


def app_command(project: Path | None) -> str:
    """The shell command each browser session runs: this interpreter's ``x_tui``, quoted."""
    argv = [sys.executable, "-m", "x_tui"]
    if project is not None:
        argv += ["--project", str(project)]
    return shlex.join(argv)


class TokenServer(Server):
    """textual-serve's server, refusing every request without the token."""

    def __init__(self, command: str, *, port: int, token: str) -> None:
        """Serve ``command`` on 127.0.0.1:``port``, guarded by ``token``."""
        super().__init__(command, host=HOST, port=port, title="x-tui")
        self.token = token

    @property
    def url(self) -> str:
        """The URL to open (it carries the token)."""
        return f"http://{HOST}:{self.port}/?token={self.token}"

    async def _make_app(self) -> web.Application:
        app: web.Application = await super()._make_app()
        app.middlewares.append(self._guard)
        return app

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        given = request.query.get("token", "")
        cookie = request.cookies.get(COOKIE, "")
        by_query = bool(given) and secrets.compare_digest(given, self.token)
        by_cookie = bool(cookie) and secrets.compare_digest(cookie, self.token)
        if not (by_query or by_cookie):
            raise web.HTTPForbidden(
                text="x-tui serve: this page needs its token (open the URL x-tui serve printed)\n"
            )
        response = await handler(request)
        if by_query and request.path == "/":
            response.set_cookie(COOKIE, self.token, httponly=True, samesite="Strict")
        return response

    def initialize_logging(self) -> None:
        """textual-serve's logging, without the access log (its lines would hold the token)."""
        super().initialize_logging()
        logging.getLogger("aiohttp.access").setLevel(logging.WARNING)

    async def on_startup(self, app: web.Application) -> None:
        """Print nothing: the command prints the URL, with its token, itself."""


def serve(project: Path | None, *, port: int, allow_actions: bool, announce: Any) -> None:
    """Serve the TUI until SIGINT/SIGTERM.

    Args:
        project: The project each session opens.
        port: The port on 127.0.0.1.
        allow_actions: Let sessions cancel, fetch, re-run and submit.
        announce: Called with the URL once (the command prints it).
    """
    if allow_actions:
        os.environ.pop(READ_ONLY_ENV, None)
    else:
        os.environ[READ_ONLY_ENV] = "1"
    server = TokenServer(app_command(project), port=port, token=new_token())
    announce(server.url)
    server.serve()
