"""Which models the harness checks, each with the input box it is fed.

`--benchmarks DIR`: a VNN-COMP layout, DIR/<benchmark>/instances.csv with rows
`onnx_path,vnnlib_path,timeout`. Paths are relative to the benchmark folder; a listed `x.onnx`
may be stored as `x.onnx.gz` (and `.vnnlib` as `.vnnlib.gz`). Each distinct model appears once,
with the first of its instances whose vnnlib file exists (the worker falls back to another
instance's vnnlib of the same input size, else [-1, 1]). Models listed but absent become
`missing` entries; `.onnx[.gz]` files in the folder but not listed are checked too.

`--models DIR`: every .onnx / .onnx.gz below DIR; the benchmark is the folder that holds it.
"""

import csv
import os
from dataclasses import dataclass
from typing import Optional

ONNX_SUFFIXES = (".onnx", ".onnx.gz")


@dataclass
class Entry:
    benchmark: str
    model: str  # path relative to the benchmark folder (or to --models DIR)
    path: str  # absolute path of the file (may not exist: see missing)
    vnnlib: Optional[str] = None
    missing: bool = False

    @property
    def key(self):
        return (self.benchmark, self.model)


def _on_disk(path):
    """The stored variant of a listed path (x or x.gz), or None."""
    for p in (path, path + ".gz", path[:-3] if path.endswith(".gz") else None):
        if p and os.path.isfile(p):
            return p
    return None


def _rel(path, root):
    return os.path.relpath(path, root).replace(os.sep, "/")


def _is_onnx(name):
    return name.endswith(ONNX_SUFFIXES)


def _walk_onnx(root):
    found = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        dirnames.sort()
        found += [os.path.join(dirpath, f) for f in sorted(filenames) if _is_onnx(f)]
    return found


def _instances(bench_dir):
    """[(model path, vnnlib path or None)] in instances.csv order, paths under bench_dir."""
    rows = []
    csv_path = os.path.join(bench_dir, "instances.csv")
    if not os.path.isfile(csv_path):
        return rows
    with open(csv_path, newline="") as f:
        for row in csv.reader(f):
            if len(row) < 2 or not row[0].strip():
                continue
            model = os.path.normpath(os.path.join(bench_dir, row[0].strip()))
            spec = os.path.normpath(os.path.join(bench_dir, row[1].strip()))
            rows.append((model, spec))
    return rows


def _benchmark_entries(bench_dir, name):
    entries = {}  # canonical stored path (or listed path) -> Entry
    for model, spec in _instances(bench_dir):
        stored = _on_disk(model)
        key = stored or model
        entry = entries.get(key)
        if entry is None:
            rel = _rel(stored or model, bench_dir)
            entry = Entry(name, rel, os.path.abspath(key), None, stored is None)
            entries[key] = entry
        if entry.vnnlib is None:
            entry.vnnlib = _on_disk(spec)
    for path in _walk_onnx(bench_dir):
        if path not in entries:
            entries[path] = Entry(name, _rel(path, bench_dir), os.path.abspath(path))
    return list(entries.values())


def from_benchmarks(root, only=()):
    """Entries of a VNN-COMP benchmarks folder, sorted by (benchmark, model)."""
    root = os.path.abspath(root)
    entries = []
    for name in sorted(os.listdir(root)):
        bench_dir = os.path.join(root, name)
        if not os.path.isdir(bench_dir) or (only and name not in only):
            continue
        entries += _benchmark_entries(bench_dir, name)
    return sorted(entries, key=lambda e: e.key)


def from_models(root, only=()):
    """Entries for every ONNX file below root; the benchmark is its folder relative to root."""
    root = os.path.abspath(root)
    entries = []
    for path in _walk_onnx(root):
        folder = _rel(os.path.dirname(path), root)
        bench = "." if folder in ("", ".") else folder
        if only and bench not in only:
            continue
        exists = os.path.isfile(path)  # a dangling link is a missing model
        entries.append(Entry(bench, os.path.basename(path), os.path.abspath(path), None,
                             not exists))
    return sorted(entries, key=lambda e: e.key)


def shard(entries, index, count):
    """Every count-th entry starting at index (0 <= index < count)."""
    return entries[index::count]


# Models above this many bytes (decompressed) are "large" for `largest_of_large`.
LARGE_MODEL_BYTES = 64 << 20


def model_bytes(path):
    """The model's size in bytes once decompressed: a .gz file's stored size (its last four
    bytes, the length modulo 2^32), else the file's size; 0 for a missing file."""
    try:
        if path.endswith(".gz"):
            with open(path, "rb") as f:
                f.seek(-4, os.SEEK_END)
                return int.from_bytes(f.read(4), "little")
        return os.path.getsize(path)
    except OSError:
        return 0


def largest_of_large(entries, limit=LARGE_MODEL_BYTES):
    """`entries` with every model over `limit` bytes left out except the largest of its
    benchmark (the first by name among equals). The CI sample of the all-model suites: in
    ../shared the 12 models over 64 MiB are 1.9 of the 2.2 GiB, all tllverifybench siblings
    of the one kept."""
    keep = {}
    for e in entries:
        size = model_bytes(e.path)
        if size > limit and (e.benchmark not in keep or size > keep[e.benchmark][0]):
            keep[e.benchmark] = (size, e.key)
    kept = {key for _, key in keep.values()}
    return [e for e in entries if e.key in kept or model_bytes(e.path) <= limit]


def suite_sample(entries):
    """The entries a test suite runs over: all of them, or `largest_of_large` of them when
    $SUITE_LARGE_MODELS is `largest` (scripts/test.sh sets it; benchmarks/ scripts do not)."""
    if os.environ.get("SUITE_LARGE_MODELS", "all") == "largest":
        return largest_of_large(entries)
    return entries
