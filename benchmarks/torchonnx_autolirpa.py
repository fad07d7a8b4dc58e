#!/usr/bin/env python3
"""auto_LiRPA 0.5.0 on torchonnx's generated code: BoundedModule, IBP and CROWN per model.

    /usr/bin/python3 benchmarks/torchonnx_autolirpa.py --benchmarks ../shared/vnncomp2024/benchmarks \\
        --torchonnx build/torchonnx/torchonnx [--only BENCH]... [--model SUBSTR]... [--timeout 120] \\
        [--propdag build/propdag/propdag [--slimonnx build/slimonnx/slimonnx]] \\
        [--torchonnx-flag=--add-batch-dim]... [--rows EARLIER.json]

Each model is converted by the CLI, then a forked child (address space and time limited) builds
auto_LiRPA's BoundedModule on the first vnnlib box of the model and computes IBP and CROWN
(method="backward") bounds. Bounds are checked to contain the model's outputs at the box's centre
and four random points of the box. Prints one line per model and counts per benchmark
(built / IBP ok / CROWN ok); failures keep auto_LiRPA's reason. `--json FILE` writes the rows.

With `--propdag PATH`, `propdag bounds --method ibp` also bounds the model over the same box
(written as a VNN-LIB file), and where both IBPs succeed their bounds are compared: IBP is one
method, so auto_LiRPA's float32 bounds and propdag's float64 ones must agree up to float32
rounding. A row gets `ibp_rel` (max |a - b| / max(1, |a|, |b|) over every bound) and `agree`
(ibp_rel <= AGREE_REL); the summary counts the agreeing models (3-way: torchonnx's code under
auto_LiRPA, propdag, and the model itself at the sampled points). IBP depends on the graph:
slimonnx merges consecutive affine layers, which tightens it. With `--slimonnx PATH` propdag
bounds slimonnx's rewrite (the graph the code computes) for `agree`, and the model as given for
`ibp_rel_onnx` and `onnx_contains` (its bounds enclose auto_LiRPA's). `--rows FILE` redoes only
the comparison on the rows of an earlier `--json` run.
The generated module is what a VNN-COMP entrant feeds α,β-CROWN; see torchonnx/README.md.
"""

import argparse
import collections
import importlib.util
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
if (__name__ == "__main__" and importlib.util.find_spec("vnncomp") is None
        and ROOT not in os.environ.get("PYTHONPATH", "").split(os.pathsep)):
    # Run by path, so sys.path has benchmarks/ and not the repository: again, with it on PYTHONPATH
    # (not when imported: by propdag_vs_autolirpa.py and the tests, which find vnncomp).
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, sys.orig_argv)

from vnncomp import imports  # noqa: E402

# propdag's IBP beside auto_LiRPA's (--propdag): AGREE_REL and ibp_rel_diff are used here too.
_threeway = imports.module("autolirpa_threeway", os.path.join(HERE, "autolirpa_threeway.py"))
AGREE_REL = _threeway.AGREE_REL
ibp_rel_diff = _threeway.ibp_rel_diff


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


def _bounds(onnx_path, py, pth, vnnlib_path, add_batch=False):
    """Runs in the forked, limited child: the row's auto_LiRPA fields. `add_batch`: the code was
    made with --add-batch-dim, so inputs declared without a batch dim take one of size 1."""
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
    if add_batch:
        box = [b if s.batched else (b[0][None], b[1][None]) for s, b in zip(specs, box)]
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
    add_batch = "--add-batch-dim" in extra_flags
    row.update(_forked(lambda: _bounds(entry.path, py, py[:-3] + ".pth", entry.vnnlib, add_batch),
                       args.timeout, args.memory_gb))
    if getattr(args, "propdag", None):
        _threeway.three_way(row, entry, out_dir, args)
    return row


def _entries(args):
    from vnncomp import discover
    entries = [e for e in discover.from_benchmarks(args.benchmarks, tuple(args.only))
               if not e.missing]
    if args.model:
        entries = [e for e in entries if any(m in e.model for m in args.model)]
    return entries


