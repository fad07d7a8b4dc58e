#!/usr/bin/env python3
"""propdag's CROWN against auto_LiRPA 0.5.0's CROWN on real models with Softmax nodes.

    /usr/bin/python3 benchmarks/propdag_softmax_models_vs_autolirpa.py [--benchmark DIR]
        [--first N] [--propdag BIN] [--slimonnx BIN] [--torchonnx BIN] [--lirpa DIR]

For each of the first N instances of a VNN-COMP benchmark folder (default: vit_2023 of
../shared) whose property is a robustness one (a disjunction of `Y_j >= Y_t`), both tools bound
the margins Y_t - Y_j over the property's input box, on the same graph: the model as slimonnx
rewrites it. propdag bounds that graph with the margins appended as a MatMul (`bounds --method
crown`, then alpha, `--refine-budget 1e9`); auto_LiRPA bounds torchonnx's module of it with the
margins as its C matrix (`method="backward"`). auto_LiRPA 0.5.0 has no bound for a softmax of a
perturbed input, so the module's `F.softmax(x, d)` is written as `exp(x) * reciprocal(sum_d
exp(x))` before it is loaded: the same function. One line per instance: the margins' lower
bounds (the property holds where all are > 0), their sums, and the time of each.
"""

import argparse
import csv
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # for vnncomp.imports

import numpy as np  # noqa: E402

from vnncomp import imports, vnnlib  # noqa: E402

SOFTMAX = re.compile(r"^( *)(\w+) = F\.softmax\((\w+), (-?\d+)\)(.*)$", re.M)


def box_file():
    """propdag_vs_autolirpa.py, whose write_box writes an input box as a VNN-LIB file."""
    return imports.module("propdag_vs_autolirpa",
                          os.path.join(ROOT, "benchmarks", "propdag_vs_autolirpa.py"))


def margins_of(spec_path):
    """(target, [others]) of a property `or` of `Y_j >= Y_t`, or None."""
    opener = gzip.open if spec_path.endswith(".gz") else open
    with opener(spec_path, "rt") as f:
        pairs = re.findall(r"\(>=\s*Y_(\d+)\s+Y_(\d+)\s*\)", f.read())
    targets = {int(t) for _, t in pairs}
    if len(targets) != 1:
        return None
    return targets.pop(), [int(j) for j, _ in pairs]


def with_margins(src, dst, target, others, outputs):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    model = onnx.load(src)
    g = model.graph
    out = g.output[0]
    c = np.zeros((outputs, len(others)), np.float32)
    for k, j in enumerate(others):
        c[target, k], c[j, k] = 1, -1
    g.initializer.append(numpy_helper.from_array(c, "margin_weights"))
    g.node.append(helper.make_node("MatMul", [out.name, "margin_weights"], ["margins"]))
    del g.output[:]
    g.output.append(helper.make_tensor_value_info("margins", TensorProto.FLOAT,
                                                  [1, len(others)]))
    onnx.save(model, dst)


def propdag_margins(args, model, lo, hi, method, folder):
    spec = os.path.join(folder, "box.vnnlib")
    box_file().write_box(spec, lo, hi)
    start = time.time()
    r = subprocess.run([args.propdag, "bounds", model, "--vnnlib", spec, "--method", method,
                        "--refine-budget", "1e9", "--json"], capture_output=True, text=True,
                       check=True)
    return np.array(json.loads(r.stdout)["outputs"][0]["lower"]), time.time() - start


