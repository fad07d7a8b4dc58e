"""`propdag verify` on the 45 ACAS Xu networks with properties 1-4: a table of verdicts and times,
and a sampling check (onnxruntime, 10,000 points per instance) that no `verified` instance has a
counterexample."""

import gzip
import json
import os
import re
import time

import numpy as np
import pytest

import sampling
from vnncomp import vnnlib

ACAS = os.path.join(sampling.BENCH, "acasxu_2023")
POINTS = int(os.environ.get("PROPDAG_POINTS", "10000"))
# More arguments for the table's `propdag verify` calls, e.g. "--split 1000000 --timeout 10".
VERIFY_ARGS = os.environ.get("PROPDAG_VERIFY_ARGS", "").split()


def needs_acasxu_and_onnxruntime(test):
    """Skips `test` without the ACAS Xu benchmark folder or without onnxruntime."""
    test = pytest.mark.skipif(not sampling.ortref.available(), reason="no onnxruntime")(test)
    return pytest.mark.skipif(not os.path.isdir(ACAS), reason="no ACAS Xu benchmark")(test)


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


def sampled_counterexamples(path, spec, rng):
    """How many of POINTS uniform points (and corners) of the spec's box onnxruntime finds in the
    unsafe set."""
    lo, hi = vnnlib.read(spec).boxes[0]
    points, _, _ = sampling.sample(lo, hi, POINTS, rng)
    return counterexamples(sampling.evaluate(path, points)[0], unsafe_constraints(spec))


def counterexamples(y, constraints):
    ok = np.ones(len(y), dtype=bool)
    for coef, rhs in constraints:
        ok &= y @ coef <= rhs
    return int(ok.sum())


@needs_acasxu_and_onnxruntime
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
            rc, out, err = sampling.propdag("verify", path, spec, *VERIFY_ARGS)
            ms = (time.time() - t0) * 1000
            assert rc == 0, err
            verdict = out.split("\n")[0]
            lo, hi = vnnlib.read(spec).boxes[0]
            points, _, _ = sampling.sample(lo, hi, POINTS, rng)
            y, _ = sampling.evaluate(path, points)
            cex = counterexamples(y, unsafe_constraints(spec))
            if verdict == "verified" and cex:
                wrong.append(f"{m} prop_{prop}: verified but {cex} sampled counterexamples")
            if verdict == "falsified" and not VERIFY_ARGS:
                wrong.append(f"{m} prop_{prop}: falsified without --split")
            key = (prop, verdict, cex > 0)
            totals[key] = totals.get(key, 0) + 1
            cells.append(f"{verdict[0].upper()}{'*' if cex else ' '} {ms:6.0f}ms")
        rows.append(f"{m.split('_batch')[0]:22} " + " | ".join(cells))
    print("\nnetwork                prop_1       | prop_2       | prop_3       | prop_4")
    print("(V verified, U unknown, F falsified, * sampling found a counterexample; time of the "
          f"whole CLI call{'; ' + ' '.join(VERIFY_ARGS) if VERIFY_ARGS else ''})")
    print("\n".join(rows))
    for prop in range(1, 5):
        v = totals.get((prop, "verified", False), 0)
        u = totals.get((prop, "unknown", False), 0) + totals.get((prop, "unknown", True), 0)
        c = totals.get((prop, "unknown", True), 0)
        f = totals.get((prop, "falsified", True), 0) + totals.get((prop, "falsified", False), 0)
        print(f"prop_{prop}: {v} verified, {f} falsified, {u} unknown ({c} with a sampled "
              "counterexample)")
    assert not wrong, "\n".join(wrong)


# Instances for --split: three that sampling shows violated (1_9 with props 3 and 4, 2_1 with
# prop 2) and three that sampling does not (1_1 with props 1 and 4, 5_9 with prop 1).
SPLIT_CASES = [("1_9", 3), ("1_9", 4), ("2_1", 2), ("1_1", 1), ("1_1", 4), ("5_9", 1)]
SPLIT = ["--split", "1000000", "--timeout", "120"]


def instance(net, prop):
    """Model and property files of ACAS Xu network `net` (e.g. "1_9") with property `prop`."""
    return (os.path.join(ACAS, "onnx", f"ACASXU_run2a_{net}_batch_2000.onnx.gz"),
            os.path.join(ACAS, "vnnlib", f"prop_{prop}.vnnlib.gz"))


def parse_counterexample(lines, n):
    x = np.full(n, np.nan)
    for line in lines:
        m = re.fullmatch(r"\(X_(\d+) (\S+)\)", line)
        assert m, line
        x[int(m.group(1))] = float(m.group(2))
    assert not np.isnan(x).any(), lines
    return x


