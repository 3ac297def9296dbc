"""The project a command line means: ``--project DIR``, else the one around the current directory.

Every verb that reads a project (``jobs``, ``plan``, ``run``, ``check``, ``backends``, ``serve``
and the TUI itself) asks here, so ``--project`` means the same everywhere.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from x_tui.compute.operations import Project, locate_project, open_project


def project_root(args: argparse.Namespace) -> Path | None:
    """The project directory the command line names, or the nearest one above the current one.

    Args:
        args: The parsed command line (its ``project``, when the verb has that option).

    Returns:
        The directory, resolved; ``None`` when none is named and none holds the current directory.
    """
    given = getattr(args, "project", None)
    return Path(given).resolve() if given else locate_project()


def project_of(args: argparse.Namespace) -> Project:
    """The project the command line names, read (see :func:`project_root`).

    Args:
        args: The parsed command line.

    Returns:
        The project, possibly with a ``problem``.
    """
    return open_project(project_root(args))
