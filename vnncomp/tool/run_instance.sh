#!/bin/bash
# VNN-COMP run_instance.sh for propdag:
#   run_instance.sh v1 CATEGORY ONNX VNNLIB RESULTS_FILE TIMEOUT
# Runs `propdag verify --split --result RESULTS_FILE` with the time limit TIMEOUT less a margin
# for loading and writing (5 %, at least 1 s). The results file holds unsat, sat with the
# counterexample ((X_i v) ... (Y_j v)), timeout, unknown, or error when propdag failed (e.g. an op
# without a bound rule; its message goes to stderr). A file ONNX.gz / VNNLIB.gz is used when the
# plain one is absent. Settings are the same for every category.
# propdag bounds the model as slimonnx (built beside it) rewrites it and checks a counterexample
# on the original (--check-model); when slimonnx fails, the original is bounded. PROPDAG_SLIM=0
# bounds the original. On the 122 non-ACAS instances of ../shared at their own timeouts capped at
# 60 s (two at a time) it decided 106 within 60 s against 105 on the original models (lsnc
# quadrotor2d_state_3 verified in 51.6 s), every other verdict the same.
# The method is PROPDAG_METHOD (default alpha: over the 122 non-ACAS instances of ../shared at
# their own timeouts capped at 60 s it decided 92, where crown had decided 51 of the 70 run then).
# Splitting uses PROPDAG_THREADS threads (default: every core, nproc), since the competition
# runs one instance at a time.
# CROWN's refine budget is PROPDAG_REFINE_BUDGET (default 1e9: on a 34-instance sample at 60 s it
# decided 19 against 17 at propdag's default 2e8).
VERSION_STRING=v1
if [ "${1:-}" != "$VERSION_STRING" ]; then
  echo "Expected first argument (version string) '$VERSION_STRING', got '${1:-}'" >&2
  exit 1
fi
CATEGORY=$2
ONNX_FILE=$3
VNNLIB_FILE=$4
RESULTS_FILE=$5
TIMEOUT=$6
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
propdag="${PROPDAG:-${PROPDAG_BUILD_DIR:-$repo/build}/propdag/propdag}"
slimonnx="${SLIMONNX:-${PROPDAG_BUILD_DIR:-$repo/build}/slimonnx/slimonnx}"
stored() { if [ -f "$1" ]; then echo "$1"; elif [ -f "$1.gz" ]; then echo "$1.gz"; else echo "$1"; fi; }
ONNX_FILE="$(stored "$ONNX_FILE")"
VNNLIB_FILE="$(stored "$VNNLIB_FILE")"
echo "Running propdag on category '$CATEGORY', onnx '$ONNX_FILE', vnnlib '$VNNLIB_FILE', results '$RESULTS_FILE', timeout $TIMEOUT"
rm -f "$RESULTS_FILE"
start=$(date +%s.%N)
model="$ONNX_FILE"
check=()
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
if [ "${PROPDAG_SLIM:-1}" = 1 ] && [ -x "$slimonnx" ] &&
  timeout "$TIMEOUT" "$slimonnx" "$ONNX_FILE" -o "$tmp/slim.onnx"; then
  model="$tmp/slim.onnx"
  check=(--check-model "$ONNX_FILE")
  echo "bounding slimonnx's rewrite; a counterexample is confirmed on the original"
fi
# What is left of TIMEOUT, less a margin for loading and writing (5 %, at least 1 s).
budget="$(awk -v t="$TIMEOUT" -v s="$start" -v n="$(date +%s.%N)" 'BEGIN {
  m = 0.05 * t; if (m < 1) m = 1; b = t - m - (n - s); if (b < 0.1) b = 0.1; printf "%.3f", b }')"
# The hard stop, a little past TIMEOUT, in case a single bound computation overruns the budget.
kill_after="$(awk -v t="$TIMEOUT" 'BEGIN { printf "%.3f", t + 5 }')"
timeout -s KILL "$kill_after" "$propdag" verify "$model" "$VNNLIB_FILE" --split 1000000000 \
  --timeout "$budget" --method "${PROPDAG_METHOD:-alpha}" \
  --refine-budget "${PROPDAG_REFINE_BUDGET:-1e9}" --threads "${PROPDAG_THREADS:-$(nproc)}" \
  --result "$RESULTS_FILE" \
  "${check[@]}"
rc=$?
if [ ! -s "$RESULTS_FILE" ]; then
  if [ "$rc" = 137 ]; then echo timeout >"$RESULTS_FILE"; else echo error >"$RESULTS_FILE"; fi
fi
echo "propdag exit status $rc, result: $(head -1 "$RESULTS_FILE")"
exit 0
