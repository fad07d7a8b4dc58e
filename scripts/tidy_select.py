"""The sources scripts/tidy.sh hands to clang-tidy, one per line.

    tidy_select.py COMPILE_COMMANDS ROOT BUILD DEPS [--changed FILE...]
    tidy_select.py --expand-unity COMPILE_COMMANDS OUT_JSON

A unity build (scripts/build.sh's default) compiles CMake's Unity/unity_N_cxx.cxx files, each
including up to 8 sources; --expand-unity writes a compile database with one entry per included
source (the unity file's command, the source in its place) for clang-tidy, and reading DEPS, a
unity object's headers count as dependencies of every source it includes.

Without --changed: every project source in compile_commands.json (under ROOT, not under BUILD),
except those compiled against LibTorch (clang 14 cannot parse its headers in C++20 mode).
With it: those sources that are among FILE, or whose object depends on one of FILE according to
DEPS (the output of `ninja -t deps`); all of them when .clang-tidy itself is among FILE (the
checks changed). A changed header that no object records (a build without deps yet) selects the
sources that name it in an #include line.
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


def dependents(deps_file, build, sources):
    """{dependency path: set of sources whose object records it}."""
    out, owners = {}, None
    for line in open(deps_file, errors="replace"):
        if not line.strip():
            owners = None
        elif not line[0].isspace():
            owners = []
        elif owners is not None:
            path = os.path.realpath(os.path.join(build, line.strip()))
            if not owners:  # the object's first dependency: its source
                owners = [path] if path in sources else [
                    s for s in (unity_sources(path) if is_unity(path) else []) if s in sources]
                if not owners:
                    owners = None  # an object of something other than a project source
                    continue
            for source in owners:
                out.setdefault(path, set()).add(source)
    return out


def including(header, sources):
    """Sources with an #include line that ends in the header's folder/name."""
    tail = "/".join(header.split("/")[-2:])
    name = os.path.basename(header)
    out = set()
    for s in sources:
        for line in open(s, errors="replace"):
            if line.startswith("#include") and (tail in line or f'"{name}"' in line):
                out.add(s)
                break
    return out


def emit(paths):
    for p in paths:
        print(p)


def main(argv):
    if argv and argv[0] == "--expand-unity":
        expand_unity(*argv[1:3])
        return
    compile_commands, root, build, deps_file = argv[:4]
    root, build = (os.path.realpath(p) + "/" for p in (root, build))
    sources = project_sources(compile_commands, root, build)
    if len(argv) < 5 or argv[4] != "--changed":
        emit(sources)
        return
    changed = {os.path.realpath(f) for f in argv[5:]}
    if os.path.join(root, ".clang-tidy") in changed:
        emit(sources)
        return
    by_dep = dependents(deps_file, build, set(sources)) if os.path.exists(deps_file) else {}
    picked = set()
    for f in changed:
        if f in sources:
            picked.add(f)
        elif f.endswith(".h") and os.path.exists(f):
            picked |= by_dep.get(f) or including(f, sources)
    emit(sorted(picked))


if __name__ == "__main__":
    main(sys.argv[1:])
