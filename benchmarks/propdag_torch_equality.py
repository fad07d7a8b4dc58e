"""propdag's torch engine against its Eigen engine on every model of the shared VNN-COMP folder
(the first property instances.csv lists for it): `propdag bounds --json` with each engine, bounds
compared within 1e-9 relative (|a - b| <= 1e-9 max(1, |a|, |b|)). Prints one line per model:
equal, DIFFERENT (the largest relative difference), or the error / timeout of either engine.
--device cuda runs the torch engine on the GPU (the Eigen engine, the reference, on the CPU).

    /usr/bin/python3 benchmarks/propdag_torch_equality.py [--method ibp|crown] [--timeout S]
        [--device cpu|cuda] [--jobs J] [--propdag BIN] [--benchmarks DIR]
"""

import argparse
import concurrent.futures
import csv
import json
import os
import subprocess
import sys


def first_instances(bench):
    for name in sorted(os.listdir(bench)):
        path = os.path.join(bench, name, "instances.csv")
        if not os.path.exists(path):
            continue
        seen = set()
        with open(path) as f:
            for row in csv.reader(f):
                if len(row) < 2 or row[0] in seen:
                    continue
                seen.add(row[0])
                onnx, spec = (os.path.join(bench, name, p.strip()) for p in row[:2])
                onnx = onnx if os.path.exists(onnx) else onnx + ".gz"
                spec = spec if os.path.exists(spec) else spec + ".gz"
                if os.path.exists(onnx) and os.path.exists(spec):
                    yield name, onnx, spec


def bounds(args, onnx, spec, engine):
    cmd = [args.propdag, "bounds", onnx, "--vnnlib", spec, "--json", "--method", args.method,
           "--engine", engine] + (["--device", args.device] if engine == "torch" else [])
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return None, "timeout"
    if r.returncode != 0:
        return None, r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "exit %d" % r.returncode
    out = json.loads(r.stdout)["outputs"]
    return [v for o in out for v in o["lower"] + o["upper"]], None


def compare(args, onnx, spec):
    """'equal', 'DIFFERENT <worst relative difference>', or 'ENGINE: error'."""
    ref, err = bounds(args, onnx, spec, "eigen")
    got, terr = (None, None) if err else bounds(args, onnx, spec, "torch")
    if err or terr:
        return "eigen: " + err if err else "torch: " + terr
    worst = max((abs(a - b) / max(1.0, abs(a), abs(b)) if a is not None and b is not None
                 else (0.0 if a == b else float("inf"))) for a, b in zip(ref, got))
    return "equal" if worst <= 1e-9 and len(ref) == len(got) else "DIFFERENT %.3g" % worst


def main():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser()
    p.add_argument("--method", default="ibp")
    p.add_argument("--timeout", type=float, default=60)
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--propdag", default=os.path.join(here, "build/propdag/propdag"))
    p.add_argument("--benchmarks", default=os.environ.get(
        "VNNCOMP_BENCHMARKS", os.path.join(here, "../shared/vnncomp2024/benchmarks")))
    p.add_argument("--jobs", type=int, default=1, help="models compared at a time")
    args = p.parse_args()
    counts = {}
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        rows = [(name, onnx, pool.submit(compare, args, onnx, spec))
                for name, onnx, spec in first_instances(args.benchmarks)]
        for name, onnx, future in rows:
            verdict = future.result()
            key = verdict.split(":")[0].split(" ")[0]
            counts[key] = counts.get(key, 0) + 1
            print("%s %s %s" % (name, os.path.basename(onnx), verdict), flush=True)
    print(" ".join("%s: %d" % kv for kv in sorted(counts.items())))
    return 1 if counts.get("DIFFERENT") else 0


if __name__ == "__main__":
    sys.exit(main())
