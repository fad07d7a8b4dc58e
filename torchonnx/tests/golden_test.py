"""Whole-file goldens of the generated code: the NAME.py torchonnx writes for each case must equal
torchonnx/testdata/golden/NAME.py byte for byte. The goldens are reviewed artifacts; after a change
to the code torchonnx writes (slimonnx's rewrites included), regenerate them all and review the diff:

    TORCHONNX_UPDATE_GOLDENS=1 ctest --test-dir build -R golden
    git diff torchonnx/testdata/golden

A case is a model built here with onnx.helper (a name in BUILT) or an ONNX backend node test
(NODE_TESTS; under ONNX_NODE_TESTS, skipped when absent). Each is converted with torchonnx's
defaults (slimonnx on) from a file named NAME.onnx in the working folder, so no path reaches the
output; the golden must also compile as Python.

    TORCHONNX=build/torchonnx/torchonnx /usr/bin/python3 -m pytest torchonnx/tests/golden_test.py
"""

import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import cli_test

need_exe = cli_test.need_exe  # autouse: the tests skip without the binary
GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata", "golden")
NODE_DIR = os.environ.get("ONNX_NODE_TESTS", "/usr/share/libonnx-testdata/data/node")
BATCH = "N"


def weight(name, *shape):
    """A fixed weight, varied and different for each name (no random generator: a golden must not
    depend on one; equal weights would let slimonnx merge their nodes)."""
    phase = sum(map(ord, name))
    values = np.sin(np.arange(1, int(np.prod(shape)) + 1, dtype=np.float64) * 0.7 + phase) * 0.5
    return numpy_helper.from_array(values.reshape(shape).astype(np.float32), name)


