#!/usr/bin/env bash
# Converts every VNN-COMP model with two torchonnx binaries and compares the generated Python
# byte for byte (weights too with --pth). Prints the differing files and a summary line; exits 1
# when any file differs or a model converts with one binary only.
#   benchmarks/torchonnx_diff.sh OLD_TORCHONNX NEW_TORCHONNX [--benchmarks DIR] [--pth]
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
old="${1:?usage: $0 OLD_TORCHONNX NEW_TORCHONNX [--benchmarks DIR] [--pth]}"
new="${2:?usage: $0 OLD_TORCHONNX NEW_TORCHONNX [--benchmarks DIR] [--pth]}"
shift 2
bench="${VNNCOMP_BENCHMARKS:-$here/../shared/vnncomp2024/benchmarks}" pth=0
while (($#)); do
  case "$1" in
    --benchmarks) bench="$2"; shift 2 ;;
    --pth) pth=1; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mapfile -t models < <(find "$bench" \( -name '*.onnx' -o -name '*.onnx.gz' \) | sort)
((${#models[@]})) || { echo "no models under $bench" >&2; exit 2; }
differ=0 same=0 failed=0
for m in "${models[@]}"; do
  rel="${m#"$bench"/}"
  out_old="$work/old" out_new="$work/new"
  rm -rf "$out_old" "$out_new"
  mkdir -p "$out_old" "$out_new"
  "$old" "$m" -o "$out_old" >/dev/null 2>"$work/old.err"; rc_old=$?
  "$new" "$m" -o "$out_new" >/dev/null 2>"$work/new.err"; rc_new=$?
  if ((rc_old != rc_new)); then
    echo "exit status differs ($rc_old vs $rc_new): $rel"; failed=$((failed + 1)); continue
  fi
  for f in "$out_old"/*.py; do
    [[ -e "$f" ]] || continue
    g="$out_new/${f##*/}"
    if cmp -s "$f" "$g"; then same=$((same + 1)); else echo "differs: $rel (${f##*/})"; differ=$((differ + 1)); fi
    if ((pth)) && ! cmp -s "${f%.py}.pth" "${g%.py}.pth"; then
      echo "weights differ: $rel"; differ=$((differ + 1))
    fi
  done
done
echo "${#models[@]} models: $same generated files identical, $differ differ, $failed exit differently"
((differ == 0 && failed == 0))
