"""``python -m modal app logs APP [--env E] [--since T | --follow]``, as modal 1.6.4's CLI.

Without ``--since`` it prints the last 100 lines, as Modal does; with ``--since`` every line.
``--follow`` streams until the app stops, and cannot be combined with ``--since``.
``FAKE_MODAL_LOGS_START_SECONDS`` makes it take that long to connect before it says anything.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from modal._fake import TOKEN_MISSING, app_stopped, root

TAIL = 100


def _logs(app_id: str, *, since: str | None, follow: bool) -> int:
    if follow and since:
        sys.stderr.write(
            "Usage error: --follow cannot be combined with --since, --until, or --tail.\n"
        )
        return 2
    time.sleep(float(os.environ.get("FAKE_MODAL_LOGS_START_SECONDS") or 0))  # connecting
    delay = os.environ.get("FAKE_MODAL_UNREACHABLE")
    if delay:
        time.sleep(float(delay))
        sys.stderr.write("Error: Could not connect to the Modal server.\n")
        return 1
    if not (os.environ.get("MODAL_TOKEN_ID") and os.environ.get("MODAL_TOKEN_SECRET")):
        sys.stderr.write(f"Error: {TOKEN_MISSING}\n")
        return 1
    path = root() / "apps" / f"{app_id}.log"
    if not path.exists():
        sys.stderr.write(f"Error: App '{app_id}' not found\n")
        return 1
    out = sys.stdout.buffer
    if not follow:
        lines = path.read_bytes().splitlines(keepends=True)
        out.write(b"".join(lines if since else lines[-TAIL:]))
        out.flush()
        return 0
    with path.open("rb") as handle:
        while True:
            stopped = app_stopped(app_id)
            chunk = handle.read()
            if chunk:
                out.write(chunk)
                out.flush()
            elif stopped:
                return 0
            else:
                time.sleep(0.05)


def main() -> int:
    """Run the CLI."""
    parser = argparse.ArgumentParser(prog="modal")
    groups = parser.add_subparsers(dest="group", required=True)
    app = groups.add_parser("app").add_subparsers(dest="command", required=True)
    logs = app.add_parser("logs")
    logs.add_argument("app_identifier")
    logs.add_argument("--env", "-e", default=None)
    logs.add_argument("--since", default=None)
    logs.add_argument("--follow", "-f", action="store_true")
    args = parser.parse_args()
    return _logs(args.app_identifier, since=args.since, follow=args.follow)


if __name__ == "__main__":
    sys.exit(main())
