"""Long-lived validation process: `/usr/bin/python3 -m vnncomp.worker`.

Reads one JSON request per line on stdin and answers one JSON line each on its original stdout
(fd 1 is then pointed at stderr so that nothing the generated code prints can corrupt the
protocol). A request names the ONNX file, the generated .py/.pth, the input box and the devices;
the answer holds the row fields of report.py (status, error, max errors, check results).
"""

import gc
import importlib
import itertools
import json
import math
import os
import sys
import time
import traceback

from . import float64, memplan, numerics, onnxinfo, vnnlib

CHECK_FIELDS = ("vmap", "trace", "export", "batch", "vmap_gpu")


def one_line(e):
    text = " | ".join(line.strip() for line in str(e).splitlines() if line.strip())
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


_box_cache = {}
_exports = itertools.count()


def _box_of(path):
    if path not in _box_cache:
        spec = vnnlib.read(path)
        _box_cache[path] = (spec.num_inputs, spec.lower, spec.upper)
    return _box_cache[path]


def choose_box(req, total):
    """(lower, upper, label): the model's vnnlib, else the first fallback with `total` inputs."""
    if req.get("vnnlib"):
        n, lo, hi = _box_of(req["vnnlib"])
        return lo, hi, os.path.basename(req["vnnlib"])
    for path in req.get("fallback_vnnlib") or []:
        try:
            n, lo, hi = _box_of(path)
        except (OSError, ValueError):
            continue
        if n == total:
            return lo, hi, os.path.basename(path) + " (other instance)"
    return None, None, "[-1, 1]"


class Row(dict):
    """Result fields; the first recorded problem becomes the row's status and error."""

    def problem(self, status, message):
        if self.get("status", "pass") == "pass":
            self["status"], self["error"] = status, message

    def check(self, name, fn, tol, counts=True):
        """Runs a (error, reason) check and records ok/fail under `name`; a failure fails the row
        when `counts`."""
        try:
            err, why = fn()
        except Exception as e:  # noqa: BLE001 - the generated code may raise anything
            err, why = math.inf, one_line(e)
        if err <= tol:
            self[name] = "ok"
            return
        self[name] = "fail"
        if counts:
            self.problem("fail", f"{name}: {why or f'max error {err:.3g} > {tol:g}'}")


# float64 vmap and the float64 loop must agree to this (relative) error for a float32 vmap
# difference to count as rounding.
FLOAT64_AGREEMENT = 1e-9


def _vmap(row, checks, key, model, specs, many, loop, tol, device):
    """vmap over the batch against the per-sample loop. A float32 difference above `tol` still
    passes when it is float32 rounding: float64 vmap equals the float64 loop, and the difference
    is within twice the float32 loop's own error against float64 (both float32 results are that
    close to the exact one). The raw numbers go to <key>_error, <key>_float64_error and
    <key>_float32_noise."""
    try:
        err, why = checks.vmap_check(model, specs, many, device, loop)
    except Exception as e:  # noqa: BLE001 - the generated code may raise anything
        err, why = math.inf, one_line(e)
    row[f"{key}_error"] = err if math.isfinite(err) else None
    if err <= tol:
        row[key] = "ok"
        return
    if why is None and math.isfinite(err):
        try:
            err64, noise = checks.vmap_float64_check(model, specs, many, loop, device)
        except Exception:  # noqa: BLE001 - no float64 run: the float32 verdict stands
            err64, noise = math.inf, math.inf
        if math.isfinite(err64):
            row[f"{key}_float64_error"], row[f"{key}_float32_noise"] = err64, noise
        if err64 <= FLOAT64_AGREEMENT and err <= 2 * noise:
            row[key] = "ok"
            return
    row[key] = "fail"
    row.problem("fail", f"{key}: {why or f'max error {err:.3g} > {tol:g}'}")


def _meta(row, checks, model, specs, feeds):
    """checks.meta_check: a device mismatch fails the row; an op that cannot run on the meta
    device (no meta kernel, or data-dependent) leaves "n/a"."""
    try:
        err, why = checks.meta_check(model, specs, feeds)
    except Exception as e:  # noqa: BLE001 - the generated code may raise anything
        if "device" not in str(e).lower():
            row["meta_device"] = "n/a"
            return
        err, why = math.inf, one_line(e)
    row["meta_device"] = "ok" if err == 0.0 else "fail"
    if why:
        row.problem("fail", f"meta_device: {why}")


