#!/usr/bin/env python3
"""auto_LiRPA 0.5.0 on torchonnx's generated code: BoundedModule, IBP and CROWN per model.

    /usr/bin/python3 benchmarks/torchonnx_autolirpa.py --benchmarks ../shared/vnncomp2024/benchmarks \\
        --torchonnx build/torchonnx/torchonnx [--only BENCH]... [--model SUBSTR]... [--timeout 120]

Each model is converted by the CLI, then a forked child (address space and time limited) builds
auto_LiRPA's BoundedModule on the first vnnlib box of the model and computes IBP and CROWN
(method="backward") bounds. Bounds are checked to contain the model's outputs at the box's centre
and four random points of the box. Prints one line per model and counts per benchmark
(built / IBP ok / CROWN ok); failures keep auto_LiRPA's reason. `--json FILE` writes the rows.
The generated module is what a VNN-COMP entrant feeds α,β-CROWN; see torchonnx/README.md.
"""

import argparse
import collections
import importlib
import json
import os
import resource
import select
import signal
import subprocess
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LIRPA = os.path.join(ROOT, "..", "shared", "clients", "auto_LiRPA-0.5.0")


def _one_line(e):
    text = " | ".join(line.strip() for line in str(e).splitlines() if line.strip())
    text = f"{type(e).__name__}: {text}" if text else type(e).__name__
    # TorchScript errors put the reason last, after the trace.
    return text if len(text) <= 300 else text[:100] + " ... " + text[-195:]


def _contains(lb, ub, outs, slack):
    import torch
    lo = torch.minimum(lb, ub)
    return bool(((outs >= lb - slack) & (outs <= ub + slack)).all()) and bool((lo == lb).all())


