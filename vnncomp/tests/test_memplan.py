"""Sizing of the vmap and batch checks to a model's activations (vnncomp.memplan)."""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from vnncomp import memplan

MIB = 1 << 20
BUDGET = 3072 * MIB


def test_small_models_keep_every_sample():
    # 2 * 24 MiB * 64 = 3072 MiB: exactly the budget.
    assert memplan.vmap_samples(24 * MIB, BUDGET) == 64
    assert memplan.vmap_samples(1 * MIB, BUDGET) == 64
    assert memplan.vmap_samples(None, BUDGET) == 64
    assert memplan.batch_size(64) == 8


def test_large_models_stack_what_fits_the_budget():
    assert memplan.vmap_samples(25 * MIB, BUDGET) == 61  # 3072 // 50
    assert memplan.vmap_samples(300 * MIB, BUDGET) == 5  # 3072 // 600
    assert memplan.batch_size(5) == 5
    # Over the budget even for one sample: still the minimum, so that vmap is tested at all.
    assert memplan.vmap_samples(2048 * MIB, BUDGET) == memplan.MIN_SAMPLES == 4


def test_worker_bytes_adds_model_copies_and_stacked_samples():
    # 512 MiB + 6 * 10 MiB + float64 vmap: 2 * 1 MiB * 64 samples.
    assert memplan.worker_bytes(10 * MIB, 1 * MIB, BUDGET) == (512 + 60 + 128) * MIB
    # 300 MiB per sample: 5 samples, 2 * 300 MiB * 5 = 3000 MiB.
    assert memplan.worker_bytes(100 * MIB, 300 * MIB, BUDGET) == (512 + 600 + 3000) * MIB
    assert memplan.worker_bytes(100 * MIB, None, BUDGET) == (512 + 600) * MIB


def _model(extra_custom=False):
    """x[N,3,4,4] -> Conv 3->8 (1x1) -> Relu -> Flatten -> Gemm 128->10, float32."""
    w = numpy_helper.from_array(np.ones((8, 3, 1, 1), np.float32), "w")
    g = numpy_helper.from_array(np.ones((10, 128), np.float32), "g")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Flatten", ["r"], ["f"]),
             helper.make_node("Gemm", ["f", "g"], ["y"], transB=1)]
    opsets = [helper.make_opsetid("", 17)]
    if extra_custom:  # an op shape inference knows nothing about
        nodes.append(helper.make_node("Mystery", ["y"], ["z"], domain="test.custom"))
        opsets.append(helper.make_opsetid("test.custom", 1))
    out = "z" if extra_custom else "y"
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 4, 4])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)], [w, g])
    return helper.make_model(graph, opset_imports=opsets)


def test_activation_bytes_sums_every_node_output():
    # Conv, Relu, Flatten: 8*4*4 floats each (512 bytes); Gemm: 10 floats (40 bytes).
    assert memplan.activation_bytes(_model()) == 3 * 512 + 40


def test_an_unknown_shape_counts_as_its_nodes_largest_input():
    # Mystery's output is unknown: it counts as its input y, 40 bytes.
    assert memplan.activation_bytes(_model(extra_custom=True)) == 3 * 512 + 40 + 40


def test_estimate_reads_the_file(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(_model(), str(path))
    assert memplan.estimate(str(path)) == 3 * 512 + 40
    assert memplan.estimate(str(tmp_path / "absent.onnx")) is None
