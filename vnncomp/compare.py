"""Compare two ONNX models on the same inputs with onnxruntime.

    /usr/bin/python3 -m vnncomp.compare A.onnx[.gz] B.onnx[.gz] [--vnnlib SPEC] [--points 5]
        [--seed 0] [--tolerance 1e-6]
    /usr/bin/python3 -m vnncomp.compare --pairs FILE [--points 5] [--seed 0] [--tolerance 1e-6]

Inputs are the box centre plus N seeded random points in the VNN-LIB input box (else [-1, 1]);
input shapes come from A (symbolic/0/-1 dims -> 1), and B is fed by name, or by position when its
input names differ. Prints one JSON line {"max_error", "outputs", "points", "ok"} where the error is
max|a - b| / max(1, max|a|) over all outputs and points (integer outputs exactly). Exit 0 when ok,
1 when not, 2 on error (one line on stderr).

--pairs FILE (`-` for stdin) compares many pairs in one process: each line is `A<TAB>B` or
`A<TAB>B<TAB>SPEC`; one JSON line per pair is printed in order, with "a" and "b" added and, for a
pair that could not be compared, {"a", "b", "error"} instead. Exit 0 when every pair is ok, 1
otherwise.
"""

import argparse
import json
import math
import sys

from . import numerics, onnxinfo, ortref, vnnlib


def _parser():
    p = argparse.ArgumentParser(prog="vnncomp.compare", description=__doc__.split("\n")[0])
    p.add_argument("a", nargs="?")
    p.add_argument("b", nargs="?")
    p.add_argument("--pairs", metavar="FILE", help="A<TAB>B[<TAB>SPEC] per line; - for stdin")
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


def _one_line(e):
    msg = " | ".join(line.strip() for line in str(e).splitlines() if line.strip())
    return f"{type(e).__name__}: {msg}"


def _result(worst, outputs, n, reason, tolerance):
    out = {"max_error": worst if math.isfinite(worst) else None, "outputs": outputs, "points": n,
           "ok": worst <= tolerance}
    if reason:
        out["reason"] = reason
    return out


def _pairs(args):
    try:
        with (sys.stdin if args.pairs == "-" else open(args.pairs)) as f:
            lines = [line.rstrip("\n") for line in f if line.strip()]
    except OSError as e:
        print(f"vnncomp.compare: {_one_line(e)}", file=sys.stderr)
        return 2
    all_ok = True
    for line in lines:
        a, b, *rest = line.split("\t") + [""]
        try:
            if not b:
                raise ValueError(f"not A<TAB>B[<TAB>SPEC]: {line!r}")
            out = {"a": a, "b": b, **_result(*compare(a, b, rest[0] or None, args.points,
                                                      args.seed), args.tolerance)}
        except Exception as e:  # noqa: BLE001 - reported per pair
            out = {"a": a, "b": b, "error": _one_line(e)}
        all_ok = all_ok and out.get("ok", False)
        print(json.dumps(out), flush=True)
    return 0 if all_ok else 1


def main(argv=None):
    parser = _parser()
    args = parser.parse_args(argv)
    if args.pairs is not None:
        if args.a or args.b or args.vnnlib:
            parser.error("--pairs takes no A, B or --vnnlib")
        return _pairs(args)
    if not (args.a and args.b):
        parser.error("A and B are required (or --pairs FILE)")
    try:
        worst, outputs, n, reason = compare(args.a, args.b, args.vnnlib, args.points, args.seed)
    except Exception as e:  # noqa: BLE001 - any failure is reported as one line
        print(f"vnncomp.compare: {_one_line(e)}", file=sys.stderr)
        return 2
    out = _result(worst, outputs, n, reason, args.tolerance)
    print(json.dumps(out))
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