@needs_acasxu_and_onnxruntime
def test_split_falsifies_what_sampling_violates_and_its_counterexamples_hold():
    rng = np.random.default_rng(5)
    for net, prop in SPLIT_CASES:
        path, spec = instance(net, prop)
        rc, out, err = sampling.propdag("verify", path, spec, *SPLIT)
        assert rc == 0, err
        lines = out.split("\n")[:-1]
        lo, hi = vnnlib.read(spec).boxes[0]
        constraints = unsafe_constraints(spec)
        points, _, _ = sampling.sample(lo, hi, POINTS, rng)
        sampled = counterexamples(sampling.evaluate(path, points)[0], constraints)
        name = f"{net} prop_{prop}"
        if sampled:
            assert lines[0] == "falsified", f"{name}: {sampled} sampled counterexamples, got {out}"
        assert lines[0] != "verified" or not sampled, name
        if lines[0] == "falsified":
            x = parse_counterexample(lines[1:], lo.size)
            assert np.all(x >= lo) and np.all(x <= hi), f"{name}: counterexample outside the box"
            # onnxruntime in float32 at the counterexample: within rounding of the unsafe set.
            y = sampling.evaluate(path, sampling.inside_float32(x[None, :], lo, hi))[0][0]
            for coef, rhs in constraints:
                assert coef @ y <= rhs + 1e-4 * max(1.0, abs(rhs)), f"{name}: {coef} . {y} > {rhs}"
        print(f"{name}: {lines[0]} (sampling: {sampled} counterexamples)")


def meets_some_case(y, spec, tol=1e-4):
    """Whether outputs y satisfy every output assertion of the spec (and/or of <=/>= over Y_i and
    numbers), each comparison within `tol` times the operands' scale: evaluated here from the
    s-expressions, independently of propdag's reader."""

    def value(t):
        return float(y[int(t[2:])]) if t.startswith("Y_") else float(t)

    def holds(e):
        if e[0] == "and":
            return all(holds(a) for a in e[1:])
        if e[0] == "or":
            return any(holds(a) for a in e[1:])
        a, b = value(e[1]), value(e[2])
        slack = tol * max(1.0, abs(a), abs(b))
        return a <= b + slack if e[0] == "<=" else a >= b - slack

    def mentions_y(e):
        return e.startswith("Y_") if isinstance(e, str) else any(mentions_y(a) for a in e)

    asserts = [e[1] for e in vnnlib._parse(vnnlib._text(spec)) if e and e[0] == "assert"]
    return all(holds(a) for a in asserts if mentions_y(a))


# Instances that the search before splitting falsifies (`--split 2` leaves no room for a split):
# six networks with prop 2, 2_9 with prop 8, whose unsafe set is a disjunction (two cases), and
# 1_9 with prop 7 (two cases), whose counterexamples lie along faces of the box: fewer than 1 in a
# million uniform points is one (13 of 20 million), and the search finds one among its samples
# on the faces.
SEARCH_CASES = [("1_2", 2), ("1_3", 2), ("3_2", 2), ("3_7", 2), ("4_9", 2), ("5_3", 2), ("2_9", 8),
                ("1_9", 7)]


@needs_acasxu_and_onnxruntime
def test_search_before_splitting_finds_counterexamples_that_onnxruntime_confirms():
    for net, prop in SEARCH_CASES:
        path, spec = instance(net, prop)
        rc, out, err = sampling.propdag("verify", path, spec, "--split", "2", "--stats")
        assert rc == 0, err
        lines = out.split("\n")[:-1]
        name = f"{net} prop_{prop}"
        assert lines[0] == "falsified", f"{name}: {out}"
        stats = json.loads(err.strip().split("\n")[-1])
        assert stats["boxes"] <= 2, f"{name}: {stats}"
        spec_data = vnnlib.read(spec)
        x = parse_counterexample(lines[1:], spec_data.boxes[0][0].size)
        y = sampling.evaluate(path, x[None, :].astype(np.float32))[0][0]
        # The point lies in one of the spec's input boxes and meets every constraint of one of
        # its output cases (onnxruntime's float32, within rounding).
        assert any(np.all(x >= lo) and np.all(x <= hi) for lo, hi in spec_data.boxes), name
        assert meets_some_case(y, spec), f"{name}: {y} meets no unsafe case"
        print(f"{name}: falsified, {stats['ms']:.0f} ms")


# Instances that splitting with every dimension tried left open after 20 s, and that the searches
# taking turns with different candidate dimensions (propdag/verify.cc, CaseSearch::run) prove in
# about 1.3 s here. Sampling with onnxruntime must find no counterexample to them.
ROUND_CASES = [("2_2", 3), ("4_9", 3), ("4_3", 1)]


@needs_acasxu_and_onnxruntime
def test_searches_taking_turns_prove_what_one_way_of_splitting_left_open():
    rng = np.random.default_rng(6)
    for net, prop in ROUND_CASES:
        path, spec = instance(net, prop)
        rc, out, err = sampling.propdag("verify", path, spec, "--split", "1000000000", "--timeout",
                                        "120", "--stats")
        assert rc == 0, err
        name = f"{net} prop_{prop}"
        assert out.split("\n")[0] == "verified", f"{name}: {out}"
        assert sampled_counterexamples(path, spec, rng) == 0, f"{name}: verified, yet sampled"
        stats = json.loads(err.strip().split("\n")[-1])
        print(f"{name}: verified, {stats['boxes']} boxes, {stats['ms']:.0f} ms")