def model(nodes, inputs, outputs, inits, opset=13):
    info = helper.make_tensor_value_info
    graph = helper.make_graph(nodes, "g", [info(n, TensorProto.FLOAT, s) for n, s in inputs],
                              [info(n, TensorProto.FLOAT, s) for n, s in outputs], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def mlp():
    """x [N, 2, 3] -> Flatten -> Gemm 6x8 -> Relu -> Gemm 8x3 -> y [N, 3]."""
    node = helper.make_node
    nodes = [node("Flatten", ["x"], ["f"], name="flatten"),
             node("Gemm", ["f", "w1", "b1"], ["h"], name="fc1", transB=1),
             node("Relu", ["h"], ["r"], name="relu1"),
             node("Gemm", ["r", "w2", "b2"], ["y"], name="fc2", transB=1)]
    inits = [weight("w1", 8, 6), weight("b1", 8), weight("w2", 3, 8), weight("b2", 3)]
    return model(nodes, [("x", [BATCH, 2, 3])], [("y", [BATCH, 3])], inits)


def conv_pool():
    """x [N, 1, 8, 8] -> Conv 3x3 (4 ch, pad 1) -> Relu -> MaxPool 2x2 -> Conv 3x3 (2 ch) -> Relu
    -> AveragePool 2x2 -> Flatten -> Gemm 8x2 -> y [N, 2]."""
    node = helper.make_node
    nodes = [node("Conv", ["x", "k1", "c1"], ["a"], name="conv1", kernel_shape=[3, 3],
                  pads=[1, 1, 1, 1]),
             node("Relu", ["a"], ["ar"], name="relu1"),
             node("MaxPool", ["ar"], ["p"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
             node("Conv", ["p", "k2", "c2"], ["b"], name="conv2", kernel_shape=[3, 3],
                  pads=[1, 1, 1, 1]),
             node("Relu", ["b"], ["br"], name="relu2"),
             node("AveragePool", ["br"], ["q"], name="pool2", kernel_shape=[2, 2], strides=[2, 2]),
             node("Flatten", ["q"], ["f"], name="flatten"),
             node("Gemm", ["f", "w", "c"], ["y"], name="fc", transB=1)]
    inits = [weight("k1", 4, 1, 3, 3), weight("c1", 4), weight("k2", 2, 4, 3, 3), weight("c2", 2),
             weight("w", 2, 8), weight("c", 2)]
    return model(nodes, [("x", [BATCH, 1, 8, 8])], [("y", [BATCH, 2])], inits)


def concat_reshape():
    """Two branches of x [N, 6] joined: Concat(MatMul(x, a), Sigmoid(MatMul(x, b))) [N, 8] ->
    Reshape [N, 2, 4] -> Transpose [N, 4, 2] -> ReduceMean over the last axis -> y [N, 4]."""
    node = helper.make_node
    shape = numpy_helper.from_array(np.array([-1, 2, 4], np.int64), "shape")
    nodes = [node("MatMul", ["x", "a"], ["left"], name="left"),
             node("MatMul", ["x", "b"], ["rb"], name="right"),
             node("Sigmoid", ["rb"], ["right"], name="gate"),
             node("Concat", ["left", "right"], ["cat"], name="join", axis=1),
             node("Reshape", ["cat", "shape"], ["r"], name="split_halves"),
             node("Transpose", ["r"], ["t"], name="swap", perm=[0, 2, 1]),
             node("ReduceMean", ["t"], ["y"], name="mean", axes=[-1], keepdims=0)]
    inits = [weight("a", 6, 4), weight("b", 6, 4), shape]
    return model(nodes, [("x", [BATCH, 6])], [("y", [BATCH, 4])], inits)


def lstm():
    """An LSTM (hidden 3, batch first: layout 1) over x [N, 3 steps, 2] with constant weights -> its
    last hidden state y [N, 1, 3]. (The node tests' LSTMs take their weights as inputs, which
    torchonnx rejects.)"""
    node = helper.make_node("LSTM", ["x", "w", "r", "b"], ["", "y"], name="lstm", hidden_size=3,
                            layout=1)
    inits = [weight("w", 1, 12, 2), weight("r", 1, 12, 3), weight("b", 1, 24)]
    return model([node], [("x", [BATCH, 3, 2])], [("y", [BATCH, 1, 3])], inits, opset=14)


BUILT = {"mlp": mlp, "conv_pool": conv_pool, "concat_reshape": concat_reshape, "lstm": lstm}
# Control flow (If on an input condition) and indices read from an input (GatherElements).
NODE_TESTS = {"if_then_else": "test_if", "gather_elements": "test_gather_elements_0"}


def write_case(name, folder):
    """NAME.onnx in folder: built, or copied from the node test; skips when the latter is absent."""
    path = folder / f"{name}.onnx"
    if name in BUILT:
        onnx.save(BUILT[name](), str(path))
        return path
    src = os.path.join(NODE_DIR, NODE_TESTS[name], "model.onnx")
    if not os.path.isfile(src):
        pytest.skip(f"ONNX node test {src} absent")
    with open(src, "rb") as f:
        path.write_bytes(f.read())
    return path


@pytest.mark.parametrize("name", sorted([*BUILT, *NODE_TESTS]))
def test_generated_code_matches_golden(name, tmp_path):
    write_case(name, tmp_path)
    r = subprocess.run([os.path.abspath(cli_test.EXE), f"{name}.onnx", "-o", "out"], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    got = (tmp_path / "out" / f"{name}.py").read_bytes().decode("utf-8")  # newlines as written
    compile(got, f"{name}.py", "exec")
    golden = os.path.join(GOLDEN, f"{name}.py")
    if os.environ.get("TORCHONNX_UPDATE_GOLDENS") == "1":
        os.makedirs(GOLDEN, exist_ok=True)
        with open(golden, "w", encoding="utf-8", newline="") as f:
            f.write(got)
        pytest.skip(f"golden rewritten: {os.path.normpath(golden)}")
    assert os.path.isfile(golden), f"missing {golden}; run TORCHONNX_UPDATE_GOLDENS=1"
    with open(golden, encoding="utf-8", newline="") as f:
        assert got == f.read(), f"{name}.py differs from its golden (update mode: see the docstring)"
