#!/usr/bin/env bash
# The Python side of the suite under torch 2.x, on this Debian bookworm machine (whose own torch is
# 1.13): a Debian trixie chroot (python3-torch 2.6, torchvision, onnx 1.17, numpy 2, nodejs 20) is made
# with debootstrap, this checkout is bound into it at the same path, and there, with the torchonnx
# built here (run by this machine's loader and libraries):
#   1. the ONNX backend node tests' generated Python (torchonnx_test NodeTests.*),
#   2. the Python test suites (torchonnx/tests, vnncomp/tests),
#   3. vnncomp/tests/test_exported.py again with the models exported at opset 20,
#   4. with --benchmarks DIR, the VNN-COMP harness on every model (report: --json FILE).
# torch 2.x's dynamo-based exporter (`dynamo=True`) needs onnxscript, which Debian does not package
# (neither trixie nor sid), so only the TorchScript-based exporter runs here.
#
#   scripts/torch2.sh [--root DIR] [--benchmarks DIR] [--json FILE]
#   scripts/torch2.sh [--root DIR] [--benchmarks DIR] --run 'COMMAND'   (instead of 1-4, in the checkout,
#       with TORCHONNX set; e.g. --run '/usr/bin/python3 benchmarks/torchonnx_bench.py')
#
# Needs root (debootstrap, chroot, mount), Debian's archive, and scripts/setup.sh + scripts/build.sh
# done. The chroot (default /var/tmp/torchonnx-trixie, about 2 GB) is kept for the next run; its
# mounts are undone when the script ends. Before removing it, check that /proc/mounts names
# nothing under it.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
root=/var/tmp/torchonnx-trixie
benchmarks="" json="" run=""
while (($#)); do
  case "$1" in
    --root) root="$2"; shift 2 ;;
    --benchmarks) benchmarks="$(realpath "$2")"; shift 2 ;;
    --json) json="$(realpath -m "$2")"; shift 2 ;;
    --run) run="$2"; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "torch2.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $(id -u) == 0 ]] || { echo "torch2.sh: needs root (debootstrap, chroot, mount)" >&2; exit 2; }
exe="$repo/build/torchonnx/torchonnx"
[[ -x $exe ]] || { echo "torch2.sh: $exe is not built (scripts/build.sh)" >&2; exit 2; }
[[ -z $benchmarks || -d $benchmarks ]] || { echo "torch2.sh: no folder $benchmarks" >&2; exit 2; }

# The Debian archive (debian_archive): the chroot comes from the same mirror.
source "$repo/scripts/debian_archive.sh"

# The chroot, once.
if [[ ! -f $root/.torchonnx-ready ]]; then
  command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap
  archive=$(debian_archive) || exit 2
  [[ -x $root/usr/bin/apt-get ]] || debootstrap --variant=minbase trixie "$root" "$archive"
  cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
  chroot "$root" sh -c 'export DEBIAN_FRONTEND=noninteractive; apt-get update -q &&
    apt-get install -y -q --no-install-recommends python3-torch python3-onnx python3-numpy \
      python3-torchvision python3-pytest python3-pyflakes nodejs libopenblas0-serial'
  touch "$root/.torchonnx-ready"
fi

# Mounts, undone on exit (innermost first).
mounted=()
bind() {  # bind SOURCE TARGET [ro]
  mkdir -p "$2"
  mountpoint -q "$2" && return 0
  mount --bind "$1" "$2"
  mounted=("$2" "${mounted[@]}")
  [[ ${3:-} == ro ]] && mount -o remount,bind,ro "$2"
  return 0
}
cleanup() { for m in "${mounted[@]}"; do umount "$m" || umount -l "$m"; done; }
trap cleanup EXIT
mkdir -p "$root/proc" && { mountpoint -q "$root/proc" || { mount -t proc proc "$root/proc" && mounted=("$root/proc" "${mounted[@]}"); }; }
bind /dev "$root/dev"
bind / "$root/host" ro
bind "$repo" "$root$repo"
[[ -z $benchmarks ]] || bind "$benchmarks" "$root$benchmarks" ro
testdata=/usr/share/libonnx-testdata
[[ -d $testdata ]] && bind "$testdata" "$root$testdata" ro

# Host programs run inside through the host's loader and the folders of their libraries.
loader="$(readlink -f /lib64/ld-linux-x86-64.so.2)"
libs="$(ldd "$exe" "$repo/build/torchonnx/torchonnx_test" | awk '/=> \//{print $3}' |
        xargs -n1 dirname | sort -u | sed 's|^|/host|' | paste -sd:)"
cat >"$root/usr/local/bin/host-run" <<EOF
#!/bin/sh
# Runs a program built on the host machine with the host's loader and libraries.
exec /host$loader --library-path $libs "\$@"
EOF
printf '#!/bin/sh\nexec host-run %q "$@"\n' "$exe" >"$root/usr/local/bin/torchonnx"
chmod +x "$root/usr/local/bin/host-run" "$root/usr/local/bin/torchonnx"

inside() { chroot "$root" env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root TMPDIR=/tmp "$@"; }
inside python3 -c 'import torch, onnx, numpy; print(f"torch {torch.__version__}, onnx {onnx.__version__}, numpy {numpy.__version__}")'

if [[ -n $run ]]; then
  inside sh -c "cd '$repo' && TORCHONNX=/usr/local/bin/torchonnx $run"
  exit
fi

status=0
echo "== node tests (generated Python under torch 2.x)"
inside sh -c "cd '$repo' && host-run build/torchonnx/torchonnx_test --gtest_filter='NodeTests.*' --gtest_brief=1" || status=1

echo "== Python test suites"
inside sh -c "cd '$repo' && TORCHONNX=/usr/local/bin/torchonnx PYTHONPATH='$repo' \
  VNNCOMP_BENCHMARKS='${benchmarks}' python3 -m pytest -q -p no:cacheprovider \
  torchonnx/tests vnncomp/tests --deselect vnncomp/tests/test_real.py::test_all_models" || status=1

echo "== architectures exported by torch 2.x at opset 20 (TorchScript-based exporter)"
inside sh -c "cd '$repo' && TORCHONNX=/usr/local/bin/torchonnx PYTHONPATH='$repo' \
  TORCHONNX_EXPORT_OPSET=20 python3 -m pytest -q -p no:cacheprovider vnncomp/tests/test_exported.py" ||
  status=1

if [[ -n $benchmarks ]]; then
  echo "== VNN-COMP harness over $benchmarks"
  inside sh -c "cd '$repo' && TORCHONNX=/usr/local/bin/torchonnx scripts/vnncomp.sh \
    --benchmarks '$benchmarks' --device cpu --json /tmp/torch2_report.json" || status=1
  if [[ -n $json ]]; then cp "$root/tmp/torch2_report.json" "$json"; fi
fi
exit $status
