"""``x-tui serve``: the terminal UI in a browser, on 127.0.0.1, behind a token.

Unlike the headless verbs this one imports Textual (through textual-serve), when it runs.
"""

from __future__ import annotations

import argparse

from x_tui.cli.output import say


def serve(args: argparse.Namespace) -> int:
    """``x-tui serve [--port N] [--allow-actions]``: serve until Ctrl-C.

    Args:
        args: The parsed command line.

    Returns:
        0 once stopped.

    Raises:
        ValueError: If the port is not one a server can listen on.
    """
    if not 1 <= args.port <= 65535:
        raise ValueError(f"--port: expected a port from 1 to 65535, got {args.port}")
    from x_tui.app.web_view import serve as serve_web
    from x_tui.cli.project_arg import project_root

    project = project_root(args)
    mode = "actions allowed" if args.allow_actions else "read-only"

    def announce(url: str) -> None:
        say(f"x-tui web view ({mode}): {url}")
        say(f"from another machine: ssh -L {args.port}:127.0.0.1:{args.port} <this host>")

    serve_web(project, port=args.port, allow_actions=args.allow_actions, announce=announce)
    return 0
