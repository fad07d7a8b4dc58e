#!/usr/bin/env bash
# Soundness fuzzing of propdag on random networks (propdag/tests/random_nets_test.py): IBP, CROWN and
# alpha bounds of each network against its outputs computed in float64 at sampled points of a
# random box, and `propdag verify` checked by sampling. ctest `propdag_random_nets` runs 150
# networks (60 for verify); this runs more.
# Usage: benchmarks/propdag_random_nets.sh [BUILD_DIR] [NETS] [FIRST_SEED] (NETS for the bounds,
# NETS / 4 for verify); with the LibTorch engine built, a share of them also runs through it.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$here/build}"
nets="${2:-2000}"
seed="${3:-0}"
torch=0
[ -e "$build/propdag/libpropdag_torch.so" ] && torch=1
cd "$here"
PROPDAG="${PROPDAG:-$build/propdag/propdag}" PROPDAG_NETS="$nets" PROPDAG_VERIFY_NETS="$((nets / 4))" \
  PROPDAG_SEED="$seed" \
  PROPDAG_TORCH="$torch" PYTHONPATH="$here" \
  /usr/bin/python3 -m pytest -q -s -p no:cacheprovider propdag/tests/random_nets_test.py
