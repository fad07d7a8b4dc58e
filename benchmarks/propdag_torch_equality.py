"""propdag's torch engine against its Eigen engine on every model of the shared VNN-COMP folder
(the first property instances.csv lists for it): `propdag bounds --json` with each engine, bounds
compared within 1e-9 relative (|a - b| <= 1e-9 max(1, |a|, |b|)). Prints one line per model:
equal, DIFFERENT (the largest relative difference), or the error / timeout of either engine.
--device cuda runs the torch engine on the GPU (the Eigen engine, the reference, on the CPU).
--all also compares every other model of the folder (no property file here) over the input box
--all-box (default 0,1: the same LO,HI for every input element).

    /usr/bin/python3 benchmarks/propdag_torch_equality.py [--method ibp|crown] [--timeout S]
        [--device cpu|cuda] [--jobs J] [--propdag BIN] [--benchmarks DIR] [--all [--all-box LO,HI]]
"""

import argparse
import concurrent.futures
import csv
import json
import os
import subprocess
import sys


def first_instances(bench, every_model):
    """(benchmark, model, property) for each model's first instance whose files are here; with
    every_model, also (benchmark, model, None) for each other model of the benchmark's onnx/."""
    for name in sorted(os.listdir(bench)):
        path = os.path.join(bench, name, "instances.csv")
        if not os.path.exists(path):
            continue
        seen = set()
        with open(path) as f:
            for row in csv.reader(f):
                if len(row) < 2:
                    continue
                onnx, spec = (os.path.join(bench, name, p.strip()) for p in row[:2])
                onnx = onnx if os.path.exists(onnx) else onnx + ".gz"
                spec = spec if os.path.exists(spec) else spec + ".gz"
                if os.path.realpath(onnx) in seen:
                    continue
                if os.path.exists(onnx) and os.path.exists(spec):
                    seen.add(os.path.realpath(onnx))
                    yield name, onnx, spec
        folder = os.path.join(bench, name, "onnx")
        if not every_model or not os.path.isdir(folder):
            continue
        for model in sorted(os.listdir(folder)):
            onnx = os.path.join(folder, model)
            if model.endswith((".onnx", ".onnx.gz")) and os.path.realpath(onnx) not in seen:
                seen.add(os.path.realpath(onnx))
                yield name, onnx, None


def bounds(args, onnx, spec, engine):
    box = ["--vnnlib", spec] if spec else ["--input-box", args.all_box]
    cmd = [args.propdag, "bounds", onnx] + box + ["--json", "--method", args.method,
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
    p.add_argument("--all", action="store_true",
                   help="also the models without a property file here, over --all-box")
    p.add_argument("--all-box", default="0,1", help="LO,HI of every input element (--all)")
    args = p.parse_args()
    counts = {}
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        rows = [(name, onnx, spec, pool.submit(compare, args, onnx, spec))
                for name, onnx, spec in first_instances(args.benchmarks, args.all)]
        for name, onnx, spec, future in rows:
            verdict = future.result()
            key = verdict.split(":")[0].split(" ")[0]
            counts[key] = counts.get(key, 0) + 1
            where = "" if spec else " (box %s)" % args.all_box
            print("%s %s%s %s" % (name, os.path.basename(onnx), where, verdict), flush=True)
    print(" ".join("%s: %d" % kv for kv in sorted(counts.items())))
    return 1 if counts.get("DIFFERENT") else 0


if __name__ == "__main__":
    sys.exit(main())
