"""If, Loop and Scan cases for forms_test.py. torchonnx unrolls them at compile time; the expected
outputs come from plain numpy loops written from ONNX's operator definitions, in float64."""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from forms_cases import Case

F = TensorProto.FLOAT


def model(name, nodes, inputs, outputs, initializers=(), opset=13):
    """inputs, outputs: (name, elem_type, shape); initializers: (name, array)."""
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info(*o) for o in outputs],
                              [numpy_helper.from_array(a, n) for n, a in initializers])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def body(name, nodes, inputs, outputs):
    """A subgraph; inputs/outputs are names (types left to inference) or (name, type, shape)."""
    def info(v):
        return helper.make_tensor_value_info(*v) if isinstance(v, tuple) else helper.make_empty_tensor_value_info(v)
    return helper.make_graph(nodes, name, [info(v) for v in inputs], [info(v) for v in outputs])


def const(name, array):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(array), name))


def f32(a):
    return np.asarray(a, dtype=np.float32)


def loop_static(rng):
    """Trip count 4 from an initializer; a carried value, a scan output, and a value of the outer graph
    (w) read inside the body: y <- tanh(y) + i * w."""
    b = body("loop_body", [
        helper.make_node("Tanh", ["y_in"], ["t"]),
        helper.make_node("Cast", ["i"], ["i_f"], to=F),
        helper.make_node("Mul", ["i_f", "w"], ["iw"]),
        helper.make_node("Add", ["t", "iw"], ["y_out"]),
        helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        helper.make_node("Mul", ["y_out", "y_out"], ["sq"]),
    ], [("i", TensorProto.INT64, []), ("cond_in", TensorProto.BOOL, []), "y_in"], ["cond_out", "y_out", "sq"])
    m = model("loop_static", [helper.make_node("Loop", ["trip", "", "y0"], ["y", "squares"], body=b)],
              [("y0", F, [2, 3]), ("w", F, [2, 3])], [("y", F, [2, 3]), ("squares", F, [4, 2, 3])],
              [("trip", np.array(4, np.int64))])
    y0, w = f32(rng.standard_normal((2, 3))), f32(rng.standard_normal((2, 3)))
    y, squares = y0.astype(np.float64), []
    for i in range(4):
        y = np.tanh(y) + i * w.astype(np.float64)
        squares.append(y * y)
    return Case("loop_static", m, [([y0, w], [f32(y), f32(np.stack(squares))])])


def loop_condition(rng):
    """Trip count 10, but the body's condition (i < 2) stops it after three iterations; the count of
    iterations is visible in the scan output's length."""
    b = body("loop_body", [
        const("two", np.array(2, np.int64)),
        helper.make_node("Less", ["i", "two"], ["cond_out"]),
        helper.make_node("Mul", ["y_in", "x"], ["y_out"]),
        helper.make_node("Sin", ["y_out"], ["s"]),
    ], [("i", TensorProto.INT64, []), ("cond_in", TensorProto.BOOL, []), "y_in"], ["cond_out", "y_out", "s"])
    m = model("loop_condition", [helper.make_node("Loop", ["trip", "go", "x"], ["y", "sines"], body=b)],
              [("x", F, [4])], [("y", F, [4]), ("sines", F, [3, 4])],
              [("trip", np.array(10, np.int64)), ("go", np.array(True))])
    x = f32(rng.uniform(0.5, 1.5, 4))
    y, sines, i = x.astype(np.float64), [], 0
    while i < 10:
        y = y * x
        sines.append(np.sin(y))
        if not i < 2:
            break
        i += 1
    return Case("loop_condition", m, [([x], [f32(y), f32(np.stack(sines))])])


def loop_nested_if(rng):
    """A Loop whose body holds an If on the iteration's parity; the branches read the body's own
    values (renamed per iteration) and the outer graph's x."""
    then_b = body("even", [helper.make_node("Add", ["y_in", "x"], ["even_out"])], [], ["even_out"])
    else_b = body("odd", [helper.make_node("Mul", ["y_in", "x"], ["odd_out"])], [], ["odd_out"])
    b = body("loop_body", [
        const("two", np.array(2, np.int64)),
        const("zero", np.array(0, np.int64)),
        helper.make_node("Mod", ["i", "two"], ["parity"]),
        helper.make_node("Equal", ["parity", "zero"], ["even"]),
        helper.make_node("If", ["even"], ["y_out"], then_branch=then_b, else_branch=else_b),
        helper.make_node("Identity", ["cond_in"], ["cond_out"]),
    ], [("i", TensorProto.INT64, []), ("cond_in", TensorProto.BOOL, []), "y_in"], ["cond_out", "y_out"])
    m = model("loop_nested_if", [helper.make_node("Loop", ["trip", "", "x"], ["y"], body=b)],
              [("x", F, [3, 2])], [("y", F, [3, 2])], [("trip", np.array(5, np.int64))])
    x = f32(rng.standard_normal((3, 2)))
    y = x.astype(np.float64)
    for i in range(5):
        y = y + x if i % 2 == 0 else y * x
    return Case("loop_nested_if", m, [([x], [f32(y)])])


