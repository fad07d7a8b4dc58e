"""A stand-in for the torchonnx CLI, for the harness tests: same command line, same outputs.

    fake_torchonnx.py IN... -o OUTDIR [--class-name NAME] [--stats] [other flags ignored]

Understands the few ops the test models use (Gemm, MatMul, Add, Sub, Mul, Relu, Flatten,
Identity). The graph's doc_string selects a misbehaviour to exercise the harness: "fake:wrong"
(adds 1 to the output), "fake:crash" (forward kills its process), "fake:hang" (forward sleeps),
"fake:convert-crash" (this converter aborts). Unreadable models fail with one error line; the
others are still converted and the exit code is then 2.
"""

import argparse
import gzip
import json
import os
import sys
import time

import onnx
import torch
from onnx import numpy_helper

OPS = {
    "Add": "{0} + {1}",
    "Sub": "{0} - {1}",
    "Mul": "{0} * {1}",
    "MatMul": "torch.matmul({0}, {1})",
    "Relu": "torch.relu({0})",
    "Identity": "{0}",
}
MISBEHAVIOUR = {
    "fake:wrong": "        {out} = {out} + 1\n",
    "fake:crash": "        os.kill(os.getpid(), signal.SIGSEGV)\n",
    "fake:hang": "        time.sleep(3600)\n",
}


def load(path):
    if path.endswith(".gz"):
        with gzip.open(path, "rb") as f:
            return onnx.load_model_from_string(f.read())
    return onnx.load(path)


def attr(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def expression(node, args):
    if node.op_type == "Gemm":
        a = f"{args[0]}.t()" if attr(node, "transA", 0) else args[0]
        b = f"{args[1]}.t()" if attr(node, "transB", 0) else args[1]
        out = f"torch.matmul({a}, {b})"
        return f"{out} + {args[2]}" if len(args) > 2 else out
    if node.op_type == "Flatten":
        return f"torch.flatten({args[0]}, {attr(node, 'axis', 1)})"
    if node.op_type not in OPS:
        raise ValueError(f"unsupported op {node.op_type} in node '{node.name}'")
    return OPS[node.op_type].format(*args)


def emit(model, cls):
    g = model.graph
    names, state = {}, {}
    for i, t in enumerate(g.initializer):
        names[t.name] = f"self.c{i}"
        state[f"c{i}"] = torch.from_numpy(numpy_helper.to_array(t).copy())
    inputs = [vi.name for vi in g.input if vi.name not in names]
    for i, n in enumerate(inputs):
        names[n] = f"x{i}"
    body = []
    for k, node in enumerate(g.node):
        for o in node.output:
            names[o] = f"v{k}"
        body.append(f"        v{k} = {expression(node, [names[i] for i in node.input])}\n")
    out = names[g.output[0].name]
    if g.doc_string in MISBEHAVIOUR:
        body.append(MISBEHAVIOUR[g.doc_string].format(out=out))
    lines = ["import os\nimport signal\nimport time\n\nimport torch\nfrom torch import nn\n\n\n",
             f"class {cls}(nn.Module):\n    def __init__(self):\n        super().__init__()\n"]
    lines += [f"        self.register_buffer('{k}', "
              f"torch.zeros({list(v.shape)}, dtype={v.dtype}))\n" for k, v in state.items()]
    lines.append(f"\n    def forward(self, {', '.join(names[n] for n in inputs)}):\n")
    lines += body
    lines.append(f"        return {out}\n")
    return "".join(lines), state, len(g.node)


def stem(path):
    base = os.path.basename(path)
    for suffix in (".onnx.gz", ".onnx"):
        if base.endswith(suffix):
            return base[:-len(suffix)]
    return base


def main():
    p = argparse.ArgumentParser()
    p.add_argument("inputs", nargs="+")
    p.add_argument("-o", dest="out", required=True)
    p.add_argument("--class-name", default="Model")
    p.add_argument("--stats", action="store_true")
    args, _ = p.parse_known_args()
    os.makedirs(args.out, exist_ok=True)
    code = 0
    for path in args.inputs:
        start = time.monotonic()
        try:
            model = load(path)
            if model.graph.doc_string == "fake:convert-crash":
                os.abort()
            src, state, nodes = emit(model, args.class_name)
        except Exception as e:  # noqa: BLE001
            print(f"torchonnx: {path}: {type(e).__name__}: {str(e).splitlines()[0]}",
                  file=sys.stderr)
            code = 2
            continue
        with open(os.path.join(args.out, stem(path) + ".py"), "w") as f:
            f.write(src)
        torch.save(state, os.path.join(args.out, stem(path) + ".pth"))
        if args.stats:
            ms = (time.monotonic() - start) * 1000
            print(json.dumps({"model": path, "nodes": nodes, "nodes_after": nodes, "ms": round(ms, 3)}),
                  file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
