"""The vmap check: float32 vmap against the per-sample loop, and its float64 repetition that tells a
vmap bug (the float64 results disagree too) from float32 rounding (worker._vmap)."""

import math
import types

import numpy as np
import pytest
import torch

from vnncomp import checks, numerics, onnxinfo, worker

TOL = 1e-5


def rule(err, why=None, err64=0.0, noise=0.0, raises=False):
    """worker._vmap's verdict and row for given check results (a stand-in for vnncomp.checks)."""
    def float64_check(*args):
        if raises:
            raise RuntimeError("no float64")
        return err64, noise
    stub = types.SimpleNamespace(vmap_check=lambda *a: (err, why), vmap_float64_check=float64_check)
    row = worker.Row(status="pass", error="")
    worker._vmap(row, stub, "vmap", None, None, None, None, TOL, "cpu")
    return row


def test_within_tolerance_passes_without_float64_run():
    row = rule(3e-6, err64=math.inf)
    assert row["vmap"] == "ok" and row["vmap_error"] == 3e-6 and "vmap_float64_error" not in row


def test_float32_rounding_passes_with_its_numbers():
    row = rule(1.3e-5, err64=2e-14, noise=1.1e-5)
    assert row["vmap"] == "ok" and row["status"] == "pass"
    assert row["vmap_float64_error"] == 2e-14 and row["vmap_float32_noise"] == 1.1e-5


@pytest.mark.parametrize("err64, noise, raises", [
    (1e-3, 1e-5, False),    # float64 disagrees too: a vmap bug
    (1e-14, 5e-6, False),   # more than twice the float32 loop's own error
    (0.0, 0.0, True),       # no float64 run: the float32 verdict stands
])
def test_other_differences_fail(err64, noise, raises):
    row = rule(1.3e-5, err64=err64, noise=noise, raises=raises)
    assert row["vmap"] == "fail" and row["status"] == "fail"
    assert row["error"] == "vmap: max error 1.3e-05 > 1e-05"


def test_shape_mismatch_fails_without_float64_run():
    row = rule(math.inf, why="output 0 has shape [2], expected [3]", err64=0.0, noise=1.0)
    assert row["vmap"] == "fail" and row["error"] == "vmap: output 0 has shape [2], expected [3]"


class Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(x).relu()


class CountsCalls(Linear):
    """Adds how often it was called: a loop of 8 calls and one vmap call disagree."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return super().forward(x) + self.calls


def real(model):
    torch.manual_seed(0)
    specs = [onnxinfo.InputSpec("x", (1, 4), np.dtype(np.float32), True)]
    feeds = numerics.make_points(specs, None, None, 7, 0)
    loop = [checks.run(model, f, specs) for f in feeds]
    row = worker.Row(status="pass", error="")
    worker._vmap(row, checks, "vmap", model, specs, feeds, loop, TOL, "cpu")
    return row


def test_real_model_passes():
    row = real(Linear().eval())
    assert row["vmap"] == "ok" and row["vmap_error"] <= 1e-6


def test_real_vmap_bug_fails_in_float64_too():
    row = real(CountsCalls().eval())
    assert row["vmap"] == "fail" and row["vmap_error"] > 1
    assert row["vmap_float64_error"] > 0.1


class MakesCpuTensor(Linear):
    """Adds a tensor made inside forward without a device: right on the CPU, a crash on a GPU."""

    def forward(self, x):
        return super().forward(x) + torch.ones(3)


class OneHotOfArgmax(Linear):
    """one_hot must read its input's values to size its output: no meta kernel can run it."""

    def forward(self, x):
        return torch.nn.functional.one_hot(super().forward(x).argmax(1))


def checked_row(check, points):
    """The row after check(row, specs, feeds) on the centre and `points` points of a [1, 4] box."""
    specs = [onnxinfo.InputSpec("x", (1, 4), np.dtype(np.float32), True)]
    row = worker.Row(status="pass", error="")
    check(row, specs, numerics.make_points(specs, None, None, points, 0))
    return row


def meta_row(model):
    row = checked_row(lambda row, specs, feeds: worker._meta(row, checks, model, specs, feeds), 1)
    assert next(model.parameters()).device.type == "cpu"  # the check works on a copy
    return row


def test_meta_device_passes_a_model_that_keeps_to_its_device():
    row = meta_row(Linear().eval())
    assert (row["meta_device"], row["status"]) == ("ok", "pass")


def test_meta_device_fails_a_tensor_made_on_the_cpu_in_forward():
    row = meta_row(MakesCpuTensor().eval())
    assert (row["meta_device"], row["status"]) == ("fail", "fail")
    assert row["error"].startswith("meta_device:") and "device" in row["error"]


def test_meta_device_is_not_applicable_to_data_dependent_ops():
    row = meta_row(OneHotOfArgmax().eval())
    assert (row["meta_device"], row["status"]) == ("n/a", "pass")


class BranchesOnValue(Linear):
    """Python control flow on a tensor's value: eager and jit.trace run it, graph capture cannot."""

    def forward(self, x):
        y = super().forward(x)
        return y * 2 if y.sum() > 0 else y


def export_row(model):
    return checked_row(lambda row, specs, feeds: row.check(
        "torch_export", lambda: checks.torch_export_check(model, specs, feeds), TOL), 3)


def test_torch_export_captures_a_functional_model():
    row = export_row(Linear().eval())
    assert (row["torch_export"], row["status"]) == ("ok", "pass")


def test_torch_export_fails_python_branching_on_values():
    row = export_row(BranchesOnValue().eval())
    assert (row["torch_export"], row["status"]) == ("fail", "fail")
    assert row["error"].startswith("torch_export:")
