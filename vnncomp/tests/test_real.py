"""The harness with the real torchonnx on the VNN-COMP models.

TORCHONNX names the binary (CTest passes the built target); the tests skip without it or without
the benchmarks. test_all_models is issue 5's CI run (all models, CPU); its reports go to
VNNCOMP_REPORT_DIR (default: a temporary folder).
"""

import json
import os
import subprocess

import pytest

from vnncomp.tests.conftest import REPO

pytestmark = pytest.mark.usefixtures("need_ort")


@pytest.fixture
def torchonnx():
    exe = os.environ.get("TORCHONNX", os.path.join(REPO, "build", "torchonnx", "torchonnx"))
    if not os.access(exe, os.X_OK):
        pytest.skip(f"torchonnx not built ({exe})")
    return exe


def run(torchonnx, out_dir, *args):
    env = dict(os.environ, TORCHONNX=torchonnx)
    json_path = os.path.join(out_dir, "vnncomp_report.json")
    cmd = [os.path.join(REPO, "scripts", "vnncomp.sh"), *args, "--json", json_path,
           "--markdown", os.path.join(out_dir, "vnncomp_report.md")]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3000)
    print(proc.stderr[-20000:])
    with open(json_path) as f:
        return proc, json.load(f)


def test_smoke(benchmarks, torchonnx, tmp_path):
    proc, doc = run(torchonnx, str(tmp_path), "--benchmarks", benchmarks, "--benchmark", "test",
                    "--benchmark", "safenlp", "--benchmark", "collins_rul_cnn_2023")
    rows = [r for r in doc["results"] if r["status"] != "skipped"]
    assert len(rows) == 10
    assert [r["model"] for r in rows if r["status"] != "pass"] == []
    assert proc.returncode == 0 and proc.stdout.splitlines()[-1] == "10 passed, 0 failed"


def test_all_models(benchmarks, torchonnx, tmp_path):
    out = os.environ.get("VNNCOMP_REPORT_DIR", str(tmp_path))
    os.makedirs(out, exist_ok=True)
    proc, doc = run(torchonnx, out, "--benchmarks", benchmarks, "--device", "cpu")
    s = doc["summary"]
    print(proc.stdout.splitlines()[-1])
    assert s["passed"] + s["failed"] + s["errors"] == 146
    last = f"{s['passed']} passed, {s['failed'] + s['errors']} failed"
    assert proc.stdout.splitlines()[-1] == last
    assert proc.returncode == 0, "\n".join(
        f"{r['benchmark']}/{r['model']}: {r['error']}" for r in doc["results"]
        if r["status"] in ("fail", "error"))
