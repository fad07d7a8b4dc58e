#!/usr/bin/env bash
# The build's lint. Checks that every C++ file of the project is clang-formatted (.clang-format)
# and its Python is pyflakes-clean (both over the whole tree, seconds), then runs clang-tidy (the
# checks in .clang-tidy) over the compiled sources that changed since the last lint-clean commit.
#
# Usage: scripts/tidy.sh [BUILD_DIR] [FILE...]
#   FILE...        clang-tidy exactly these files.
#   no FILE        the sources the build compiles that differ from the commit named in
#                  scripts/tidy-clean (committed changes and the working tree), and every source
#                  that includes a changed header, directly or through project headers.
#   TIDY_ALL=1     every source the build compiles (the whole-tree pass: ~21 minutes on 2 cores).
#   --record       after a clean pass, write HEAD into scripts/tidy-clean: the whole tree with
#                  TIDY_ALL=1, else what changed since the recorded commit (the rest is as it was
#                  there, where it was clean). Needs a working tree without changes.
# Where scripts/tidy-clean's commit is not in this clone (a shallow clone), every source is checked.
# Exit 0 when clean, 1 on findings, 77 when clang-tidy is not installed (ctest reports a skip).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
record=0
if [[ "${1:-}" == "--record" ]]; then
  record=1
  shift
  if [[ -n "$(git -C "$here" status --porcelain)" ]]; then
    echo "tidy.sh: --record needs a working tree without changes (commit them first)" >&2
    exit 2
  fi
fi
# With --record, after a clean pass: HEAD becomes the lint-clean commit.
record_head() {
  ((record)) || return 0
  git -C "$here" rev-parse HEAD >"$here/scripts/tidy-clean"
  echo "tidy.sh: recorded $(cat "$here/scripts/tidy-clean") in scripts/tidy-clean (commit it)"
}
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
# A unity build's database names CMake's Unity/unity_N_cxx.cxx files: clang-tidy gets one with
# an entry per source instead (scripts/tidy_select.py --expand-unity).
db="$build"
if grep -q '/Unity/unity_' "$build/compile_commands.json"; then
  db="$build/tidy-db"
  /usr/bin/python3 "$here/scripts/tidy_select.py" --expand-unity "$build/compile_commands.json" \
    "$db/compile_commands.json"
fi
format="$(command -v clang-format-14 || command -v clang-format || true)"
if [[ -n "$format" ]]; then
  # One process for every file (2.5 s; one per file took 45 s): each finding names its file.
  mapfile -t sources < <(find "$here"/{common,shapeonnx,slimonnx,torchonnx,propdag,benchmarks} \
    "$here/tests" -name '*.cc' -o -name '*.h' | sort)
  if ! report="$("$format" --dry-run --Werror "${sources[@]}" 2>&1 >/dev/null)"; then
    finding='^[^:]+:[0-9]+:[0-9]+: error: code should be clang-formatted'
    unformatted="$(grep -oE "$finding" <<<"$report" | cut -d: -f1 | sort -u |
      sed "s|^$here/||" | tr '\n' ' ' || true)"
    echo "tidy.sh: not clang-formatted (run clang-format -i on them): ${unformatted:-$report}" >&2
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
if (($#)); then
  if ((record)); then
    echo "tidy.sh: --record checks the tree, not named files" >&2
    exit 2
  fi
  files=("$@")
else
  # The project's sources the build compiles (not generated ones under the build folder), narrowed
  # to what changed since the recorded lint-clean commit unless TIDY_ALL=1.
  clean=""
  if [[ "${TIDY_ALL:-0}" != 1 ]]; then
    clean="$(tr -d '[:space:]' <"$here/scripts/tidy-clean" 2>/dev/null || true)"
    if [[ -n "$clean" ]] && ! git -C "$here" cat-file -e "$clean^{commit}" 2>/dev/null; then
      echo "tidy.sh: lint-clean commit $clean not in this clone; checking every source" >&2
      clean=""
    fi
  fi
  changed=()
  if [[ -n "$clean" ]]; then
    mapfile -t changed < <({
      git -C "$here" diff --name-only "$clean" --
      git -C "$here" ls-files --others --exclude-standard
    } | sort -u | sed "s|^|$here/|")
  fi
  mapfile -t files < <(/usr/bin/python3 "$here/scripts/tidy_select.py" \
    "$db/compile_commands.json" "$here" "$build" ${clean:+--changed "${changed[@]}"})
  if [[ -n "$clean" ]]; then
    echo "tidy.sh: ${#files[@]} sources changed since lint-clean ${clean:0:12} (TIDY_ALL=1: all)"
  fi
  if ((${#files[@]} == 0)); then
    echo "tidy.sh: formatting and Python clean; no compiled source changed"
    record_head
    exit 0
  fi
fi
log="$(mktemp -d "${TMPDIR:-/tmp}/tidy_XXXXXX")"
trap 'rm -rf "$log"' EXIT
# One clang-tidy per file, as many at once as there are cores. Each writes its own log (named by
# the file's position in the list) and, when it finds anything, a .failed marker.
printf '%s\n' "${files[@]}" | nl -ba -w1 -s' ' |
  xargs -P "${JOBS:-$(nproc)}" -L1 sh -c \
    '"$0" -p "$1" --quiet "$4" >"$2/$3.log" 2>&1 || : >"$2/$3.failed"' "$tidy" "$db" "$log"
for marker in "$log"/*.failed; do
  [[ -e "$marker" ]] || continue
  grep -E ': (warning|error):' "${marker%.failed}.log" || cat "${marker%.failed}.log"
done | sort -u
failed=$(find "$log" -name '*.failed' | wc -l)
if ((failed)); then
  echo "tidy.sh: findings in $failed of ${#files[@]} files" >&2
  exit 1
fi
echo "tidy.sh: ${#files[@]} files clean"
record_head
