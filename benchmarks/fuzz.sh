#!/usr/bin/env bash
# Runs the libFuzzer targets of tests/fuzz for a number of executions each.
#
#   benchmarks/fuzz.sh [RUNS] [TARGET...]     (RUNS default 1000000; targets default all six:
#                                             onnx_load shapeonnx slimonnx torchonnx vnnlib propdag)
#
# FUZZ_TIME=SECONDS caps each target's run (libFuzzer's -max_total_time; default no cap): a run
# ends at RUNS executions or FUZZ_TIME seconds, whichever comes first. The targets run one after
# another, each on one core. FUZZ_TIMEOUT (default 60) is the seconds one input may take before
# it counts as a hang: under ASan at -O1 on a loaded 2-core machine, seeds that take under 2 s in
# the release build took over 20. FUZZ_MAX_LEN (default 1048576) is the largest input, seed or
# mutant, in bytes: the ONNX seeds above it are left out of that run's corpus. The model-level
# targets (slimonnx, torchonnx, propdag) spend seconds per 1 MiB seed under ASan, so a run that
# should reach many executions wants e.g. FUZZ_MAX_LEN=65536. FUZZ_KEEP_GOING=1 runs libFuzzer in
# fork mode with crashes, hangs and out-of-memory inputs ignored: the run goes on past a finding (each
# one still lands in crashes/), so one run reaches its executions or its time.
#
# Configures and builds $FUZZ_BUILD (default build-fuzz: clang-14, -DSUITE_FUZZ=ON and
# -DSUITE_SANITIZE=ON, so ASan and UBSan findings count as crashes), makes the seed corpora
# (tests/fuzz/make_corpus.py: ONNX node tests, small VNN-COMP models and properties), and runs each
# target on its corpus with the structure-aware ONNX mutator. Per target: one summary line
# (executions, seconds, corpus size, findings); crashing inputs land in $FUZZ_BUILD/crashes/NAME
# (each one wants a regression input in tests/fuzz/regress and a fix). torchonnx's emitted model.py
# files (every 64th) are py_compiled at the end. Exit 1 when any target found anything.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${FUZZ_BUILD:-$here/build-fuzz}"
runs="${1:-1000000}"
shift || true
targets=("$@")
((${#targets[@]})) || targets=(onnx_load shapeonnx slimonnx torchonnx vnnlib propdag)
if [[ ! -f "$build/build.ninja" ]]; then
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  CXX=clang++-14 cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=None "${launcher[@]}" \
    -DCMAKE_CXX_FLAGS="-O1 -gline-tables-only" -DSUITE_FUZZ=ON -DSUITE_SANITIZE=ON \
    -DBUILD_BENCHMARKS=OFF >/dev/null || exit 2
fi
ninja -C "$build" -j"${JOBS:-$(nproc)}" "${targets[@]/#/fuzz_}" >/dev/null || exit 2
max_len="${FUZZ_MAX_LEN:-1048576}"
seeds="$build/corpus-$max_len"
/usr/bin/python3 "$here/tests/fuzz/make_corpus.py" "$seeds" --limit "$max_len" >/dev/null || exit 2
pydir="$build/emitted_py"
mkdir -p "$pydir"
export FUZZ_PYTHON_DIR="$pydir"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
found=0
for t in "${targets[@]}"; do
  corpus="$seeds/onnx"
  [[ "$t" == vnnlib ]] && corpus="$seeds/vnnlib"
  work="$build/corpus/found_$t"  # new inputs this target found; seeds stay untouched
  crashes="$build/crashes/$t"
  mkdir -p "$work" "$crashes"
  log="$build/fuzz_$t.log"
  start=$(date +%s)
  keep=()
  [[ "${FUZZ_KEEP_GOING:-0}" == 1 ]] && keep=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  "$build/tests/fuzz/fuzz_$t" "$work" "$corpus" "${keep[@]}" -runs="$runs" -max_total_time="${FUZZ_TIME:-0}" \
    -max_len="$max_len" -timeout="${FUZZ_TIMEOUT:-60}" \
    -rss_limit_mb=4096 -malloc_limit_mb=4096 -artifact_prefix="$crashes/" -print_final_stats=1 \
    >"$log" 2>&1
  rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  # fork mode prints no final stats: its progress lines start with #EXECUTIONS
  [[ -n "$execs" ]] || execs=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#')
  [[ -n "$execs" ]] || execs="?"
  n=$(find "$crashes" -type f ! -name 'slow-unit-*' | wc -l)  # slow units are reports, not failures
  ((n || rc)) && found=1
  echo "fuzz_$t: $execs executions in $(($(date +%s) - start)) s, exit $rc, corpus +$(find "$work" -type f | wc -l), findings $n"
done
bad=0
for f in "$pydir"/*.py; do
  [[ -e "$f" ]] || continue
  /usr/bin/python3 -m py_compile "$f" 2>/dev/null || { bad=$((bad + 1)); echo "does not compile: $f"; }
done
echo "emitted Python: $(find "$pydir" -name '*.py' | wc -l) files, $bad do not compile"
((bad)) && found=1
exit "$found"