def verify_with_budget(name, path, spec, budget, *args):
    """`propdag verify --split budget` (plus args): its verdict, after printing it with the
    bound computations and time from --stats."""
    rc, out, err = sampling.propdag("verify", path, spec, "--split", str(budget), *args, "--stats")
    assert rc == 0, err
    stats = json.loads(err.strip().split("\n")[-1])
    verdict = out.split("\n")[0]
    print(f"{' '.join([name, *args, '--split', str(budget)])}: {verdict}, {stats['boxes']} boxes, "
          f"{stats['ms']:.0f} ms")
    return verdict


def expect_verdicts(cases, seed, expected):
    """For each (net, prop, budget) of `cases`: `propdag verify --split budget` with each tuple of
    extra arguments in `expected` must give the verdict it maps to, and sampling with
    onnxruntime must find no counterexample (each `expected` holds a `verified`)."""
    rng = np.random.default_rng(seed)
    for net, prop, budget in cases:
        path, spec = instance(net, prop)
        name = f"{net} prop_{prop}"
        verdicts = {args: verify_with_budget(name, path, spec, budget, *args) for args in expected}
        assert verdicts == expected, f"{name}: {verdicts}"
        assert sampled_counterexamples(path, spec, rng) == 0, f"{name}: verified, yet sampled"


# alpha-CROWN's tighter bounds prove these with fewer bound computations than CROWN when each
# box's bounds are computed from the box alone (--no-carry-bounds; carried bounds bring CROWN
# close to alpha, see the next test): each is given a budget (`--split N`) between the two counts
# measured here (2_5 prop_1: CROWN 19,221, alpha 3,345; 3_9 prop_1: CROWN open after about
# 60,000, alpha 6,617; 1_1 prop_2: CROWN open after about 60,000, alpha 3,911), so CROWN must stop
# at `unknown` and alpha must reach `verified`. Sampling with onnxruntime must find no
# counterexample. Boxes are not clipped (--no-clip; the test after next).
ALPHA_CASES = [("2_5", 1, 6000), ("3_9", 1, 10000), ("1_1", 2, 8000)]


@needs_acasxu_and_onnxruntime
def test_alpha_proves_within_a_budget_that_crown_does_not():
    expect_verdicts(ALPHA_CASES, 7,
                    {("--method", "crown", "--no-carry-bounds", "--no-clip"): "unknown",
                     ("--method", "alpha", "--no-carry-bounds", "--no-clip"): "verified"})


# Open boxes are cut down to where the linear lower bounds of a case's four constraints can all
# be met, and bounded again while that leaves at most 90% (propdag/README.md): CROWN, each box's
# bounds from the box alone, proves 1_1 prop_2 in 2,981 bound computations, and is open after
# 100,000 without (--no-clip). Sampling with onnxruntime must find no counterexample.
CLIP_CASES = [("1_1", 2, 8000)]


@needs_acasxu_and_onnxruntime
def test_clipped_boxes_prove_within_a_budget():
    expect_verdicts(CLIP_CASES, 10,
                    {("--method", "crown", "--no-carry-bounds"): "verified",
                     ("--method", "crown", "--no-carry-bounds", "--no-clip"): "unknown"})


# Props 2-4 forbid one output being the largest or smallest: four constraints per case, all of
# which a counterexample meets. Their averages are objective rows too (propdag/objective.cc,
# row_weights), and one averaged row can be refuted over a box where no single constraint is.
# CROWN needed 39,863 bound computations for 1_1 prop_3 and 4,357 for 2_2 prop_3 with the
# single constraints; with the averages 451 and 821. Measured, as run here, with each box's bounds
# computed from the box alone (--no-carry-bounds; with carried bounds 411 and 1,981).
AVERAGE_CASES = [("1_1", 3, 1000), ("2_2", 3, 1500)]


@needs_acasxu_and_onnxruntime
def test_averaged_constraints_prove_with_few_bound_computations():
    expect_verdicts(AVERAGE_CASES, 8, {("--no-carry-bounds",): "verified"})


# A box's halves start from its bounds of every node (SplitOptions::carry_bounds, on by default):
# down a chain of splits each node keeps the tightest bounds any enclosing box reached. CROWN
# proves these within the budget with them (3_6 prop_1: 6,069 bound computations; 1_7 prop_2:
# 3,699) and is still open after about 60,000 without them (--no-carry-bounds); both were open
# after 116 s (the VNN-COMP limit) with alpha before bounds were carried. Sampling with onnxruntime
# must find no counterexample. Boxes are not clipped (--no-clip).
CARRY_CASES = [("3_6", 1, 10000), ("1_7", 2, 10000)]


@needs_acasxu_and_onnxruntime
def test_bounds_carried_into_halves_prove_within_a_budget():
    expect_verdicts(CARRY_CASES, 9,
                    {("--no-clip",): "verified", ("--no-carry-bounds", "--no-clip"): "unknown"})
