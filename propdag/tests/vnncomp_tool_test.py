"""The VNN-COMP tool scripts (vnncomp/tool/): prepare_instance.sh and run_instance.sh called as the
competition calls them (by default on slimonnx's rewrite with the point checked on the original;
with PROPDAG_SLIM=0 on the model itself), on two ACAS Xu instances of the shared folder whose published answers
agree across tools (one holds, one violated): the result file says unsat / sat, and the sat
file's point lies in the box and meets the unsafe conditions under onnxruntime. A model with an op
that has no bound rule gives `error`; a wrong version string or a missing file fails prepare."""

import os
import re
import subprocess
import tempfile

import numpy as np
import pytest
from onnx import TensorProto, helper
import onnx

import sampling
from verify_vnncomp_test import SLACK, asserts_of, meets_property

TOOL = os.path.join(sampling.REPO, "vnncomp", "tool")
ACAS = os.path.join(sampling.BENCH, "acasxu_2023")
# (model, property, published answer): nnenum, alpha-beta-CROWN and NeuralSAT agree on both.
INSTANCES = [("ACASXU_run2a_1_1_batch_2000.onnx", "prop_3.vnnlib", "unsat"),
             ("ACASXU_run2a_1_2_batch_2000.onnx", "prop_2.vnnlib", "sat")]


def script(name, *args, slim=None):
    """Runs a tool script; `slim` sets PROPDAG_SLIM (None: unset, the script's default)."""
    env = dict(os.environ, PROPDAG=sampling.PROPDAG)
    env.pop("PROPDAG_SLIM", None)
    if slim is not None:
        env["PROPDAG_SLIM"] = slim
    p = subprocess.run(["bash", os.path.join(TOOL, name), *args], capture_output=True, text=True,
                       env=env, timeout=300)
    return p.returncode, p.stdout + p.stderr


def point_of(text):
    """X and Y values of a sat result file, in index order."""
    found = {k: {} for k in "XY"}
    for kind, index, v in re.findall(r"\(([XY])_(\d+) ([^()\s]+)\)", text):
        found[kind][int(index)] = float(v)
    return [np.array([d[i] for i in range(len(d))]) for d in (found["X"], found["Y"])]


def acas(name):
    return sampling.on_disk(os.path.join(ACAS, "onnx", name))


def spec(name):
    return sampling.on_disk(os.path.join(ACAS, "vnnlib", name))


def test_wrong_version_and_missing_file_fail_prepare():
    rc, out = script("prepare_instance.sh", "v2", "test", "a.onnx", "b.vnnlib")
    assert rc == 1 and "v1" in out
    rc, out = script("prepare_instance.sh", "v1", "test", "/nonexistent.onnx", "/nonexistent.vnnlib")
    assert rc == 1 and "no file" in out


@pytest.mark.skipif(not sampling.ortref.available(), reason="no onnxruntime")
@pytest.mark.skipif(not os.path.isdir(ACAS), reason="no VNN-COMP benchmarks")
@pytest.mark.parametrize("slim", ["0", None])
@pytest.mark.parametrize("model,prop,expected", INSTANCES)
def test_run_instance_writes_the_verdict(model, prop, expected, slim):
    onnx_file, vnnlib_file = acas(model), spec(prop)
    assert onnx_file and vnnlib_file
    # The competition passes the uncompressed names; the scripts find the stored .gz.
    onnx_plain, vnnlib_plain = (re.sub(r"\.gz$", "", f) for f in (onnx_file, vnnlib_file))
    rc, out = script("prepare_instance.sh", "v1", "acasxu", onnx_plain, vnnlib_plain)
    assert rc == 0, out
    with tempfile.TemporaryDirectory() as tmp:
        result = os.path.join(tmp, "out.txt")
        rc, out = script("run_instance.sh", "v1", "acasxu", onnx_plain, vnnlib_plain, result, "60",
                         slim=slim)
        assert rc == 0, out
        assert ("slimonnx's rewrite" in out) == (slim is None), out
        text = open(result).read()
    assert text.split("\n")[0] == expected, text[:200]
    if expected == "sat":
        x, y_file = point_of(text)
        asserts = asserts_of(vnnlib_file)
        y = sampling.evaluate(onnx_file, x[None, :].astype(np.float32))[0][0]
        assert meets_property(asserts, x, y, SLACK), f"{x} -> {y} misses the property"
        np.testing.assert_allclose(y_file, y, rtol=1e-4, atol=1e-4)


def test_op_without_rule_gives_error():
    with tempfile.TemporaryDirectory() as tmp:
        graph = helper.make_graph([helper.make_node("Erf", ["X"], ["Y"])], "g",
                                  [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1])],
                                  [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 8
        path = os.path.join(tmp, "erf.onnx")
        onnx.save(model, path)
        prop = os.path.join(tmp, "p.vnnlib")
        with open(prop, "w") as f:
            f.write("(declare-const X_0 Real)\n(declare-const Y_0 Real)\n"
                    "(assert (>= X_0 0))\n(assert (<= X_0 1))\n(assert (>= Y_0 2))\n")
        result = os.path.join(tmp, "out.txt")
        rc, out = script("run_instance.sh", "v1", "test", path, prop, result, "10")
        assert rc == 0, out
        assert open(result).read() == "error\n"
        assert "Erf" in out
