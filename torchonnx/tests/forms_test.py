"""Op forms that the ONNX backend node tests barely cover, checked against independently computed outputs:
MaxPool with Indices, LpPool, GlobalLpPool, GatherND batch_dims, Resize tf_crop_and_resize,
Conv/ConvTranspose whose weight or bias is a graph input, the attribute forms of RNN/GRU/LSTM (as
time-step loops, and with --rnn-modules as PyTorch's recurrent layers where they apply), and
If/Loop/Scan, and ops of opsets 18-22 whose node tests only newer test data holds. The cases live in
forms_cases.py, forms_resize.py, forms_conv.py, forms_recurrent.py, forms_control.py and forms_opset18.py;
each family is converted with torchonnx --no-slim and run by tools/run_node_tests.py.

    TORCHONNX=build/torchonnx/torchonnx /usr/bin/python3 -m pytest torchonnx/tests/forms_test.py
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import forms_cases
import forms_control
import forms_conv
import forms_opset18
import forms_recurrent
import forms_resize

EXE = os.environ.get("TORCHONNX")
FAMILIES = {**forms_cases.FAMILIES, **forms_opset18.FAMILIES, "resize_tf_crop_and_resize": forms_resize.resize_crop,
            "conv_runtime_weights": forms_conv.conv_runtime_weights,
            "recurrent": forms_recurrent.recurrent,
            "recurrent_modules": forms_recurrent.recurrent, "control_flow": forms_control.control_flow}
FLAGS = {"recurrent_modules": ["--rnn-modules"]}  # the same cases as nn.RNN/nn.GRU/nn.LSTM layers
RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "run_node_tests.py")


@pytest.fixture(scope="module", autouse=True)
def need_exe():
    if not EXE or not os.access(EXE, os.X_OK):
        pytest.skip("TORCHONNX does not name a built torchonnx")


def convert(case, root, flags=()):
    """Writes the case under root/cases, converts it into root/out; a manifest entry, or the error text."""
    test_dir, out = root / "cases" / case.name, root / "out" / case.name
    forms_cases.write_case(case, test_dir)
    r = subprocess.run([EXE, "--no-slim", *flags, test_dir / "model.onnx", "-o", out], capture_output=True,
                       text=True)
    if r.returncode:
        return r.stderr.strip() or f"exit {r.returncode}"
    return {"name": f"{root.name}/{case.name}", "test_dir": str(test_dir), "py": str(out / "model.py"),
            "pth": str(out / "model.pth"), "rtol": 1e-4, "atol": 1e-5}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    """{family: (cases, conversion failures, runner FAIL lines)}: every family converted, then all
    generated models run by one run_node_tests.py process (one torch start-up, not one per family)."""
    root = tmp_path_factory.mktemp("forms")
    entries, out = [], {}
    for family, make in FAMILIES.items():
        cases = make()
        results = {case.name: convert(case, root / family, FLAGS.get(family, ())) for case in cases}
        out[family] = (len(cases), [f"{name}: {why}" for name, why in results.items() if isinstance(why, str)],
                       [])
        entries += [r for r in results.values() if not isinstance(r, str)]
    manifest = root / "manifest.json"
    manifest.write_text(json.dumps(entries))
    r = subprocess.run([sys.executable, RUNNER, manifest], capture_output=True, text=True)
    lines = r.stdout.splitlines()
    failed = [line for line in lines if line.startswith("FAIL ")]
    for line in failed:
        out[line[len("FAIL "):].split("/", 1)[0]][2].append(line)
    summary = f"node tests: {len(entries) - len(failed)} passed, {len(failed)} failed"
    assert (r.returncode == 0) == (not failed) and lines and lines[-1] == summary, r.stdout + r.stderr
    return out


@pytest.mark.parametrize("family", FAMILIES)
def test_family_matches_reference(family, outcomes):
    count, unconverted, failed = outcomes[family]
    assert count > 0
    assert not unconverted, "conversion failed:\n" + "\n".join(unconverted)
    assert not failed, "\n".join(failed)


def test_resize_crop_expectations_agree_with_onnxruntime(tmp_path):
    """The tf_crop_and_resize family's expected outputs (numpy: onnx's reference, or crop_nearest for
    nearest) are what onnxruntime computes, including the cases whose positions fall halfway."""
    from vnncomp import ortref
    if not ortref.available():
        pytest.skip("onnxruntime is not installed")
    for case in forms_resize.resize_crop():
        forms_cases.write_case(case, tmp_path / case.name)
        inputs, outputs = case.sets[0]
        got = ortref.run(str(tmp_path / case.name / "model.onnx"), {"x": inputs[0]})[0]
        assert got.shape == outputs[0].shape, case.name
        tolerance = 0 if "nearest" in case.name else 1e-5 * max(1.0, float(np.abs(outputs[0]).max()))
        assert np.abs(got.astype(np.float64) - outputs[0]).max() <= tolerance, case.name