class _Joined:
    """A model with several outputs as one: their flattened concatenation (batch kept)."""

    def __new__(cls, model):
        import torch

        class Joined(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = model

            def forward(self, *xs):
                return torch.cat([o.flatten(1) for o in self.inner(*xs)], 1)
        return Joined()


def _bounds(onnx_path, py, pth, vnnlib_path):
    """Runs in the forked, limited child: the row's auto_LiRPA fields."""
    import torch
    from auto_LiRPA import BoundedModule, BoundedTensor, PerturbationLpNorm
    from vnncomp import checks, numerics, onnxinfo, vnnlib
    row = {"built": False, "ibp": None, "crown": None}
    proto = onnxinfo.load(onnx_path)
    specs = onnxinfo.inputs(proto)
    del proto
    lo, hi = vnnlib.input_box(vnnlib_path) if vnnlib_path else (None, None)
    model = checks.load_module(py, pth)
    box = [(torch.tensor(lo_, dtype=torch.float32), torch.tensor(hi_, dtype=torch.float32))
           for lo_, hi_ in numerics.split_box(specs, lo, hi)]
    centre = tuple((lo_ + hi_) / 2 for lo_, hi_ in box)
    with torch.no_grad():
        if len(checks.as_list(model(*centre))) > 1:  # auto_LiRPA bounds one output
            model, row["outputs"] = _Joined(model), "joined"
    t = time.time()
    try:
        bm = BoundedModule(model, centre, device="cpu", verbose=False)
        row["built"] = True
    except Exception as e:  # noqa: BLE001
        row["error"] = "BoundedModule: " + _one_line(e)
        return row
    row["build_s"] = round(time.time() - t, 2)
    gen = torch.Generator().manual_seed(0)
    points = [centre] + [tuple(lo_ + (hi_ - lo_) * torch.rand(lo_.shape, generator=gen)
                               for lo_, hi_ in box) for _ in range(4)]
    with torch.no_grad():
        outs = [checks.as_list(model(*p))[0] for p in points]
    xs = tuple(BoundedTensor(c, PerturbationLpNorm(x_L=lo_, x_U=hi_))
               for c, (lo_, hi_) in zip(centre, box))
    for method, key in (("IBP", "ibp"), ("backward", "crown")):
        t = time.time()
        try:
            lb, ub = bm.compute_bounds(x=xs, method=method)
            lb, ub = lb.detach(), ub.detach()
            slack = 1e-4 * (1 + max(float(lb.abs().max()), float(ub.abs().max())))
            ok = all(_contains(lb, ub, o.reshape(lb.shape), slack) for o in outs)
            row[key] = "ok" if ok else "unsound: bounds miss the model's outputs"
            row[key + "_width"] = float((ub - lb).mean())
            if key == "ibp" and lb.numel() <= 4096:
                row["ibp_lb"], row["ibp_ub"] = lb.flatten().tolist(), ub.flatten().tolist()
        except Exception as e:  # noqa: BLE001
            row[key] = _one_line(e)
        row[key + "_s"] = round(time.time() - t, 2)
    return row


def _vm_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _forked(fn, timeout, memory_gb):
    """fn() in a forked child under an address-space and time limit: its dict, or an error row."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        code = 0
        try:
            cap = _vm_bytes() + int(memory_gb * (1 << 30))
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
            out = fn()
        except BaseException as e:  # noqa: BLE001
            out, code = {"built": False, "ibp": None, "crown": None, "error": _one_line(e)}, 1
        with os.fdopen(w, "w") as f:
            f.write(json.dumps(out))
        os._exit(code)
    os.close(w)
    with os.fdopen(r) as f:
        ready, _, _ = select.select([f], [], [], timeout)
        if not ready:  # the child writes once, at its end
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return {"built": False, "ibp": None, "crown": None, "error": f"timeout ({timeout} s)"}
        text = f.read()
    _, status = os.waitpid(pid, 0)
    if not text:
        return {"built": False, "ibp": None, "crown": None,
                "error": f"child died (status {status}; memory limit {memory_gb} GB?)"}
    return json.loads(text)


def run_one(entry, torchonnx, out_dir, args, extra_flags=()):
    """One model's row: conversion by the CLI, then auto_LiRPA in a limited child."""
    row = {"benchmark": entry.benchmark, "model": entry.model, "built": False, "ibp": None,
           "crown": None}
    conv = subprocess.run([torchonnx, entry.path, "-o", out_dir, *extra_flags],
                          capture_output=True, text=True, timeout=300)
    produced = [f for f in os.listdir(out_dir) if f.endswith(".py")]
    if conv.returncode != 0 or not produced:
        row["error"] = "torchonnx: " + (conv.stderr.strip().splitlines() or ["?"])[-1]
        return row
    py = os.path.join(out_dir, produced[0])
    row.update(_forked(lambda: _bounds(entry.path, py, py[:-3] + ".pth", entry.vnnlib),
                       args.timeout, args.memory_gb))
    return row


def _entries(args):
    from vnncomp import discover
    entries = [e for e in discover.from_benchmarks(args.benchmarks, tuple(args.only))
               if not e.missing]
    if args.model:
        entries = [e for e in entries if any(m in e.model for m in args.model)]
    return entries


def _summary(rows):
    by = collections.OrderedDict()
    for r in rows:
        c = by.setdefault(r["benchmark"], [0, 0, 0, 0])
        c[0] += 1
        c[1] += bool(r["built"])
        c[2] += r["ibp"] == "ok"
        c[3] += r["crown"] == "ok"
    print(f"{'benchmark':32} models built IBP CROWN")
    total = [0, 0, 0, 0]
    for b, c in by.items():
        print(f"{b:32} {c[0]:6} {c[1]:5} {c[2]:3} {c[3]:5}")
        total = [t + x for t, x in zip(total, c)]
    print(f"{'total':32} {total[0]:6} {total[1]:5} {total[2]:3} {total[3]:5}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--benchmarks", default=os.path.join(ROOT, "..", "shared", "vnncomp2024",
                                                        "benchmarks"))
    p.add_argument("--torchonnx", default=os.path.join(ROOT, "build", "torchonnx", "torchonnx"))
    p.add_argument("--lirpa", default=LIRPA)
    p.add_argument("--only", action="append", default=[], help="benchmark folder (repeatable)")
    p.add_argument("--model", action="append", default=[], help="model path substring")
    p.add_argument("--timeout", type=int, default=120, help="seconds per model")
    p.add_argument("--memory-gb", type=float, default=6.0, help="address space per model")
    p.add_argument("--json", help="write the rows here")
    args = p.parse_args(argv)
    sys.path[:0] = [ROOT, args.lirpa]
    warnings.simplefilter("ignore")  # auto_LiRPA's deprecation warnings, once per model
    importlib.import_module("auto_LiRPA")  # imported once; each model runs in a fork
    import torch
    torch.set_num_threads(1)
    rows = []
    for entry in _entries(args):
        with tempfile.TemporaryDirectory(prefix="lirpa_") as out:
            t = time.time()
            row = run_one(entry, args.torchonnx, out, args)
        row["s"] = round(time.time() - t, 1)
        rows.append(row)
        why = row.get("error") or "; ".join(f"{k}: {row[k]}" for k in ("ibp", "crown")
                                            if row[k] not in (None, "ok"))
        print(f"{row['benchmark']}/{row['model']}: built={row['built']} ibp={row['ibp'] == 'ok'} "
              f"crown={row['crown'] == 'ok'} {row['s']}s {why}", flush=True)
    _summary(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
