#!/usr/bin/env bash
# The main job on a built-in default: set up, build, create a small CNN, run it through
#   shapeonnx | slimonnx | torchonnx
# then load the generated PyTorch, compare it with onnxruntime and run it under vmap.
# Usage: scripts/demo.sh [MODEL.onnx[.gz]]   (default: the demo CNN, written to build/demo/)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$here/scripts/setup.sh"
"$here/scripts/build.sh" >/dev/null
build="${BUILD_DIR:-$here/build}"
out="$build/demo"
mkdir -p "$out"
model="${1:-$out/demo_cnn.onnx}"
if [[ $# -eq 0 ]]; then
  /usr/bin/python3 "$here/scripts/make_demo_model.py" "$model"
  echo "demo: wrote $model (a small CNN with a symbolic batch dimension)"
fi
stem="$(basename "$model")"; stem="${stem%.gz}"; stem="${stem%.onnx}"
shaped="$out/$stem.shaped.onnx"
"$build/shapeonnx/shapeonnx" "$model" -o "$shaped" --stats
"$build/shapeonnx/shapeonnx" "$model" | "$build/slimonnx/slimonnx" - --stats |
  "$build/torchonnx/torchonnx" - -o "$out" --class-name "$stem" --stats
echo "demo: generated $out/$stem.py and $out/$stem.pth"
PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" /usr/bin/python3 "$here/scripts/run_generated.py" \
  "$out" "$stem" "$shaped"
