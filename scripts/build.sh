#!/usr/bin/env bash
# Configures and builds everything into build/ (Release, Ninja). Extra arguments go to CMake.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$here/build}"
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
elif (($#)); then
  cmake "$build" "$@" >/dev/null
fi
ninja -C "$build" -j"${JOBS:-$(nproc)}"
