#!/usr/bin/env bash
# Peak resident memory of each tool on one model, against the model's size.
#
#   benchmarks/peak_memory.sh [BUILD_DIR] [MODEL [VNNLIB]]
#
# MODEL defaults to the largest model of the VNN-COMP 2024 benchmarks (tllverifybench N=M=64,
# 269,561,725 bytes = 257 MiB decompressed; the benchmarks hold no property for it, so propdag
# bounds it over the box [-1, 1]^n unless VNNLIB is given). Runs shapeonnx, slimonnx,
# torchonnx (into a temporary folder) and `propdag bounds` with IBP and CROWN (again with
# `--engine torch` when the LibTorch engine is built), one after another, each under
# /usr/bin/time; prints per tool its peak resident set (MiB), the ratio to the decompressed model
# size, and the wall time. The target is a ratio of at most 2. Exit 1 when a
# tool fails.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$here/build}"
bench="${VNNCOMP_BENCHMARKS:-$here/../shared/vnncomp2024/benchmarks}/tllverifybench_2023"
model="${2:-$bench/onnx/tllBench_n=2_N=M=64_m=1_instance_7_0.onnx.gz}"
spec="${3:-}"
[[ -f "$model" ]] || { echo "no model: $model" >&2; exit 2; }
[[ -z "$spec" || -f "$spec" ]] || { echo "no property: $spec" >&2; exit 2; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
if [[ "$model" == *.gz ]]; then
  bytes=$(gzip -dc "$model" | wc -c)
else
  bytes=$(stat -c %s "$model")
fi
[[ "$spec" == *.gz ]] && { gzip -dc "$spec" >"$tmp/spec.vnnlib"; spec="$tmp/spec.vnnlib"; }
box=(--input-box -1,1)
[[ -n "$spec" ]] && box=(--vnnlib "$spec")
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
echo "model: $(basename "$model") ($(mib "$bytes") MiB decompressed)"
echo "| tool | peak RSS (MiB) | ratio to model | wall (s) |"
echo "|---|---:|---:|---:|"
failed=0
measure() {  # NAME COMMAND...
  local name="$1"
  shift
  if ! /usr/bin/time -f '%M %e' -o "$tmp/time" "$@" >/dev/null 2>"$tmp/err"; then
    echo "| $name | failed: $(tail -1 "$tmp/err") | | |"
    failed=1
    return
  fi
  read -r kib secs <"$tmp/time"
  awk -v k="$kib" -v b="$bytes" -v n="$name" -v s="$secs" \
    'BEGIN { printf "| %s | %.1f | %.2f | %s |\n", n, k / 1024, k * 1024 / b, s }'
}
measure shapeonnx "$build/shapeonnx/shapeonnx" "$model" -o "$tmp/shaped.onnx"
measure slimonnx "$build/slimonnx/slimonnx" "$model" -o "$tmp/slim.onnx"
measure torchonnx "$build/torchonnx/torchonnx" "$model" -o "$tmp/torch"
measure "propdag bounds --method ibp" "$build/propdag/propdag" bounds "$model" "${box[@]}" \
  --method ibp
measure "propdag bounds --method crown" "$build/propdag/propdag" bounds "$model" "${box[@]}" \
  --method crown
if [[ -e "$build/propdag/libpropdag_torch.so" ]]; then  # the LibTorch engine, when built
  for m in ibp crown; do
    measure "propdag bounds --method $m --engine torch" "$build/propdag/propdag" bounds "$model" \
      "${box[@]}" --method "$m" --engine torch
  done
fi
exit "$failed"
