"""Shared helpers of propdag's sampling tests: models and properties of the VNN-COMP folder,
the propdag CLI, random points in a box, and batched evaluation with onnxruntime
(vnncomp/ortref.py, an executor independent of propdag). vnncomp is found through the repository
root on sys.path: ctest runs the tests from there with `python3 -m pytest`."""

import atexit
import csv
import functools
import gzip
import json
import os
import shutil
import subprocess
import tempfile

import numpy as np
import onnx
import onnx.numpy_helper

from vnncomp import ortref, vnnlib

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

BENCH = os.environ.get("VNNCOMP_BENCHMARKS",
                       os.path.join(REPO, "..", "shared", "vnncomp2024", "benchmarks"))
PROPDAG = os.environ.get("PROPDAG", os.path.join(REPO, "build", "propdag", "propdag"))
MAX_BATCH_BYTES = 64 << 20


def on_disk(path):
    """The path, or the path + .gz, whichever exists."""
    for p in (path, path + ".gz"):
        if os.path.exists(p):
            return p
    return None


def _input_count(model):
    return sum(int(np.prod(s)) for _, s in input_shapes(load(model)))


def _unlisted(bench, listed, specs):
    """Models of a benchmark that instances.csv does not list, each with a function giving its
    property (_matching_spec)."""
    folder = os.path.join(BENCH, bench, "onnx")
    if not os.path.isdir(folder):
        return []
    out = []
    for name in sorted(os.listdir(folder)):
        model = os.path.normpath(os.path.join(folder, name))
        if model in listed or not (name.endswith(".onnx") or name.endswith(".onnx.gz")):
            continue
        out.append((bench, model, functools.partial(_matching_spec, model, specs)))
    return out


def _matching_spec(model, specs):
    count = _input_count(model)
    match = next((s for s in specs if vnnlib.read(s).num_inputs == count), None)
    return match or synthetic_box(count)


_boxes = []  # the folder of synthetic_box's files, made on first use, removed at exit


def synthetic_box(count, lo=0.0, hi=1.0):
    """A property file holding only the box [lo, hi]^count (for models without a property)."""
    if not _boxes:
        _boxes.append(tempfile.mkdtemp(prefix="propdag_boxes_"))
        atexit.register(shutil.rmtree, _boxes[0], True)
    path = os.path.join(_boxes[0], f"box_{count}_{lo}_{hi}.vnnlib")
    if not os.path.exists(path):
        box_spec(path, [float(lo)] * count, [float(hi)] * count)
    return path


def box_spec(path, lo, hi):
    """Writes a property file holding only the box [lo, hi] (exact decimal ends) to `path`."""
    with open(path, "w") as f:
        for i, (a, b) in enumerate(zip(lo, hi)):
            f.write(f"(declare-const X_{i} Real)\n(assert (>= X_{i} {a!r}))\n(assert (<= X_{i} {b!r}))\n")
    return path


def instances(lazy=False):
    """[(benchmark, model path, property)]: the first property listed for each model in
    instances.csv; models not listed get the first listed property of their benchmark with the
    same number of inputs, else a box [0, 1]^n. Finding that property parses the model (2.8 s for
    a 64-neuron tllverifybench model): with lazy=True it is left to spec(), for the entries used."""
    out = []
    if not os.path.isdir(BENCH):
        return out
    for bench in sorted(os.listdir(BENCH)):
        table = os.path.join(BENCH, bench, "instances.csv")
        if not os.path.exists(table):
            continue
        seen = set()
        with open(table) as f:
            for row in csv.reader(f):
                if len(row) < 2:
                    continue
                model = on_disk(os.path.normpath(os.path.join(BENCH, bench, row[0].strip())))
                spec = on_disk(os.path.normpath(os.path.join(BENCH, bench, row[1].strip())))
                if model and spec and model not in seen:
                    seen.add(model)
                    out.append((bench, model, spec))
        specs = list(dict.fromkeys(s for b, _, s in out if b == bench))
        out += _unlisted(bench, seen, specs)
    return out if lazy else [(b, m, spec(s)) for b, m, s in out]


def spec(entry):
    """The property path of an entry of instances(lazy=True)."""
    return entry() if callable(entry) else entry