def if_runtime(rng):
    """The condition is a graph input: both branches are computed and Where chooses. One data set per
    value of the condition; the condition has shape [1] while the outputs are [2, 3] and scalar."""
    then_b = body("then", [helper.make_node("Relu", ["x"], ["r"]),
                           helper.make_node("Add", ["r", "r"], ["t_out"]),
                           helper.make_node("ReduceSum", ["x"], ["t_sum"], keepdims=0)], [], ["t_out", "t_sum"])
    else_b = body("else", [helper.make_node("Neg", ["x"], ["e_out"]),
                           helper.make_node("ReduceMax", ["x"], ["e_max"], keepdims=0)], [], ["e_out", "e_max"])
    m = model("if_runtime", [helper.make_node("If", ["c"], ["out", "scalar"], then_branch=then_b,
                                              else_branch=else_b)],
              [("c", TensorProto.BOOL, [1]), ("x", F, [2, 3])], [("out", F, [2, 3]), ("scalar", F, [])])
    x = f32(rng.standard_normal((2, 3)))
    sets = []
    for c in (True, False):
        if c:
            expected = [f32(2 * np.maximum(x, 0)), f32(x.astype(np.float64).sum())]
        else:
            expected = [f32(-x), f32(x.max())]
        sets.append(([np.array([c]), x], expected))
    return Case("if_runtime", m, sets)


def if_static(rng):
    """The condition is an initializer: only the chosen (else) branch is compiled."""
    then_b = body("then", [helper.make_node("Exp", ["x"], ["t_out"])], [], ["t_out"])
    else_b = body("else", [helper.make_node("Abs", ["x"], ["e_out"])], [], ["e_out"])
    m = model("if_static", [helper.make_node("If", ["c"], ["out"], then_branch=then_b, else_branch=else_b)],
              [("x", F, [5])], [("out", F, [5])], [("c", np.array(False))])
    x = f32(rng.standard_normal(5))
    return Case("if_static", m, [([x], [np.abs(x)])])


def scan_axes_directions(rng):
    """Opset 11 Scan with two scan inputs (x along axis 1 forward, z along axis 0 reversed), a state,
    and two scan outputs (one stacked along axis 1, one in reverse order)."""
    b = body("scan_body", [
        helper.make_node("Mul", ["x_t", "z_t"], ["p"]),
        helper.make_node("Add", ["s_in", "p"], ["s_out"]),
        helper.make_node("Sub", ["x_t", "z_t"], ["d"]),
    ], ["s_in", "x_t", "z_t"], ["s_out", "s_out_copy", "d"])
    b.node.append(helper.make_node("Identity", ["s_out"], ["s_out_copy"]))
    node = helper.make_node("Scan", ["s0", "x", "z"], ["s", "states", "diffs"], num_scan_inputs=2,
                            scan_input_axes=[1, 0], scan_input_directions=[0, 1],
                            scan_output_axes=[1, 0], scan_output_directions=[0, 1], body=b)
    m = model("scan_axes_directions", [node], [("s0", F, [3]), ("x", F, [3, 4]), ("z", F, [4, 3])],
              [("s", F, [3]), ("states", F, [3, 4]), ("diffs", F, [4, 3])], opset=11)
    s0, x, z = (f32(rng.standard_normal(s)) for s in ((3,), (3, 4), (4, 3)))
    s, states, diffs = s0.astype(np.float64), [], []
    for t in range(4):
        xt, zt = x[:, t].astype(np.float64), z[3 - t].astype(np.float64)
        s = s + xt * zt
        states.append(s)
        diffs.append(xt - zt)
    return Case("scan_axes_directions", m,
                [([s0, x, z], [f32(s), f32(np.stack(states, 1)), f32(np.stack(diffs[::-1], 0))])])