def lirpa_margins(args, slim, lo, hi, target, others, outputs, folder):
    import torch
    from auto_LiRPA import BoundedModule, BoundedTensor
    from auto_LiRPA.perturbations import PerturbationLpNorm
    code = os.path.join(folder, "code")
    subprocess.run([args.torchonnx, slim, "-o", code], capture_output=True, check=True)
    stem = os.path.splitext(os.path.basename(slim))[0]
    path = os.path.join(code, stem + ".py")
    with open(path) as f:
        text = f.read()
    text = SOFTMAX.sub(lambda m: (f"{m[1]}{m[2]}_exp = torch.exp({m[3]})\n"
                                  f"{m[1]}{m[2]} = {m[2]}_exp * torch.reciprocal("
                                  f"{m[2]}_exp.sum({m[4]}, keepdim=True)){m[5]}"), text)
    with open(path, "w") as f:
        f.write(text)
    module = imports.module(stem, path).Model()
    module.load_state_dict(torch.load(os.path.join(code, stem + ".pth"), weights_only=True))
    module.eval()
    shape = [1] + list(module_input_shape(text))
    x_lo = torch.tensor(lo, dtype=torch.float32).reshape(shape)
    x_hi = torch.tensor(hi, dtype=torch.float32).reshape(shape)
    c = torch.zeros(1, len(others), outputs)
    for k, j in enumerate(others):
        c[0, k, target], c[0, k, j] = 1, -1
    start = time.time()
    bounded = BoundedModule(module, (x_lo + x_hi) / 2)
    x = BoundedTensor((x_lo + x_hi) / 2, PerturbationLpNorm(x_L=x_lo, x_U=x_hi))
    low, _ = bounded.compute_bounds(x=(x,), C=c, method="backward", bound_upper=False)
    return low.detach().numpy().ravel().astype(np.float64), time.time() - start


def module_input_shape(code):
    """The element shape of the generated module's first input (its header comment)."""
    m = re.search(r"#   \w+: \w+ \[N, ([\d, ]+)\]", code)
    return [int(d) for d in m.group(1).split(",")]


def compare(args, benchmark, onnx_rel, spec_rel):
    """The margins' lower bounds of one instance: {"target", "lirpa", "crown", "alpha", and
    "seconds" of each}, or None where the property is not a robustness one."""
    spec_path = os.path.join(benchmark, spec_rel)
    if not os.path.exists(spec_path):
        spec_path += ".gz"
    found = margins_of(spec_path)
    if found is None:
        return None
    target, others = found
    lo, hi = vnnlib.input_box(spec_path)
    outputs = vnnlib.read(spec_path).num_outputs
    model = os.path.join(benchmark, onnx_rel)
    if not os.path.exists(model):
        model += ".gz"
    row = {"target": target, "seconds": {}}
    with tempfile.TemporaryDirectory() as folder:
        slim = os.path.join(folder, "slim.onnx")
        subprocess.run([args.slimonnx, model, "-o", slim], capture_output=True, check=True)
        marg = os.path.join(folder, "margins.onnx")
        with_margins(slim, marg, target, others, outputs)
        for method in ("crown", "alpha"):
            row[method], row["seconds"][method] = propdag_margins(args, marg, lo, hi, method,
                                                                  folder)
        row["lirpa"], row["seconds"]["lirpa"] = lirpa_margins(args, slim, lo, hi, target,
                                                               others, outputs, folder)
    return row


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    build = os.path.join(ROOT, "build")
    p.add_argument("--benchmark", default=os.path.join(ROOT, "..", "shared", "vnncomp2024",
                                                       "benchmarks", "vit_2023"))
    p.add_argument("--first", type=int, default=3)
    p.add_argument("--propdag", default=os.path.join(build, "propdag", "propdag"))
    p.add_argument("--slimonnx", default=os.path.join(build, "slimonnx", "slimonnx"))
    p.add_argument("--torchonnx", default=os.path.join(build, "torchonnx", "torchonnx"))
    p.add_argument("--lirpa", default=os.path.join(ROOT, "..", "shared", "clients",
                                                   "auto_LiRPA-0.5.0"))
    args = p.parse_args()
    imports.package("auto_LiRPA", args.lirpa)
    with open(os.path.join(args.benchmark, "instances.csv")) as f:
        rows = [r for r in csv.reader(f) if r][:args.first]
    for onnx_rel, spec_rel, _ in rows:
        row = compare(args, args.benchmark, onnx_rel, spec_rel)
        if row is None:
            print(f"{spec_rel}: not a robustness property, skipped")
            continue
        print(f"{os.path.basename(spec_rel)}: target {row['target']}")
        for key, name in (("lirpa", "auto_LiRPA CROWN"), ("crown", "propdag CROWN"),
                          ("alpha", "propdag alpha")):
            v = row[key]
            print(f"  {name:17} {' '.join(f'{x:.3f}' for x in v)}  (min {v.min():.3f}, "
                  f"sum {v.sum():.2f}, {row['seconds'][key]:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
