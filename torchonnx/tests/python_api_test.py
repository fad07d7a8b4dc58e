"""The Python package: torchonnx.convert(path or bytes) -> nn.Module, torchonnx.save(...) -> files,
from the build tree and from `cmake --install`.

    TORCHONNX_BUILD_PYTHON=build/torchonnx/python TORCHONNX_BUILD_DIR=build \\
        /usr/bin/python3 -m pytest torchonnx/tests/python_api_test.py

from the repository root (for vnncomp); the package is imported from TORCHONNX_BUILD_PYTHON by its
folder, not through sys.path.
"""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from vnncomp import imports

BUILD_PYTHON = os.environ.get("TORCHONNX_BUILD_PYTHON", os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "torchonnx", "python"))
BUILD_DIR = os.environ.get("TORCHONNX_BUILD_DIR", os.path.join(BUILD_PYTHON, "..", ".."))
if not os.path.exists(os.path.join(BUILD_PYTHON, "torchonnx", "_tool.py")):
    pytest.skip("torchonnx's Python package is not in the build tree", allow_module_level=True)
torchonnx = imports.package("torchonnx", BUILD_PYTHON)

RNG = np.random.default_rng(0)
W = RNG.standard_normal((3, 5)).astype(np.float32)
B = RNG.standard_normal(3).astype(np.float32)


def model_bytes(with_bad_node=False):
    """y = relu(x @ W.T + B) for x [N, 5]; optionally a NonZero too (no lowering)."""
    info = helper.make_tensor_value_info
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["g"], name="fc", transB=1),
             helper.make_node("Relu", ["g"], ["y"], name="act")]
    outs = [info("y", TensorProto.FLOAT, ["N", 3])]
    if with_bad_node:
        nodes.append(helper.make_node("NonZero", ["x"], ["nz"], name="nz"))
        outs.append(info("nz", TensorProto.INT64, None))
    graph = helper.make_graph(nodes, "g", [info("x", TensorProto.FLOAT, ["N", 5])], outs,
                              [numpy_helper.from_array(W, "w"), numpy_helper.from_array(B, "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


def expected(x):
    return np.maximum(x.astype(np.float64) @ W.T.astype(np.float64) + B, 0)


def check(net, batch):
    x = RNG.standard_normal((batch, 5)).astype(np.float32)
    with torch.no_grad():
        y = net(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(y, expected(x), rtol=1e-5, atol=1e-5)


def test_convert_path_and_bytes(tmp_path):
    path = tmp_path / "net.onnx"
    path.write_bytes(model_bytes())
    net = torchonnx.convert(path)
    assert isinstance(net, torch.nn.Module) and not net.training
    check(net, 4)  # a symbolic batch stays free
    net2 = torchonnx.convert(model_bytes(), class_name="Net", batch_size=2)
    assert type(net2).__name__ == "Net"
    check(net2, 2)
    state = net.state_dict()
    assert any(torch.equal(t, torch.from_numpy(W)) for t in state.values())


def test_save_writes_py_and_pth(tmp_path):
    py, pth = torchonnx.save(model_bytes(), tmp_path / "out", class_name="Net", slim=False,
                             input_shapes={"x": [7, 5]}, report=tmp_path / "r.md")
    assert os.path.basename(py) == "Net.py" and os.path.isfile(py) and os.path.isfile(pth)
    assert "x: float [7, 5]" in open(py).read()
    check(torchonnx.load(py, pth, "Net"), 7)
    assert "Converted." in (tmp_path / "r.md").read_text()


def test_failure_raises_with_every_problem_and_writes_nothing(tmp_path):
    with pytest.raises(torchonnx.ConversionError, match="node 'nz' \\(NonZero\\): op has no"):
        torchonnx.save(model_bytes(with_bad_node=True), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_installed_package_runs_the_installed_tool(tmp_path):
    script = os.path.join(BUILD_DIR, "torchonnx", "cmake_install.cmake")
    if not os.path.isfile(script):
        pytest.skip("no torchonnx install script in the build tree")
    prefix = tmp_path / "prefix"
    subprocess.run(["cmake", f"-DCMAKE_INSTALL_PREFIX={prefix}", "-P", script], check=True,
                   capture_output=True)
    site = prefix / "lib" / "python3" / "dist-packages"
    assert (prefix / "bin" / "torchonnx").is_file()
    (tmp_path / "net.onnx").write_bytes(model_bytes())
    code = ("import sys, torch, torchonnx; print(torchonnx.tool()); "
            f"net = torchonnx.convert({str(tmp_path / 'net.onnx')!r}); "
            "print(net(torch.zeros(2, 5)).shape)")
    env = {k: v for k, v in os.environ.items() if k != "TORCHONNX"}
    env["PYTHONPATH"] = str(site)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [str(prefix / "bin" / "torchonnx"), "torch.Size([2, 3])"]
