#!/usr/bin/env python3
"""propdag's CROWN against auto_LiRPA 0.5.0's CROWN (`method="backward"`) per model.

    /usr/bin/python3 benchmarks/propdag_vs_autolirpa.py [--benchmarks DIR] [--only BENCH]...
        [--model SUBSTR]... [--timeout 120] [--memory-gb 6] [--lirpa-json FILE] [--json FILE]
        [--propdag-arg=ARG]...

Per model (each distinct model of a VNN-COMP folder with its first property, as the harness picks
them): torchonnx converts it and auto_LiRPA bounds the generated module on the first input box of
the property (benchmarks/torchonnx_autolirpa.py's run_one: a forked child under a time and memory
limit; its bounds must contain the outputs at five points of the box). propdag then bounds the
ONNX model with `bounds --method crown` and its default options on the same box (rounded to
float32 as auto_LiRPA's is), and the line printed gives the summed output width of each and their
ratio (propdag / auto_LiRPA; <= 1 is as tight or tighter), the times and propdag's `--stats` line
(engine, and any intermediate bounds cut short). Models auto_LiRPA cannot bound are listed with
its reason (`--skip-unbounded`: propdag is not run on those). `--lirpa-json FILE` reuses auto_LiRPA rows from FILE when it exists and writes them
there otherwise, so that propdag can be measured again without auto_LiRPA.
"""

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if (__name__ == "__main__" and importlib.util.find_spec("vnncomp") is None
        and ROOT not in os.environ.get("PYTHONPATH", "").split(os.pathsep)):
    # Run by path, so sys.path has benchmarks/ and not the repository: again, with it on PYTHONPATH
    # (not when imported: by propdag/tests/auto_lirpa_test.py, which finds vnncomp).
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, sys.orig_argv)

import numpy as np  # noqa: E402

from vnncomp import imports  # noqa: E402

# By its file, so that this module also loads where benchmarks/ is not on sys.path (the tests).
tal = imports.module("torchonnx_autolirpa", os.path.join(HERE, "torchonnx_autolirpa.py"))


def first_box(entry):
    """The flat input box auto_LiRPA is given (first box of the property, [-1, 1] elsewhere),
    rounded to float32 as it is there."""
    from vnncomp import numerics, onnxinfo, vnnlib
    specs = onnxinfo.inputs(onnxinfo.load(entry.path))
    lo, hi = vnnlib.input_box(entry.vnnlib) if entry.vnnlib else (None, None)
    parts = numerics.split_box(specs, lo, hi)
    lo = np.concatenate([p[0].ravel() for p in parts]).astype(np.float32).astype(np.float64)
    hi = np.concatenate([p[1].ravel() for p in parts]).astype(np.float32).astype(np.float64)
    return lo, hi


def write_box(path, lo, hi):
    with open(path, "w") as f:
        for i, (a, b) in enumerate(zip(lo, hi)):
            f.write(f"(declare-const X_{i} Real)\n(assert (>= X_{i} {a!r}))\n"
                    f"(assert (<= X_{i} {b!r}))\n")


def propdag_bounds(propdag, entry, box_path, timeout, extra):
    """propdag's row: summed width over every output element, seconds, --stats lines."""
    cmd = [propdag, "bounds", entry.path, "--vnnlib", box_path, "--method", "crown", "--json",
           "--stats", *extra]
    t = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"propdag": f"timeout ({timeout} s)"}
    except OSError as e:
        return {"propdag": f"cannot run {propdag}: {e}"}
    row = {"propdag_s": round(time.time() - t, 2),
           "propdag_stats": [ln for ln in p.stderr.splitlines() if ln.startswith("{")]}
    if p.returncode != 0:
        row["propdag"] = "exit %d: %s" % (p.returncode, (p.stderr.strip().splitlines() or ["?"])[-1])
        return row
    out = json.loads(p.stdout)
    widths = []
    for o in out["outputs"]:
        lo = np.array([np.nan if v is None else v for v in o["lower"]], dtype=float)
        hi = np.array([np.nan if v is None else v for v in o["upper"]], dtype=float)
        widths.append(hi - lo)
    w = np.concatenate(widths)
    row["propdag"] = "ok"
    row["propdag_width"] = float(np.sum(w)) if np.all(np.isfinite(w)) else float("inf")
    row["elements"] = int(w.size)
    return row


def lirpa_rows(args):
    if args.lirpa_json and os.path.exists(args.lirpa_json):
        with open(args.lirpa_json) as f:
            return {(r["benchmark"], r["model"]): r for r in json.load(f)}
    return None


