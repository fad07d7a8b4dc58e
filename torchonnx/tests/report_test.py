"""torchonnx lists every node it cannot compile at once, and --report FILE.md.

    TORCHONNX=build/torchonnx/torchonnx /usr/bin/python3 -m pytest torchonnx/tests/report_test.py
"""

import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

EXE = os.environ.get("TORCHONNX", os.path.join(os.path.dirname(__file__), "..", "..", "build",
                                               "torchonnx", "torchonnx"))


def run(*args):
    return subprocess.run([EXE, *map(str, args)], capture_output=True, text=True)


@pytest.fixture(autouse=True)
def need_exe():
    if not os.path.exists(EXE):
        pytest.skip("torchonnx not built")


def three_bad_model(path):
    """Four branches of x [1, 2, 4, 4]: NonZero (no lowering), a custom-domain op, an LpPool with
    p = 0 (rejected when lowered), and a Relu that is fine; a second NonZero reads the first."""
    info = helper.make_tensor_value_info
    nodes = [helper.make_node("NonZero", ["x"], ["nz"], name="nonzero_a"),
             helper.make_node("NonZero", ["nz"], ["nz2"], name="nonzero_b"),
             helper.make_node("ProjectionOp", ["x"], ["proj"], name="project", domain="ai.onnx.contrib"),
             helper.make_node("LpPool", ["x"], ["lp"], name="lp_pool", kernel_shape=[2, 2], p=0),
             helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("NonZero", ["r"], ["nz3"], name="nonzero_c")]
    outs = [info("nz2", TensorProto.INT64, None), info("proj", TensorProto.FLOAT, [1, 2, 4, 4]),
            info("lp", TensorProto.FLOAT, [1, 2, 3, 3]), info("r", TensorProto.FLOAT, [1, 2, 4, 4]),
            info("nz3", TensorProto.INT64, None)]
    graph = helper.make_graph(nodes, "g", [info("x", TensorProto.FLOAT, [1, 2, 4, 4])], outs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("ai.onnx.contrib", 1)])
    onnx.save(model, str(path))


