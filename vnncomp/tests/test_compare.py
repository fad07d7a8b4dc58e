import json
import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from vnncomp import numerics
from vnncomp.tests.conftest import REPO

pytestmark = pytest.mark.usefixtures("need_ort")


def compare(*args):
    proc = subprocess.run(["/usr/bin/python3", "-m", "vnncomp.compare", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    return proc.returncode, proc.stdout, proc.stderr


def test_real_model_against_itself(benchmarks):
    model = os.path.join(benchmarks, "cora", "onnx", "mnist-point.onnx.gz")
    spec = os.path.join(benchmarks, "cora", "vnnlib", "mnist-img0.vnnlib.gz")
    code, out, _ = compare(model, model, "--vnnlib", spec, "--points", "3")
    assert code == 0
    assert json.loads(out) == {"max_error": 0.0, "outputs": 1, "points": 4, "ok": True}


def test_perturbed_model_fails(benchmarks, tmp_path):
    src = os.path.join(benchmarks, "acasxu_2023", "onnx", "ACASXU_run2a_1_1_batch_2000.onnx.gz")
    model = onnx.load_model_from_string(__import__("gzip").open(src).read())
    t = model.graph.initializer[-1]
    t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t) + np.float32(0.5), t.name))
    onnx.save(model, str(tmp_path / "perturbed.onnx"))
    code, out, _ = compare(src, str(tmp_path / "perturbed.onnx"))
    result = json.loads(out)
    assert code == 1 and result["ok"] is False and result["points"] == 6
    assert result["max_error"] > 1e-3


def test_pairs_in_one_process_equal_one_call_each(benchmarks, tmp_path):
    src = os.path.join(benchmarks, "acasxu_2023", "onnx", "ACASXU_run2a_1_1_batch_2000.onnx.gz")
    model = onnx.load_model_from_string(__import__("gzip").open(src).read())
    t = model.graph.initializer[-1]
    t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t) + np.float32(0.5), t.name))
    perturbed = str(tmp_path / "perturbed.onnx")
    onnx.save(model, perturbed)
    spec = os.path.join(benchmarks, "acasxu_2023", "vnnlib", "prop_1.vnnlib.gz")
    missing = str(tmp_path / "nope.onnx")
    pairs = tmp_path / "pairs.txt"
    pairs.write_text(f"{src}\t{src}\t{spec}\n{src}\t{perturbed}\n{missing}\t{src}\n")
    code, out, _ = compare("--pairs", str(pairs))
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 1 and len(rows) == 3
    assert [(r["a"], r["b"]) for r in rows] == [(src, src), (src, perturbed), (missing, src)]
    one = [json.loads(compare(src, src, "--vnnlib", spec)[1]),
           json.loads(compare(src, perturbed)[1])]
    for row, alone in zip(rows, one):
        assert {k: v for k, v in row.items() if k not in ("a", "b")} == alone
    assert rows[2]["error"].startswith("FileNotFoundError") and "ok" not in rows[2]
    assert compare("--pairs", str(pairs), src)[0] == 2
    code, out, err = compare("--pairs", str(tmp_path / "absent.txt"))
    assert code == 2 and out == "" and err.startswith("vnncomp.compare: ")
    pairs.write_text(f"{src}\n")
    code, out, _ = compare("--pairs", str(pairs))
    assert code == 1 and json.loads(out)["error"].startswith("ValueError: not A<TAB>B")


def test_missing_file_is_exit_2(tmp_path):
    code, out, err = compare(str(tmp_path / "nope.onnx"), str(tmp_path / "nope.onnx"))
    assert code == 2 and out == ""
    assert err.startswith("vnncomp.compare: ") and len(err.strip().splitlines()) == 1


def test_error_rule():
    # |1.5 - 1.0| / max(1, 4) = 0.125 ; small outputs are compared absolutely
    assert numerics.error(np.array([1.5, 4.0]), np.array([1.0, 4.0])) == 0.125
    assert numerics.error(np.array([0.1]), np.array([0.3])) == pytest.approx(0.2)
    assert numerics.error(np.array([3], np.int64), np.array([3], np.int64)) == 0.0
    assert numerics.error(np.array([3], np.int64), np.array([4], np.int64)) == float("inf")
    assert numerics.compare([np.zeros((1, 2))], [np.zeros(2)])[1] == \
        "output 0 has shape [1, 2], expected [2]"


def test_points_stay_in_box_and_are_seeded():
    from vnncomp.onnxinfo import InputSpec
    specs = [InputSpec("a", (1, 2), np.dtype(np.float32), True),
             InputSpec("b", (3,), np.dtype(np.int64), False)]
    lo, hi = np.array([0, 10, -1, 0, 2]), np.array([1, 20, 1, np.inf, 2])
    feeds = numerics.make_points(specs, lo, hi, points=4, seed=7)
    assert len(feeds) == 5
    np.testing.assert_array_equal(feeds[0]["a"], [[0.5, 15]])
    np.testing.assert_array_equal(feeds[0]["b"], [0, 1, 2])  # [0, inf) becomes [0, 2]
    for f in feeds:
        assert np.all((f["a"] >= [0, 10]) & (f["a"] <= [1, 20]))
        assert f["b"].dtype == np.int64 and f["b"][2] == 2
    again = numerics.make_points(specs, lo, hi, points=4, seed=7)
    np.testing.assert_array_equal(feeds[3]["a"], again[3]["a"])
