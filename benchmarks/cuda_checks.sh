#!/usr/bin/env bash
# propdag's torch engine and the harness on a GPU machine whose LibTorch is the CUDA one inside its
# PyTorch package, and which may reach no package registry: the suite's other C++ dependencies come
# from Debian bookworm .deb files unpacked into a prefix (nothing is installed system-wide).
#
#   benchmarks/cuda_checks.sh --fetch DIR      (on a Debian bookworm machine: download the .debs)
#   benchmarks/cuda_checks.sh --benchmarks DIR --out DIR [--debs DIR] [--torchonnx BIN]
#       [--device cuda|cpu] [--deadline S] [--jobs J] [--build DIR] [--python PY]
#       [--skip STEP,...] [--eigen] [--method M] [--vnncomp-timeouts CAP] [--acasxu-timeout S]
#       [--batch K] [--verify-args 'ARGS']
#
# Steps, each logged to OUT/<step>.log; a failed step does not stop the later ones (the exit code
# is 1 when any failed), and each is cut at what is left of --deadline seconds (default 540):
#   build     configure --build (default build-cuda/) against torch's CMake config (Torch_DIR),
#             else straight from the package's include/ and lib/ (-DPROPDAG_TORCH_ROOT); build
#             propdag, the torch engine, its tests and propdag_torch_bench. The machine's
#             description opens build.log.
#   gtest     the torch engine's tests with PROPDAG_TEST_DEVICE=DEVICE
#   bench     benchmarks/propdag_torch_ratio.sh --device=DEVICE (K up to 65536 on CUDA)
#   equality  benchmarks/propdag_torch_equality.py --device DEVICE, IBP then CROWN
#   then side by side: acasxu (propdag_verify_acasxu.sh, --acasxu-timeout, default 20 s) and
#   vnncomp (propdag_verify_vnncomp.sh, 10 s or the instances' own timeouts capped at
#   --vnncomp-timeouts CAP, --check) with --engine torch --device DEVICE, --method M (default
#   crown), --batch K (default: verify's) and, for vnncomp, --verify-args (e.g. '--refine-budget
#   1e9'; the VNN-COMP tool's settings are --method alpha and that), and harness
#   (scripts/vnncomp.sh --device all, also harness.md; only with --torchonnx). --eigen adds the
#   verify runs with the Eigen engine (acasxu-eigen, vnncomp-eigen) for a comparison on one
#   machine. --skip leaves steps out (a device run returns at most 8 files).
# Without --debs the system's packages are used (as on the machines the suite is built on daily;
# the ctest cuda_checks_cpu runs this script so, with --device cpu). GCC 13's headers include
# <cstdint> in fewer places than GCC 12's: it is included first in every source (-includecstdint).
# --torchonnx is a torchonnx binary built elsewhere (linking the same Debian libraries). PY (default
# python3) has torch, onnx and onnxruntime.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEBS=(libprotobuf-dev libprotobuf32 libprotobuf-lite32 protobuf-compiler libprotoc32 libonnx-dev
  libonnx1 libonnxifi libeigen3-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
  libbenchmark1debian zlib1g-dev zlib1g)
debs="" bench="" out="" torchonnx="" device=cuda deadline=540 jobs="" build="$here/build-cuda"
skip="" eigen="" python=python3 method=crown cap="" acas_timeout=20 batch="" vargs=""
while (($#)); do
  case "$1" in
    --fetch)
      mkdir -p "$2" && cd "$2" && exec apt-get download "${DEBS[@]}" ;;
    --debs) debs="$(realpath "$2")"; shift 2 ;;
    --benchmarks) bench="$(realpath "$2")"; shift 2 ;;
    --out) out="$(realpath -m "$2")"; shift 2 ;;
    --torchonnx) torchonnx="$(realpath "$2")"; shift 2 ;;
    --device) device="$2"; shift 2 ;;
    --deadline) deadline="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --build) build="$(realpath -m "$2")"; shift 2 ;;
    --python) python="$2"; shift 2 ;;
    --skip) skip=",$2,"; shift 2 ;;
    --eigen) eigen=1; shift ;;
    --method) method="$2"; shift 2 ;;
    --vnncomp-timeouts) cap="$2"; shift 2 ;;
    --acasxu-timeout) acas_timeout="$2"; shift 2 ;;
    --batch) batch="$2"; shift 2 ;;
    --verify-args) vargs="$2"; shift 2 ;;
    -h|--help) sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "cuda_checks.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ -d $bench && -n $out ]] || { echo "cuda_checks.sh: --benchmarks DIR and --out DIR are needed" >&2; exit 2; }
[[ -z $debs || -d $debs ]] || { echo "cuda_checks.sh: no folder $debs" >&2; exit 2; }
[[ $device == cuda || $device == cpu ]] || { echo "cuda_checks.sh: --device cuda or cpu" >&2; exit 2; }
mkdir -p "$out" "$build"
start=$SECONDS
cores=$(nproc)
jobs="${jobs:-$cores}"
failed="$(mktemp)"
trap 'rm -f "$failed"' EXIT
left() { echo $((deadline - (SECONDS - start))); }
step() {  # NAME CAP COMMAND...: runs COMMAND for at most min(CAP, what is left), logged
  local name="$1" cap="$2" t s rc
  shift 2
  [[ $skip == *",$name,"* ]] && return 0
  t=$(left)
  ((t > cap)) && t=$cap
  if ((t < 5)); then
    echo "$name: skipped, deadline reached" | tee -a "$out/$name.log"
    echo "$name" >>"$failed"
    return 1
  fi
  echo "== $name (limit ${t} s, $(left) s left)"
  s=$SECONDS
  timeout -k 5 "$t" "$@" >>"$out/$name.log" 2>&1
  rc=$?
  echo "== $name: exit $rc after $((SECONDS - s)) s" | tee -a "$out/$name.log"
  ((rc == 0)) || echo "$name" >>"$failed"
  return $rc
}