def propdag(*args):
    """(exit code, stdout, stderr) of the propdag CLI."""
    r = subprocess.run([PROPDAG, *args], capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def bounds(model, spec, method, *extra):
    """Concatenated (lower, upper) of every output, or raises with propdag's message."""
    rc, out, err = propdag("bounds", model, "--vnnlib", spec, "--method", method, "--json", *extra)
    if rc != 0:
        raise RuntimeError(err.strip())
    data = json.loads(out)
    # JSON has no infinity: propdag prints an unbounded side as null (-inf below, +inf above).
    lo = np.concatenate([np.asarray(o["lower"], dtype=np.float64) for o in data["outputs"]])
    hi = np.concatenate([np.asarray(o["upper"], dtype=np.float64) for o in data["outputs"]])
    lo[np.isnan(lo)], hi[np.isnan(hi)] = -np.inf, np.inf
    if not (lo <= hi).all() or np.isposinf(lo).any() or np.isneginf(hi).any():
        raise RuntimeError("bounds are not ordered")
    return lo, hi, data["ms"]


def load(model):
    data = gzip.open(model).read() if model.endswith(".gz") else open(model, "rb").read()
    return onnx.load_from_string(data)


def input_shapes(m):
    """[(name, static shape with symbolic/0 dims as 1)] of the non-initializer inputs."""
    inits = {i.name for i in m.graph.initializer}
    out = []
    for i in m.graph.input:
        if i.name in inits:
            continue
        dims = [d.dim_value if d.dim_value > 0 else 1 for d in i.type.tensor_type.shape.dim]
        out.append((i.name, dims))
    return out


def inside_float32(points, lo, hi):
    """float32 points, nudged by one ulp where rounding left the box [lo, hi]."""
    p = points.astype(np.float32)
    low = p.astype(np.float64) < lo
    p[low] = np.nextafter(p[low], np.float32(np.inf))
    high = p.astype(np.float64) > hi
    p[high] = np.nextafter(p[high], np.float32(-np.inf))
    return p


def sample(lo, hi, n_random, rng, max_corners=2000):
    """n_random uniform points plus box corners (all 2^n when n <= 11, else max_corners random
    ones). Returns (float32 points, number of corners, whether all corners were taken)."""
    n = lo.size
    pts = lo + (hi - lo) * rng.random((n_random, n))
    if n <= 11:
        bits = (np.arange(2 ** n)[:, None] >> np.arange(n)[None, :]) & 1
        all_corners = True
    else:
        bits = rng.integers(0, 2, size=(max_corners, n))
        all_corners = False
    corners = np.where(bits == 1, hi, lo)
    return inside_float32(np.vstack([pts, corners]), lo, hi), len(corners), all_corners


def _symbolic_batch(m):
    """Every input already has a symbolic leading dim."""
    inits = {i.name for i in m.graph.initializer}
    dims = [i.type.tensor_type.shape.dim for i in m.graph.input if i.name not in inits]
    return all(len(d) > 0 and (d[0].dim_param or d[0].dim_value <= 0) for d in dims)


def _batched_copy(m, path):
    """The model with a symbolic leading dim on inputs and outputs, saved to `path`."""
    b = onnx.ModelProto()
    b.CopyFrom(m)
    for v in list(b.graph.input) + list(b.graph.output):
        dims = v.type.tensor_type.shape.dim
        if len(dims) > 0:
            dims[0].Clear()
            dims[0].dim_param = "propdag_batch"
    del b.graph.value_info[:]
    # Reshape targets that hard-code the batch as 1 copy the batch dim instead (0; or -1 when
    # allowzero is set and no other dim is -1).
    consts = {t.name: t for t in b.graph.initializer}
    consts.update({n.output[0]: n.attribute[0].t for n in b.graph.node
                   if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value"})
    for n in b.graph.node:
        if n.op_type != "Reshape" or len(n.input) < 2 or n.input[1] not in consts:
            continue
        t = consts[n.input[1]]
        shape = onnx.numpy_helper.to_array(t).copy()
        allowzero = any(a.name == "allowzero" and a.i for a in n.attribute)
        if shape.size and shape[0] == 1 and not (allowzero and -1 in shape):
            shape[0] = -1 if allowzero else 0
            t.CopyFrom(onnx.numpy_helper.from_array(shape, t.name))
    onnx.save(b, path)


def evaluate(model, points):
    """Outputs (flattened, concatenated per point) of `points` (one row per point, the inputs
    concatenated) under onnxruntime. Runs one batched session when the model accepts a batch
    dim (checked against an unbatched run of the first point), else one run per point."""
    m = load(model)
    shapes = input_shapes(m)
    sizes = [int(np.prod(s)) for _, s in shapes]

    def feeds(rows, batch):
        out, at = {}, 0
        for (name, shape), size in zip(shapes, sizes):
            dims = ([len(rows)] + shape[1:]) if batch else shape
            out[name] = np.ascontiguousarray(rows[:, at:at + size]).reshape(dims)
            at += size
        return out

    def flat(outputs, count):
        return np.concatenate([np.asarray(o, dtype=np.float64).reshape(count, -1) for o in outputs],
                              axis=1)

    single = flat(ortref.run(model, feeds(points[:1], False)), 1)
    batched_ok = all(len(s) > 0 and s[0] == 1 for _, s in shapes)
    if batched_ok:
        with tempfile.TemporaryDirectory() as tmp:
            path = model
            if not _symbolic_batch(m):
                path = os.path.join(tmp, "batched.onnx")
                _batched_copy(m, path)
            try:
                chunk = max(1, MAX_BATCH_BYTES // (4 * points.shape[1]))
                parts = [flat(ortref.run(path, feeds(points[i:i + chunk], True)),
                              len(points[i:i + chunk]))
                         for i in range(0, len(points), chunk)]
                result = np.vstack(parts)
                last = flat(ortref.run(model, feeds(points[-1:], False)), 1)
                if (result.shape == (len(points), single.shape[1])
                        and np.allclose(result[0], single[0], rtol=1e-4, atol=1e-5)
                        and np.allclose(result[-1], last[0], rtol=1e-4, atol=1e-5)):
                    return result, "batched"
            except (ortref.OrtError, ValueError):
                pass
    rows = [flat(ortref.run(model, feeds(points[i:i + 1], False)), 1) for i in range(len(points))]
    return np.vstack(rows), "one by one"


def violations(y, lo, hi, rel=1e-5):
    """Points outside [lo - tol, hi + tol]; tol is float32 rounding scaled to the bound's size."""
    scale = 1.0 + np.maximum(np.abs(lo), np.abs(hi))
    tol = rel * scale
    bad = (y < lo - tol) | (y > hi + tol)
    return int(bad.any(axis=1).sum()), float(np.max(np.maximum(lo - y, y - hi) / scale))
