"""Malformed inputs every tool must reject with a one-line error, exit code 2 and no output file."""
import gzip

from onnx import TensorProto, helper


def _model(nodes, inputs=("x",), outputs=("y",), initializers=(), opset=13):
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(i, TensorProto.FLOAT, [1, 4]) for i in inputs],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
        initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _bytes(model):
    return model.SerializeToString()


def good_model_bytes():
    return _bytes(_model([helper.make_node("Relu", ["x"], ["h"], name="relu"),
                          helper.make_node("Neg", ["h"], ["y"], name="neg")]))


def cases():
    """(name, file bytes, substrings the one-line error must contain)."""
    good = good_model_bytes()
    cycle = _model([helper.make_node("Add", ["x", "c"], ["a"], name="A"),
                    helper.make_node("Relu", ["a"], ["b"], name="B"),
                    helper.make_node("Neg", ["b"], ["c"], name="C"),
                    helper.make_node("Identity", ["c"], ["y"], name="D")])
    no_producer = _model([helper.make_node("Add", ["x", "ghost"], ["y"], name="adder")])
    unknown_op = _model([helper.make_node("FrobnicateOp", ["x"], ["y"], name="weird")])
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [2**40, 2**40])
    overflow = _model([helper.make_node("Expand", ["x", "shape"], ["y"], name="expander")],
                      initializers=[shape])
    # Found by mutating the ONNX backend node tests (operand counts, attribute values): each once
    # crashed or hung a tool.
    one_input_less = _model([helper.make_node("Less", ["x"], ["y"], name="less")], opset=11)
    missing_indices = _model([helper.make_node("ScatterND", ["x", "", "x"], ["y"], name="scatter")],
                             opset=18)
    bad_ngram = _model([helper.make_node("TfIdfVectorizer", ["x"], ["y"], name="tfidf", mode="TF",
                                         min_gram_length=1, max_gram_length=1, max_skip_count=0,
                                         ngram_counts=[0], ngram_indexes=[0, -5], pool_int64s=[2, 3])],
                       opset=9)
    huge_kernel = _model([helper.make_node("Unsqueeze", ["x"], ["x3"], name="to3d", axes=[0]),
                          helper.make_node("AveragePool", ["x3"], ["y"], name="pool",
                                           kernel_shape=[2**33], auto_pad="SAME_LOWER")], opset=11)
    two_values = _model([helper.make_node("Shape", ["x"], ["s"], name="shape"),
                         helper.make_node("ConstantOfShape", ["s"], ["y"], name="fill",
                                          value=helper.make_tensor("v", TensorProto.FLOAT, [2], [1, 2]))])
    return [
        ("empty.onnx", b"", ["empty input"]),
        ("fillvalue.onnx", _bytes(two_values), ["'fill'", "(ConstantOfShape)", "one element, not 2"]),
        ("arity.onnx", _bytes(one_input_less), ["'less'", "(Less)", "takes 2 inputs (opset 11), got 1"]),
        ("emptyinput.onnx", _bytes(missing_indices),
         ["'scatter'", "(ScatterND)", "required input 1 ('indices') is missing"]),
        ("ngram.onnx", _bytes(bad_ngram), ["'tfidf'", "(TfIdfVectorizer)", "ngram_indexes out of range"]),
        ("hugekernel.onnx", _bytes(huge_kernel), ["'pool'", "(AveragePool)", "larger than 2^24"]),
        ("truncated.onnx", good[: len(good) // 2], ["not a valid ONNX model"]),
        ("notproto.onnx", b"\xff\xfe this is not a protobuf\n", ["not a"]),
        ("notonnx.onnx.gz", gzip.compress(b"plain text in a gzip file\n" * 10), ["not a"]),
        ("cycle.onnx", _bytes(cycle), ["cycle", "A -> B -> C -> A"]),
        ("noproducer.onnx", _bytes(no_producer), ["'adder'", "(Add)", "'ghost'", "no producer"]),
        ("unknownop.onnx", _bytes(unknown_op), ["'weird'", "(FrobnicateOp)"]),
        ("overflow.onnx", _bytes(overflow), ["'expander'", "(Expand)", "overflow"]),
    ]


def _raw_input_model(elem_type):
    """x (of dtype elem_type, which may be no ONNX dtype) -> Relu -> y."""
    model = _model([helper.make_node("Relu", ["x"], ["y"], name="relu")])
    model.graph.input[0].type.tensor_type.elem_type = elem_type
    return model


def corpus_cases():
    """More bad inputs (issue 28's corpus), same form as cases()."""
    dup = _model([helper.make_node("Relu", ["x"], ["h"], name="first"),
                  helper.make_node("Neg", ["x"], ["h"], name="second"),
                  helper.make_node("Identity", ["h"], ["y"], name="out")])
    dangling_out = _model([helper.make_node("Relu", ["x"], ["h"], name="relu")], outputs=("y",))
    neg = helper.make_tensor("w", TensorProto.FLOAT, [4], [1, 2, 3, 4])
    neg.dims[0] = -4
    negdim = _model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], initializers=[neg])
    huge = helper.make_tensor("w", TensorProto.FLOAT, [4], [1, 2, 3, 4])
    huge.dims[:] = [2**20, 2**20]
    hugeinit = _model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], initializers=[huge])
    ints = helper.make_tensor("c", TensorProto.INT64, [4], [1, 2, 3, 4])
    mixed = _model([helper.make_node("Add", ["x", "c"], ["y"], name="mix")], initializers=[ints])
    axis = _model([helper.make_node("Softmax", ["x"], ["y"], name="soft", axis=9)])
    perm = _model([helper.make_node("Transpose", ["x"], ["y"], name="swap", perm=[0, 5])])
    return [
        ("duplicate.onnx", _bytes(dup), ["'second'", "(Neg)", "value 'h' is produced more than once"]),
        ("danglingoutput.onnx", _bytes(dangling_out), ["graph output 'y' has no producer"]),
        ("negativedim.onnx", _bytes(negdim), ["tensor 'w': invalid dims"]),
        ("hugeinit.onnx", _bytes(hugeinit), ["tensor 'w': holds 16 bytes, dims need 4398046511104"]),
        ("baddtype.onnx", _bytes(_raw_input_model(999)), ["graph input 'x' has unknown element type 999"]),
        ("mixeddtype.onnx", _bytes(mixed), ["'mix'", "(Add)", "input 1 is int64, input 0 is float"]),
        ("axis.onnx", _bytes(axis), ["'soft'", "(Softmax)", "axis 9 out of range for rank 2"]),
        ("perm.onnx", _bytes(perm), ["'swap'", "(Transpose)", "axis 5 out of range for rank 2"]),
        ("bomb.onnx.gz", gzip_bomb(3 << 30), ["gzip data inflates past 2 GiB"]),
    ]


