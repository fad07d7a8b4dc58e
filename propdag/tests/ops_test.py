"""Every op rule against onnxruntime, one single-op model per case (weights random, fixed seed):
- a degenerate box (one point): IBP and CROWN bounds both equal ORT's output;
- a random box: 2,000 sampled points and the box corners (up to 2^11) stay inside both bounds."""

import os
import tempfile

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import sampling

RNG = np.random.default_rng(11)


def w(*shape):
    return RNG.uniform(-1, 1, size=shape).astype(np.float32)


def case(op, inputs, consts=(), attrs=None, outputs=1, opset=13, shift=0.0, scale=1.0,
         out_type=TensorProto.FLOAT):
    """inputs: [(name, shape)] variables; consts: [(name, array)] initializers, in the node's
    input order given by `order` (variables first unless a name appears in `order`). A name may
    stand twice (x * x). The random box is centred in shift + scale * [-1, 1] with radius
    scale * [0.05, 0.5]. out_type: the element type of the outputs."""
    return dict(op=op, inputs=inputs, consts=list(consts), attrs=attrs or {}, outputs=outputs,
                opset=opset, shift=shift, scale=scale, out_type=out_type)


CASES = {
    "gemm_transb_bias": case("Gemm", [("x", [2, 3])], [("b", w(4, 3)), ("c", w(4))],
                             dict(transB=1, alpha=0.5, beta=2.0)),
    "gemm_transa": case("Gemm", [("x", [3, 2])], [("b", w(3, 4))], dict(transA=1)),
    "matmul_batched": case("MatMul", [("x", [2, 3, 4])], [("b", w(4, 5))]),
    "matmul_const_left": case("MatMul", [("a", None), ("x", [2, 4])], [("a", w(3, 2))]),
    "add_two_variables_broadcast": case("Add", [("x", [2, 1, 3]), ("y", [4, 1])]),
    "sub_const_minus_var": case("Sub", [("c", None), ("x", [2, 3])], [("c", w(3))]),
    "mul_const": case("Mul", [("x", [2, 3])], [("c", w(2, 1))]),
    "div_const": case("Div", [("x", [2, 3])], [("c", w(3) + 2)]),
    "neg": case("Neg", [("x", [5])]),
    "conv2d_pads_strides_dilations_group": case(
        "Conv", [("x", [1, 4, 7, 6])], [("w", w(6, 2, 3, 2)), ("b", w(6))],
        dict(pads=[1, 0, 2, 1], strides=[2, 1], dilations=[1, 2], group=2)),
    "conv2d_same_upper": case("Conv", [("x", [1, 2, 5, 5])], [("w", w(3, 2, 3, 3))],
                              dict(auto_pad="SAME_UPPER", strides=[2, 2])),
    "conv1d": case("Conv", [("x", [1, 2, 9])], [("w", w(3, 2, 3))], dict(pads=[1, 1], strides=[2])),
    "conv_transpose_stride_pads_outpad": case(
        "ConvTranspose", [("x", [1, 4, 3, 4])], [("w", w(4, 3, 3, 3)), ("b", w(6))],
        dict(strides=[2, 2], pads=[1, 0, 1, 1], output_padding=[1, 0], group=2)),
    "conv_transpose_dilations_strides": case(
        "ConvTranspose", [("x", [2, 2, 4, 3])], [("w", w(2, 2, 3, 2)), ("b", w(2))],
        dict(strides=[2, 3], dilations=[2, 1], pads=[2, 0, 0, 1])),
    "conv_transpose_1d": case("ConvTranspose", [("x", [1, 2, 5])], [("w", w(2, 3, 4))],
                              dict(strides=[3])),
    "batchnorm": case("BatchNormalization", [("x", [1, 3, 2, 2])],
                      [("s", w(3)), ("bias", w(3)), ("mean", w(3)), ("var", w(3) + 1.5)],
                      dict(epsilon=1e-3)),
    "avgpool_pads_exclude": case("AveragePool", [("x", [1, 2, 5, 5])], [],
                                 dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2])),
    "avgpool_pads_include": case("AveragePool", [("x", [1, 2, 5, 5])], [],
                                 dict(kernel_shape=[3, 2], pads=[1, 0, 1, 1], count_include_pad=1)),
    "avgpool_ceil": case("AveragePool", [("x", [1, 1, 6, 6])], [],
                         dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    "maxpool_pads_strides": case("MaxPool", [("x", [1, 2, 6, 5])], [],
                                 dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2])),
    "pad_constant": case("Pad", [("x", [2, 3]), ("p", None), ("v", None)],
                         [("p", np.array([1, 0, 0, 2], dtype=np.int64)),
                          ("v", np.array(0.5, dtype=np.float32))]),
    "flatten": case("Flatten", [("x", [2, 3, 2])], [], dict(axis=2)),
    "reshape": case("Reshape", [("x", [2, 3, 2]), ("s", None)],
                    [("s", np.array([0, -1], dtype=np.int64))]),
    "transpose": case("Transpose", [("x", [2, 3, 4])], [], dict(perm=[2, 0, 1])),
    "squeeze": case("Squeeze", [("x", [1, 3, 1]), ("a", None)], [("a", np.array([2], np.int64))]),
    "unsqueeze": case("Unsqueeze", [("x", [3, 2]), ("a", None)],
                      [("a", np.array([0, -1], np.int64))]),
    "concat_with_constant": case("Concat", [("x", [2, 2]), ("c", None), ("y", [2, 3])],
                                 [("c", w(2, 1))], dict(axis=1)),
    "split": case("Split", [("x", [2, 7]), ("s", None)], [("s", np.array([2, 4, 1], np.int64))],
                  dict(axis=1), outputs=3),
    "slice_negative_step": case(
        "Slice", [("x", [4, 6]), ("st", None), ("en", None), ("ax", None), ("sp", None)],
        [("st", np.array([-1, 1], np.int64)), ("en", np.array([-100, 100], np.int64)),
         ("ax", np.array([1, 0], np.int64)), ("sp", np.array([-2, 2], np.int64))]),
    "gather_negative_indices": case("Gather", [("x", [3, 4]), ("i", None)],
                                    [("i", np.array([[-1, 0], [2, 2]], np.int64))], dict(axis=1)),
    "expand": case("Expand", [("x", [3, 1]), ("s", None)], [("s", np.array([2, 3, 4], np.int64))]),
    "relu": case("Relu", [("x", [6])]),
    "leaky_relu": case("LeakyRelu", [("x", [6])], [], dict(alpha=0.2)),
    "sigmoid": case("Sigmoid", [("x", [6])]),
    "tanh": case("Tanh", [("x", [6])]),
    "sign": case("Sign", [("x", [6])]),
    "softmax": case("Softmax", [("x", [2, 5])], [], dict(axis=1)),
    "mul_two_variables_broadcast": case("Mul", [("x", [2, 3]), ("y", [3])]),
    "mul_square": case("Mul", [("x", [6]), ("x", [6])]),
    "div_two_variables": case("Div", [("x", [2, 3]), ("y", [2, 1])], shift=3.0),
    "div_constant_by_variable": case("Div", [("c", None), ("x", [2, 3])], [("c", w(3))], shift=3.0),
    "matmul_two_variables": case("MatMul", [("a", [2, 3, 4]), ("b", [4, 2])]),
    "pow_square": case("Pow", [("x", [6]), ("e", None)], [("e", np.array(2, np.float32))]),
    "pow_cube": case("Pow", [("x", [6]), ("e", None)], [("e", np.array([3], np.float32))]),
    "sin_wide": case("Sin", [("x", [8])], scale=4.0),
    "cos_wide": case("Cos", [("x", [8])], scale=4.0),
    "floor": case("Floor", [("x", [6])], scale=3.0),
    "exp_wide": case("Exp", [("x", [8])], scale=3.0),
    "log_positive": case("Log", [("x", [8])], shift=3.0, scale=1.5),
    "softplus_wide": case("Softplus", [("x", [8])], scale=4.0),
    "reduce_sum_axes_input": case("ReduceSum", [("x", [2, 3, 4]), ("a", None)],
                                  [("a", np.array([1, -1], np.int64))], dict(keepdims=0)),
    "upsample_nearest_scales_input": case("Upsample", [("x", [1, 2, 2, 3]), ("s", None)],
                                          [("s", np.array([1, 1, 2, 3], np.float32))],
                                          dict(mode="nearest"), opset=9),
    "upsample_nearest_scales_attribute": case("Upsample", [("x", [1, 1, 3, 2])], [],
                                              dict(mode="nearest", scales=[1.0, 2.0, 1.0, 2.0]),
                                              opset=7),
    "resize_nearest_asymmetric_floor": case(
        "Resize", [("x", [1, 2, 2, 3]), ("roi", None), ("s", None)],
        [("roi", np.array([], np.float32)), ("s", np.array([1, 1, 2, 3], np.float32))],
        dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
        opset=11),
    "resize_nearest_half_pixel_default": case(
        "Resize", [("x", [1, 2, 2, 3]), ("roi", None), ("s", None)],
        [("roi", np.array([], np.float32)), ("s", np.array([1, 1, 2, 2], np.float32))],
        dict(mode="nearest")),
    "resize_nearest_half_pixel_fraction_ceil": case(
        "Resize", [("x", [1, 1, 4, 5]), ("roi", None), ("s", None)],
        [("roi", np.array([], np.float32)), ("s", np.array([1, 1, 1.5, 0.6], np.float32))],
        dict(mode="nearest", nearest_mode="round_prefer_ceil")),
    "resize_nearest_align_corners_sizes": case(
        "Resize", [("x", [1, 2, 3, 4]), ("", None), ("", None), ("z", None)],
        [("z", np.array([1, 2, 5, 3], np.int64))],
        dict(mode="nearest", coordinate_transformation_mode="align_corners",
             nearest_mode="ceil")),
    "resize_nearest_pytorch_half_pixel_down": case(
        "Resize", [("x", [1, 1, 6, 4]), ("", None), ("", None), ("z", None)],
        [("z", np.array([1, 1, 3, 1], np.int64))],
        dict(mode="nearest", coordinate_transformation_mode="pytorch_half_pixel")),
    "scatter_nd_constant_indices": case("ScatterND", [("x", [4, 3]), ("i", None), ("u", [2, 3])],
                                        [("i", np.array([[3], [1]], np.int64))]),
    "reduce_mean_axes_attribute": case("ReduceMean", [("x", [2, 3, 4])], [],
                                       dict(axes=[0, 2])),
    "cast_to_int64": case("Cast", [("x", [6])], [], dict(to=TensorProto.INT64), scale=3.0,
                          out_type=TensorProto.INT64),
    "cast_to_bool": case("Cast", [("x", [6])], [], dict(to=TensorProto.BOOL), scale=0.3,
                         out_type=TensorProto.BOOL),
    "cast_to_float": case("Cast", [("x", [2, 3])], [], dict(to=TensorProto.FLOAT)),
    "clip_both_ends": case("Clip", [("x", [8]), ("a", None), ("b", None)],
                           [("a", np.array(-0.5, np.float32)), ("b", np.array(0.7, np.float32))]),
    "clip_max_only": case("Clip", [("x", [8]), ("", None), ("b", None)],
                          [("b", np.array(0.2, np.float32))]),
    "min_const_broadcast": case("Min", [("x", [2, 3])], [("c", w(3))]),
    "max_two_variables_broadcast": case("Max", [("x", [2, 3]), ("y", [3])]),
    "max_three_with_constant": case("Max", [("x", [4]), ("y", [4])], [("c", w(4))]),
    "equal_two_variables": case("Equal", [("x", [2, 3]), ("y", [2, 3])], scale=0.2,
                                out_type=TensorProto.BOOL),
    "argmax_keepdims": case("ArgMax", [("x", [2, 5])], [], dict(axis=1),
                            out_type=TensorProto.INT64),
    "argmax_axis0": case("ArgMax", [("x", [3, 2])], [], dict(axis=0, keepdims=0),
                         out_type=TensorProto.INT64),
}


