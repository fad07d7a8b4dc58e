#!/usr/bin/env bash
# Installs every system package the suite needs (Debian bookworm). Run as root; idempotent and quiet when
# everything is already present. Also installs the onnxruntime Node.js binding used as numerical reference.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  zlib1g-dev libprotobuf-dev protobuf-compiler libonnx-dev
  libeigen3-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
  libtorch-dev
  python3 python3-numpy python3-onnx python3-torch python3-pytest python3-pyflakes
  # torchvision architectures exported to ONNX are one of the harness's tests (vnncomp/tests/test_exported.py).
  python3-torchvision
  libonnx-testdata
  # Optimized BLAS for Debian's torch, which links libblas.so.3 through update-alternatives: with the reference
  # BLAS the generated models' matrix products and im2col convolutions run 2-4x slower (benchmarks/RESULTS.md).
  # The OpenMP build (preferred over the serial one by the alternatives' priorities) runs on the threads torch
  # is given and may be called from torch's own parallel regions, so propdag's torch engine bounds its chunks
  # of boxes side by side (2.0x on 2 threads); the serial build shares its buffers between threads unlocked.
  libopenblas0-openmp
  # auto_LiRPA 0.5.0 (../shared/clients/) imports them: torchonnx's tests run it on the generated code and
  # propdag's compare its CROWN with auto_LiRPA's.
  python3-tqdm python3-appdirs
  # The propdag CLI allocates through mimalloc where it is installed: bound propagation on small networks makes
  # many small matrices, and glibc's malloc took a third of a split search's time (benchmarks/RESULTS.md).
  libmimalloc-dev
  # The build's lint: clang-tidy runs as the ctest `clang_tidy` (scripts/tidy.sh); clang-format formats.
  clang-tidy clang-format
)
# Node.js + npm run the onnxruntime reference; keep an existing installation (some ship npm inside nodejs).
command -v npm >/dev/null 2>&1 || PACKAGES+=(nodejs npm)

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup.sh: missing packages (${missing[*]}); run as root to install them" >&2
    exit 1
  fi
  echo "setup.sh: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# onnxruntime reference executor (Node.js binding; the package ships the Linux x64 binary).
ort_dir="$here/build/ort"
if [[ ! -f "$ort_dir/node_modules/onnxruntime-node/package.json" ]]; then
  mkdir -p "$ort_dir"
  (cd "$ort_dir" && ONNXRUNTIME_NODE_INSTALL=skip npm install --silent --no-audit --no-fund \
      onnxruntime-node@1.30.0 >/dev/null 2>&1) ||
    echo "setup.sh: warning: onnxruntime-node could not be installed; reference checks will be skipped" >&2
fi
