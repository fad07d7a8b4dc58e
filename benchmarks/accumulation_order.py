"""How much of the generated code's difference from onnxruntime on one model is summation order.

    /usr/bin/python3 benchmarks/accumulation_order.py [--benchmarks DIR] [--torchonnx EXE]
        [--model nn4sys_2023/onnx/pensieve_mid_parallel.onnx.gz]
        [--vnnlib nn4sys_2023/vnnlib/pensieve_parallel_0.vnnlib.gz] [--stride 256]

Converts the model with torchonnx, takes the harness's six points (box centre + 5 seeded samples,
vnncomp/numerics.py) and prints, per point, the harness's error of four versions of the generated
forward against onnxruntime:
  generated      the file as torchonnx writes it;
  seq-sums       each `x.sum((1,), keepdim=True)` written as a left-to-right chain of additions;
  k-chunks       each F.linear whose input has more than --stride features accumulated onto its
                 bias in chunks of --stride (torch.addmm per chunk): the order in which
                 onnxruntime's CPU matrix product adds up long dot products;
  both           the two rewrites together.
The rewrites change the order of the float32 additions and nothing else; where a version matches
onnxruntime at every point, the generated code's difference is onnxruntime's summation order.
pensieve_mid_parallel's output is the difference of two values near 99 (float32 spacing 7.6e-6
there), so one rounding step of either decides the harness's 1e-5 check. Copying a reference
library's blocking into generated code is not something torchonnx does: this script measures it.
"""

import argparse
import gzip
import importlib.util
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
if (importlib.util.find_spec("vnncomp") is None
        and REPO not in os.environ.get("PYTHONPATH", "").split(os.pathsep)):
    # Run by path, so sys.path has benchmarks/ and not the repository: again, with it on PYTHONPATH.
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, sys.orig_argv)

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import torch  # noqa: E402

from vnncomp import imports, numerics, onnxinfo, ortref, vnnlib  # noqa: E402


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--benchmarks", default=os.path.join(REPO, "..", "shared", "vnncomp2024", "benchmarks"))
    p.add_argument("--torchonnx", default=os.path.join(REPO, "build", "torchonnx", "torchonnx"))
    p.add_argument("--model", default="nn4sys_2023/onnx/pensieve_mid_parallel.onnx.gz")
    p.add_argument("--vnnlib", default="nn4sys_2023/vnnlib/pensieve_parallel_0.vnnlib.gz")
    p.add_argument("--stride", type=int, default=256)
    return p.parse_args(argv)


def sequential_sums(code):
    """`y = x.sum((1,), keepdim=True)` -> the slices of x along axis 1 added left to right
    (Python's sum over unbind: 0 + x0 + x1 + ..., and 0 + x0 is exact)."""
    return re.sub(r"(\w+) = (\w+)\.sum\(\(1,\), keepdim=True\)",
                  r"\1 = sum(\2.unbind(1)).unsqueeze(1)", code)


def k_chunks(code, widths, stride):
    """F.linear(x, self.L.weight, self.L.bias) with more than `stride` input features ->
    the bias, then torch.addmm onto it, one chunk of `stride` features at a time."""
    def rewrite(match):
        indent, out, x, layer = match.group(1), match.group(2), match.group(3), match.group(4)
        k = widths.get(layer, 0)
        if k <= stride:
            return match.group(0)
        lines = [f"{indent}{out} = self.{layer}.bias.unsqueeze(0)"]
        for j in range(0, k, stride):
            part = f"{j}:{min(k, j + stride)}"
            lines.append(f"{indent}{out} = torch.addmm({out}, {x}[:, {part}], "
                         f"self.{layer}.weight[:, {part}].t())")
        return "\n".join(lines)
    return re.sub(r"^( +)(\w+) = F\.linear\((\w+), self\.(\w+)\.weight, self\.\4\.bias\).*$",
                  rewrite, code, flags=re.M)


def load(path, pth, tag):
    model = imports.module(tag, path).Model()
    model.load_state_dict(torch.load(pth))
    return model.eval()


def main(argv):
    args = parse_args(argv)
    model_path = os.path.join(args.benchmarks, args.model)
    spec_path = os.path.join(args.benchmarks, args.vnnlib)
    for path in (model_path, spec_path, args.torchonnx):
        if not os.path.exists(path):
            print(f"accumulation_order.py: {path} does not exist", file=sys.stderr)
            return 2
    if not ortref.available():
        print("accumulation_order.py: onnxruntime is not installed (scripts/setup.sh)", file=sys.stderr)
        return 2
    opener = gzip.open if model_path.endswith(".gz") else open
    with opener(model_path, "rb") as f:
        proto = onnx.load_from_string(f.read())
    specs = onnxinfo.inputs(proto)
    box = vnnlib.read(spec_path)
    feeds = numerics.make_points(specs, box.lower, box.upper, 5, 0)
    refs = [ortref.run(model_path, feed) for feed in feeds]
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([args.torchonnx, model_path, "-o", out, "--class-name", "Model"], check=True,
                       stdout=subprocess.DEVNULL)
        stem = os.path.basename(model_path).split(".")[0]
        code = open(os.path.join(out, stem + ".py")).read()
        pth = os.path.join(out, stem + ".pth")
        weights = torch.load(pth)
        widths = {k[:-len(".weight")]: v.shape[1] for k, v in weights.items()
                  if k.endswith(".weight") and v.dim() == 2}
        if "import torch\n" not in code:
            code = code.replace("import torch.nn.functional as F", "import torch\nimport torch.nn.functional as F")
        versions = {"generated": code, "seq-sums": sequential_sums(code),
                    "k-chunks": k_chunks(code, widths, args.stride)}
        versions["both"] = k_chunks(versions["seq-sums"], widths, args.stride)
        print(f"{args.model}: error against onnxruntime at the harness's points "
              f"(centre, 5 samples); K stride {args.stride}")
        for name, text in versions.items():
            path = os.path.join(out, f"v_{name.replace('-', '_')}.py")
            with open(path, "w") as f:
                f.write(text)
            model = load(path, pth, "v_" + name.replace("-", "_"))
            errors = []
            with torch.no_grad():
                for feed, ref in zip(feeds, refs):
                    got = model(*[torch.from_numpy(np.asarray(feed[s.name])) for s in specs])
                    outs = got if isinstance(got, tuple) else (got,)
                    errors.append(max(numerics.error(o.numpy(), r) for o, r in zip(outs, ref)))
            changed = "" if name == "generated" or text != code else " (no rewrite applied)"
            print(f"  {name:10s} max {max(errors):.3g}  " + " ".join(f"{e:.3g}" for e in errors) + changed)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
