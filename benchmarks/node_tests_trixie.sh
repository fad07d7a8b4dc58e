#!/usr/bin/env bash
# The ONNX backend node tests of Debian trixie's libonnx-testdata (ONNX 1.17: 1,288 node tests,
# opsets up to 22; bookworm's own package has 932) through the evaluator (common_test
# EvalNodeTest), shapeonnx (shapeonnx_test NodeTests) and torchonnx's generated Python
# (torchonnx_test NodeTests: the node tests and the pytorch-converted, pytorch-operator and simple
# models), printing each suite's counts.
#
#   benchmarks/node_tests_trixie.sh [--version V] [--dir DIR] [--build BUILD_DIR]
#
# The .deb (pool/main/o/onnx/libonnx-testdata_V_all.deb, default V 1.17.0-3) comes from the Debian
# archive this machine's apt uses and is extracted once under DIR (default
# /var/tmp/libonnx-testdata-V). Needs curl and dpkg-deb, and the three test binaries built
# (cmake --build build --target common_test shapeonnx_test torchonnx_test). Exit status 1 when a
# suite fails, 2 on a setup error.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version=1.17.0-3 dir="" build="$repo/build"
while (($#)); do
  case "$1" in
    --version) version="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    --build) build="$(realpath "$2")"; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "node_tests_trixie.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
dir="${dir:-/var/tmp/libonnx-testdata-$version}"
tests=(common/common_test shapeonnx/shapeonnx_test torchonnx/torchonnx_test)
for t in "${tests[@]}"; do
  [[ -x $build/$t ]] || { echo "node_tests_trixie.sh: $build/$t is not built" >&2; exit 2; }
done

node="$dir/usr/share/libonnx-testdata/data/node"
if [[ ! -d $node ]]; then
  source "$repo/scripts/debian_archive.sh"
  archive=$(debian_archive) || exit 2
  deb="$(mktemp --suffix=.deb)"
  trap 'rm -f "$deb"' EXIT
  url="$archive/pool/main/o/onnx/libonnx-testdata_${version}_all.deb"
  echo "fetching $url" >&2
  curl -fsSL -o "$deb" "$url" || { echo "node_tests_trixie.sh: cannot fetch $url" >&2; exit 2; }
  mkdir -p "$dir"
  dpkg-deb -x "$deb" "$dir"
fi
[[ -d $node ]] || { echo "node_tests_trixie.sh: no node tests under $dir" >&2; exit 2; }
echo "$(find "$node" -mindepth 1 -maxdepth 1 -type d | wc -l) node tests in $node"

# Each suite's summary lines, and everything it printed when it failed.
status=0
run() {  # run LABEL BINARY FILTER
  local out rc=0
  out=$(ONNX_NODE_TESTS="$node" "$build/$2" --gtest_filter="$3" 2>&1) || rc=$?
  echo "== $1"
  if ((rc == 0)); then
    grep -E '^[0-9]+ .*(node tests|models):|^node tests:' <<<"$out" || true
    echo "   passed"
  else
    grep -vE '^\[|^(Running main|Note: Google Test)|UserWarning|^ +[a-z_0-9]+ = ' <<<"$out" || true
    echo "   FAILED"
    status=1
  fi
}
run "evaluator (common_test)" common/common_test 'EvalNodeTest.*'
run "shapeonnx (shapeonnx_test)" shapeonnx/shapeonnx_test 'NodeTests.*'
run "torchonnx generated Python (torchonnx_test)" torchonnx/torchonnx_test 'NodeTests.*'
exit $status
