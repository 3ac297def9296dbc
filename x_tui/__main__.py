"""``python -m x_tui``: the same as the ``x-tui`` command."""

import sys

from x_tui.cli import main

sys.exit(main())