def build(name, spec, folder):
    consts = dict(spec["consts"])
    names = [n for n, _ in spec["inputs"]]
    # The first of a repeated name; "" is an omitted optional input.
    variables = dict((n, s) for n, s in spec["inputs"] if n not in consts and n)
    graph_inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in variables.items()]
    for n, _ in spec["consts"]:
        if n not in names:
            names.append(n)
    outs = [f"y{i}" for i in range(spec["outputs"])]
    node = helper.make_node(spec["op"], names, outs, **spec["attrs"])
    graph = helper.make_graph([node], name, graph_inputs,
                              [helper.make_tensor_value_info(o, spec["out_type"], None) for o in outs],
                              [numpy_helper.from_array(a, n) for n, a in spec["consts"]])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", spec["opset"])])
    model.ir_version = 8
    path = os.path.join(folder, name + ".onnx")
    onnx.save(model, path)
    return path, sum(int(np.prod(s)) for s in variables.values())


def spec_file(folder, lo, hi):
    return sampling.box_spec(os.path.join(folder, "box.vnnlib"), lo, hi)


@pytest.mark.skipif(not sampling.ortref.available(), reason="no onnxruntime")
@pytest.mark.parametrize("name", sorted(CASES))
def test_op(name):
    with tempfile.TemporaryDirectory() as folder:
        model, n = build(name, CASES[name], folder)
        # One point: both methods are exact.
        x = sampling.inside_float32(CASES[name]["shift"] + RNG.uniform(-2, 2, size=(1, n)),
                                    -np.inf, np.inf)
        point = x[0].astype(np.float64)
        spec = spec_file(folder, point, point)
        y, _ = sampling.evaluate(model, x)
        for method in ("ibp", "crown"):
            lo, hi, _ = sampling.bounds(model, spec, method)
            np.testing.assert_allclose(lo, y[0], rtol=1e-5, atol=1e-6, err_msg=method)
            np.testing.assert_allclose(hi, y[0], rtol=1e-5, atol=1e-6, err_msg=method)
        # A box: sampled points and corners stay inside.
        shift, scale = CASES[name]["shift"], CASES[name]["scale"]
        c = shift + scale * RNG.uniform(-1, 1, size=n)
        r = scale * RNG.uniform(0.05, 0.5, size=n)
        spec = spec_file(folder, c - r, c + r)
        points, _, _ = sampling.sample(c - r, c + r, 2000, RNG)
        y, _ = sampling.evaluate(model, points)
        for method in ("ibp", "crown"):
            lo, hi, _ = sampling.bounds(model, spec, method)
            bad, worst = sampling.violations(y, lo, hi)
            assert bad == 0, f"{method}: {bad} points outside (worst {worst:.3g})"


