"""Writes the demo model: a small CNN (Conv+BN+ReLU, MaxPool, Conv+ReLU, Flatten via Shape chain,
Gemm, ReLU, Gemm) with seeded random weights and a symbolic batch dimension, as ONNX opset 13.

    /usr/bin/python3 scripts/make_demo_model.py OUT.onnx
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main(path):
    rng = np.random.default_rng(0)

    def init(name, *shape, scale=0.3):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [
        init("conv1.w", 8, 1, 3, 3), init("conv1.b", 8),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, 8).astype(np.float32), "bn.scale"),
        init("bn.bias", 8), init("bn.mean", 8),
        numpy_helper.from_array(rng.uniform(0.5, 2.0, 8).astype(np.float32), "bn.var"),
        init("conv2.w", 16, 8, 3, 3), init("conv2.b", 16),
        init("fc1.w", 32, 16 * 7 * 7, scale=0.05), init("fc1.b", 32),
        init("fc2.w", 10, 32), init("fc2.b", 10),
        numpy_helper.from_array(np.array([0], np.int64), "zero"),
        numpy_helper.from_array(np.array([-1], np.int64), "minus1"),
    ]
    nodes = [
        helper.make_node("Conv", ["input", "conv1.w", "conv1.b"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "bn.scale", "bn.bias", "bn.mean", "bn.var"],
                         ["b1"], name="bn1", epsilon=1e-5),
        helper.make_node("Relu", ["b1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "conv2.w", "conv2.b"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("Shape", ["r2"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "zero"], ["n"], name="batch", axis=0),
        helper.make_node("Concat", ["n", "minus1"], ["target"], name="target", axis=0),
        helper.make_node("Reshape", ["r2", "target"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "fc1.w", "fc1.b"], ["f1"], name="fc1", transB=1),
        helper.make_node("Relu", ["f1"], ["r3"], name="relu3"),
        helper.make_node("Gemm", ["r3", "fc2.w", "fc2.b"], ["logits"], name="fc2", transB=1),
    ]
    graph = helper.make_graph(
        nodes, "demo_cnn",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 1, 14, 14])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="onnxverify demo")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


if __name__ == "__main__":
    main(sys.argv[1])
