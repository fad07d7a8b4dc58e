"""`propdag bounds|verify --engine torch`: the same bounds (ibp, crown, alpha) and verdicts as the
Eigen engine on ACAS Xu, a conv net and (ibp, crown) an ml4acopf model, --batch slices, float32,
one-line errors with exit code 2, and verify's batches tuned only while alpha pays."""

import json
import os
import subprocess
import time

import numpy as np
import pytest

import alpha_pays_test
import sampling

PROPDAG = os.environ.get("PROPDAG", "build/propdag/propdag")
BENCH = os.environ.get("VNNCOMP_BENCHMARKS", "../shared/vnncomp2024/benchmarks")


def shared(rel):
    path = os.path.join(BENCH, rel)
    for p in (path, path + ".gz"):
        if os.path.exists(p):
            return p
    pytest.skip("shared benchmarks absent: " + rel)


ACAS = ("acasxu_2023/onnx/ACASXU_run2a_1_1_batch_2000.onnx", "acasxu_2023/vnnlib/prop_1.vnnlib")
COLLINS = ("collins_rul_cnn_2023/onnx/NN_rul_small_window_20.onnx",
           "collins_rul_cnn_2023/vnnlib/robustness_2perturbations_delta5_epsilon10_w20.vnnlib")
# Products of two variables (McCormick planes, a per-box linear step in the torch engine), Sin, Cos.
ACOPF = ("ml4acopf_2024/onnx/14_ieee_ml4acopf.onnx", "ml4acopf_2024/vnnlib/14_ieee_prop2.vnnlib")


def run(*args):
    return subprocess.run([PROPDAG, *args], capture_output=True, text=True, timeout=600)


def bounds(model, spec, *extra):
    r = run("bounds", model, "--vnnlib", spec, "--json", *extra)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)["outputs"]
    return [v for o in out for v in o["lower"]], [v for o in out for v in o["upper"]]


def close(a, b, tol):
    return all(abs(x - y) <= tol * max(1.0, abs(x), abs(y)) for x, y in zip(a, b)) and len(a) == len(b)


@pytest.mark.parametrize("case,method", [(c, m) for c in (ACAS, COLLINS)
                                         for m in ("ibp", "crown", "alpha")]
                         + [(ACOPF, "ibp"), (ACOPF, "crown")])
def test_bounds_equal_eigen(case, method):
    model, spec = shared(case[0]), shared(case[1])
    lo, hi = bounds(model, spec, "--method", method)
    tlo, thi = bounds(model, spec, "--method", method, "--engine", "torch", "--device", "cpu")
    assert close(lo, tlo, 1e-9) and close(hi, thi, 1e-9), (lo, tlo, hi, thi)
    flo, fhi = bounds(model, spec, "--method", method, "--engine", "torch", "--dtype", "float32")
    scale = 1 + max(abs(v) for v in lo + hi)
    assert max(abs(a - b) for a, b in zip(lo + hi, flo + fhi)) <= 1e-3 * scale


def test_batch_slices_are_sound_and_tighter():
    model, spec = shared(ACAS[0]), shared(ACAS[1])
    lo, hi = bounds(model, spec)
    blo, bhi = bounds(model, spec, "--engine", "torch", "--batch", "16")
    # The hull of 16 slices' CROWN bounds: within the whole box's bounds' span, and no looser.
    assert all(b >= a - 1e-9 * max(1, abs(a)) for a, b in zip(lo, blo))
    assert all(b <= a + 1e-9 * max(1, abs(a)) for a, b in zip(hi, bhi))
    assert sum(h - l for l, h in zip(blo, bhi)) < sum(h - l for l, h in zip(lo, hi))


def test_verify_acasxu_same_verdicts():
    model = shared(ACAS[0])
    for prop in ("prop_1", "prop_2"):
        spec = shared("acasxu_2023/vnnlib/%s.vnnlib" % prop)
        e = run("verify", model, spec, "--split", "2000", "--timeout", "20")
        t = run("verify", model, spec, "--split", "2000", "--timeout", "20", "--engine", "torch",
                "--batch", "64")
        assert e.returncode == 0 and t.returncode == 0, (e.stderr, t.stderr)
        ev, tv = e.stdout.split()[0], t.stdout.split()[0]
        # A falsified verdict must be found by both; neither engine may contradict the other.
        assert {ev, tv} != {"verified", "falsified"}, (ev, tv)


VIT = ("vit_2023/onnx/pgd_2_3_16.onnx", "vit_2023/vnnlib/pgd_2_3_16_2439.vnnlib")


def stats_line(err):
    return json.loads(next(line for line in err.splitlines() if line.startswith('{"crown"')))["crown"]


