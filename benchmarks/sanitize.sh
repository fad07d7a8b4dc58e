#!/usr/bin/env bash
# Builds the C++ unit tests with AddressSanitizer + UndefinedBehaviorSanitizer (-DSUITE_SANITIZE=ON)
# and runs them; any finding aborts its test binary (-fno-sanitize-recover=all).
#
#   benchmarks/sanitize.sh [TEST_BINARY...]   (default: common_test shapeonnx_test slimonnx_test
#                                             torchonnx_test propdag_test)
#
# $SAN_BUILD (default build-asan) is configured with the compiler CMake finds (GCC here; clang-14
# works too, but cannot compile torchonnx_test's LibTorch headers in C++20). A clean build of the
# five binaries compiles ~190 translation units, twice the Release build's time, which is why this
# is a script and not part of ctest's 30-minute budget. Prints one line per binary.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${SAN_BUILD:-$here/build-asan}"
tests=("$@")
((${#tests[@]})) || tests=(common_test shapeonnx_test slimonnx_test torchonnx_test propdag_test)
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSUITE_SANITIZE=ON \
    -DBUILD_BENCHMARKS=OFF >/dev/null || exit 2
fi
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
failed=0
for t in "${tests[@]}"; do
  if ! ninja -C "$build" -j"${JOBS:-$(nproc)}" "$t" >"$build/build_$t.log" 2>&1; then
    echo "$t: build failed ($build/build_$t.log)"
    failed=1
    continue
  fi
  bin="$(find "$build" -name "$t" -type f -perm -u+x | head -1)"
  start=$(date +%s)
  "$bin" --gtest_brief=1 >"$build/$t.log" 2>&1
  rc=$?
  summary="$(grep -E '^\[  (PASSED|FAILED)  \]' "$build/$t.log" | tr '\n' ' ')"
  findings="$(grep -cE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$build/$t.log")"
  echo "$t: exit $rc in $(($(date +%s) - start)) s, $summary sanitizer reports $findings ($build/$t.log)"
  ((rc)) && failed=1
done
exit "$failed"
