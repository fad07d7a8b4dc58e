#!/usr/bin/env python3
"""propdag's CROWN through Softmax against auto_LiRPA 0.5.0's CROWN of the decomposed softmax.

    /usr/bin/python3 benchmarks/propdag_softmax_vs_autolirpa.py [--propdag BIN] [--seeds N]
        [--eps 0.05,0.3,1.0] [--lirpa DIR]

Per seed, a random network x [1, 4] -> Linear(4, 12) -> 3 groups of 4 -> softmax over each group
-> Linear(12, 2), and per eps the box x0 +- eps around a random x0. auto_LiRPA 0.5.0 bounds the
same network with its softmax written as exp(h) * reciprocal(sum exp(h)) (its own Softmax needs
a bound of a perturbed max that 0.5.0 does not have; the function is the same), propdag bounds
the ONNX export with its Softmax node (`bounds --method crown`). One line per network and box:
the summed output widths of IBP and CROWN of each and the ratio propdag CROWN / auto_LiRPA CROWN
(<= 1: as tight or tighter); then the median and largest ratio per eps.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # for vnncomp.imports

import numpy as np  # noqa: E402

from vnncomp import imports  # noqa: E402


def box_file():
    """propdag_vs_autolirpa.py, whose write_box writes an input box as a VNN-LIB file."""
    return imports.module("propdag_vs_autolirpa",
                          os.path.join(ROOT, "benchmarks", "propdag_vs_autolirpa.py"))


def network(seed, decomposed):
    import torch

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            g = torch.Generator().manual_seed(seed)
            self.fc1 = torch.nn.Linear(4, 12)
            self.fc2 = torch.nn.Linear(12, 2)
            with torch.no_grad():
                for p in (self.fc1.weight, self.fc1.bias, self.fc2.weight, self.fc2.bias):
                    p.copy_(torch.randn(p.shape, generator=g))

        def forward(self, x):
            h = self.fc1(x).reshape(-1, 3, 4)
            if decomposed:
                e = torch.exp(h)
                p = e * torch.reciprocal(e.sum(-1, keepdim=True))
            else:
                p = torch.softmax(h, dim=-1)
            return self.fc2(p.reshape(-1, 12))

    return Net().eval()


def propdag_width(binary, onnx_path, lo, hi, method, folder):
    spec = os.path.join(folder, "box.vnnlib")
    box_file().write_box(spec, lo, hi)
    r = subprocess.run([binary, "bounds", onnx_path, "--vnnlib", spec, "--method", method,
                        "--json"], capture_output=True, text=True, check=True)
    o = json.loads(r.stdout)["outputs"][0]
    return float(np.sum(np.array(o["upper"]) - np.array(o["lower"])))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--propdag", default=os.path.join(ROOT, "build", "propdag", "propdag"))
    p.add_argument("--seeds", type=int, default=6)
    p.add_argument("--eps", default="0.05,0.3,1.0")
    p.add_argument("--lirpa", default=os.path.join(ROOT, "..", "shared", "clients",
                                                   "auto_LiRPA-0.5.0"))
    args = p.parse_args()
    import torch
    imports.package("auto_LiRPA", args.lirpa)
    from auto_LiRPA import BoundedModule, BoundedTensor
    from auto_LiRPA.perturbations import PerturbationLpNorm
    ratios = {}
    with tempfile.TemporaryDirectory() as folder:
        for seed in range(args.seeds):
            onnx_path = os.path.join(folder, f"net{seed}.onnx")
            x0 = torch.randn(1, 4, generator=torch.Generator().manual_seed(1000 + seed))
            torch.onnx.export(network(seed, False), x0, onnx_path, opset_version=13)
            bounded = BoundedModule(network(seed, True), x0)
            for eps in (float(e) for e in args.eps.split(",")):
                lo, hi = x0 - eps, x0 + eps
                x = BoundedTensor(x0, PerturbationLpNorm(x_L=lo, x_U=hi))
                widths = {}
                for name, method in (("lirpa_ibp", "IBP"), ("lirpa_crown", "backward")):
                    low, up = bounded.compute_bounds(x=(x,), method=method)
                    widths[name] = float((up - low).sum())
                for m in ("ibp", "crown"):
                    widths["propdag_" + m] = propdag_width(
                        args.propdag, onnx_path, lo.numpy().ravel().astype(np.float64),
                        hi.numpy().ravel().astype(np.float64), m, folder)
                ratio = widths["propdag_crown"] / widths["lirpa_crown"]
                ratios.setdefault(eps, []).append(ratio)
                print(f"seed {seed} eps {eps}: " +
                      ", ".join(f"{k} {v:.4g}" for k, v in widths.items()) +
                      f"; propdag / auto_LiRPA CROWN {ratio:.3f}", flush=True)
    for eps, r in ratios.items():
        print(f"eps {eps}: median ratio {np.median(r):.3f}, largest {np.max(r):.3f} "
              f"over {len(r)} networks")


if __name__ == "__main__":
    main()
