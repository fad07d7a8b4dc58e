"""Custom ops (--custom-op DOMAIN::OP=MODULE:FUNCTION, --custom-op-shape) through torchonnx,
shapeonnx and slimonnx, and --add-batch-dim on a model declared without a batch dim.

    TORCHONNX=build/torchonnx/torchonnx SHAPEONNX=build/shapeonnx/shapeonnx \\
        SLIMONNX=build/slimonnx/slimonnx /usr/bin/python3 -m pytest torchonnx/tests/custom_op_test.py
"""

import importlib.util
import os
import subprocess

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

# This folder is on sys.path (pytest's, as it has no __init__.py), so the generated code's `import
# custom_op_funcs` finds the module, as this test finds it and cli_test.
import custom_op_funcs
from vnncomp import imports

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(HERE, "..", "..", "build")
EXE = os.environ.get("TORCHONNX", os.path.join(BUILD, "torchonnx", "torchonnx"))
SHAPEONNX = os.environ.get("SHAPEONNX", os.path.join(BUILD, "shapeonnx", "shapeonnx"))
SLIMONNX = os.environ.get("SLIMONNX", os.path.join(BUILD, "slimonnx", "slimonnx"))

DOMAIN = "test.custom"
SCALE_SHIFT = f"--custom-op={DOMAIN}::ScaleShift=custom_op_funcs:scale_shift"
HALVES = f"--custom-op={DOMAIN}::Halves=custom_op_funcs:halves"
RELU = f"--custom-op={DOMAIN}::Relu=custom_op_funcs:relu_of_constant"
RNG = np.random.default_rng(0)
W1 = RNG.standard_normal((4, 6)).astype(np.float32)
SHIFT = RNG.standard_normal(6).astype(np.float32)
W2 = RNG.standard_normal((3, 3)).astype(np.float32)
CONST = RNG.standard_normal(3).astype(np.float32)


def run(*args):
    return subprocess.run([EXE, *map(str, args)], capture_output=True, text=True)


@pytest.fixture(autouse=True)
def need_exe():
    if not os.path.exists(EXE):
        pytest.skip("torchonnx not built")


def custom_model(path, declare_lo=True):
    """x [N, 4] -> MatMul W1 -> ScaleShift(shift; scale=2, mode="tanh") -> Halves -> (lo, hi);
    y = relu(lo) @ W2.T + Relu(CONST), that Relu being the custom op of the same name on a
    constant (nothing may fold it as ONNX's Relu). Outputs y and hi. `lo` has a declared type
    only when `declare_lo`; `hi` never has one (the tests give it with --custom-op-shape)."""
    info = helper.make_tensor_value_info
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
        helper.make_node("ScaleShift", ["h", "shift"], ["s"], name="scale shift", domain=DOMAIN,
                         scale=2.0, mode="tanh"),
        helper.make_node("Halves", ["s"], ["lo", "hi"], name="halves", domain=DOMAIN,
                         factors=[1.0, -3.0]),
        helper.make_node("Relu", ["lo"], ["r"], name="act"),
        helper.make_node("MatMul", ["r", "w2t"], ["m"], name="fc2"),
        helper.make_node("Relu", ["const"], ["c"], name="custom relu", domain=DOMAIN),
        helper.make_node("Add", ["m", "c"], ["y"], name="bias"),
    ]
    inits = [numpy_helper.from_array(W1, "w1"), numpy_helper.from_array(SHIFT, "shift"),
             numpy_helper.from_array(W2.T.copy(), "w2t"), numpy_helper.from_array(CONST, "const")]
    value_info = [info("s", TensorProto.FLOAT, ["N", 6]), info("c", TensorProto.FLOAT, [3])]
    if declare_lo:
        value_info.append(info("lo", TensorProto.FLOAT, ["N", 3]))
    graph = helper.make_graph(nodes, "g", [info("x", TensorProto.FLOAT, ["N", 4])],
                              [info("y", TensorProto.FLOAT, ["N", 3]),
                               info("hi", TensorProto.FLOAT, None)], inits, value_info=value_info)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                    helper.make_opsetid(DOMAIN, 1)])
    onnx.save(model, str(path))


def reference(x):
    """float64 numpy: the model's outputs (y, hi)."""
    s = np.tanh(x.astype(np.float64) @ W1 * 2.0 + SHIFT)
    lo, hi = s[:, :3], s[:, 3:] * -3.0
    return np.maximum(lo, 0) @ W2.T.astype(np.float64) + (1 - CONST.astype(np.float64)), hi


def load(py, pth):
    spec = importlib.util.spec_from_file_location(os.path.basename(py)[:-3], py)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    net = module.Model()
    net.load_state_dict(torch.load(pth, weights_only=True))
    return net.eval()


def convert(tmp_path, *flags, declare_lo=True):
    custom_model(tmp_path / "m.onnx", declare_lo)
    out = tmp_path / "out"
    done = run(tmp_path / "m.onnx", "-o", out, *flags)
    return done, out


