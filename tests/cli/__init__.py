"""End-to-end tests of the ``x-tui`` command line (a package, so its test names may repeat
those of ``tests/compute``)."""