def _fair_accuracy(row, checks, model, specs, feeds, refs, tol, device="cpu", gpu=False):
    """max_error_cpu (`gpu`: max_error_gpu, run on `device`) against onnxruntime. Over `tol`, the
    generated code run in float64 on the CPU is the judge (float64.fair_pass): the row passes as
    float32 rounding when ours is within twice onnxruntime's own distance from it and onnxruntime
    is within 1e-4 of it. reference_error and float64_error (float64_error_gpu) record both
    distances; accuracy_verdict (accuracy_verdict_gpu) says which rule passed."""
    key, suffix = ("max_error_gpu", "_gpu") if gpu else ("max_error_cpu", "")
    try:
        ours = [checks.run(model, f, specs, device) for f in feeds]
    except Exception as e:  # noqa: BLE001
        row.problem("fail", f"{key}: {one_line(e)}")
        return
    err, why = 0.0, None
    for got, ref in zip(ours, refs):
        e, w = numerics.compare(got, ref)
        err, why = max(err, e), why or w
    row[key] = err if math.isfinite(err) else None
    if err <= tol:
        row["accuracy_verdict" + suffix] = "within tolerance"
        return
    gap = float64.gaps(model, specs, feeds, refs, ours) if why is None else None
    if gap is not None:
        row["reference_error"], row["float64_error" + suffix] = gap
    if why is None and float64.fair_pass(err, tol, gap):
        row["accuracy_verdict" + suffix] = "float32 rounding"
        return
    msg = why or f"max error {err:.3g} > {tol:g}"
    if gap is not None:
        msg += f" (onnxruntime is {gap[0]:.3g} from the float64 result, ours {gap[1]:.3g})"
    row.problem("fail", f"{key}: {msg}")


def _semantic(row, req, model, specs, feeds):
    """float64_semantic: the ONNX model in double by onnxruntime against the generated code in
    float64, at 1e-9 (float64.semantic_error); "n/a" where onnxruntime lacks a double kernel.
    Recorded, not deciding the row's status."""
    if not req.get("semantic", True):
        return
    try:
        err, why = float64.semantic_error(req["onnx"], model, specs, feeds[:2], req.get("scratch"))
    except Exception as e:  # noqa: BLE001 - diagnostic: cannot tell
        err, why = None, one_line(e)
    row["float64_semantic_error"] = err
    if err is None:
        row["float64_semantic"] = "n/a"
        row["float64_semantic_why"] = why
        return
    # Informational: slimonnx folds constants (BatchNorm into Conv, merged products) in float32,
    # so slimmed weights differ from the model's by float32 rounding, which float64 sees; and
    # Floor/Round/comparisons turn 1e-16 differences into whole steps.
    row["float64_semantic"] = "ok" if err <= float64.SEMANTIC_LIMIT else "fail"


def validate(req):
    from . import checks
    row = Row(status="pass", error="")
    tol = float(req.get("tolerance", 1e-5))
    try:
        proto = onnxinfo.load(req["onnx"])
        row["nodes_before"] = onnxinfo.node_count(proto)
        specs = onnxinfo.inputs(proto)
        activations = (req["activation_bytes"] if "activation_bytes" in req
                       else memplan.activation_bytes(proto))
        del proto
    except Exception as e:  # noqa: BLE001
        row.problem("error", f"cannot read model: {one_line(e)}")
        return row
    lo, hi, row["box"] = choose_box(req, sum(s.size for s in specs))
    points, seed = int(req.get("points", 5)), int(req.get("seed", 0))
    feeds = numerics.make_points(specs, lo, hi, points, seed)
    try:
        refs = checks.reference(req["onnx"], feeds)
    except Exception as e:  # noqa: BLE001
        row.problem("error", f"onnxruntime: {one_line(e)}")
        return row
    try:
        model = checks.load_module(req["py"], req["pth"], req.get("class_name"))
    except Exception as e:  # noqa: BLE001
        row.problem("error", f"load: {one_line(e)}")
        return row
    devices = req.get("devices") or ["cpu"]
    cpu = "cpu" in devices
    if cpu:
        _fair_accuracy(row, checks, model, specs, feeds, refs, tol)
        _semantic(row, req, model, specs, feeds)
    # Sized to the model's activations (memplan): 64 feeds unless that would not fit the budget.
    row["vmap_samples"] = memplan.vmap_samples(activations)
    many = numerics.make_points(specs, lo, hi, row["vmap_samples"] - 1, seed + 1)
    loop = []
    try:
        loop = [checks.run(model, f, specs) for f in many]
    except Exception as e:  # noqa: BLE001
        row.problem("fail", f"forward: {one_line(e)}")
    if cpu:
        _cpu_checks(row, checks, model, specs, feeds, refs, many, loop, tol, req.get("scratch"))
    if "cuda" in devices:
        _cuda(row, checks, model, specs, feeds, refs, many, loop, tol)
    checks.unload_all()
    return row