# Slice with variable starts and ends: p (float) -> Cast to int64 -> s; starts = s + a, ends =
# s + b on `axis` of x by `step`. The box keeps p where every placement has the static length
# (shape inference's, from the offsets a and b), so that onnxruntime's outputs have that shape.
VARIABLE_SLICES = {
    "window": dict(shape=[3, 8], axis=1, a=0, b=3, step=1, p=(0, 4.9)),
    "negative_ends": dict(shape=[3, 8], axis=1, a=-8, b=-5, step=1, p=(0, 4.9)),
    "axis0_step2": dict(shape=[8, 2], axis=0, a=0, b=5, step=2, p=(0, 3.9)),
    "negative_step": dict(shape=[2, 8, 2], axis=1, a=4, b=-9, step=-1, p=(0, 3.9)),
}


def variable_slice_model(spec, folder):
    def ints(name, v):
        return numpy_helper.from_array(np.array([v], np.int64), name)

    nodes = [helper.make_node("Cast", ["p"], ["s"], to=TensorProto.INT64),
             helper.make_node("Add", ["s", "a"], ["st"]),
             helper.make_node("Add", ["s", "b"], ["en"]),
             helper.make_node("Slice", ["x", "st", "en", "axis", "step"], ["y"])]
    graph = helper.make_graph(
        nodes, "variable_slice",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, spec["shape"]),
         helper.make_tensor_value_info("p", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [ints("a", spec["a"]), ints("b", spec["b"]), ints("axis", spec["axis"]),
         ints("step", spec["step"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = os.path.join(folder, "variable_slice.onnx")
    onnx.save(model, path)
    return path, int(np.prod(spec["shape"]))


@pytest.mark.skipif(not sampling.ortref.available(), reason="no onnxruntime")
@pytest.mark.parametrize("name", sorted(VARIABLE_SLICES))
def test_variable_slice(name):
    spec = VARIABLE_SLICES[name]
    with tempfile.TemporaryDirectory() as folder:
        model, n = variable_slice_model(spec, folder)
        p_lo, p_hi = spec["p"]
        # One point per position: both methods give the plain slice.
        for p in range(int(p_lo), int(p_hi) + 1):
            x = np.append(RNG.uniform(-2, 2, size=n), p + 0.5).astype(np.float32)
            y, _ = sampling.evaluate(model, x[None, :])
            box = spec_file(folder, x.astype(np.float64), x.astype(np.float64))
            for method in ("ibp", "crown"):
                lo, hi, _ = sampling.bounds(model, box, method)
                np.testing.assert_allclose(lo, y[0], rtol=1e-6, err_msg=f"{method} p={p}")
                np.testing.assert_allclose(hi, y[0], rtol=1e-6, err_msg=f"{method} p={p}")
        # A box over every position: sampled points and corners stay inside.
        c, r = RNG.uniform(-1, 1, size=n), RNG.uniform(0.05, 0.5, size=n)
        lo_box, hi_box = np.append(c - r, p_lo), np.append(c + r, p_hi)
        box = spec_file(folder, lo_box, hi_box)
        points, _, _ = sampling.sample(lo_box, hi_box, 300, RNG, max_corners=200)
        y, _ = sampling.evaluate(model, points)
        for method in ("ibp", "crown", "alpha"):
            lo, hi, _ = sampling.bounds(model, box, method)
            assert np.isfinite(lo).all() and np.isfinite(hi).all(), method
            bad, worst = sampling.violations(y, lo, hi)
            assert bad == 0, f"{method}: {bad} points outside (worst {worst:.3g})"


@pytest.mark.skipif(not sampling.ortref.available(), reason="no onnxruntime")
def test_variable_scatter_nd():
    """ScatterND(x [4, 3], trunc(p) [2, 1], u [2, 3]) with p over [-4, 3.9]: every index in range
    (negative ones from the end), both tuples possibly at the same place."""
    nodes = [helper.make_node("Cast", ["p"], ["i"], to=TensorProto.INT64),
             helper.make_node("ScatterND", ["x", "i", "u"], ["y"])]
    graph = helper.make_graph(
        nodes, "variable_scatter_nd",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3]),
         helper.make_tensor_value_info("p", TensorProto.FLOAT, [2, 1]),
         helper.make_tensor_value_info("u", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx_model.ir_version = 8
    with tempfile.TemporaryDirectory() as folder:
        model = os.path.join(folder, "variable_scatter_nd.onnx")
        onnx.save(onnx_model, model)
        c, r = RNG.uniform(-1, 1, size=20), RNG.uniform(0.05, 0.5, size=20)
        lo, hi = c - r, c + r
        lo[12:14], hi[12:14] = -4, 3.9
        box = spec_file(folder, lo, hi)
        points, _, _ = sampling.sample(lo, hi, 300, RNG, max_corners=200)
        y, _ = sampling.evaluate(model, points)
        for method in ("ibp", "crown"):
            b_lo, b_hi, _ = sampling.bounds(model, box, method)
            bad, worst = sampling.violations(y, b_lo, b_hi)
            assert bad == 0, f"{method}: {bad} points outside (worst {worst:.3g})"