def test_custom_ops_become_calls_that_match_numpy_and_vmap(tmp_path):
    done, out = convert(tmp_path, SCALE_SHIFT, HALVES, RELU, "--custom-op-shape=hi=float32[N,3]")
    assert done.returncode == 0, done.stderr
    code = (out / "m.py").read_text()
    assert "\nimport custom_op_funcs\n" in code
    assert "custom_op_funcs.scale_shift(" in code and "mode=\"tanh\", scale=2.0)" in code
    assert "custom_op_funcs.halves(" in code and "factors=[1.0, -3.0])" in code
    assert "custom_op_funcs.relu_of_constant(self." in code  # not folded, not a torch relu
    net = load(str(out / "m.py"), str(out / "m.pth"))
    x = RNG.standard_normal((5, 4)).astype(np.float32)
    with torch.no_grad():
        y, hi = net(torch.from_numpy(x))
    want_y, want_hi = reference(x)
    np.testing.assert_allclose(y.numpy(), want_y, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(hi.numpy(), want_hi, rtol=1e-5, atol=1e-5)
    from cli_test import vmap
    with torch.no_grad():
        ys, his = vmap(lambda xi: tuple(o[0] for o in net(xi[None])))(torch.from_numpy(x))
    np.testing.assert_allclose(ys.numpy(), want_y, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(his.numpy(), want_hi, rtol=1e-5, atol=1e-5)


def test_an_output_type_comes_from_the_flag_where_the_model_declares_none(tmp_path):
    done, out = convert(tmp_path, SCALE_SHIFT, HALVES, RELU, "--custom-op-shape=hi=float[N,3]",
                        "--custom-op-shape=lo=float32[N,3]", declare_lo=False)
    assert done.returncode == 0, done.stderr
    net = load(str(out / "m.py"), str(out / "m.pth"))
    x = RNG.standard_normal((2, 4)).astype(np.float32)
    with torch.no_grad():
        y, _ = net(torch.from_numpy(x))
    np.testing.assert_allclose(y.numpy(), reference(x)[0], rtol=1e-5, atol=1e-5)


def test_missing_type_or_undeclared_op_is_one_line_exit_2_nothing_written(tmp_path):
    done, out = convert(tmp_path, SCALE_SHIFT, HALVES, RELU)  # no type for `hi`
    assert done.returncode == 2 and not out.exists()
    assert done.stderr.count("\n") == 1 and "node 'halves'" in done.stderr
    assert "--custom-op-shape hi=" in done.stderr
    done, out = convert(tmp_path, SCALE_SHIFT, RELU, "--custom-op-shape=hi=float32[N,3]")
    assert done.returncode == 2 and not out.exists()
    assert done.stderr.strip().splitlines() == [
        f"torchonnx: {tmp_path / 'm.onnx'}: node 'halves' ({DOMAIN}::Halves): op of domain "
        f"'{DOMAIN}' has no PyTorch lowering (opset 1)"]
    for bad in ("--custom-op=Relu=m:f", f"--custom-op={DOMAIN}::Halves", "--custom-op-shape=hi=f[2]"):
        done = run(tmp_path / "m.onnx", "-o", tmp_path / "o2", bad)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, (bad, done.stderr)


def test_report_lists_the_declared_custom_ops(tmp_path):
    done, _ = convert(tmp_path, SCALE_SHIFT, HALVES, RELU, "--custom-op-shape=hi=float32[N,3]",
                      "--report", tmp_path / "r.md")
    assert done.returncode == 0, done.stderr
    md = (tmp_path / "r.md").read_text()
    assert "## Custom ops (declared)" in md
    assert f"| {DOMAIN}::Halves | custom_op_funcs:halves | 1 |" in md


@pytest.mark.parametrize("tool", ["shapeonnx", "slimonnx"])
def test_shapeonnx_and_slimonnx_leave_declared_custom_ops_alone(tmp_path, tool):
    exe = SHAPEONNX if tool == "shapeonnx" else SLIMONNX
    if not os.path.exists(exe):
        pytest.skip(f"{tool} not built")
    custom_model(tmp_path / "m.onnx")
    plain = subprocess.run([exe, tmp_path / "m.onnx", "-o", tmp_path / "p.onnx"],
                           capture_output=True, text=True)
    assert plain.returncode == 2 and "unsupported domain" in plain.stderr
    flags = [SCALE_SHIFT.split("=", 1)[0] + "=" + f"{DOMAIN}::ScaleShift", HALVES, RELU,
             "--custom-op-shape=hi=float32[N,3]"]
    done = subprocess.run([exe, tmp_path / "m.onnx", "-o", tmp_path / "o.onnx", *flags],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    m = onnx.load(str(tmp_path / "o.onnx"))
    custom = sorted(n.op_type for n in m.graph.node if n.domain == DOMAIN)
    assert custom == ["Halves", "Relu", "ScaleShift"]  # the Relu on a constant is not folded
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in list(m.graph.value_info) + list(m.graph.output)}
    if tool == "shapeonnx":
        assert shapes["hi"] == [1, 3] and shapes["s"] == [1, 6] and shapes["c"] == [3]
    # The rewritten model computes what the original does (custom ops by the reference functions).
    net_done = run(tmp_path / "o.onnx", "-o", tmp_path / "o_out", *flags[1:],
                   "--custom-op=" + f"{DOMAIN}::ScaleShift=custom_op_funcs:scale_shift")
    assert net_done.returncode == 0, net_done.stderr
    net = load(str(tmp_path / "o_out" / "o.py"), str(tmp_path / "o_out" / "o.pth"))
    x = RNG.standard_normal((1, 4)).astype(np.float32)
    with torch.no_grad():
        y, _ = net(torch.from_numpy(x))
    np.testing.assert_allclose(y.numpy(), reference(x)[0], rtol=1e-5, atol=1e-5)


def test_python_api_takes_custom_ops_as_text_or_functions(tmp_path):
    folder = os.environ.get("TORCHONNX_BUILD_PYTHON", os.path.join(BUILD, "torchonnx", "python"))
    if not os.path.exists(os.path.join(folder, "torchonnx", "_tool.py")):
        pytest.skip("torchonnx's Python package is not in the build tree")
    torchonnx = imports.package("torchonnx", folder)
    custom_model(tmp_path / "m.onnx")
    net = torchonnx.convert(tmp_path / "m.onnx", custom_ops={
        f"{DOMAIN}::ScaleShift": custom_op_funcs.scale_shift,
        f"{DOMAIN}::Halves": "custom_op_funcs:halves",
        f"{DOMAIN}::Relu": custom_op_funcs.relu_of_constant},
        custom_op_shapes={"hi": ("float32", ["N", 3])})
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    with torch.no_grad():
        y, hi = net(torch.from_numpy(x))
    np.testing.assert_allclose(y.numpy(), reference(x)[0], rtol=1e-5, atol=1e-5)


def unbatched_model(path):
    """Inputs without a batch dim: x [3, 4] -> Reshape [1, 3, 4] -> Flatten, plus z [4] ->
    Unsqueeze at 0 -> Tile to [1, 12]; their sum -> Gemm -> Relu: y [1, 2]. Returns the weight."""
    info = helper.make_tensor_value_info
    w = RNG.standard_normal((2, 12)).astype(np.float32)
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["r"], name="unit"),
             helper.make_node("Flatten", ["r"], ["f"], name="flat", axis=1),
             helper.make_node("Unsqueeze", ["z", "axes"], ["zu"], name="unit z"),
             helper.make_node("Tile", ["zu", "reps"], ["zt"], name="tile"),
             helper.make_node("Add", ["f", "zt"], ["a"], name="add"),
             helper.make_node("Gemm", ["a", "w"], ["g"], name="fc", transB=1),
             helper.make_node("Relu", ["g"], ["y"], name="act")]
    inits = [numpy_helper.from_array(np.array([1, 3, 4], np.int64), "shape"),
             numpy_helper.from_array(np.array([0], np.int64), "axes"),
             numpy_helper.from_array(np.array([1, 3], np.int64), "reps"),
             numpy_helper.from_array(w, "w")]
    graph = helper.make_graph(nodes, "g", [info("x", TensorProto.FLOAT, [3, 4]),
                                           info("z", TensorProto.FLOAT, [4])],
                              [info("y", TensorProto.FLOAT, [1, 2])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return w


def test_add_batch_dim_makes_the_unit_dim_a_batch(tmp_path):
    w = unbatched_model(tmp_path / "u.onnx")
    done = run(tmp_path / "u.onnx", "-o", tmp_path / "plain")
    assert done.returncode == 0, done.stderr
    assert "x.reshape(1, 12)" in (tmp_path / "plain" / "u.py").read_text()
    done = run(tmp_path / "u.onnx", "-o", tmp_path / "out", "--add-batch-dim")
    assert done.returncode == 0, done.stderr
    code = (tmp_path / "out" / "u.py").read_text()
    assert "#   x: float [N, 3, 4]" in code and "#   z: float [N, 4]" in code
    assert "Sizes as declared" not in code and "reshape(1," not in code
    net = load(str(tmp_path / "out" / "u.py"), str(tmp_path / "out" / "u.pth"))
    x = RNG.standard_normal((5, 3, 4)).astype(np.float32)
    z = RNG.standard_normal((5, 4)).astype(np.float32)
    with torch.no_grad():
        y = net(torch.from_numpy(x), torch.from_numpy(z)).numpy()
    a = x.reshape(5, 12).astype(np.float64) + np.tile(z, (1, 3))
    np.testing.assert_allclose(y, np.maximum(a @ w.T, 0), rtol=1e-5, atol=1e-5)


def test_add_batch_dim_rejects_an_input_read_without_a_unit_dim(tmp_path):
    info = helper.make_tensor_value_info
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="act")], "g",
                              [info("x", TensorProto.FLOAT, [3, 4])],
                              [info("y", TensorProto.FLOAT, [3, 4])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
              str(tmp_path / "r.onnx"))
    done = run(tmp_path / "r.onnx", "-o", tmp_path / "out", "--add-batch-dim")
    assert done.returncode == 2 and not (tmp_path / "out").exists()
    assert done.stderr.count("\n") == 1 and "node 'act' (Relu): --add-batch-dim" in done.stderr
