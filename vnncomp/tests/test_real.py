"""The harness with the real torchonnx on the VNN-COMP models.

TORCHONNX names the binary (CTest passes the built target); the tests skip without it or without
the benchmarks. test_all_models is the CI run over every model on the CPU (with
$SUITE_LARGE_MODELS=largest, as scripts/test.sh sets it, only the largest of the models over
64 MiB: `--large-models largest`); its reports go to VNNCOMP_REPORT_DIR (default: a temporary
folder).
"""

import os

import pytest

from vnncomp import discover
from vnncomp.tests.conftest import run_harness

pytestmark = pytest.mark.usefixtures("need_ort")


def test_smoke(benchmarks, torchonnx, tmp_path):
    proc, doc = run_harness(torchonnx, str(tmp_path), "--benchmarks", benchmarks, "--benchmark", "test",
                            "--benchmark", "safenlp", "--benchmark", "collins_rul_cnn_2023")
    rows = [r for r in doc["results"] if r["status"] != "skipped"]
    assert len(rows) == 10
    assert [r["model"] for r in rows if r["status"] != "pass"] == []
    assert proc.returncode == 0 and proc.stdout.splitlines()[-1] == "10 passed, 0 failed"


# Models whose reference itself is off by more than the tolerance. pensieve_mid_parallel's output
# is the difference of two values of about 99 (99.08 - 99.29): one float32 ulp at 99 is 7.6e-6, and
# onnxruntime's float32 result is up to 1.84e-5 away from the exact (float64) one at the harness's
# points, so no float32 computation can be within 1e-5 of it everywhere. Such a row passes by the
# fair float32 verdict (vnncomp/float64.py): ours is within twice onnxruntime's own distance from
# the generated code run in float64, and onnxruntime is within 1e-4 of it.
ROUNDING = {("nn4sys_2023", "onnx/pensieve_mid_parallel.onnx.gz")}


def test_all_models(benchmarks, torchonnx, tmp_path):
    out = os.environ.get("VNNCOMP_REPORT_DIR", str(tmp_path))
    os.makedirs(out, exist_ok=True)
    large = os.environ.get("SUITE_LARGE_MODELS", "all")
    proc, doc = run_harness(torchonnx, out, "--benchmarks", benchmarks, "--device", "cpu",
                            "--large-models", large)
    s = doc["summary"]
    print(proc.stdout.splitlines()[-1])
    every = [e for e in discover.from_benchmarks(benchmarks) if not e.missing]
    present = discover.suite_sample(every)
    assert s["passed"] + s["failed"] + s["errors"] == len(present)
    if len(every) == 146:  # ../shared's VNN-COMP 2024 models: 12 over 64 MiB, 11 of them left out
        assert len(present) == (146 if large == "all" else 135)
    last = f"{s['passed']} passed, {s['failed'] + s['errors']} failed"
    assert proc.stdout.splitlines()[-1] == last
    unexpected = [f"{r['benchmark']}/{r['model']}: {r['error']}" for r in doc["results"]
                  if r["status"] in ("fail", "error")]
    assert not unexpected, "\n".join(unexpected)
    for r in doc["results"]:
        if (r["benchmark"], r["model"]) in ROUNDING:
            assert r["accuracy_verdict"] == "float32 rounding" and r["reference_error"] > 1e-5, r
    assert proc.returncode == (1 if s["failed"] + s["errors"] else 0)