def scan_batched_opset8(rng):
    """Opset 8 Scan: sequence_lens omitted, batch dim 0 on states and scan inputs, one reversed input."""
    b = body("scan_body", [
        helper.make_node("Max", ["m_in", "x_t"], ["m_out"]),
        helper.make_node("Add", ["m_out", "x_t"], ["y"]),
    ], ["m_in", "x_t"], ["m_out", "y"])
    node = helper.make_node("Scan", ["", "m0", "x"], ["m", "ys"], num_scan_inputs=1, directions=[1], body=b)
    m = model("scan_batched_opset8", [node], [("m0", F, [2, 3]), ("x", F, [2, 5, 3])],
              [("m", F, [2, 3]), ("ys", F, [2, 5, 3])], opset=8)
    m0, x = f32(rng.standard_normal((2, 3))), f32(rng.standard_normal((2, 5, 3)))
    finals, outs = [], []
    for batch in range(2):
        cur, ys = m0[batch], []
        for t in range(5):
            xt = x[batch, 4 - t]
            cur = np.maximum(cur, xt)
            ys.append(cur + xt)
        finals.append(cur)
        outs.append(np.stack(ys))
    return Case("scan_batched_opset8", m, [([m0, x], [f32(np.stack(finals)), f32(np.stack(outs))])])


def loop_in_loop(rng):
    """A Loop inside a Loop body: the inner trip count is the outer iteration number + 1, so it is
    known only once the outer loop is unrolled; the inner body reads the outer body's value."""
    inner = body("inner_body", [
        helper.make_node("Add", ["acc_in", "scale"], ["acc_out"]),
        helper.make_node("Identity", ["ic_in"], ["ic_out"]),
    ], [("j", TensorProto.INT64, []), ("ic_in", TensorProto.BOOL, []), "acc_in"], ["ic_out", "acc_out"])
    outer = body("outer_body", [
        const("one", np.array(1, np.int64)),
        helper.make_node("Add", ["i", "one"], ["n_inner"]),
        helper.make_node("Mul", ["y_in", "x"], ["scale"]),
        helper.make_node("Loop", ["n_inner", "", "y_in"], ["y_out"], body=inner),
        helper.make_node("Identity", ["c_in"], ["c_out"]),
    ], [("i", TensorProto.INT64, []), ("c_in", TensorProto.BOOL, []), "y_in"], ["c_out", "y_out"])
    m = model("loop_in_loop", [helper.make_node("Loop", ["trip", "", "x"], ["y"], body=outer)],
              [("x", F, [2, 2])], [("y", F, [2, 2])], [("trip", np.array(3, np.int64))])
    x = f32(rng.uniform(-0.5, 0.5, (2, 2)))
    y = x.astype(np.float64)
    for i in range(3):
        scale = y * x
        for _ in range(i + 1):
            y = y + scale
    return Case("loop_in_loop", m, [([x], [f32(y)])])


def if_with_scan(rng):
    """An If on a run-time condition whose then-branch runs a Scan (a cumulative sum of the rows of
    the outer graph's x) and whose else-branch reverses the rows."""
    scan_body = body("cumsum", [helper.make_node("Add", ["s_in", "row"], ["s_out"]),
                                helper.make_node("Identity", ["s_out"], ["s_copy"])],
                     ["s_in", "row"], ["s_out", "s_copy"])
    then_b = body("then", [helper.make_node("Scan", ["zeros", "x"], ["total", "cum"], num_scan_inputs=1,
                                            body=scan_body)], [], ["cum"])
    else_b = body("else", [const("idx", np.array([2, 1, 0], np.int64)),
                           helper.make_node("Gather", ["x", "idx"], ["rev"], axis=0)], [], ["rev"])
    m = model("if_with_scan", [helper.make_node("If", ["c"], ["out"], then_branch=then_b, else_branch=else_b)],
              [("c", TensorProto.BOOL, []), ("x", F, [3, 4])], [("out", F, [3, 4])],
              [("zeros", np.zeros(4, np.float32))], opset=11)
    x = f32(rng.standard_normal((3, 4)))
    return Case("if_with_scan", m, [([np.array(True), x], [f32(np.cumsum(x.astype(np.float64), 0))]),
                                    ([np.array(False), x], [x[::-1].copy()])])


def control_flow():
    rng = np.random.default_rng(11)
    return [loop_static(rng), loop_condition(rng), loop_nested_if(rng), if_runtime(rng), if_static(rng),
            scan_axes_directions(rng), scan_batched_opset8(rng), loop_in_loop(rng), if_with_scan(rng)]