# The Debian packages, unpacked into a prefix.
prefix="" libdir=""
if [[ -n $debs ]]; then
  deps=/tmp/cuda-checks-deps
  mkdir -p "$deps"
  for f in "$debs"/*.deb; do
    if command -v dpkg-deb >/dev/null; then
      dpkg-deb -x "$f" "$deps"
    else
      (cd "$deps" && ar p "$f" "$(ar t "$f" | grep '^data\.tar')" | tar -x --auto-compress -f -)
    fi
  done
  prefix="$deps/usr"
  libdir="$prefix/lib/x86_64-linux-gnu"
fi
{
  echo "machine: $(nproc) cores; $(uname -r)"
  command -v nvidia-smi >/dev/null &&
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1
  "$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available())' 2>&1
  c++ --version | head -1
  cmake --version | head -1
} | tee "$out/build.log"

# Configure: torch's CMake config first, its folders second.
torch_root="$("$python" -c 'import os, torch; print(os.path.dirname(torch.__file__))')"
export build torch_root cores
export CMAKE_ARGS="-S $here -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SLIMONNX=OFF \
  -DBUILD_TORCHONNX=OFF ${prefix:+-DCMAKE_PREFIX_PATH=$prefix} -DVNNCOMP_BENCHMARKS=$bench \
  -DCMAKE_CXX_FLAGS=-includecstdint"
# shellcheck disable=SC2016  # expanded by the inner shell
build_all='[ -f "$build/build.ninja" ] ||
  if ! cmake $CMAKE_ARGS -DTorch_DIR="$torch_root/share/cmake/Torch" ||
     ! grep -q propdag_torch "$build/build.ninja"; then
    echo "torch CMake config not usable: building from $torch_root/include and lib"
    rm -rf "$build"
    cmake $CMAKE_ARGS -DPROPDAG_TORCH_ROOT="$torch_root" -DCMAKE_DISABLE_FIND_PACKAGE_Torch=ON || exit 1
  fi
  ninja -C "$build" -k 0 -j"$cores" propdag_cli propdag_torch propdag_torch_test \
    propdag_torch_verify_test propdag_torch_alpha_test propdag_torch_bench'
if ! step build 360 bash -c "$build_all"; then
  tail -30 "$out/build.log"
  exit 1
fi

export VNNCOMP_BENCHMARKS="$bench" VNNCOMP_PYTHON="$python"
step gtest 90 env PROPDAG_TEST_DEVICE="$device" bash -c "
  for t in propdag_torch_test propdag_torch_verify_test propdag_torch_alpha_test; do
    '$build/propdag/torch/'\$t || exit 1
  done"
step bench 120 "$here/benchmarks/propdag_torch_ratio.sh" "$build" --device="$device"
for m in ibp crown; do
  step equality 90 "$python" "$here/benchmarks/propdag_torch_equality.py" --method $m \
    --timeout 40 --device "$device" --jobs "$jobs" --propdag "$build/propdag/propdag" \
    --benchmarks "$bench"
done

# Verdicts and the harness, side by side, sharing the cores.
groups=3
[[ -n $eigen ]] && groups=5
share=$(((jobs + groups - 1) / groups))
limits=(--timeout 10)
[[ -n $cap ]] && limits=(--vnncomp-timeouts "$cap")
verify() {  # SUFFIX ENGINE-ARGUMENTS...
  local suffix="$1"
  shift
  step "acasxu$suffix" "$(left)" "$here/benchmarks/propdag_verify_acasxu.sh" \
    --propdag "$build/propdag/propdag" --benchmarks "$bench" --timeout "$acas_timeout" \
    --method "$method" --jobs "$share" "$@" &
  step "vnncomp$suffix" "$(left)" "$here/benchmarks/propdag_verify_vnncomp.sh" \
    --propdag "$build/propdag/propdag" --benchmarks "$bench" "${limits[@]}" --method "$method" \
    --jobs "$share" --check -- "$*" $vargs &
}
verify "" --engine torch --device "$device" ${batch:+--batch "$batch"}
[[ -n $eigen ]] && verify -eigen --engine eigen
if [[ -n $torchonnx ]]; then
  cat >"$build/torchonnx-wrapped" <<EOF
#!/bin/sh
${libdir:+LD_LIBRARY_PATH="$libdir\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" }exec "$torchonnx" "\$@"
EOF
  chmod +x "$build/torchonnx-wrapped"
  TORCHONNX="$build/torchonnx-wrapped" step harness "$(left)" "$here/scripts/vnncomp.sh" \
    --benchmarks "$bench" --device all --jobs "$share" --markdown "$out/harness.md" &
fi
wait
echo "== done after $((SECONDS - start)) s"
if [[ -s $failed ]]; then
  echo "cuda_checks.sh: failed: $(sort "$failed" | tr '\n' ' ')" >&2
  exit 1
fi
