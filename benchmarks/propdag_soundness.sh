#!/usr/bin/env bash
# The full soundness sweep of propdag (propdag/tests/soundness_test.py): IBP, CROWN and alpha bounds
# of every VNN-COMP model against onnxruntime on 10,000 points of its property's box plus corners.
# ctest `propdag_soundness` runs a sample of it (the first model of each benchmark, 2,000 points).
# Usage: benchmarks/propdag_soundness.sh [BUILD_DIR] [pytest args...]; one line per model on stdout.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$here/build}"
shift || true
cd "$here"
PROPDAG="${PROPDAG:-$build/propdag/propdag}" PROPDAG_PER_BENCH="${PROPDAG_PER_BENCH:-0}" \
  PROPDAG_POINTS="${PROPDAG_POINTS:-10000}" PROPDAG_REFINE_BUDGET="${PROPDAG_REFINE_BUDGET-}" \
  /usr/bin/python3 -m pytest -q -s -p no:cacheprovider propdag/tests/soundness_test.py "$@"
