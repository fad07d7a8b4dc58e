#!/bin/bash
# `propdag verify --split` on every instance of every VNN-COMP benchmark folder but ACAS Xu
# (benchmarks/propdag_verify_acasxu.sh) whose model and property files are present. Prints one
# line per instance (benchmark, model, property, verdict, seconds of the whole CLI call; "error"
# with the message when propdag exits 2, e.g. an op without a bound rule) and the verdicts per
# benchmark. With --check, each falsified instance's point is checked with onnxruntime
# (propdag/tests/check_counterexample.py): "confirmed" or "missed" after its verdict.
# With --vnncomp-timeouts CAP, each instance runs with its own timeout from instances.csv capped
# at CAP seconds (instead of --timeout); --acasxu adds the ACAS Xu folder; --first N keeps the
# first N instances of each benchmark; --only B1,B2 keeps those benchmarks; --slim bounds the model
# as slimonnx rewrites it (build/slimonnx/slimonnx; its time counts), a point found there checked
# on the original (propdag verify --check-model); --out FILE keeps the
# per-instance lines for benchmarks/propdag_vnncomp_report.py, which sets them beside the
# published VNN-COMP 2024 answers.
#   benchmarks/propdag_verify_vnncomp.sh [--propdag BIN] [--method M] [--timeout S] [--jobs N]
#                        [--benchmarks DIR] [--check] [--vnncomp-timeouts CAP] [--acasxu]
#                        [--first N] [--only LIST] [--slim] [--out FILE]
#                        [-- MORE PROPDAG VERIFY ARGUMENTS]
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
propdag="$here/build/propdag/propdag"
timeout=10
method=crown
jobs=2
check=""
cap=""
acasxu=""
first=""
only=""
keep=""
slim=""
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
    --vnncomp-timeouts) cap="$2"; shift 2 ;;
    --acasxu) acasxu=1; shift ;;
    --first) first="$2"; shift 2 ;;
    --only) only=",$2,"; shift 2 ;;
    --out) keep="$2"; shift 2 ;;
    --slim) slim="$here/build/slimonnx/slimonnx"; shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
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
  { [ "$name" = acasxu_2023 ] && [ -z "$acasxu" ]; } || [ ! -f "$dir/instances.csv" ] && continue
  [ -n "$only" ] && [[ "$only" != *",$name,"* ]] && continue
  n=0
  while IFS=, read -r onnx spec limit _; do
    onnx="$(stored "$dir/${onnx%.gz}")"
    spec="$(stored "$dir/${spec%.gz}")"
    if [ -z "$onnx" ] || [ -z "$spec" ]; then continue; fi
    [ -n "$first" ] && [ "$n" -ge "$first" ] && break
    n=$((n + 1))
    # The instance's own limit capped at CAP, or --timeout for every instance.
    if [ -n "$cap" ]; then
      limit="$(awk -v t="${limit:-$cap}" -v c="$cap" 'BEGIN { t += 0; print (t > 0 && t < c) ? t : c }')"
    else
      limit="$timeout"
    fi
    printf '%s %s %s %s\n' "$name" "$onnx" "$spec" "$limit"
  done < <(tr -d '\r' < "$dir/instances.csv")
done > "$list"
run_one() {  # BENCHMARK ONNX VNNLIB TIMEOUT
  local start end verdict err full note="" model="$2" orig=()
  err="$(mktemp)"
  full="$(mktemp)"
  start=$(date +%s.%N)
  if [ -n "$slim" ] && "$slim" "$2" -o "$full.onnx" 2>/dev/null; then
    model="$full.onnx"
    orig=(--check-model "$2")
  fi
  # shellcheck disable=SC2086  # the extra arguments are split on spaces
  "$propdag" verify "$model" "$3" "${orig[@]}" --split 1000000000 --timeout "$4" --method "$method" $more \
    >"$full" 2>"$err" || true
  end=$(date +%s.%N)
  verdict="$(head -1 "$full")"
  [ -n "$verdict" ] || verdict="error: $(head -1 "$err" | cut -c1-160)"
  if [ -n "$check" ] && [ "$verdict" = falsified ]; then
    note=" $("$python" "$here/propdag/tests/check_counterexample.py" "$2" "$3" "$full" |
      head -1 | cut -d: -f1)"
  fi
  rm -f "$err" "$full" "$full.onnx"
  printf '%s %s %s %s %.2f%s\n' "$1" "$(basename "$2" .gz)" "$(basename "$3" .gz)" "$verdict" \
    "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')" "$note"
}
export -f run_one
more="${extra[*]}"
python="${VNNCOMP_PYTHON:-/usr/bin/python3}"
export propdag timeout method more check here slim python
# shellcheck disable=SC2016  # expanded by the inner shell
xargs -P "$jobs" -L 1 bash -c 'run_one "$0" "$1" "$2" "$3"' < "$list" | tee "$out"
[ -n "$keep" ] && cp "$out" "$keep"
echo
limits="--timeout $timeout"
[ -n "$cap" ] && limits="instances.csv timeouts capped at $cap s"
[ -n "$slim" ] && limits="$limits, slimonnx first"
echo "benchmark: verified / falsified / unknown / error (--method $method, $limits${more:+, $more})"
awk '{n[$1]++; v = ($4 == "error:") ? "error" : $4; c[$1" "v]++; t[v]++}
     END {for (b in n) printf "%s: %d / %d / %d / %d\n", b, c[b" verified"], c[b" falsified"],
            c[b" unknown"], c[b" error"];
          printf "all %d: %d / %d / %d / %d\n", NR, t["verified"], t["falsified"], t["unknown"], t["error"]}' "$out" | sort -V
awk '$4 == "verified" || $4 == "falsified" {if ($5 > m) m = $5} END {printf "slowest decided instance: %.2f s\n", m}' "$out"
if [ -n "$check" ]; then
  awk '$4 == "falsified" {n++; if ($6 == "confirmed") c++} END {printf "falsified points confirmed by onnxruntime: %d of %d\n", c, n}' "$out"
fi
