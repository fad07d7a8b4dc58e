"""`propdag verify` on the 45 ACAS Xu networks with properties 1-4: a table of verdicts and times,
and a sampling check (onnxruntime, 10,000 points per instance) that no `verified` instance has a
counterexample."""

import gzip
import os
import re
import time

import numpy as np
import pytest

import sampling
from vnncomp import vnnlib

ACAS = os.path.join(sampling.BENCH, "acasxu_2023")
POINTS = int(os.environ.get("PROPDAG_POINTS", "10000"))


def unsafe_constraints(spec):
    """[(coef, rhs)] meaning coef . y <= rhs, from asserts over Y (props 1-4 are one conjunction
    of `(<= a b)` / `(>= a b)` with a, b an output or a number). Written independently of
    propdag's reader."""
    text = gzip.open(spec, "rt").read() if spec.endswith(".gz") else open(spec).read()
    out = []
    for op, a, b in re.findall(r"\(assert \((<=|>=) (\S+) (\S+)\)\)", text):
        if not (a.startswith("Y_") or b.startswith("Y_")):
            continue
        if op == ">=":
            a, b = b, a
        coef, rhs = np.zeros(5), 0.0
        for term, sign in ((a, 1.0), (b, -1.0)):  # a - b <= 0
            if term.startswith("Y_"):
                coef[int(term[2:])] += sign
            else:
                rhs -= sign * float(term)
        out.append((coef, rhs))
    return out


def counterexamples(y, constraints):
    ok = np.ones(len(y), dtype=bool)
    for coef, rhs in constraints:
        ok &= y @ coef <= rhs
    return int(ok.sum())


@pytest.mark.skipif(not os.path.isdir(ACAS), reason="no ACAS Xu benchmark")
@pytest.mark.skipif(not sampling.ortref.available(), reason="no onnxruntime")
def test_verify_acasxu_props_1_to_4():
    rng = np.random.default_rng(4)
    models = sorted(os.listdir(os.path.join(ACAS, "onnx")))
    assert len(models) == 45
    rows, wrong = [], []
    totals = {}
    for m in models:
        path = os.path.join(ACAS, "onnx", m)
        cells = []
        for prop in range(1, 5):
            spec = os.path.join(ACAS, "vnnlib", f"prop_{prop}.vnnlib.gz")
            t0 = time.time()
            rc, out, err = sampling.propdag("verify", path, spec)
            ms = (time.time() - t0) * 1000
            assert rc == 0, err
            verdict = out.strip()
            lo, hi = vnnlib.read(spec).boxes[0]
            points, _, _ = sampling.sample(lo, hi, POINTS, rng)
            y, _ = sampling.evaluate(path, points)
            cex = counterexamples(y, unsafe_constraints(spec))
            if verdict == "verified" and cex:
                wrong.append(f"{m} prop_{prop}: verified but {cex} sampled counterexamples")
            key = (prop, verdict, cex > 0)
            totals[key] = totals.get(key, 0) + 1
            cells.append(f"{verdict[0].upper()}{'*' if cex else ' '} {ms:6.0f}ms")
        rows.append(f"{m.split('_batch')[0]:22} " + " | ".join(cells))
    print("\nnetwork                prop_1       | prop_2       | prop_3       | prop_4")
    print("(V verified, U unknown, * sampling found a counterexample; time of the whole CLI call)")
    print("\n".join(rows))
    for prop in range(1, 5):
        v = totals.get((prop, "verified", False), 0)
        u = totals.get((prop, "unknown", False), 0) + totals.get((prop, "unknown", True), 0)
        c = totals.get((prop, "unknown", True), 0)
        print(f"prop_{prop}: {v} verified, {u} unknown ({c} with a sampled counterexample)")
    assert not wrong, "\n".join(wrong)
