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
