#!/usr/bin/env bash
# One shapeonnx process per VNN-COMP model (what a shell pipeline pays), total wall time.
# Usage: benchmarks/shapeonnx_processes.sh [BUILD_DIR] [BENCHMARKS_DIR]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$here/build}"
bench="${2:-${VNNCOMP_BENCHMARKS:-$here/../shared/vnncomp2024/benchmarks}}"
mapfile -t models < <(find "$bench" -name '*.onnx' -o -name '*.onnx.gz' | sort)
start=$(date +%s.%N)
fail=0
for m in "${models[@]}"; do
  "$build/shapeonnx/shapeonnx" "$m" -o /dev/null || fail=$((fail + 1))
done
end=$(date +%s.%N)
echo "shapeonnx: ${#models[@]} models, one process each: $(echo "$end - $start" | bc) s, $fail failed"
