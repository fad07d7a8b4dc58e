"""Soundness of propdag on real VNN-COMP networks.

For every model (with the first property listed for it in instances.csv), IBP, CROWN and
alpha-CROWN bounds (also with every intermediate node's bounds tuned, `--alpha-intermediate`)
from `propdag bounds --json` must contain the outputs that onnxruntime computes for 10,000
uniform points of the property's input box plus its corners (all 2^n corners up to n = 11
inputs, else 2,000 random corners; fewer points and corners for image models, MAX_FLOATS below).
Models not listed in instances.csv take a listed property with the same input count, else
the box [0, 1]^n. Models with an op that has no bound rule, and models whose
bounds are unbounded (a division by an interval holding 0), are listed and skipped outside the
required benchmarks; any other failure, and any point outside the bounds, fails the test. alpha's
bounds must also lie within CROWN's on every output (it starts from CROWN's relaxation and keeps
its best bound). Prints one line per model.

CI runs a sample: the first PROPDAG_PER_BENCH models of each benchmark (default 1, so every
benchmark's architecture and ops) and the models of EXTRA (ops no first model bounds: MaxPool,
Tanh; 33 s and 20 s) with PROPDAG_POINTS points (default 2,000 + corners), CROWN and alpha at
PROPDAG_REFINE_BUDGET (default 2e8: intermediate bounds whose backward pass costs more keep IBP's,
which keeps the sample at about a minute; `bounds`' own default refines up to a total of 1e10 and
took 354 s here). The full run, every model with 10,000 points and `bounds`' defaults, is
benchmarks/propdag_soundness.sh.
"""

import os
import re
import time

import numpy as np
import pytest

import sampling
from vnncomp import vnnlib

# Benchmarks whose every model must be supported (nn4sys: the lindex models).
REQUIRED = {"acasxu_2023", "tllverifybench_2023", "safenlp", "cora", "collins_rul_cnn_2023",
            "dist_shift_2023", "linearizenn", "metaroom_2023", "test"}
EXTRA = ("traffic_signs_recognition_2023/3_48_48_QConv_32_5_MP_2",
         "cgan_2023/cGAN_imgSz32_nCh_3_nonlinear_activations")
POINTS = int(os.environ.get("PROPDAG_POINTS", "2000"))
BUDGET = os.environ.get("PROPDAG_REFINE_BUDGET", "2e8")  # empty: bounds' default
LINEAR = ("--refine-budget", BUDGET) if BUDGET else ()
PER_BENCH = int(os.environ.get("PROPDAG_PER_BENCH", "1"))  # 0: every model
# Image models make 10,000 points expensive to push through onnxruntime (metaroom: 10,000 x 5,376
# floats; TinyYOLO's 21,125 outputs per point); cap the floats in and out per sample so the whole
# run fits CI, at no fewer than 1,000 points plus as many random corners. Models with up to 2,500
# inputs and outputs (all MLPs) keep the full 10,000 points; the count used is printed per model.
MAX_FLOATS = float(os.environ.get("PROPDAG_MAX_FLOATS", "2.5e7"))


def required(bench, model):
    return bench in REQUIRED or (bench == "nn4sys_2023" and "lindex" in os.path.basename(model))


