"""Small ONNX models for op forms that the ONNX backend node tests barely cover, laid out like node tests
(model.onnx, test_data_set_*/input_*.pb, output_*.pb) so that tools/run_node_tests.py can run them.

Expected outputs never come from torchonnx: pools and convolutions are brute-forced in numpy one window
at a time, GatherND and Resize use the reference code of ONNX's own node tests (Conv/ConvTranspose cases:
forms_conv.py; RNN/GRU/LSTM cases: forms_recurrent.py).
"""

import itertools
import os
from typing import List, NamedTuple

import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnx.backend.test.case.node.gathernd import gather_nd_impl


class Case(NamedTuple):
    name: str
    model: onnx.ModelProto
    sets: List[tuple]  # (inputs, outputs), each a list of arrays in graph order


def tensor_type(dtype):
    """ONNX element type of a numpy dtype (onnx.mapping is deprecated from onnx 1.13 on)."""
    if hasattr(helper, "np_dtype_to_tensor_dtype"):
        return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    return onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(dtype)]


def make_case(name, node, inputs, outputs, initializers=(), opset=13):
    """inputs, outputs, initializers: lists of (name, array); one data set."""
    def info(n, a):
        return helper.make_tensor_value_info(n, tensor_type(a.dtype), a.shape)

    graph = helper.make_graph([node], name, [info(n, a) for n, a in inputs],
                              [info(n, a) for n, a in outputs],
                              [numpy_helper.from_array(a, n) for n, a in initializers])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return Case(name, model, [([a for _, a in inputs], [a for _, a in outputs])])


def write_case(case, directory):
    os.makedirs(directory)
    onnx.save(case.model, os.path.join(directory, "model.onnx"))
    graph = case.model.graph
    for s, (inputs, outputs) in enumerate(case.sets):
        data = os.path.join(directory, f"test_data_set_{s}")
        os.makedirs(data)
        for kind, infos, arrays in (("input", graph.input, inputs), ("output", graph.output, outputs)):
            for i, (value, array) in enumerate(zip(infos, arrays)):
                onnx.save_tensor(numpy_helper.from_array(array, value.name), f"{data}/{kind}_{i}.pb")


# ---- Windows shared by the pool and convolution references -------------------------------------------

