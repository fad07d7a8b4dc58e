#!/bin/bash
# VNN-COMP install_tool.sh for propdag: install_tool.sh v1
# Installs the Debian packages of scripts/setup.sh (when run as root; otherwise they must already
# be there) and builds propdag (and slimonnx) into $PROPDAG_BUILD_DIR (default <repo>/build).
set -euo pipefail
TOOL_NAME=propdag
VERSION_STRING=v1
if [ "${1:-}" != "$VERSION_STRING" ]; then
  echo "Expected first argument (version string) '$VERSION_STRING', got '${1:-}'" >&2
  exit 1
fi
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${PROPDAG_BUILD_DIR:-$repo/build}"
echo "Installing $TOOL_NAME from $repo into $build"
if [ "$(id -u)" = 0 ]; then "$repo/scripts/setup.sh"; fi
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
ninja -C "$build" propdag/propdag slimonnx/slimonnx
"$build/propdag/propdag" --help >/dev/null
