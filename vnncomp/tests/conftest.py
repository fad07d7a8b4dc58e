"""Shared fixtures of the vnncomp tests (run from the repository root with
/usr/bin/python3 -m pytest vnncomp/tests, which puts the root on sys.path; ctest sets PYTHONPATH)."""

import json
import os
import subprocess

import pytest

from vnncomp import ortref

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def benchmarks_dir():
    """VNNCOMP_BENCHMARKS, else <repo>/../shared/vnncomp2024/benchmarks."""
    return os.environ.get("VNNCOMP_BENCHMARKS",
                          os.path.join(REPO, "..", "shared", "vnncomp2024", "benchmarks"))


@pytest.fixture
def benchmarks():
    path = benchmarks_dir()
    if not os.path.isdir(path):
        pytest.skip(f"VNN-COMP benchmarks not found at {path}")
    return path


@pytest.fixture
def need_ort():
    if not ortref.available():
        pytest.skip("neither onnxruntime (Python) nor onnxruntime-node is installed")


@pytest.fixture
def fake_torchonnx(tmp_path):
    """An executable wrapper around fake_torchonnx.py (torchonnx's command line)."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_torchonnx.py")
    exe = tmp_path / "torchonnx"
    exe.write_text(f'#!/bin/sh\nexec /usr/bin/python3 "{script}" "$@"\n')
    exe.chmod(0o755)
    return str(exe)


@pytest.fixture
def torchonnx():
    """The real torchonnx binary (TORCHONNX, else the build tree's); skips when it is not built."""
    exe = os.environ.get("TORCHONNX", os.path.join(REPO, "build", "torchonnx", "torchonnx"))
    if not os.access(exe, os.X_OK):
        pytest.skip(f"torchonnx not built ({exe})")
    return exe


def run_harness(torchonnx, out_dir, *args):
    """scripts/vnncomp.sh with `torchonnx` and `args`, reports in out_dir: (process, JSON report)."""
    env = dict(os.environ, TORCHONNX=torchonnx)
    json_path = os.path.join(out_dir, "vnncomp_report.json")
    cmd = [os.path.join(REPO, "scripts", "vnncomp.sh"), *args, "--json", json_path,
           "--markdown", os.path.join(out_dir, "vnncomp_report.md")]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3000)
    print(proc.stderr[-20000:])
    with open(json_path) as f:
        return proc, json.load(f)
