#!/bin/bash
# VNN-COMP prepare_instance.sh for propdag: prepare_instance.sh v1 CATEGORY ONNX VNNLIB
# propdag needs no per-instance preparation: checks that the files and the binary are there.
# Exit 0: ready; non-zero: the instance is skipped.
VERSION_STRING=v1
if [ "${1:-}" != "$VERSION_STRING" ]; then
  echo "Expected first argument (version string) '$VERSION_STRING', got '${1:-}'" >&2
  exit 1
fi
CATEGORY=$2
ONNX_FILE=$3
VNNLIB_FILE=$4
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
propdag="${PROPDAG:-${PROPDAG_BUILD_DIR:-$repo/build}/propdag/propdag}"
echo "Preparing propdag for category '$CATEGORY', onnx '$ONNX_FILE', vnnlib '$VNNLIB_FILE'"
for f in "$ONNX_FILE" "$VNNLIB_FILE"; do
  [ -f "$f" ] || [ -f "$f.gz" ] || { echo "prepare_instance.sh: no file $f" >&2; exit 1; }
done
[ -x "$propdag" ] || { echo "prepare_instance.sh: no propdag at $propdag (install_tool.sh v1)" >&2; exit 1; }
exit 0
