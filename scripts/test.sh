#!/usr/bin/env bash
# Everything from a fresh machine: system packages, build, then every test (unit tests, and again
# built with ASan+UBSan by ctest sanitized_unit_tests; ONNX backend node tests, the VNN-COMP
# model suites when ../shared is present, CLI behaviour, outputs under kill -9).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$here/scripts/setup.sh"
"$here/scripts/build.sh"
ctest --test-dir "${BUILD_DIR:-$here/build}" --output-on-failure -j"${JOBS:-$(nproc)}" "$@"
