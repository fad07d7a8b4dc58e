"""The propdag side of benchmarks/torchonnx_autolirpa.py's three-way IBP check: propdag's IBP
bounds over the box auto_LiRPA gets (of the model as given, or of slimonnx's rewrite, the graph
the generated code computes) and their agreement with auto_LiRPA's. Imported by that sweep."""

import json
import os
import subprocess

# IBP in float32 against float64: each layer's interval arithmetic rounds its sums once per term,
# a relative 6e-8 each; deep models accumulate that over their layers.
AGREE_REL = 1e-4


def _write_box(lo, hi, path):
    """A VNN-LIB file holding only the box [lo, hi] (no output constraint)."""
    with open(path, "w") as f:
        f.writelines(f"(declare-const X_{i} Real)\n" for i in range(len(lo)))
        for i, (a, b) in enumerate(zip(lo, hi)):
            f.write(f"(assert (>= X_{i} {float(a)!r}))\n(assert (<= X_{i} {float(b)!r}))\n")


def _box(onnx_path, vnnlib_path):
    """The flat box auto_LiRPA gets (_bounds): the property's first box, else [-1, 1]."""
    import numpy as np
    from vnncomp import numerics, onnxinfo, vnnlib
    specs = onnxinfo.inputs(onnxinfo.load(onnx_path))
    lo, hi = vnnlib.input_box(vnnlib_path) if vnnlib_path else (None, None)
    parts = numerics.split_box(specs, lo, hi)
    return (np.concatenate([p[0].ravel() for p in parts]),
            np.concatenate([p[1].ravel() for p in parts]))


def _propdag_ibp(propdag, onnx_path, vnnlib_path, out_dir, timeout, box_of=None):
    """propdag's IBP bounds of `onnx_path` over the box auto_LiRPA gets (that of `box_of`, else
    of `onnx_path`): ((lower, upper), None) or (None, why)."""
    lo, hi = _box(box_of or onnx_path, vnnlib_path)
    box = os.path.join(out_dir, "first_box.vnnlib")
    _write_box(lo, hi, box)
    try:
        res = subprocess.run([propdag, "bounds", onnx_path, "--vnnlib", box, "--method", "ibp",
                              "--json"], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timeout ({timeout} s)"
    if res.returncode != 0:
        return None, (res.stderr.strip().splitlines() or ["?"])[-1]
    outs = json.loads(res.stdout)["outputs"]
    nan = float("nan")  # a non-finite bound (JSON null) agrees with nothing
    return tuple([nan if v is None else v for o in outs for v in o[k]]
                 for k in ("lower", "upper")), None


def ibp_rel_diff(lirpa, ours):
    """max |a - b| / max(1, |a|, |b|) over matching bounds; inf when the counts differ."""
    if len(lirpa) != len(ours):
        return float("inf")
    worst = 0.0
    for a, b in zip(lirpa, ours):
        d = abs(a - b) / max(1.0, abs(a), abs(b))
        worst = max(worst, d if d == d else float("inf"))
    return worst


def _rel(row, bounds):
    return max(ibp_rel_diff(row["ibp_lb"], bounds[0]), ibp_rel_diff(row["ibp_ub"], bounds[1]))


def _encloses(outer, row):
    """Whether propdag's `outer` bounds contain auto_LiRPA's, up to AGREE_REL."""
    def slack(a, b):
        return AGREE_REL * max(1.0, abs(a), abs(b))
    return (len(outer[0]) == len(row["ibp_lb"]) and
            all(o <= a + slack(o, a) for o, a in zip(outer[0], row["ibp_lb"])) and
            all(o >= a - slack(o, a) for o, a in zip(outer[1], row["ibp_ub"])))


def _slimmed(slimonnx, onnx_path, out_dir, timeout):
    """slimonnx's rewrite of the model (what torchonnx lowers), or (None, why)."""
    path = os.path.join(out_dir, "slimmed.onnx")
    try:
        res = subprocess.run([slimonnx, onnx_path, "-o", path, "--unroll"], capture_output=True,
                             text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"slimonnx: timeout ({timeout} s)"
    if res.returncode != 0:
        return None, "slimonnx: " + (res.stderr.strip().splitlines() or ["?"])[-1]
    return path, None


def three_way(row, entry, out_dir, args):
    """Adds propdag's IBP and its agreement with auto_LiRPA's to the row. With args.slimonnx,
    propdag bounds slimonnx's rewrite, the graph the generated code computes (merged affine
    layers tighten IBP), and `ibp_rel_onnx`/`onnx_contains` compare with the model as given."""
    onnx_bounds, why = _propdag_ibp(args.propdag, entry.path, entry.vnnlib, out_dir, args.timeout)
    bounds = onnx_bounds
    if getattr(args, "slimonnx", None) and onnx_bounds is not None:
        path, why = _slimmed(args.slimonnx, entry.path, out_dir, args.timeout)
        if path:
            bounds, why = _propdag_ibp(args.propdag, path, entry.vnnlib, out_dir, args.timeout,
                                       box_of=entry.path)
    row["propdag"] = why or "ok"
    if bounds is None or row.get("ibp") != "ok" or "ibp_lb" not in row:
        return
    row["ibp_rel"] = _rel(row, bounds)
    row["agree"] = row["ibp_rel"] <= AGREE_REL
    if bounds is not onnx_bounds:
        row["ibp_rel_onnx"] = _rel(row, onnx_bounds)
        row["onnx_contains"] = _encloses(onnx_bounds, row)
