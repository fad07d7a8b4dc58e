#!/bin/bash
# `propdag verify --split` on every instance of instances.csv in the ACAS Xu benchmark folder (the
# 186 VNN-COMP instances: 45 networks x props 1-4, and props 5-10 on one network each). Prints one
# line per instance (network, property, verdict, seconds of the whole CLI call) and a count of
# verdicts per property.
#   benchmarks/propdag_verify_acasxu.sh [--propdag BIN] [--method M] [--alpha-steps N]
#                        [--alpha-warm-steps N] [--no-carry-bounds] [--timeout S] [--jobs N]
#                        [--benchmarks DIR] [--engine eigen|torch] [--device cpu|cuda] [--batch K]
#                        [--threads T]
# --engine torch bounds up to K open boxes per call (propdag verify's default: 256); --threads T
# searches the parts of each box on T threads (propdag verify --threads; with --jobs 1, as
# VNN-COMP runs one instance at a time).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
propdag="$here/build/propdag/propdag"
timeout=20
method=crown
steps=""
warm=""
nocarry=""
engine=""
device=""
batch=""
threads=""
jobs=2
bench="${VNNCOMP_BENCHMARKS:-$here/../shared/vnncomp2024/benchmarks}"
while [ $# -gt 0 ]; do
  case "$1" in
    --propdag) propdag="$2"; shift 2 ;;
    --method) method="$2"; shift 2 ;;
    --alpha-steps) steps="$2"; shift 2 ;;
    --alpha-warm-steps) warm="$2"; shift 2 ;;
    --no-carry-bounds) nocarry=1; shift ;;
    --timeout) timeout="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --engine) engine="$2"; shift 2 ;;
    --device) device="$2"; shift 2 ;;
    --batch) batch="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --benchmarks) bench="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "propdag_verify_acasxu.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
acas="$bench/acasxu_2023"
[ -f "$acas/instances.csv" ] || { echo "propdag_verify_acasxu.sh: no $acas/instances.csv" >&2; exit 2; }
[ -x "$propdag" ] || { echo "propdag_verify_acasxu.sh: no propdag at $propdag (scripts/build.sh)" >&2; exit 2; }
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
run_one() {  # ONNX VNNLIB (paths relative to the benchmark folder, without .gz)
  local start end verdict
  start=$(date +%s.%N)
  verdict=$("$propdag" verify "$acas/$1.gz" "$acas/$2.gz" --split 1000000000 --timeout "$timeout" \
    --method "$method" ${steps:+--alpha-steps "$steps"} \
    ${warm:+--alpha-warm-steps "$warm"} ${nocarry:+--no-carry-bounds} \
    ${engine:+--engine "$engine"} ${device:+--device "$device"} ${batch:+--batch "$batch"} \
    ${threads:+--threads "$threads"} | head -1)
  end=$(date +%s.%N)
  printf '%s %s %s %.2f\n' "$(basename "$1" _batch_2000.onnx | sed 's/^ACASXU_run2a_//')" \
    "$(basename "$2" .vnnlib)" "$verdict" "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')"
}
export -f run_one
export propdag acas timeout method steps warm nocarry engine device batch threads
cut -d, -f1,2 "$acas/instances.csv" | tr ',' ' ' |
  xargs -P "$jobs" -L 1 bash -c 'run_one "$0" "$1"' | tee "$out"
echo
echo "property: verified / falsified / unknown (--method $method${steps:+ --alpha-steps $steps}${warm:+ --alpha-warm-steps $warm}${nocarry:+ --no-carry-bounds}${engine:+ --engine $engine}${device:+ --device $device}${batch:+ --batch $batch}${threads:+ --threads $threads} --timeout $timeout)"
awk '{n[$2]++; c[$2" "$3]++} END {for (p in n) printf "%s: %d / %d / %d\n", p, c[p" verified"], c[p" falsified"], c[p" unknown"]}' "$out" | sort -V
awk '$3 != "unknown" {if ($4 > m) m = $4} END {printf "slowest decided instance: %.2f s\n", m}' "$out"