def gzip_bomb(size):
    """A .gz that inflates to `size` zero bytes: one member of 64 MiB of zeros, repeated (a few
    KiB per member, ~3 MiB for 3 GiB)."""
    import zlib
    member_size = 64 << 20
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    member = c.compress(bytes(member_size)) + c.flush()
    return member * (size // member_size)


def nested_if(depth):
    """If inside If, `depth` levels deep (then-branches nest, else-branches negate x)."""
    inner = helper.make_graph([helper.make_node("Relu", ["x"], ["r0"])], "b0", [],
                              [helper.make_tensor_value_info("r0", TensorProto.FLOAT, None)])
    for d in range(1, depth + 1):
        other = helper.make_graph([helper.make_node("Neg", ["x"], [f"n{d}"])], f"e{d}", [],
                                  [helper.make_tensor_value_info(f"n{d}", TensorProto.FLOAT, None)])
        node = helper.make_node("If", ["cond"], [f"r{d}"], name=f"if{d}", then_branch=inner,
                                else_branch=other)
        inner = helper.make_graph([node], f"b{d}", [],
                                  [helper.make_tensor_value_info(f"r{d}", TensorProto.FLOAT, None)])
    cond = helper.make_tensor("cond", TensorProto.BOOL, [], [True])
    top = list(inner.node)
    top.append(helper.make_node("Identity", [inner.output[0].name], ["y"], name="out"))
    return _bytes(_model(top, initializers=[cond]))


def conv_model_bytes():
    """A good model with attributes and weights (Conv, Relu, Flatten, Gemm): a few KiB to cut."""
    import numpy as np
    from onnx import numpy_helper
    rng = np.random.default_rng(28)
    w = numpy_helper.from_array(rng.standard_normal((4, 1, 3, 3)).astype(np.float32), "w")
    g = numpy_helper.from_array(rng.standard_normal((64, 3)).astype(np.float32), "g")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Flatten", ["r"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "g"], ["y"], name="gemm")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                         [1, 1, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
                              initializer=[w, g])
    return _bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))


def damaged(data, count=24, seed=28):
    """(name, bytes): `data` cut at `count` offsets spread over it, and `count` copies with one
    byte flipped (a random bit) at spread positions."""
    import random
    rng = random.Random(seed)
    out = []
    for k in range(count):
        at = 1 + k * (len(data) - 2) // max(1, count - 1)
        out.append((f"cut{at}.onnx", data[:at]))
        flip = bytearray(data)
        pos = rng.randrange(len(data))
        flip[pos] ^= 1 << rng.randrange(8)
        out.append((f"flip{pos}.onnx", bytes(flip)))
    return out
