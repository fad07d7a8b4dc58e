"""ortref against outputs computed independently with numpy."""

import gzip
import shutil

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from vnncomp import ortref
from vnncomp.tests.models import mlp, save

pytestmark = pytest.mark.usefixtures("need_ort")


def test_mlp_float32(tmp_path):
    path, w, b = mlp(tmp_path / "mlp.onnx")
    x = np.random.default_rng(3).standard_normal((2, 4)).astype(np.float32)
    (y,) = ortref.run(path, {"x": x})
    assert y.dtype == np.float32 and y.shape == (2, 3)
    np.testing.assert_allclose(y, np.maximum(x @ w.T + b, 0), rtol=1e-6, atol=1e-6)


def test_gz_model_and_symbolic_dims(tmp_path):
    path, w, b = mlp(tmp_path / "mlp.onnx", batch="batch_size")
    with open(path, "rb") as src, gzip.open(str(tmp_path / "mlp.onnx.gz"), "wb") as dst:
        shutil.copyfileobj(src, dst)
    x = np.linspace(-1, 1, 20, dtype=np.float32).reshape(5, 4)
    (y,) = ortref.run(str(tmp_path / "mlp.onnx.gz"), {"x": x})
    np.testing.assert_allclose(y, np.maximum(x @ w.T + b, 0), rtol=1e-6, atol=1e-6)


def test_integer_bool_double_and_output_order(tmp_path):
    k = np.array([3, -4, 5], dtype=np.int64)
    graph = helper.make_graph(
        [helper.make_node("Add", ["i", "k"], ["s"]),
         helper.make_node("ArgMax", ["d"], ["am"], axis=1, keepdims=0),
         helper.make_node("Greater", ["d", "zero"], ["pos"]),
         helper.make_node("Not", ["flag"], ["nflag"])], "types",
        [helper.make_tensor_value_info("i", TensorProto.INT64, [3]),
         helper.make_tensor_value_info("d", TensorProto.DOUBLE, [2, 3]),
         helper.make_tensor_value_info("flag", TensorProto.BOOL, [4])],
        [helper.make_tensor_value_info("pos", TensorProto.BOOL, [2, 3]),
         helper.make_tensor_value_info("s", TensorProto.INT64, [3]),
         helper.make_tensor_value_info("am", TensorProto.INT64, [2]),
         helper.make_tensor_value_info("nflag", TensorProto.BOOL, [4])],
        [numpy_helper.from_array(k, "k"), numpy_helper.from_array(np.array(0.0), "zero")])
    path = save(graph, tmp_path / "types.onnx")
    i = np.array([2**40, 7, -9], dtype=np.int64)
    d = np.array([[0.5, -2.0, 3.25], [-1.0, -0.5, -7.0]])
    flag = np.array([True, False, False, True])
    pos, s, am, nflag = ortref.run(path, {"i": i, "d": d, "flag": flag})
    assert s.dtype == np.int64 and am.dtype == np.int64 and pos.dtype == np.bool_
    np.testing.assert_array_equal(s, [2**40 + 3, 3, -4])
    np.testing.assert_array_equal(am, [2, 1])
    np.testing.assert_array_equal(pos, d > 0)
    np.testing.assert_array_equal(nflag, ~flag)


def test_initializer_listed_as_graph_input(tmp_path):
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "ir3",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2]),
         helper.make_tensor_value_info("w", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
        [numpy_helper.from_array(w, "w")])
    path = save(graph, tmp_path / "ir3.onnx", opset=8, ir_version=3)
    (y,) = ortref.run(path, {"x": np.array([[1.0, -1.0]], dtype=np.float32)})
    np.testing.assert_array_equal(y, [[-3.0, -3.0, -3.0]])  # row 0 minus row 1 of w


def test_old_opset_is_upgraded(tmp_path):
    # ORT 1.30 has no kernel for Add-6 or Relu-1 ("Could not find an implementation for ..."):
    # ortref retries with an opset-7 copy made by onnx.version_converter.
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Add", ["r", "x"], ["y"])],
        "old", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    path = save(graph, tmp_path / "old.onnx", opset=6, ir_version=3)
    x = np.array([-2, -0.5, 0.5, 2], dtype=np.float32)
    with pytest.raises(ortref.OrtError, match="Could not find an implementation"):
        ortref.client().run(path, {"x": x})
    (y,) = ortref.run(path, {"x": x})
    np.testing.assert_array_equal(y, np.maximum(x, 0) + x)  # [-2, -0.5, 1, 4]


def test_large_tensors_round_trip_exactly(tmp_path):
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"]), helper.make_node("Tile", ["x", "r"], ["t"])],
        "big", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 224, 224])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 224, 224]),
         helper.make_tensor_value_info("t", TensorProto.FLOAT, [4, 3, 224, 224])],
        [numpy_helper.from_array(np.array([4, 1, 1, 1], dtype=np.int64), "r")])
    path = save(graph, tmp_path / "big.onnx")
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    y, t = ortref.run(path, {"x": x})
    np.testing.assert_array_equal(y, x)
    np.testing.assert_array_equal(t, np.concatenate([x] * 4))


def test_errors_carry_ort_text(tmp_path):
    path, _, _ = mlp(tmp_path / "mlp.onnx")
    with pytest.raises(ortref.OrtError, match="(?i)dimension|shape|index"):
        ortref.run(path, {"x": np.zeros((2, 5), np.float32)})
    (tmp_path / "bad.onnx").write_bytes(b"garbage")
    with pytest.raises(ortref.OrtError, match="(?i)protobuf|parse|load"):
        ortref.run(str(tmp_path / "bad.onnx"), {"x": np.zeros((1, 4), np.float32)})
    # the reference keeps working after errors
    (y,) = ortref.run(path, {"x": np.zeros((1, 4), np.float32)})
    assert y.shape == (1, 3)