def measure(entry, args, cached):
    row = cached.get(entry.key) if cached is not None else None
    if row is None:
        with tempfile.TemporaryDirectory(prefix="lirpa_") as out:
            t = time.time()
            row = tal.run_one(entry, args.torchonnx, out, args)
            row["s"] = round(time.time() - t, 1)
    row = dict(row)
    if args.skip_unbounded and row.get("crown") != "ok":
        return row
    lo, hi = first_box(entry)
    with tempfile.TemporaryDirectory(prefix="box_") as d:
        box = os.path.join(d, "box.vnnlib")
        write_box(box, lo, hi)
        row.update(propdag_bounds(args.propdag, entry, box, args.timeout, args.propdag_arg))
    if row.get("crown") == "ok" and row.get("propdag") == "ok":
        lirpa = row["crown_width"] * row["elements"]  # crown_width is the mean width
        row["lirpa_sum"] = lirpa
        row["ratio"] = row["propdag_width"] / lirpa if lirpa > 0 else (
            1.0 if row["propdag_width"] == 0 else float("inf"))
    return row


def line(row):
    name = f"{row['benchmark']}/{row['model']}"
    stats = " ".join(s for s in row.get("propdag_stats", []) if '"crown"' in s)
    if "ratio" in row:
        return (f"{name}: ratio {row['ratio']:.4f} propdag {row['propdag_width']:.6g} "
                f"({row['propdag_s']} s) auto_LiRPA {row['lirpa_sum']:.6g} "
                f"({row.get('crown_s', '?')} s) {stats}")
    why = (row.get("error") or (row["crown"] if row.get("crown") not in (None, "ok") else None)
           or f"propdag: {row.get('propdag')}")
    return f"{name}: no ratio: {why}"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--benchmarks", default=os.path.join(ROOT, "..", "shared", "vnncomp2024",
                                                        "benchmarks"))
    p.add_argument("--torchonnx", default=os.path.join(ROOT, "build", "torchonnx", "torchonnx"))
    p.add_argument("--propdag", default=os.path.join(ROOT, "build", "propdag", "propdag"))
    p.add_argument("--lirpa", default=tal.LIRPA)
    p.add_argument("--only", action="append", default=[], help="benchmark folder (repeatable)")
    p.add_argument("--model", action="append", default=[], help="model path substring")
    p.add_argument("--timeout", type=int, default=120, help="seconds per model and tool")
    p.add_argument("--memory-gb", type=float, default=6.0, help="auto_LiRPA's address space")
    p.add_argument("--lirpa-json", help="auto_LiRPA rows: read if present, else written")
    p.add_argument("--propdag-arg", action="append", default=[], help="extra propdag argument")
    p.add_argument("--skip-unbounded", action="store_true",
                   help="run propdag only where auto_LiRPA's CROWN bounded the model")
    p.add_argument("--json", help="write the rows here")
    args = p.parse_args(argv)
    cached = lirpa_rows(args)
    if cached is None:
        warnings.simplefilter("ignore")
        imports.package("auto_LiRPA", args.lirpa)  # imported once; each model runs in a fork
        import torch
        torch.set_num_threads(1)
    rows = []
    for entry in tal._entries(args):
        row = measure(entry, args, cached)
        rows.append(row)
        print(line(row), flush=True)
    ratios = [r for r in rows if "ratio" in r]
    worse = [r for r in ratios if r["ratio"] > 1.001]
    print(f"models {len(rows)}; both bounded {len(ratios)}; propdag looser than 1.001x: "
          f"{len(worse)}" + "".join(f"\n  {r['benchmark']}/{r['model']} {r['ratio']:.4f}"
                                    for r in worse))
    if ratios:
        rs = np.array([r["ratio"] for r in ratios])
        print(f"ratio min {rs.min():.4f} median {np.median(rs):.4f} max {rs.max():.4f}")
    print("auto_LiRPA cannot bound:")
    for r in rows:
        if r.get("crown") != "ok":
            why = r.get("error") or r.get("crown") or "?"
            print(f"  {r['benchmark']}/{r['model']}: {why}")
    if cached is None and args.lirpa_json:
        keep = ("benchmark", "model", "built", "ibp", "crown", "error", "crown_width", "crown_s",
                "ibp_width", "build_s", "outputs", "s")
        with open(args.lirpa_json, "w") as f:
            json.dump([{k: r[k] for k in keep if k in r} for r in rows], f, indent=1)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())
