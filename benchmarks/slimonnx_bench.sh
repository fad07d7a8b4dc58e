#!/usr/bin/env bash
# One slimonnx process per VNN-COMP model (what a shell pipeline pays): total wall time and node
# totals per benchmark folder.
# Usage: benchmarks/slimonnx_bench.sh [BUILD_DIR] [BENCHMARKS_DIR]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$here/build}"
bench="${2:-${VNNCOMP_BENCHMARKS:-$here/../shared/vnncomp2024/benchmarks}}"
mapfile -t models < <(find "$bench" -name '*.onnx' -o -name '*.onnx.gz' | sort)
tmp="$(mktemp)"
trap 'rm -f "$tmp"' EXIT
start=$(date +%s.%N)
fail=0
for m in "${models[@]}"; do
  rel="${m#"$bench"/}"
  if stats="$("$build/slimonnx/slimonnx" "$m" -o /dev/null --stats 2>&1)"; then
    echo "${rel%%/*} $stats" >>"$tmp"
  else
    fail=$((fail + 1))
  fi
done
end=$(date +%s.%N)
sed -E 's/^([^ ]+) .*"nodes_before": ([0-9]+), "nodes_after": ([0-9]+), "ms": ([0-9.]+).*/\1 \2 \3 \4/' "$tmp" |
  awk '{b[$1]+=$2; a[$1]+=$3; t[$1]+=$4; n[$1]++}
       END {printf "%-32s %6s %8s %8s %7s %10s\n", "benchmark", "models", "before", "after", "change", "ms";
            for (k in b) {tb+=b[k]; ta+=a[k]; tt+=t[k]; tn+=n[k];
              printf "%-32s %6d %8d %8d %6.1f%% %10.1f\n", k, n[k], b[k], a[k], 100*(a[k]-b[k])/b[k], t[k] | "sort"}
            close("sort")
            printf "%-32s %6d %8d %8d %6.1f%% %10.1f\n", "TOTAL", tn, tb, ta, 100*(ta-tb)/tb, tt}'
echo "slimonnx: ${#models[@]} models, one process each: $(echo "$end - $start" | bc) s, $fail failed"
