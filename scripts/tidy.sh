#!/usr/bin/env bash
# The build's lint. Checks that every C++ file of the project is clang-formatted (.clang-format)
# and its Python is pyflakes-clean, then runs clang-tidy (the checks in .clang-tidy) over every
# project source file the build compiles.
# Usage: scripts/tidy.sh [BUILD_DIR] [FILE...]; files default to all of compile_commands.json.
# Exit 0 when clean, 1 on findings, 77 when clang-tidy is not installed (ctest reports a skip).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-${BUILD_DIR:-$here/build}}"
shift || true
tidy="$(command -v clang-tidy-14 || command -v clang-tidy || true)"
if [[ -z "$tidy" ]]; then
  echo "tidy.sh: clang-tidy not found (scripts/setup.sh installs it)" >&2
  exit 77
fi
if [[ ! -f "$build/compile_commands.json" ]]; then
  echo "tidy.sh: $build/compile_commands.json missing; run scripts/build.sh first" >&2
  exit 2
fi
if (($#)); then
  files=("$@")
else
  # The project's own sources: under the checkout, not under the build folder (generated files).
  mapfile -t files < <(/usr/bin/python3 -c '
import json, os, sys
root, build = (os.path.realpath(p) + "/" for p in sys.argv[2:4])
seen = sorted({os.path.realpath(e["file"]) for e in json.load(open(sys.argv[1]))})
print("\n".join(f for f in seen if f.startswith(root) and not f.startswith(build)))
' "$build/compile_commands.json" "$here" "$build")
fi
format="$(command -v clang-format-14 || command -v clang-format || true)"
if [[ -n "$format" ]]; then
  unformatted=()
  while IFS= read -r f; do
    "$format" --dry-run --Werror "$f" >/dev/null 2>&1 || unformatted+=("${f#"$here"/}")
  done < <(find "$here"/{common,shapeonnx,slimonnx,torchonnx,propdag,benchmarks,tests} \
    -name '*.cc' -o -name '*.h' | sort)
  if ((${#unformatted[@]})); then
    echo "tidy.sh: not clang-formatted (run clang-format -i on them): ${unformatted[*]}" >&2
    exit 1
  fi
fi
# The project's own Python (harness, tests, scripts): no unused imports or names (pyflakes).
if /usr/bin/python3 -c 'import pyflakes' 2>/dev/null; then
  mapfile -t py < <(find "$here"/{common,shapeonnx,slimonnx,torchonnx,propdag,benchmarks,tests,vnncomp,scripts} \
    -name '*.py' | sort)
  if ! /usr/bin/python3 -m pyflakes "${py[@]}" >&2; then
    echo "tidy.sh: pyflakes findings in the project's Python" >&2
    exit 1
  fi
fi
log="$(mktemp -d "${TMPDIR:-/tmp}/tidy_XXXXXX")"
trap 'rm -rf "$log"' EXIT
# One clang-tidy per file, as many at once as there are cores. Each writes its own log (named by
# the file's position in the list) and, when it finds anything, a .failed marker.
printf '%s\n' "${files[@]}" | nl -ba -w1 -s' ' |
  xargs -P "${JOBS:-$(nproc)}" -L1 sh -c \
    '"$0" -p "$1" --quiet "$4" >"$2/$3.log" 2>&1 || : >"$2/$3.failed"' "$tidy" "$build" "$log"
failed=0
for marker in "$log"/*.failed; do
  [[ -e "$marker" ]] || continue
  failed=$((failed + 1))
  grep -E ': (warning|error):' "${marker%.failed}.log" || cat "${marker%.failed}.log"
done | sort -u
failed=$(find "$log" -name '*.failed' | wc -l)
if ((failed)); then
  echo "tidy.sh: findings in $failed of ${#files[@]} files" >&2
  exit 1
fi
echo "tidy.sh: ${#files[@]} files clean"