def _cpu_checks(row, checks, model, specs, feeds, refs, many, loop, tol, scratch):
    if loop:
        _vmap(row, checks, "vmap", model, specs, many, loop, tol, "cpu")
        if all(s.batched for s in specs):
            size = memplan.batch_size(len(many))
            row.check("batch", lambda: checks.batch_check(model, specs, many, loop, size), tol,
                      False)
    row.check("trace", lambda: checks.trace_check(model, specs, feeds), tol)
    row.check("torch_export", lambda: checks.torch_export_check(model, specs, feeds), tol)
    _meta(row, checks, model, specs, feeds)
    # A new name per model: onnxruntime sessions are cached by path, size and mtime.
    path = os.path.join(scratch or "/tmp", f"export_{os.getpid()}_{next(_exports)}.onnx")
    row.check("export", lambda: checks.export_check(model, specs, feeds, refs, path), tol)


def _cuda(row, checks, model, specs, feeds, refs, many, loop, tol):
    """The CPU comparison again on the GPU (TF32 off), and vmap on the GPU vs the GPU loop."""
    if not checks.cuda_available():
        row.problem("error", "cuda: not available")
        return
    checks.disable_tf32()
    gpu = checks.GPU
    try:
        model = model.to(gpu)
    except Exception as e:  # noqa: BLE001
        row.problem("fail", f"cuda: {one_line(e)}")
        return
    _fair_accuracy(row, checks, model, specs, feeds, refs, tol, gpu, gpu=True)
    if loop:
        # Against the loop on the GPU: vmap's batching is what this checks; the GPU's rounding
        # against onnxruntime is max_error_gpu's. (On an H200 the CPU loop put vmap_gpu 3.05e-5
        # from pensieve_mid_parallel's float32 CPU results, a model rounding puts 2.3e-5 from
        # onnxruntime.)
        _vmap(row, checks, "vmap_gpu", model, specs, many, checks.per_sample(model, many, specs, gpu),
              tol, gpu)


def _peak_rss(reset=False):
    """The process's peak resident memory in MiB (VmHWM), None where /proc does not say; `reset`
    starts a new peak (Linux: 5 to clear_refs) and returns None."""
    try:
        if reset:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            return None
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) >> 10
    except (OSError, ValueError, IndexError):
        pass
    return None


def serve(inp, out):
    import torch
    torch.set_num_threads(max(1, int(os.environ.get("VNNCOMP_THREADS", "1"))))
    importlib.import_module(".checks", __package__)  # import everything before saying ready
    out.write("ready\n")
    out.flush()
    for line in inp:
        if not line.strip():
            continue
        req = json.loads(line)
        start = time.monotonic()
        _peak_rss(reset=True)
        try:
            row = validate(req)
        except Exception as e:  # noqa: BLE001 - a harness bug must not kill the worker
            traceback.print_exc()
            row = Row(status="error", error=f"worker: {one_line(e)}")
        row["validate_s"] = round(time.monotonic() - start, 3)
        row["worker_peak_rss_mb"] = _peak_rss()
        row["id"] = req.get("id")
        gc.collect()
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.empty_cache()
        out.write(json.dumps(row) + "\n")
        out.flush()


def main():
    import faulthandler
    faulthandler.enable()
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    serve(sys.stdin, out)


if __name__ == "__main__":
    main()
