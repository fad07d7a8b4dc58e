"""Malformed-model robustness: mutates ONNX backend node test models (op types, attribute values,
declared dims, operand names and counts, opset) and runs every tool on each. A tool must exit 0, or
exit 2 with one line on stderr (torchonnx: one line per problem, each naming the file); a crash
(signal, other exit code) or a run past the time limit fails.

    /usr/bin/python3 tests/mutate_models.py --build build [--seed 0] [--count 300] [--keep DIR]

Deterministic per seed. Prints one line per failure (the mutated model is kept in --keep) and a
last line "N models, F failures"; exit 1 when any failed, 0 otherwise (and when the node tests
are not installed: nothing to mutate).
"""

import argparse
import glob
import os
import random
import shutil
import subprocess
import sys
import tempfile

import onnx

NODE_TESTS = "/usr/share/libonnx-testdata/data/node"
OPS = ["Add", "Relu", "Conv", "MaxPool", "AveragePool", "Reshape", "Gather", "Slice", "Concat",
       "MatMul", "Gemm", "Transpose", "Split", "Resize", "Pad", "Expand", "Where", "Loop", "If",
       "Scan", "SequenceAt", "Squeeze", "Unsqueeze", "ReduceSum", "Softmax", "Cast", "TopK", "Range",
       "OneHot", "ScatterND", "Einsum", "LSTM", "ConvTranspose", "Flatten", "Tile", "DepthToSpace",
       "CumSum", "GridSample", "TfIdfVectorizer", "EyeLike", "Optional", "SequenceMap"]
INTS = [-2**62, -7, -1, 0, 1, 2, 3, 1000, 2**33]


def mutate(model, rng):
    g = model.graph
    for _ in range(rng.randint(1, 6)):
        kind = rng.randrange(7)
        if kind == 0 and g.node:
            rng.choice(g.node).op_type = rng.choice(OPS)
        elif kind == 1 and g.node and any(n.attribute for n in g.node):
            a = rng.choice([a for n in g.node for a in n.attribute])
            if a.type == onnx.AttributeProto.INT:
                a.i = rng.choice(INTS)
            elif a.type == onnx.AttributeProto.INTS and a.ints:
                a.ints[rng.randrange(len(a.ints))] = rng.choice(INTS)
            elif a.type == onnx.AttributeProto.FLOAT:
                a.f = rng.choice([0.0, -1.0, 1e30, float("nan")])
            elif a.type == onnx.AttributeProto.STRING:
                a.s = rng.choice([b"", b"SAME_UPPER", b"xyz", b"nearest"])
        elif kind == 2 and (g.input or g.output):
            dims = rng.choice(list(g.input) + list(g.output)).type.tensor_type.shape.dim
            if dims:
                dims[rng.randrange(len(dims))].dim_value = rng.choice([0, 1, 3, 7, 2**31])
        elif kind == 3 and g.node:
            n = rng.choice(g.node)
            names = [v.name for v in g.input] + [o for m in g.node for o in m.output] + [""]
            if n.input:
                n.input[rng.randrange(len(n.input))] = rng.choice(names)
        elif kind == 4 and g.initializer:
            t = rng.choice(g.initializer)
            if t.dims:
                t.dims[rng.randrange(len(t.dims))] = rng.choice([0, 1, 5, 2**20])
        elif kind == 5 and g.node:
            n = rng.choice(g.node)
            if len(n.input) > 1:
                del n.input[-1]
            else:
                n.input.append(rng.choice([v.name for v in g.input] or ["x"]))
        elif kind == 6 and model.opset_import:
            model.opset_import[0].version = rng.choice([1, 6, 7, 9, 11, 13, 18, 21])
    return model


def check(tool, model_path, out_dir, timeout):
    """None when the tool behaved, else why not."""
    out = os.path.join(out_dir, "out" if tool.endswith("torchonnx") else "out.onnx")
    extra = [] if tool.endswith("torchonnx") else ["--unroll"]
    try:
        r = subprocess.run([tool, model_path, "-o", out, *extra], capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"no answer within {timeout} s"
    lines = r.stderr.decode(errors="replace").strip().splitlines()
    if r.returncode == 0 or (r.returncode == 2 and len(lines) == 1):
        return None
    # torchonnx lists every node it cannot compile, one line each, each naming tool and file.
    name = os.path.basename(tool)
    if (r.returncode == 2 and name == "torchonnx" and lines
            and all(line.startswith(f"{name}: {model_path}") for line in lines)):
        return None
    return f"exit {r.returncode}: " + " | ".join(lines[-2:])


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--count", type=int, default=300)
    p.add_argument("--timeout", type=float, default=60)
    p.add_argument("--keep", help="folder for the models that made a tool fail")
    args = p.parse_args(argv[1:])
    sources = sorted(glob.glob(os.path.join(NODE_TESTS, "test_*", "model.onnx")))
    if not sources:
        print(f"no ONNX node tests under {NODE_TESTS}: nothing to mutate")
        return 0
    tools = [os.path.join(args.build, t, t) for t in ("shapeonnx", "slimonnx", "torchonnx")]
    tools = [t for t in tools if os.access(t, os.X_OK)]
    rng = random.Random(args.seed)
    failures = 0
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "mutated.onnx")
        for i in range(args.count):
            source = rng.choice(sources)
            with open(path, "wb") as f:
                f.write(mutate(onnx.load(source), rng).SerializeToString())
            for tool in tools:
                why = check(tool, path, work, args.timeout)
                if why is None:
                    continue
                failures += 1
                name = f"{i}_{os.path.basename(tool)}.onnx"
                print(f"FAIL {os.path.basename(tool)} on model {i} (from {source}): {why}")
                if args.keep:
                    os.makedirs(args.keep, exist_ok=True)
                    shutil.copy(path, os.path.join(args.keep, name))
    print(f"{args.count} models, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
