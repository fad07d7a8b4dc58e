"""The sources scripts/tidy.sh hands to clang-tidy, one per line.

    tidy_select.py COMPILE_COMMANDS ROOT BUILD [--changed FILE...]
    tidy_select.py --expand-unity COMPILE_COMMANDS OUT_JSON

Without --changed: every project source in compile_commands.json (under ROOT, not under BUILD),
except those compiled against LibTorch (clang 14 cannot parse its headers in C++20 mode).
With it: those sources that are among FILE, or that include one of FILE, directly or through
other project headers (the #include "..." lines, resolved against ROOT and the including file's
folder); all of them when .clang-tidy itself is among FILE (the checks changed).

A unity build (scripts/build.sh's default) compiles CMake's Unity/unity_N_cxx.cxx files, each
including up to 8 sources; --expand-unity writes a compile database with one entry per included
source (the unity file's command, the source in its place) for clang-tidy.
"""

import json
import os
import sys


def uses_libtorch(entry):
    """Whether a compile command includes LibTorch's headers, which clang 14 cannot parse in C++20
    mode (GCC compiles them; they get -Wall -Wextra there, not clang-tidy)."""
    command = entry.get("command") or " ".join(entry.get("arguments", []))
    return "torch/csrc/api/include" in command


def project_sources(compile_commands, root, build):
    seen = {os.path.realpath(os.path.join(e["directory"], e["file"]))
            for e in json.load(open(compile_commands)) if not uses_libtorch(e)}
    return sorted(f for f in seen if f.startswith(root) and not f.startswith(build))


def is_unity(path):
    return "/Unity/unity_" in path and path.endswith(".cxx")


def unity_sources(path):
    """The sources a CMake unity file includes (absolute paths, in its #include lines)."""
    out = []
    for line in open(path, errors="replace"):
        if line.startswith('#include "'):
            out.append(os.path.realpath(line.split('"')[1]))
    return out


def expand_unity(compile_commands, out_json):
    entries = []
    for e in json.load(open(compile_commands)):
        unity = os.path.join(e["directory"], e["file"])
        if not is_unity(unity):
            entries.append(e)
            continue
        for source in unity_sources(unity):
            command = " ".join(source if w == e["file"] else w for w in e["command"].split(" "))
            entries.append(dict(e, file=source, command=command))
    os.makedirs(os.path.dirname(out_json), exist_ok=True)
    with open(out_json, "w") as f:
        json.dump(entries, f, indent=1)


def project_includes(path, root):
    """The project files that `path` names in #include "..." lines."""
    out = []
    for line in open(path, errors="replace"):
        line = line.strip()
        if not line.startswith("#include") or '"' not in line:
            continue
        name = line.split('"')[1]
        for candidate in (os.path.join(root, name), os.path.join(os.path.dirname(path), name)):
            if os.path.isfile(candidate):
                out.append(os.path.realpath(candidate))
                break
    return out


def closure(path, root, memo):
    """Every project file that `path` includes, directly or not."""
    if path not in memo:
        memo[path] = set()  # an include cycle (guarded headers) ends here
        found = set()
        for inc in project_includes(path, root):
            found.add(inc)
            found |= closure(inc, root, memo)
        memo[path] = found
    return memo[path]


def emit(paths):
    for p in paths:
        print(p)


def main(argv):
    if argv and argv[0] == "--expand-unity":
        expand_unity(*argv[1:3])
        return
    compile_commands, root, build = argv[:3]
    root, build = (os.path.realpath(p) + "/" for p in (root, build))
    sources = project_sources(compile_commands, root, build)
    if len(argv) < 4 or argv[3] != "--changed":
        emit(sources)
        return
    changed = {os.path.realpath(f) for f in argv[4:]}
    if os.path.join(root, ".clang-tidy") in changed:
        emit(sources)
        return
    memo = {}
    emit(s for s in sources if s in changed or changed & closure(s, root, memo))


if __name__ == "__main__":
    main(sys.argv[1:])