def test_stats_name_the_ops_bounded_box_by_box():
    """--stats names the op types the torch engine bounds one box at a time (here the ViT's
    Softmax and its products of two variables); none on ACAS Xu; no such key for the Eigen engine."""
    for case, expected in ((VIT, ["MatMul", "Softmax"]), (ACAS, [])):
        model, spec = shared(case[0]), shared(case[1])
        for verb in (["bounds", model, "--vnnlib", spec], ["verify", model, spec]):
            r = run(*verb, "--method", "crown", "--refine-budget", "0", "--stats", "--engine",
                    "torch")
            assert r.returncode == 0, r.stderr
            assert stats_line(r.stderr)["per_box_ops"] == expected, r.stderr
    model, spec = shared(VIT[0]), shared(VIT[1])
    r = run("bounds", model, "--vnnlib", spec, "--refine-budget", "0", "--stats")
    assert r.returncode == 0 and "per_box_ops" not in stats_line(r.stderr), r.stderr


def test_errors_one_line_exit_2():
    model, spec = shared(ACAS[0]), shared(ACAS[1])
    r = run("bounds", model, "--vnnlib", spec, "--engine", "torch", "--device", "cuda")
    if r.returncode == 0:
        pytest.skip("a CUDA device is available")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "--device cuda" in r.stderr, r.stderr
    for bad in (["--engine", "jax"], ["--device", "tpu"], ["--dtype", "float16"], ["--batch", "0"],
                ["--device", "cuda"]):
        r = run("bounds", model, "--vnnlib", spec, *bad)
        assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1, (bad, r.stderr)


YOLO = ("yolo_2023/onnx/TinyYOLO.onnx", "yolo_2023/vnnlib/TinyYOLO_prop_000034_eps_1_255.vnnlib")


def test_tinyyolo_is_proved_by_one_full_crown_bound():
    """TinyYOLO (8,112 inputs, 5 of its 21,125 outputs in the property, which holds: VNN-COMP
    2024). At verify's refine budget its whole-box CROWN leaves 7 nodes to IBP and the outputs'
    lower bounds near -2e5, where one above -1 proves it; the Eigen engine's search then bounds
    the whole box once with full CROWN on the torch engine, whose convolution passes run over
    the windows of their coefficients: verified with 2 bound computations (about a minute on one
    core). With `--engine eigen` named it does not. No sampled point contradicts the verdict
    (onnxruntime, when present)."""
    model, spec = shared(YOLO[0]), shared(YOLO[1])
    r = run("verify", model, spec, "--split", "1000000000", "--timeout", "280", "--refine-budget",
            "1e9", "--stats")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[0] == "verified", (r.stdout, r.stderr)
    crown = stats_line(r.stderr)
    assert crown["ibp_budget"] == 7 and crown["cut_short"], r.stderr  # the budgeted whole box
    assert crown["refined"] == 7, r.stderr  # full CROWN's passes
    assert json.loads(r.stderr.strip().splitlines()[-1])["boxes"] == 2, r.stderr
    # --engine eigen asked for by name: no LibTorch, no full CROWN; the budgeted search stays open.
    r = run("verify", model, spec, "--split", "1000000000", "--timeout", "8", "--refine-budget",
            "1e9", "--stats", "--engine", "eigen")
    assert r.returncode == 0 and r.stdout.split("\n")[0] == "unknown", (r.stdout, r.stderr)
    assert stats_line(r.stderr)["refined"] == 0, r.stderr
    if not sampling.ortref.available():
        return
    (lo, hi), = sampling.vnnlib.read(spec).boxes
    rng = np.random.default_rng(5)
    points = (lo + (hi - lo) * rng.random((64, lo.size))).astype(np.float32)
    ys = sampling.evaluate(model, points)[0].reshape(64, -1)
    assert not np.all(ys[:, [84, 253, 422, 591, 760]] <= -1, axis=1).any()


def test_timeout_stops_a_full_crown_pass_between_chunks():
    """--timeout holds through the full-CROWN bound of a large input: a refinement pass the
    deadline overtakes stops between two chunks of rows, its node keeping its bounds (counted as
    left to IBP for the deadline). On TinyYOLO that bound takes about a minute; with 15 s the
    verdict comes at 15.5 s, 5 nodes left to IBP (with 30 s it came at 45 s when each pass ran to
    its end); with 8 s none is, the deadline passing before that bound begins."""
    model, spec = shared(YOLO[0]), shared(YOLO[1])
    start = time.monotonic()
    r = run("verify", model, spec, "--split", "1000000000", "--timeout", "15", "--stats")
    elapsed = time.monotonic() - start
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[0] == "unknown", r.stdout
    assert stats_line(r.stderr)["ibp_deadline"] >= 1, r.stderr
    assert elapsed < 15 + 5, elapsed  # the start-up (the model, LibTorch) and one chunk


@pytest.mark.skipif(not os.path.isdir(alpha_pays_test.LSNC), reason="no lsnc benchmark")
def test_verify_batches_tune_only_while_it_pays():
    """alpha_pays_test.py's lsnc case through the torch engine's batches: after the first 1,600
    halves, those of the Lyapunov case go to CROWN (a round of batches may pass the 8,000)."""
    assert 5000 < alpha_pays_test.lsnc_untuned("--engine", "torch") < 12000
