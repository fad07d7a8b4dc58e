"""Small ONNX models built with onnx.helper for the tests."""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(graph, path, opset=13, ir_version=8):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = ir_version
    onnx.save(model, str(path))
    return str(path)


def mlp(path, seed=0, doc="", batch="N"):
    """y = relu(x @ W^T + b), x: [batch, 4], y: [batch, 3]; returns (path, W, b)."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "W", "b"], ["h"], transB=1),
         helper.make_node("Relu", ["h"], ["y"])], "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 3])],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "b")], doc_string=doc)
    return save(graph, path), w, b
