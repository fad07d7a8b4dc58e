#!/usr/bin/env bash
# VNN-COMP regression harness: converts models with torchonnx and checks the generated PyTorch
# against onnxruntime (see vnncomp/harness.py for every option).
#   scripts/vnncomp.sh --benchmarks ../shared/vnncomp2024/benchmarks --device cpu --json r.json
#   scripts/vnncomp.sh --merge shard0.json shard1.json --markdown report.md
# torchonnx is $TORCHONNX, else <repo>/build/torchonnx/torchonnx. Python is /usr/bin/python3
# (override with VNNCOMP_PYTHON), which must have torch, numpy and onnx.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export TORCHONNX="${TORCHONNX:-$repo/build/torchonnx/torchonnx}"
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"
exec "${VNNCOMP_PYTHON:-/usr/bin/python3}" -m vnncomp.harness "$@"
