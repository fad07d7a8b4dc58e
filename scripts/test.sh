#!/usr/bin/env bash
# Everything from a fresh machine: system packages, build, then every test (unit tests, and again
# built with ASan+UBSan by ctest sanitized_unit_tests; ONNX backend node tests, the VNN-COMP
# model suites when ../shared is present, CLI behaviour, outputs under kill -9).
# The suites that run over every VNN-COMP model take, of the models over 64 MiB decompressed, only
# the largest of each benchmark ($SUITE_LARGE_MODELS=largest; 135 of the 146 shared models): the
# other 11 are same-architecture siblings of the one kept that would take a third of the run.
# SUITE_LARGE_MODELS=all scripts/test.sh runs them all.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$here/scripts/setup.sh"
"$here/scripts/build.sh"
export SUITE_LARGE_MODELS="${SUITE_LARGE_MODELS:-largest}"
ctest --test-dir "${BUILD_DIR:-$here/build}" --output-on-failure -j"${JOBS:-$(nproc)}" "$@"