def good_model(path):
    """x [N, 6] -> Gemm -> Relu -> Add(0): slimonnx removes the Add."""
    rng = np.random.default_rng(0)
    info = helper.make_tensor_value_info
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["g"], name="fc", transB=1),
             helper.make_node("Relu", ["g"], ["r"], name="act"),
             helper.make_node("Add", ["r", "zero"], ["y"], name="plus0")]
    inits = [numpy_helper.from_array(rng.standard_normal((3, 6)).astype(np.float32), "w"),
             numpy_helper.from_array(np.zeros(3, np.float32), "b"),
             numpy_helper.from_array(np.zeros(1, np.float32), "zero")]
    graph = helper.make_graph(nodes, "g", [info("x", TensorProto.FLOAT, ["N", 6])],
                              [info("y", TensorProto.FLOAT, ["N", 3])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


def test_every_unsupported_node_is_listed_at_once(tmp_path):
    model = tmp_path / "bad.onnx"
    three_bad_model(model)
    out = tmp_path / "out"
    r = run(model, "-o", out, "--report", tmp_path / "bad.md")
    assert r.returncode == 2
    assert not out.exists()  # nothing written
    lines = r.stderr.strip().splitlines()
    assert all(line.startswith(f"torchonnx: {model}: ") for line in lines)
    text = "\n".join(line[len(f"torchonnx: {model}: "):] for line in lines)
    # Three NonZero, the custom op, and LpPool's p, found when the rest of the graph is lowered
    # (what reads a node that cannot be compiled is left out: nonzero_b is listed for itself).
    assert lines[0].endswith("5 nodes cannot be compiled, 3 op types:")
    assert lines[1:4] == [f"torchonnx: {model}:   LpPool x1: 'lp_pool'",
                          f"torchonnx: {model}:   NonZero x3: 'nonzero_a', 'nonzero_b', 'nonzero_c'",
                          f"torchonnx: {model}:   ai.onnx.contrib::ProjectionOp x1: 'project'"]
    assert "node 'nonzero_a' (NonZero): op has no PyTorch lowering (opset 17)" in text
    assert ("node 'project' (ai.onnx.contrib::ProjectionOp): op of domain 'ai.onnx.contrib' has no "
            "PyTorch lowering (opset 1)") in text
    assert "node 'lp_pool' (LpPool): p must be positive (opset 17)" in text
    assert "'relu'" not in text
    assert len(lines) == 1 + 3 + 5
    md = (tmp_path / "bad.md").read_text()
    assert md.startswith(f"# torchonnx: {model}\n\nNot converted: 5 problems.")
    assert "| ai.onnx.contrib | 1 |" in md and "| ai.onnx | 17 |" in md
    assert "| NonZero | 3 |" in md and "| ai.onnx.contrib::ProjectionOp | 1 |" in md
    assert "| loaded | 6 |" in md and "| control flow unrolled, shapes inferred | 2 |" in md
    assert "4 nodes were left out of inference and lowering" in md
    assert "- `x: float [1, 2, 4, 4]`" in md and "- `lp: float [1, 2, 3, 3]`" in md
    assert "- node 'lp_pool' (LpPool): p must be positive" in md


def test_one_problem_keeps_the_one_line_error(tmp_path):
    model = tmp_path / "one.onnx"
    info = helper.make_tensor_value_info
    graph = helper.make_graph([helper.make_node("NonZero", ["x"], ["y"], name="nz")], "g",
                              [info("x", TensorProto.FLOAT, [2, 2])], [info("y", TensorProto.INT64, None)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(model))
    r = run(model, "-o", tmp_path / "out")
    assert r.returncode == 2
    assert r.stderr == f"torchonnx: {model}: node 'nz' (NonZero): op has no PyTorch lowering (opset 13)\n"


def test_report_on_success(tmp_path):
    model = tmp_path / "good.onnx"
    good_model(model)
    r = run(model, "-o", tmp_path / "out", "--batch-size", 4, "--report", tmp_path / "good.md")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / "good.py").exists()
    md = (tmp_path / "good.md").read_text()
    assert md.startswith(f"# torchonnx: {model}\n\nConverted.")
    assert "| loaded | 3 |" in md and "| after slimming (lowered) | 2 |" in md
    assert "| Gemm | 1 |" in md and "| Add | 1 |" in md
    assert "- `x: float [4, 6]`" in md and "- `y: float [4, 3]`" in md
    assert "## Problems\n\nNone." in md
    passes = md.split("| slimonnx pass | rewrites |\n|---|---|\n")[1].split("\n\n")[0]
    assert passes.splitlines() and all(int(ln.split("|")[2]) >= 1 for ln in passes.splitlines())


SHAPEONNX = os.environ.get("SHAPEONNX", os.path.join(os.path.dirname(__file__), "..", "..", "build",
                                                     "shapeonnx", "shapeonnx"))


@pytest.mark.skipif(not os.path.exists(SHAPEONNX), reason="shapeonnx not built")
def test_shapeonnx_report_on_failure_and_success(tmp_path):
    bad = tmp_path / "bad.onnx"
    three_bad_model(bad)
    r = subprocess.run([SHAPEONNX, bad, "-o", tmp_path / "bad_out.onnx", "--report", tmp_path / "b.md"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and not (tmp_path / "bad_out.onnx").exists()
    md = (tmp_path / "b.md").read_text()
    assert md.startswith(f"# shapeonnx: {bad}\n\nNot inferred: 1 problem.")
    assert "| ai.onnx.contrib | 1 |" in md and "| NonZero | 3 |" in md and "| loaded | 6 |" in md
    assert "- `x: float [1, 2, 4, 4]`" in md
    problem = md.split("## Problems\n\n")[1].strip()
    assert problem.startswith("- node '") and r.stderr.strip().endswith(problem[len("- "):])
    good = tmp_path / "good.onnx"
    good_model(good)
    r = subprocess.run([SHAPEONNX, good, "-o", tmp_path / "g_out.onnx", "--batch-size", "3",
                        "--report", tmp_path / "g.md"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    md = (tmp_path / "g.md").read_text()
    assert md.startswith(f"# shapeonnx: {good}\n\nInferred.")
    assert "- `x: float [3, 6]`" in md and "- `y: float [3, 3]`" in md
    assert "| inferred (control flow unrolled with --unroll) | 3 |" in md
    assert "## Problems\n\nNone." in md
