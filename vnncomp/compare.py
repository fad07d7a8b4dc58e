"""Compare two ONNX models on the same inputs with onnxruntime.

    /usr/bin/python3 -m vnncomp.compare A.onnx[.gz] B.onnx[.gz] [--vnnlib SPEC] [--points 5]
        [--seed 0] [--tolerance 1e-6]

Inputs are the box centre plus N seeded random points in the VNN-LIB input box (else [-1, 1]);
input shapes come from A (symbolic/0/-1 dims -> 1), and B is fed by name, or by position when its
input names differ. Prints one JSON line {"max_error", "outputs", "points", "ok"} where the error is
max|a - b| / max(1, max|a|) over all outputs and points (integer outputs exactly). Exit 0 when ok,
1 when not, 2 on error (one line on stderr).
"""

import argparse
import json
import math
import sys

from . import numerics, onnxinfo, ortref, vnnlib


def _parser():
    p = argparse.ArgumentParser(prog="vnncomp.compare", description=__doc__.split("\n")[0])
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--vnnlib")
    p.add_argument("--points", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tolerance", type=float, default=1e-6)
    return p


def _rename(feed, names):
    return {n: v for n, v in zip(names, feed.values())}


def compare(a, b, spec=None, points=5, seed=0):
    """(max_error, outputs, points, reason): A is the reference."""
    specs_a = onnxinfo.inputs(onnxinfo.load(a))
    names_b = [s.name for s in onnxinfo.inputs(onnxinfo.load(b))]
    if len(names_b) != len(specs_a):
        raise ValueError(f"{a} has {len(specs_a)} inputs, {b} has {len(names_b)}")
    lower = upper = None
    if spec:
        lower, upper = vnnlib.input_box(spec)
    feeds = numerics.make_points(specs_a, lower, upper, points, seed)
    same_names = set(names_b) == {s.name for s in specs_a}
    worst, outputs, reason = 0.0, 0, None
    for feed in feeds:
        ref = ortref.run(a, feed)
        got = ortref.run(b, feed if same_names else _rename(feed, names_b))
        err, why = numerics.compare(got, ref)
        outputs = len(ref)
        worst = max(worst, err)
        reason = reason or why
    return worst, outputs, len(feeds), reason


def main(argv=None):
    args = _parser().parse_args(argv)
    try:
        worst, outputs, n, reason = compare(args.a, args.b, args.vnnlib, args.points, args.seed)
    except Exception as e:  # noqa: BLE001 - any failure is reported as one line
        msg = " | ".join(line.strip() for line in str(e).splitlines() if line.strip())
        print(f"vnncomp.compare: {type(e).__name__}: {msg}", file=sys.stderr)
        return 2
    ok = worst <= args.tolerance
    out = {"max_error": worst if math.isfinite(worst) else None, "outputs": outputs, "points": n,
           "ok": ok}
    if reason:
        out["reason"] = reason
    print(json.dumps(out))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
