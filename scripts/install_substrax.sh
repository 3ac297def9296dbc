#!/usr/bin/env bash
# Install the published substrax the interop tests drive, into an environment of its own.
#
# The environment lies outside pytest's cache (so clearing that cache does not cost a reinstall):
# ${X_TUI_SUBSTRAX_HOME:-~/.cache/x-tui-tests}/substrax-<version>. It is reused when it already
# holds that version. substrax needs Python 3.12 or newer and uv may not download interpreters
# here, so an installed 3.12 or 3.13 is used (pyenv's, or one on PATH). Nothing is installed into
# the project's own environment. Exit 0 when the environment is ready, 1 when it could not be made
# (the interop tests then skip, saying why).
set -euo pipefail
version="${1:-0.1.22}"
base="${X_TUI_SUBSTRAX_HOME:-$HOME/.cache/x-tui-tests}"
env_dir="$base/substrax-$version"
python="$env_dir/bin/python"

if [ -x "$python" ] && [ "$("$python" -c 'import importlib.metadata as m; print(m.version("substrax"))' 2>/dev/null)" = "$version" ]; then
  echo "substrax $version: ready in $env_dir"
  exit 0
fi

interpreter=""
for candidate in "${X_TUI_SUBSTRAX_PYTHON:-}" \
  "$HOME"/.pyenv/versions/3.13*/bin/python3 "$HOME"/.pyenv/versions/3.12*/bin/python3 \
  /root/.pyenv/versions/3.13*/bin/python3 /root/.pyenv/versions/3.12*/bin/python3 \
  "$(command -v python3.13 || true)" "$(command -v python3.12 || true)"; do
  if [ -n "$candidate" ] && [ -x "$candidate" ]; then
    interpreter="$candidate"
    break
  fi
done
if [ -z "$interpreter" ]; then
  echo "substrax $version: no Python 3.12 or 3.13 found (set X_TUI_SUBSTRAX_PYTHON)" >&2
  exit 1
fi
if ! command -v uv >/dev/null 2>&1; then
  echo "substrax $version: uv is not on PATH" >&2
  exit 1
fi

mkdir -p "$base"
# A half-made environment (an install killed midway) fails the check above and is made again.
rm -rf "$env_dir"
export UV_PYTHON_DOWNLOADS=never
uv venv --quiet --python "$interpreter" "$env_dir"
# Compiled now, once: otherwise the first test processes to import substrax (several at once,
# in parallel workers) each compile it from source.
uv pip install --quiet --compile-bytecode --python "$env_dir/bin/python" "substrax==$version"
echo "substrax $version: installed in $env_dir"
