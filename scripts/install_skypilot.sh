#!/usr/bin/env bash
# Install the real SkyPilot that tests/backends/test_skypilot_conformance.py reads, as a tool of
# its own (the way a user installs it: `uv tool install skypilot`).
#
# The tool lies outside pytest's cache (clearing that cache does not cost a reinstall, and the
# default test run never reaches the network): ${X_TUI_SKYPILOT_HOME:-~/.cache/x-tui-tests}/
# skypilot-<version>/tools/skypilot. It is reused when it already holds that version; two runs at
# once take turns (flock). Nothing is installed into the project's own environment. Exit 0 when
# the tool is ready, 1 when it could not be made (the conformance tests then skip, saying why).
set -euo pipefail
version="${1:-0.14.1}"
base="${X_TUI_SKYPILOT_HOME:-$HOME/.cache/x-tui-tests}"
home="$base/skypilot-$version"
python="$home/tools/skypilot/bin/python"

installed() {
  [ -x "$python" ] && [ "$("$python" -c 'import sky; print(sky.__version__)' 2>/dev/null)" = "$version" ]
}

if ! command -v uv >/dev/null 2>&1; then
  echo "skypilot $version: uv is not on PATH" >&2
  exit 1
fi
mkdir -p "$home"
exec 9>"$home.lock"
flock 9
if installed; then
  echo "skypilot $version: ready in $home"
  exit 0
fi
# A half-made tool (an install killed midway) fails the check above and is made again. It is
# compiled to bytecode now, once: cold, `import sky` costs 4-6 CPU s more, and the API server's
# test starts seven interpreters at once that would each compile it.
rm -rf "$home/tools" "$home/bin"
if ! UV_TOOL_DIR="$home/tools" UV_TOOL_BIN_DIR="$home/bin" \
  uv tool install --quiet --force --compile-bytecode "skypilot==$version"; then
  echo "skypilot $version: uv tool install failed" >&2
  exit 1
fi
installed || { echo "skypilot $version: installed, but 'import sky' does not say $version" >&2; exit 1; }
echo "skypilot $version: installed in $home"
