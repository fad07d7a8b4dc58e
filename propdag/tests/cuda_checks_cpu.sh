#!/usr/bin/env bash
# benchmarks/cuda_checks.sh with --device cpu over a small folder made from the shared models (two
# ACAS Xu instances, two collins_rul_cnn instances), in the build tree of this ctest: the script
# that runs the torch engine and the harness on a GPU machine keeps working where there is none.
# Checks that every step passed, that the engines' bounds are equal, the verdicts (both ACAS Xu
# instances hold, as published), and the harness's count.
#   propdag/tests/cuda_checks_cpu.sh BUILD_DIR BENCHMARKS_DIR     (exit 77: shared folder absent)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$(realpath "$1")"
src="$2"
[[ -f $src/acasxu_2023/instances.csv && -f $src/collins_rul_cnn_2023/instances.csv ]] || exit 77
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
for b in acasxu_2023 collins_rul_cnn_2023; do
  mkdir -p "$tmp/bench/$b/onnx"
  ln -s "$src/$b/vnnlib" "$tmp/bench/$b/vnnlib"
  head -n 2 "$src/$b/instances.csv" >"$tmp/bench/$b/instances.csv"
  # Only the models these instances name (the harness converts every model of onnx/).
  cut -d, -f1 "$tmp/bench/$b/instances.csv" | sort -u | while read -r m; do
    m="${m%.gz}"
    for f in "$src/$b/$m" "$src/$b/$m.gz"; do
      [[ -f $f ]] && ln -s "$f" "$tmp/bench/$b/onnx/"
    done
  done
done
torchonnx=()
[[ -x $build/torchonnx/torchonnx ]] && torchonnx=(--torchonnx "$build/torchonnx/torchonnx")
"$here/benchmarks/cuda_checks.sh" --device cpu --build "$build" --benchmarks "$tmp/bench" \
  --out "$tmp/out" --python /usr/bin/python3 --skip gtest,bench --jobs 2 --deadline 900 \
  --method alpha --vnncomp-timeouts 10 --batch 64 --verify-args '--refine-budget 1e9' \
  "${torchonnx[@]}"
fail() { echo "cuda_checks_cpu: $*" >&2; exit 1; }
grep -q '^equal: 3$' "$tmp/out/equality.log" || fail "equality: $(grep -v ' equal$' "$tmp/out/equality.log")"
[[ $(grep -c '^equal: 3$' "$tmp/out/equality.log") == 2 ]] || fail "equality: not IBP and CROWN"
grep -q '^prop_1: 2 / 0 / 0$' "$tmp/out/acasxu.log" || fail "acasxu: $(cat "$tmp/out/acasxu.log")"
grep -q '^all 2: ' "$tmp/out/vnncomp.log" || fail "vnncomp: $(cat "$tmp/out/vnncomp.log")"
# The verify settings reached both scripts (the VNN-COMP tool's: alpha, refine budget 1e9).
grep -q -- '--method alpha, instances.csv timeouts capped at 10 s, --engine torch --device cpu --batch 64 --refine-budget 1e9)' \
  "$tmp/out/vnncomp.log" || fail "vnncomp settings: $(grep -- --method "$tmp/out/vnncomp.log")"
grep -q -- '--method alpha' "$tmp/out/acasxu.log" || fail "acasxu settings: $(head -3 "$tmp/out/acasxu.log")"
if ((${#torchonnx[@]})); then
  grep -q '^3 passed, 0 failed$' "$tmp/out/harness.log" || fail "harness: $(tail -3 "$tmp/out/harness.log")"
fi
echo "cuda_checks_cpu: all steps passed"