def _summary(rows):
    """Counts per benchmark; with propdag rows also propdag's IBP ok, both compared, agreeing."""
    three = any("propdag" in r for r in rows)
    by = collections.OrderedDict()
    for r in rows:
        c = by.setdefault(r["benchmark"], [0] * 8)
        c[0] += 1
        c[1] += bool(r["built"])
        c[2] += r["ibp"] == "ok"
        c[3] += r["crown"] == "ok"
        c[4] += r.get("propdag") == "ok"
        c[5] += "agree" in r
        c[6] += bool(r.get("agree"))
        c[7] += bool(r.get("onnx_contains"))
    slim = any("onnx_contains" in r for r in rows)
    head = f"{'benchmark':32} models built IBP CROWN"
    print(head + (" propdag compared 3-way" if three else "") + (" onnx-encloses" if slim else ""))
    total = [0] * 8

    def tail_of(c):
        return ((f" {c[4]:7} {c[5]:8} {c[6]:5}" if three else "") +
                (f" {c[7]:13}" if slim else ""))
    for b, c in by.items():
        tail = tail_of(c)
        print(f"{b:32} {c[0]:6} {c[1]:5} {c[2]:3} {c[3]:5}" + tail)
        total = [t + x for t, x in zip(total, c)]
    tail = tail_of(total)
    print(f"{'total':32} {total[0]:6} {total[1]:5} {total[2]:3} {total[3]:5}" + tail)


def _print_row(row):
    why = row.get("error") or "; ".join(f"{k}: {row[k]}" for k in ("ibp", "crown", "propdag")
                                        if row.get(k) not in (None, "ok"))
    if "ibp_rel" in row:
        why = f"ibp_rel={row['ibp_rel']:.2e} " + why
    if "ibp_rel_onnx" in row:
        why = f"ibp_rel_onnx={row['ibp_rel_onnx']:.2e} onnx_contains={row['onnx_contains']} " + why
    print(f"{row['benchmark']}/{row['model']}: built={row['built']} ibp={row['ibp'] == 'ok'} "
          f"crown={row['crown'] == 'ok'} {row.get('s', 0)}s {why}", flush=True)


def _compare_rows(args):
    """--rows: propdag's comparison redone on the auto_LiRPA rows of an earlier --json."""
    with open(args.rows) as f:
        rows = json.load(f)
    entries = {(e.benchmark, e.model): e for e in _entries(args)}
    kept = []
    for row in rows:
        entry = entries.get((row["benchmark"], row["model"]))
        if entry is None:
            continue
        for k in ("propdag", "ibp_rel", "agree", "ibp_rel_onnx", "onnx_contains"):
            row.pop(k, None)
        with tempfile.TemporaryDirectory(prefix="lirpa_") as out:
            _threeway.three_way(row, entry, out, args)
        kept.append(row)
        _print_row(row)
    _summary(kept)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(kept, f, indent=1)
    return 0


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
    p.add_argument("--propdag", help="propdag CLI: compare its IBP bounds with auto_LiRPA's")
    p.add_argument("--slimonnx", help="with --propdag: propdag bounds slimonnx's rewrite (the "
                   "graph the generated code computes) and the model as given")
    p.add_argument("--rows", help="with --propdag: compare again the rows of an earlier --json "
                   "(no conversion, no auto_LiRPA)")
    p.add_argument("--torchonnx-flag", action="append", default=[],
                   help="extra torchonnx flag for every model (repeatable; --torchonnx-flag=-X)")
    args = p.parse_args(argv)
    if args.rows:
        return _compare_rows(args)
    from vnncomp import imports
    warnings.simplefilter("ignore")  # auto_LiRPA's deprecation warnings, once per model
    imports.package("auto_LiRPA", args.lirpa)  # imported once; each model runs in a fork
    import torch
    torch.set_num_threads(1)
    rows = []
    for entry in _entries(args):
        with tempfile.TemporaryDirectory(prefix="lirpa_") as out:
            t = time.time()
            row = run_one(entry, args.torchonnx, out, args, args.torchonnx_flag)
        row["s"] = round(time.time() - t, 1)
        rows.append(row)
        _print_row(row)
    _summary(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
