"""Seed corpora for the fuzz targets (benchmarks/fuzz.sh), built from files outside the repo.

    /usr/bin/python3 tests/fuzz/make_corpus.py OUT_DIR [--benchmarks DIR] [--node-tests DIR]
                                               [--limit BYTES]

OUT_DIR/onnx: every ONNX backend node test model, the VNN-COMP models up to --limit bytes (default
1 MiB; as stored, .gz or plain, and inflated when that stays under the limit), the bad models of tests/bad_models.py and
tests/fuzz/regress. OUT_DIR/vnnlib: the VNN-COMP properties up to 64 KiB (inflated) and the .vnnlib
files of tests/fuzz/regress. Files are named by content hash, so rerunning adds nothing twice.
"""

import argparse
import glob
import gzip
import hashlib
import importlib.util
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def _bad_models():
    """tests/bad_models.py, imported by its file: this script runs by path from tests/fuzz/."""
    spec = importlib.util.spec_from_file_location(
        "bad_models", os.path.join(os.path.dirname(HERE), "bad_models.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bad_models = _bad_models()

LIMIT = 1 << 20


def put(folder, data):
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, hashlib.sha1(data).hexdigest())
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(data)


def add_file(folder, path, limit):
    data = open(path, "rb").read()
    if len(data) <= limit:
        put(folder, data)
    if path.endswith(".gz"):
        try:
            plain = gzip.decompress(data)
        except OSError:
            return
        if len(plain) <= limit:
            put(folder, plain)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--benchmarks", default=os.path.join(HERE, "..", "..", "..", "shared",
                                                          "vnncomp2024", "benchmarks"))
    ap.add_argument("--node-tests", default="/usr/share/libonnx-testdata/data/node")
    ap.add_argument("--limit", type=int, default=LIMIT, help="largest ONNX seed in bytes")
    a = ap.parse_args()
    onnx_dir, vnnlib_dir = os.path.join(a.out, "onnx"), os.path.join(a.out, "vnnlib")
    for path in glob.glob(os.path.join(a.node_tests, "*", "model.onnx")):
        add_file(onnx_dir, path, a.limit)
    for path in glob.glob(os.path.join(a.benchmarks, "*", "onnx", "*.onnx*")):
        if os.path.getsize(path) <= a.limit:
            add_file(onnx_dir, path, a.limit)
    for path in glob.glob(os.path.join(a.benchmarks, "*", "vnnlib", "*.vnnlib*")):
        if os.path.getsize(path) <= LIMIT:
            add_file(vnnlib_dir, path, 64 << 10)
    for _, data, _ in bad_models.cases():
        if len(data) <= a.limit:
            put(onnx_dir, data)
    for path in glob.glob(os.path.join(HERE, "regress", "*")):
        add_file(vnnlib_dir if ".vnnlib" in path else onnx_dir, path, a.limit)
    for d in (onnx_dir, vnnlib_dir):
        print(f"{d}: {len(os.listdir(d)) if os.path.isdir(d) else 0} files")


if __name__ == "__main__":
    main()