def check(bench, model, spec, rng):
    """One line of the report, and a failure message or None."""
    name = f"{bench}/{os.path.basename(model)}"
    if "propdag_boxes" in spec:
        name += " (no property with its input count: box [0, 1]^n)"
    t0 = time.time()
    try:
        ibp = sampling.bounds(model, spec, "ibp")
        crown = sampling.bounds(model, spec, "crown", *LINEAR)
        alpha = sampling.bounds(model, spec, "alpha", *LINEAR)
        tuned = sampling.bounds(model, spec, "alpha", "--alpha-intermediate", *LINEAR)
    except RuntimeError as e:
        if "no bound rule" in str(e) and not required(bench, model):
            return f"{name}: skipped ({str(e).split(': ')[-1]})", None
        return f"{name}: ERROR {e}", f"{name}: {e}"
    unbounded = int(np.sum(~np.isfinite(ibp[0]) | ~np.isfinite(ibp[1]) |
                           ~np.isfinite(crown[0]) | ~np.isfinite(crown[1]) |
                           ~np.isfinite(alpha[0]) | ~np.isfinite(alpha[1]) |
                           ~np.isfinite(tuned[0]) | ~np.isfinite(tuned[1])))
    if unbounded:
        # Sound but says nothing (a division by an interval holding 0, as mscn's mean over a
        # mask that the box [0, 1]^n allows to be all zero): listed, not counted as checked.
        line = f"{name}: unbounded ({unbounded} of {ibp[0].size} outputs have an infinite bound)"
        return (line, f"{name}: unbounded outputs") if required(bench, model) else (line, None)
    boxes = vnnlib.read(spec).boxes
    lo = np.min([b[0] for b in boxes], axis=0)
    hi = np.max([b[1] for b in boxes], axis=0)
    n_points = max(min(POINTS, 1000), min(POINTS, int(MAX_FLOATS // max(1, lo.size + ibp[0].size))))
    points, corners, all_corners = sampling.sample(lo, hi, n_points, rng,
                                                   max_corners=min(2000, n_points))
    y, mode = sampling.evaluate(model, points)
    bad_ibp, worst_ibp = sampling.violations(y, ibp[0], ibp[1])
    bad_crown, worst_crown = sampling.violations(y, crown[0], crown[1])
    bad_alpha, worst_alpha = sampling.violations(y, alpha[0], alpha[1])
    bad_tuned, worst_tuned = sampling.violations(y, tuned[0], tuned[1])
    tol = 1e-9 * (1 + crown[1] - crown[0])
    looser = int(np.sum((alpha[0] < crown[0] - tol) | (alpha[1] > crown[1] + tol)))
    w_ibp = float(np.mean(ibp[1] - ibp[0]))
    w_crown = float(np.mean(crown[1] - crown[0]))
    w_alpha = float(np.mean(alpha[1] - alpha[0]))
    w_tuned = float(np.mean(tuned[1] - tuned[0]))
    line = (f"{name}: {len(points)} points ({corners} {'corners' if all_corners else 'random corners'}"
            f", ORT {mode}) violations IBP {bad_ibp} CROWN {bad_crown} alpha {bad_alpha} | mean "
            f"width IBP {w_ibp:.4g} CROWN {w_crown:.4g} alpha {w_alpha:.4g} tuned nodes "
            f"{w_tuned:.4g} (violations {bad_tuned}) | ms IBP {ibp[2]:.1f} CROWN {crown[2]:.1f} "
            f"alpha {alpha[2]:.1f} tuned nodes {tuned[2]:.1f} | {time.time() - t0:.1f}s")
    if bad_ibp or bad_crown or bad_alpha or bad_tuned:
        return line, (f"{name}: {bad_ibp} IBP / {bad_crown} CROWN / {bad_alpha} alpha / "
                      f"{bad_tuned} tuned-nodes alpha violations (worst {worst_ibp:.3g} / "
                      f"{worst_crown:.3g} / {worst_alpha:.3g} / {worst_tuned:.3g} of the bound "
                      "scale)")
    if looser:
        return line, f"{name}: alpha looser than CROWN on {looser} outputs"
    return line, None


@pytest.mark.skipif(not os.path.isdir(sampling.BENCH), reason="no VNN-COMP benchmarks")
@pytest.mark.skipif(not sampling.ortref.available(), reason="no onnxruntime")
def test_bounds_contain_sampled_outputs():
    rng = np.random.default_rng(2024)
    failures, checked = [], 0
    only = os.environ.get("PROPDAG_ONLY", "")
    taken = {}
    for bench, model, spec in sampling.instances(lazy=True):
        if only and not re.search(only, model):
            continue
        taken[bench] = taken.get(bench, 0) + 1
        extra = any(f"{bench}/{os.path.basename(model)}".startswith(e) for e in EXTRA)
        if PER_BENCH and taken[bench] > PER_BENCH and not extra:
            continue
        line, failure = check(bench, model, sampling.spec(spec), rng)
        print(line, flush=True)
        checked += failure is None and "skipped" not in line and "unbounded" not in line
        if failure:
            failures.append(failure)
    print(f"{checked} models sound, {len(failures)} failures")
    assert not failures, "\n".join(failures)
