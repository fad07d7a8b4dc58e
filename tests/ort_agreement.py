"""A tool's output model must compute what its input model computes, on every VNN-COMP model.

    /usr/bin/python3 tests/ort_agreement.py --tool shapeonnx [--build build] [--tolerance 1e-6]
        [--benchmarks DIR] [--checker]

Runs `<build>/<tool>/<tool> MODEL -o OUT` per model, checks OUT with the ONNX checker (full check with
--checker), and compares onnxruntime's outputs of OUT against the original on the centre and 5 seeded
random points of the model's first vnnlib input box (vnncomp.compare); with
$SUITE_LARGE_MODELS=largest, of the models over 64 MiB only the largest per benchmark. Prints a
line per benchmark and a total; exits 1 if any model fails, 0 otherwise (also when the benchmarks are absent: skipped).
"""
import argparse
import collections
import importlib.util
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if (importlib.util.find_spec("vnncomp") is None
        and ROOT not in os.environ.get("PYTHONPATH", "").split(os.pathsep)):
    # Run by path, so sys.path has tests/ and not the repository: again, with it on PYTHONPATH.
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, sys.orig_argv)

from vnncomp import discover, numerics, onnxinfo, ortref, vnnlib  # noqa: E402


# Models that read indices from their input are defined (slices in range) only for part of their
# vnnlib box; outside it ONNX clamps to empty slices and onnxruntime fails or returns a degenerate
# value, so such points are not compared. Ranges read off the graphs (start of a Slice of width w on
# an axis of size n: [0, n - w]): cctsdb_yolo patch-1 slices width 1 at x[12288] on an axis of 3 and
# at x[12289] on one of 64; patch-3 slices width 3 at x[12288] on an axis of 3 and at x[12289] on one
# of 64. Cast truncates, so an upper bound of k.99 still means index k.
IN_RANGE = {
    "cctsdb_yolo_2023/onnx/patch-1.onnx.gz": {12288: (0.0, 2.99), 12289: (0.0, 63.99)},
    "cctsdb_yolo_2023/onnx/patch-3.onnx.gz": {12288: (0.0, 0.99), 12289: (0.0, 61.99)},
}


def compare_models(entry, out, points=5, seed=0):
    """(max error, reason) of `out` against the original on centre + random points of the box."""
    specs = onnxinfo.inputs(onnxinfo.load(entry.path))
    lower = upper = None
    if entry.vnnlib:
        lower, upper = vnnlib.input_box(entry.vnnlib)
    for index, (lo, hi) in IN_RANGE.get(f"{entry.benchmark}/{entry.model}", {}).items():
        lower[index], upper[index] = max(lower[index], lo), min(upper[index], hi)
    worst, reason = 0.0, None
    for feed in numerics.make_points(specs, lower, upper, points, seed):
        err, why = numerics.compare(ortref.run(out, feed), ortref.run(entry.path, feed))
        worst, reason = max(worst, err), reason or why
    return worst, reason


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tool", required=True)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--tolerance", type=float, default=1e-6)
    p.add_argument("--benchmarks", default=os.environ.get(
        "VNNCOMP_BENCHMARKS", os.path.join(ROOT, "..", "shared", "vnncomp2024", "benchmarks")))
    p.add_argument("--checker", action="store_true", help="full ONNX check (with shape inference)")
    args = p.parse_args()
    if not os.path.isdir(args.benchmarks):
        print(f"SKIP: {args.benchmarks} not found")
        return 0
    if not ortref.available():
        print("SKIP: no onnxruntime (run scripts/setup.sh)")
        return 0
    import onnx
    exe = os.path.join(args.build, args.tool, args.tool)
    per_bench = collections.defaultdict(lambda: [0, 0])
    failures, worst = [], 0.0
    entries = [e for e in discover.suite_sample(discover.from_benchmarks(args.benchmarks))
               if not e.missing]
    with tempfile.TemporaryDirectory() as tmp:
        for i, e in enumerate(entries):
            out = os.path.join(tmp, f"{i}.onnx")
            per_bench[e.benchmark][1] += 1
            r = subprocess.run([exe, e.path, "-o", out], capture_output=True, text=True)
            if r.returncode != 0:
                failures.append(f"{e.benchmark}/{e.model}: {r.stderr.strip()}")
                continue
            try:
                onnx.checker.check_model(out, full_check=args.checker)
                err, why = compare_models(e, out)
            except Exception as ex:  # noqa: BLE001 - reported per model
                failures.append(f"{e.benchmark}/{e.model}: {type(ex).__name__}: {ex}")
                continue
            finally:
                if os.path.exists(out):
                    os.remove(out)
            worst = max(worst, err)
            if err > args.tolerance or why:
                failures.append(f"{e.benchmark}/{e.model}: error {err:.3g} {why or ''}")
                continue
            per_bench[e.benchmark][0] += 1
    for bench, (ok, total) in sorted(per_bench.items()):
        print(f"  {bench:36s} {ok}/{total}")
    for f in failures:
        print("FAIL", f)
    passed = sum(ok for ok, _ in per_bench.values())
    print(f"{args.tool}: {passed}/{len(entries)} models equal onnxruntime on the original "
          f"(max error {worst:.3g}, tolerance {args.tolerance:g})")
    ortref.close()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
