#!/bin/bash
# `propdag verify --split` on every instance of every VNN-COMP benchmark folder but ACAS Xu
# (benchmarks/propdag_verify_acasxu.sh) whose model and property files are present. Prints one
# line per instance (benchmark, model, property, verdict, seconds of the whole CLI call; "error"
# with the message when propdag exits 2, e.g. an op without a bound rule) and the verdicts per
# benchmark. With --check, each falsified instance's point is checked with onnxruntime
# (propdag/tests/check_counterexample.py): "confirmed" or "missed" after its verdict.
#   benchmarks/propdag_verify_vnncomp.sh [--propdag BIN] [--method M] [--timeout S] [--jobs N]
#                        [--benchmarks DIR] [--check] [-- MORE PROPDAG VERIFY ARGUMENTS]
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
propdag="$here/build/propdag/propdag"
timeout=10
method=crown
jobs=2
check=""
bench="${VNNCOMP_BENCHMARKS:-$here/../shared/vnncomp2024/benchmarks}"
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --propdag) propdag="$2"; shift 2 ;;
    --method) method="$2"; shift 2 ;;
    --timeout) timeout="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --benchmarks) bench="$2"; shift 2 ;;
    --check) check=1; shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "propdag_verify_vnncomp.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -d "$bench" ] || { echo "propdag_verify_vnncomp.sh: no benchmark folder $bench" >&2; exit 2; }
[ -x "$propdag" ] || { echo "propdag_verify_vnncomp.sh: no propdag at $propdag (scripts/build.sh)" >&2; exit 2; }
# A file named in instances.csv, as stored: itself or gzipped (prints nothing when absent).
stored() { if [ -f "$1" ]; then echo "$1"; elif [ -f "$1.gz" ]; then echo "$1.gz"; fi; }
list="$(mktemp)"
out="$(mktemp)"
trap 'rm -f "$list" "$out"' EXIT
for dir in "$bench"/*/; do
  dir="${dir%/}"
  name="$(basename "$dir")"
  [ "$name" = acasxu_2023 ] || [ ! -f "$dir/instances.csv" ] && continue
  while IFS=, read -r onnx spec _; do
    onnx="$(stored "$dir/${onnx%.gz}")"
    spec="$(stored "$dir/${spec%.gz}")"
    [ -n "$onnx" ] && [ -n "$spec" ] && printf '%s %s %s\n' "$name" "$onnx" "$spec"
  done < <(tr -d '\r' < "$dir/instances.csv")
done > "$list"
run_one() {  # BENCHMARK ONNX VNNLIB
  local start end verdict err full note=""
  err="$(mktemp)"
  full="$(mktemp)"
  start=$(date +%s.%N)
  # shellcheck disable=SC2086  # the extra arguments are split on spaces
  "$propdag" verify "$2" "$3" --split 1000000000 --timeout "$timeout" --method "$method" $more \
    >"$full" 2>"$err" || true
  end=$(date +%s.%N)
  verdict="$(head -1 "$full")"
  [ -n "$verdict" ] || verdict="error: $(head -1 "$err" | cut -c1-160)"
  if [ -n "$check" ] && [ "$verdict" = falsified ]; then
    note=" $(/usr/bin/python3 "$here/propdag/tests/check_counterexample.py" "$2" "$3" "$full" |
      head -1 | cut -d: -f1)"
  fi
  rm -f "$err" "$full"
  printf '%s %s %s %s %.2f%s\n' "$1" "$(basename "$2" .gz)" "$(basename "$3" .gz)" "$verdict" \
    "$(echo "$end - $start" | bc)" "$note"
}
export -f run_one
more="${extra[*]}"
export propdag timeout method more check here
# shellcheck disable=SC2016  # expanded by the inner shell
xargs -P "$jobs" -L 1 bash -c 'run_one "$0" "$1" "$2"' < "$list" | tee "$out"
echo
echo "benchmark: verified / falsified / unknown / error (--method $method --timeout $timeout${more:+ $more})"
awk '{n[$1]++; v = ($4 == "error:") ? "error" : $4; c[$1" "v]++; t[v]++}
     END {for (b in n) printf "%s: %d / %d / %d / %d\n", b, c[b" verified"], c[b" falsified"],
            c[b" unknown"], c[b" error"];
          printf "all %d: %d / %d / %d / %d\n", NR, t["verified"], t["falsified"], t["unknown"], t["error"]}' "$out" | sort -V
awk '$4 == "verified" || $4 == "falsified" {if ($5 > m) m = $5} END {printf "slowest decided instance: %.2f s\n", m}' "$out"
if [ -n "$check" ]; then
  awk '$4 == "falsified" {n++; if ($6 == "confirmed") c++} END {printf "falsified points confirmed by onnxruntime: %d of %d\n", c, n}' "$out"
fi