def same_pads(spatial, kernel, strides, dilations, auto_pad):
    """Explicit [begins..., ends...] pads for auto_pad SAME_UPPER / SAME_LOWER."""
    begins, ends = [], []
    for i, k, s, d in zip(spatial, kernel, strides, dilations):
        total = max(0, (-(-i // s) - 1) * s + (k - 1) * d + 1 - i)
        begin = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
        begins.append(begin)
        ends.append(total - begin)
    return begins + ends


def windows(spatial, kernel, strides, dilations, pads, ceil=0):
    """Output shape, and per output position the (kernel offset, input position) taps inside the input."""
    n = len(spatial)
    shape = []
    for d in range(n):
        span = spatial[d] + pads[d] + pads[d + n] - (kernel[d] - 1) * dilations[d] - 1
        size = -(-span // strides[d]) + 1 if ceil else span // strides[d] + 1
        if ceil and (size - 1) * strides[d] >= spatial[d] + pads[d]:
            size -= 1  # a window may not start in the end padding
        shape.append(size)
    result = []
    for o in itertools.product(*map(range, shape)):
        taps = []
        for k in itertools.product(*map(range, kernel)):
            pos = tuple(o[d] * strides[d] - pads[d] + k[d] * dilations[d] for d in range(n))
            if all(0 <= p < i for p, i in zip(pos, spatial)):
                taps.append((k, pos))
        result.append((o, taps))
    return shape, result


# ---- MaxPool with Indices, LpPool, GlobalLpPool --------------------------------------------------------

def pool_case(name, rng, shape, op, kernel, strides=None, pads=None, dilations=None, ceil=0, order=0,
              p=2, auto_pad=None, dtype=np.float32, opset=12):
    n = len(kernel)
    x = rng.permutation(int(np.prod(shape))).reshape(shape)  # distinct values: no ties for the max
    x = ((x - x.size / 2) / 7).astype(dtype) if dtype == np.float32 else x.astype(dtype)
    attrs = {"kernel_shape": kernel, "strides": strides, "pads": pads, "dilations": dilations,
             "ceil_mode": ceil or None, "storage_order": order or None, "auto_pad": auto_pad}
    strides, dilations = strides or [1] * n, dilations or [1] * n
    spatial = shape[2:]
    if auto_pad:
        pads = same_pads(spatial, kernel, strides, dilations, auto_pad)
    out_shape, wins = windows(spatial, kernel, strides, dilations, pads or [0] * (2 * n), ceil)
    y = np.zeros((*shape[:2], *out_shape), np.float64)
    indices = np.zeros(y.shape, np.int64)
    for b, c in itertools.product(*map(range, shape[:2])):
        for o, taps in wins:
            values = [float(x[(b, c, *pos)]) for _, pos in taps]
            if op == "LpPool":
                y[(b, c, *o)] = sum(abs(v) ** p for v in values) ** (1 / p)
                continue
            best = taps[int(np.argmax(values))][1]
            y[(b, c, *o)] = max(values)
            flat = np.ravel_multi_index(best, spatial, order="F" if order else "C")
            indices[(b, c, *o)] = (b * shape[1] + c) * int(np.prod(spatial)) + int(flat)
    if op == "LpPool":
        attrs["p"] = p
    attrs = {k: v for k, v in attrs.items() if v is not None}
    outputs = [("y", y.astype(dtype))] + ([("i", indices)] if op == "MaxPool" else [])
    node = helper.make_node(op, ["x"], [n for n, _ in outputs], **attrs)
    return make_case(name, node, [("x", x)], outputs, opset=opset)


def maxpool_indices():
    rng = np.random.default_rng(0)
    return [pool_case(name, rng, shape, "MaxPool", **kw) for name, shape, kw in [
        ("mp_1d", (2, 3, 9), dict(kernel=[3], strides=[2])),
        ("mp_1d_pad_ceil", (2, 3, 10), dict(kernel=[3], strides=[2], pads=[1, 2], ceil=1)),
        ("mp_2d_pads", (2, 3, 6, 7), dict(kernel=[3, 2], strides=[2, 1], pads=[1, 0, 1, 1])),
        ("mp_2d_order1", (2, 3, 6, 7), dict(kernel=[3, 2], strides=[2, 2], pads=[1, 1, 1, 1], order=1)),
        ("mp_2d_dil", (1, 2, 8, 9), dict(kernel=[2, 3], dilations=[2, 2], pads=[1, 2, 1, 2])),
        ("mp_2d_dil_order1_ceil", (1, 2, 8, 9),
         dict(kernel=[2, 3], dilations=[2, 1], strides=[3, 2], order=1, ceil=1)),
        ("mp_2d_same_upper", (1, 2, 7, 8), dict(kernel=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")),
        ("mp_2d_same_lower_order1", (1, 2, 7, 8),
         dict(kernel=[2, 2], strides=[2, 2], auto_pad="SAME_LOWER", order=1)),
        ("mp_2d_ceil", (1, 1, 7, 7), dict(kernel=[3, 3], strides=[2, 2], ceil=1)),
        ("mp_3d", (1, 2, 5, 6, 4), dict(kernel=[2, 3, 2], strides=[2, 2, 1], pads=[0, 1, 1, 1, 1, 0])),
        ("mp_3d_order1", (2, 2, 5, 6, 4), dict(kernel=[2, 3, 2], strides=[2, 2, 1], order=1)),
        ("mp_2d_int32", (1, 2, 5, 5), dict(kernel=[2, 2], dtype=np.int32)),
        ("mp_2d_uint8_pads", (1, 1, 5, 5), dict(kernel=[2, 2], pads=[1, 1, 0, 0], dtype=np.uint8)),
    ]]


def maxpool_channels_last():
    """Large MaxPools without Indices, which the code pools over a channels-last copy of the input."""
    rng = np.random.default_rng(3)
    cases = []
    for name, shape, kw in [
            ("mp_cl_k3s2p1", (2, 24, 32, 32), dict(kernel=[3, 3], strides=[2, 2], pads=[1] * 4)),
            ("mp_cl_k2", (1, 64, 16, 16), dict(kernel=[2, 2], strides=[2, 2]))]:
        full = pool_case(name, rng, shape, "MaxPool", **kw)
        node = helper.make_node("MaxPool", ["x"], ["y"], **{a.name: helper.get_attribute_value(a)
                                                           for a in full.model.graph.node[0].attribute})
        (x,), (y, _) = full.sets[0]
        cases.append(make_case(name, node, [("x", x)], [("y", y)], opset=12))
    return cases


def lppool():
    rng = np.random.default_rng(1)
    return [pool_case(name, rng, shape, "LpPool", **kw) for name, shape, kw in [
        ("lp_2d_p2", (2, 3, 6, 7), dict(kernel=[3, 2], strides=[2, 1], p=2)),
        ("lp_2d_p1_pads", (1, 3, 6, 7), dict(kernel=[3, 3], pads=[1, 1, 1, 1], p=1)),
        ("lp_2d_p3_asym_pads", (1, 3, 6, 7), dict(kernel=[3, 3], strides=[2, 2], pads=[0, 1, 2, 1], p=3)),
        ("lp_1d_p4", (2, 2, 9), dict(kernel=[4], strides=[3], p=4)),
        ("lp_3d", (1, 2, 5, 6, 4), dict(kernel=[2, 3, 2], strides=[2, 2, 1], pads=[0, 1, 1, 1, 1, 0])),
        ("lp_2d_same_lower", (1, 2, 7, 8), dict(kernel=[3, 3], strides=[2, 2], auto_pad="SAME_LOWER")),
        ("lp_2d_ceil_opset18", (1, 2, 7, 7), dict(kernel=[3, 3], strides=[2, 2], ceil=1, opset=18)),
        ("lp_2d_dil_opset18", (1, 2, 9, 8),
         dict(kernel=[2, 3], dilations=[2, 2], pads=[1, 1, 1, 1], p=3, opset=18)),
        ("lp_1d_dil_ceil_opset18", (2, 2, 11),
         dict(kernel=[3], dilations=[2], strides=[2], ceil=1, opset=18)),
    ]]


def global_lppool():
    x = np.random.default_rng(2).standard_normal((2, 3, 4, 5)).astype(np.float32)
    cases = []
    for p in (1, 2, 3):
        y = (np.abs(x.astype(np.float64)) ** p).sum(axis=(2, 3), keepdims=True) ** (1 / p)
        node = helper.make_node("GlobalLpPool", ["x"], ["y"], p=p)
        cases.append(make_case(f"glp_p{p}", node, [("x", x)], [("y", y.astype(np.float32))]))
    return cases


# ---- GatherND with batch_dims ----------------------------------------------------------------------------

def gathernd():
    rng = np.random.default_rng(3)

    def indices(data_shape, shape, batch_dims, dtype):
        high = np.array(data_shape[batch_dims:batch_dims + shape[-1]])
        positive = rng.integers(0, 1 << 30, shape) % high
        return (positive - rng.integers(0, 2, shape) * high).astype(dtype)  # about half negative

    def case(name, data_shape, index_shape, batch_dims, dtype=np.int64, const_indices=False):
        data = rng.standard_normal(data_shape).astype(np.float32)
        idx = indices(data_shape, index_shape, batch_dims, dtype)
        y = gather_nd_impl(data, idx, batch_dims)
        node = helper.make_node("GatherND", ["data", "idx"], ["y"], batch_dims=batch_dims)
        if const_indices:
            return make_case(name, node, [("data", data)], [("y", y)], initializers=[("idx", idx)])
        return make_case(name, node, [("data", data), ("idx", idx)], [("y", y)])

    cases = [case("gnd_b0", (3, 4, 5), (2, 2), 0),
             case("gnd_b1", (3, 4, 5), (3, 2, 1), 1),
             case("gnd_b1_k2_int32", (3, 4, 5, 2), (3, 6, 2), 1, np.int32),
             case("gnd_b1_const_indices", (3, 4, 5), (3, 2, 2, 1), 1, const_indices=True),
             case("gnd_b2", (2, 3, 4, 5), (2, 3, 2, 2), 2),
             case("gnd_b2_k2_full", (2, 3, 4, 5), (2, 3, 2), 2)]
    # Declared with batch 1, also run with batch 4: batch_dims must follow the actual leading size.
    batched = case("gnd_b1_any_batch", (1, 4, 5), (1, 3, 1), 1)
    data, idx = rng.standard_normal((4, 4, 5)).astype(np.float32), rng.integers(0, 4, (4, 3, 1))
    batched.sets.append(([data, idx], [gather_nd_impl(data, idx, 1)]))
    return cases + [batched]


def tfidf_ref(x, mode, min_n, max_n, max_skip, pool, starts, slots, weights):
    """ONNX TfIdfVectorizer by enumeration: each input row's n-grams (items `skip` + 1 apart,
    unigrams once) are looked up in the pool."""
    grams = {}  # pool n-gram (tuple) -> its position in ngram_indexes
    for n in range(1, len(starts) + 1):
        end = starts[n] if n < len(starts) else len(pool)
        for j, at in enumerate(range(starts[n - 1], end, n)):
            grams[tuple(pool[at:at + n])] = sum((e - b) // k for k, (b, e) in enumerate(
                zip(starts, list(starts[1:]) + [len(pool)]), 1) if k < n) + j
    rows = np.atleast_2d(x)
    out = np.zeros((rows.shape[0], max(slots) + 1), np.float32)
    for r, row in enumerate(rows):
        count = np.zeros(len(slots))
        for n in range(min_n, max_n + 1):
            for skip in range(0, (max_skip if n > 1 else 0) + 1):
                for i in range(len(row) - (n - 1) * (skip + 1)):
                    key = tuple(int(row[i + k * (skip + 1)]) for k in range(n))
                    if key in grams:
                        count[grams[key]] += 1
        for g, c in enumerate(count):
            w = weights[g] if weights else 1.0
            value = c if mode == "TF" else (w * (c > 0) if mode == "IDF" else w * c)
            out[r, slots[g]] += value
    return out if x.ndim == 2 else out[0]


def tfidf():
    rng = np.random.default_rng(3)
    pool = [2, 3, 5, 4, 5, 6, 7, 8, 6, 7, 5, 6, 7]  # 4 unigrams, 3 bigrams, 1 trigram
    starts, slots = [0, 4, 10], [6, 0, 1, 2, 3, 4, 5, 7]
    weights = [0.5, 1.5, 2.0, 0.25, 3.0, 1.0, 0.75, 2.5]
    cases = []
    for name, shape, mode, min_n, max_n, skip, w in [
            ("tfidf_idf_uni_tri_skip2", (2, 9), "IDF", 1, 3, 2, weights),
            ("tfidf_tfidf_bi_tri_skip1", (11,), "TFIDF", 2, 3, 1, weights),
            ("tfidf_idf_no_weights", (3, 7), "IDF", 1, 2, 0, None),
            ("tfidf_tf_trigrams_only_int32", (2, 10), "TF", 3, 3, 3, None)]:
        dtype = np.int32 if name.endswith("int32") else np.int64
        x = rng.integers(4 if max_n > 1 else 2, 9, shape).astype(dtype)  # n-grams of the pool occur
        if max_n == 3:  # the trigram (5, 6, 7) at gaps 0, 1 and 2
            x.reshape(-1)[:9] = [5, 6, 7, 5, 4, 6, 8, 7, 4]
            x.reshape(-1)[-7:] = [5, 4, 4, 6, 8, 4, 7]
        attrs = dict(mode=mode, min_gram_length=min_n, max_gram_length=max_n, max_skip_count=skip,
                     pool_int64s=pool, ngram_counts=starts, ngram_indexes=slots)
        if w:
            attrs["weights"] = w
        node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], **attrs)
        y = tfidf_ref(x, mode, min_n, max_n, skip, pool, starts, slots, w)
        cases.append(make_case(name, node, [("x", x)], [("y", y)], opset=13))
    return cases


def graph_case(name, nodes, x, outputs, initializers):
    """A case of several nodes over one float32 input "x"; outputs: (name, float32 array) in graph order."""
    def info(n, a):
        return helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, a.shape)

    graph = helper.make_graph(nodes, name, [info("x", x)], [info(n, a) for n, a in outputs],
                              [numpy_helper.from_array(a, n) for n, a in initializers])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return Case(name, model, [([x], [np.ascontiguousarray(a) for _, a in outputs])])


def linear_siblings():
    """Products of one input with constant matrices, which torchonnx computes as one wider F.linear
    and a split when there are three or more: Gemm with transB, alpha and beta, MatMul with and
    without a bias Add, a weight shared with a product of another input (kept apart), and a pair."""
    rng = np.random.default_rng(11)
    f32 = np.float32
    x = rng.standard_normal((3, 6)).astype(f32)
    w1, b1 = rng.standard_normal((4, 6)).astype(f32), rng.standard_normal(4).astype(f32)
    w2, b2 = rng.standard_normal((6, 3)).astype(f32), rng.standard_normal(3).astype(f32)
    w3, ws = rng.standard_normal((6, 5)).astype(f32), rng.standard_normal((6, 2)).astype(f32)
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["a"], transB=1, alpha=0.5, beta=2.0),
             helper.make_node("MatMul", ["x", "w2"], ["m2"]),
             helper.make_node("Add", ["m2", "b2"], ["a2"]),
             helper.make_node("MatMul", ["x", "w3"], ["a3"]),
             helper.make_node("MatMul", ["x", "ws"], ["s1"]),
             helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("MatMul", ["r", "ws"], ["s2"]),
             helper.make_node("MatMul", ["r", "w3b"], ["p1"]),
             helper.make_node("MatMul", ["r", "w3c"], ["p2"])]
    w3b, w3c = rng.standard_normal((6, 2)).astype(f32), rng.standard_normal((6, 3)).astype(f32)
    x64, r64 = x.astype(np.float64), np.maximum(x, 0).astype(np.float64)
    outputs = [("a", 0.5 * x64 @ w1.T.astype(np.float64) + 2.0 * b1), ("a2", x64 @ w2 + b2),
               ("a3", x64 @ w3), ("s1", x64 @ ws), ("s2", r64 @ ws), ("p1", r64 @ w3b), ("p2", r64 @ w3c)]
    outputs = [(n, a.astype(f32)) for n, a in outputs]
    inits = [("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2), ("w3", w3), ("ws", ws), ("w3b", w3b),
             ("w3c", w3c)]
    return [graph_case("linear_siblings", nodes, x, outputs, inits)]


def view_chains():
    """Slice, Gather and Split of the results of Slice, Gather and Split, which torchonnx writes as
    one subscript of the first input; a negative step in the chain (a flip) ends the composition."""
    x = np.arange(2 * 10 * 9, dtype=np.float32).reshape(2, 10, 9)
    i64 = np.int64
    inits = [("st1", np.array([1], i64)), ("en1", np.array([9], i64)), ("ax1", np.array([1], i64)),
             ("sp1", np.array([2], i64)), ("two", np.array(2, i64)), ("sizes", np.array([3, 6], i64)),
             ("st2", np.array([-4], i64)), ("en2", np.array([100], i64)), ("ax2", np.array([2], i64)),
             ("sp2", np.array([3], i64)), ("rows", np.array([1, 2, 3], i64)),
             ("st3", np.array([-1], i64)), ("en3", np.array([-10], i64)), ("sp3", np.array([-1], i64))]
    nodes = [helper.make_node("Slice", ["x", "st1", "en1", "ax1", "sp1"], ["s1"]),
             helper.make_node("Gather", ["s1", "two"], ["g"], axis=2),
             helper.make_node("Split", ["s1", "sizes"], ["a", "b"], axis=2),
             helper.make_node("Slice", ["b", "st2", "en2", "ax2", "sp2"], ["s2"]),
             helper.make_node("Gather", ["s2", "rows"], ["g2"], axis=1),
             helper.make_node("Slice", ["s1", "st3", "en3", "ax1", "sp3"], ["f"]),
             helper.make_node("Gather", ["f", "two"], ["g3"], axis=1)]
    s1 = x[:, 1:9:2]
    b = s1[:, :, 3:]
    outputs = [("g", s1[:, :, 2]), ("a", s1[:, :, :3]), ("g2", b[:, :, -4::3][:, 1:4]),
               ("g3", s1[:, ::-1][:, 2])]
    return [graph_case("view_chains", nodes, x, outputs, inits)]


def dilated_avgpool():
    """AveragePool-19 with dilations (torch's avg_pool has none): each window's mean over the
    positions inside the input (count_include_pad 0), or inside the input and its declared pads (1;
    not the positions past them that ceil_mode adds, as onnxruntime and PyTorch count)."""
    rng = np.random.default_rng(1)
    cases = []
    for name, shape, kernel, strides, dilations, pads, ceil, include in [
            ("avgpool_dil_1d", (2, 3, 11), [3], [2], [2], [1, 0], 0, 0),
            ("avgpool_dil_2d_pads", (2, 2, 7, 8), [3, 2], [2, 3], [2, 2], [1, 0, 2, 1], 0, 0),
            ("avgpool_dil_2d_pads_ceil", (2, 2, 7, 8), [3, 2], [2, 3], [2, 2], [1, 0, 2, 1], 1, 0),
            ("avgpool_dil_2d_include_pad_ceil", (1, 2, 7, 8), [3, 2], [2, 3], [2, 2], [1, 0, 2, 1], 1,
             1)]:
        x = rng.standard_normal(shape).astype(np.float32)
        n = len(kernel)
        out_shape, wins = windows(shape[2:], kernel, strides, dilations, pads, ceil)
        y = np.zeros((*shape[:2], *out_shape), np.float64)
        for o, taps in wins:
            count = len(taps)
            if include:  # positions within [-pad_begin, size + pad_end) on every dim
                count = 1
                for d in range(n):
                    at = [o[d] * strides[d] - pads[d] + k * dilations[d] for k in range(kernel[d])]
                    count *= sum(-pads[d] <= a < shape[2 + d] + pads[d + n] for a in at)
            total = sum(x[(slice(None), slice(None), *pos)].astype(np.float64) for _, pos in taps)
            y[(slice(None), slice(None), *o)] = total / count
        node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=kernel, strides=strides,
                                dilations=dilations, pads=pads, ceil_mode=ceil,
                                count_include_pad=include)
        cases.append(make_case(name, node, [("x", x)], [("y", y.astype(np.float32))], opset=19))
    return cases


def group_norm_18():
    """GroupNormalization-18, whose scale and bias are per group (per channel from opset 21)."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 6, 3, 4)).astype(np.float32)
    scale, bias = rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    g = x.astype(np.float64).reshape(2, 3, -1)
    norm = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-3)
    y = norm * scale[:, None] + bias[:, None]
    node = helper.make_node("GroupNormalization", ["x", "scale", "bias"], ["y"], num_groups=3,
                            epsilon=1e-3)
    return [make_case("group_norm_18", node, [("x", x)],
                      [("y", y.reshape(x.shape).astype(np.float32))],
                      [("scale", scale), ("bias", bias)], opset=18)]


FAMILIES = {"maxpool_indices": maxpool_indices, "maxpool_channels_last": maxpool_channels_last,
            "lppool": lppool, "global_lppool": global_lppool,
            "gathernd_batch_dims": gathernd,
            "tfidf_vectorizer": tfidf, "linear_siblings": linear_siblings,
            "view_chains": view_chains, "dilated_avgpool": dilated_avgpool,
            "group_norm_18": group_norm_18}

