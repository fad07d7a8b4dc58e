"""Soundness fuzzing of propdag on random networks (random_nets.py): compositions of the ops its
rules cover, random weights of three scales, and boxes from a single point to ends 1e22 apart.

For each network and box, `propdag bounds --json` with IBP, CROWN and alpha must contain the
network's outputs, computed in float64 by NumPy from the same float32 weights, at uniform points,
corners and the centre of the box, within 1e-9 of the end's size plus the largest value in the
graph at that point (the two sides round differently). alpha's bounds must lie within CROWN's,
and over a single point every method's bounds must be that point's outputs (within 1e-6). The
torch engine (PROPDAG_TORCH=1, set by CMake when it is built) takes every third network with
CROWN or alpha. When onnxruntime is there, each network's NumPy function is first checked against
it at the box's point nearest 0, so a fault of the generator is told apart from one of propdag.

`propdag verify` is fuzzed the same way (test_verify_on_random_networks): the property "output 0
<= t" with t on either side of the smallest sampled value, under input splitting with CROWN and
IBP, ReLU splitting with alpha, and the torch engine's batches on every fourth network. A
`verified` must hold at every sampled point, a `falsified` point must reach t in float64, and
both verdicts must occur.

CI runs PROPDAG_NETS networks for the bounds (default 150) and PROPDAG_VERIFY_NETS for verify
(default 60) from PROPDAG_SEED (default 0); the longer sweep is
benchmarks/propdag_random_nets.sh."""

import os
import tempfile

import numpy as np
import onnx
import pytest

import random_nets
import sampling

NETS = int(os.environ.get("PROPDAG_NETS", "150"))
SEED = int(os.environ.get("PROPDAG_SEED", "0"))
TORCH = os.environ.get("PROPDAG_TORCH") == "1"
POINTS = 400
REL = 1e-9


def points_of(lo, hi, rng):
    n = lo.size
    bits = ((np.arange(2 ** n)[:, None] >> np.arange(n)[None, :]) & 1 if n <= 8
            else rng.integers(0, 2, size=(256, n)))
    corners = np.where(bits == 1, hi, lo)
    uniform = lo + (hi - lo) * rng.random((POINTS, n))
    return np.vstack([uniform, corners, (lo + hi) / 2])


def outside(y, lo, hi, rel, size):
    """Rows of y outside [lo, hi] by more than rel of that end's size plus `size` (per row: the
    largest value in the graph at that point), and the worst excess. The size is taken per end: a
    lower bound of 0 for an output that reaches -2, beside an upper bound of 1e22, is a fault."""
    excess = np.maximum((lo - y) / (1.0 + np.abs(lo) + size[:, None]),
                        (y - hi) / (1.0 + np.abs(hi) + size[:, None]))
    excess[~np.isfinite(y).all(axis=1)] = 0
    return int((excess > rel).any(axis=1).sum()), float(excess.max())


def check_generator(model, forward, magnitude, x):
    """The NumPy function against onnxruntime (float32) at one point, within 1e-4 of the largest
    value in the graph there (float32 rounds a Sin's argument by that much)."""
    if not sampling.ortref.available():
        return None
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "m.onnx")
        onnx.save(model, path)
        y, _ = sampling.evaluate(path, x[None, :].astype(np.float32))
    x = x[None, :].astype(np.float32).astype(np.float64)
    want = forward(x)
    if np.abs(y - want).max() > 1e-4 * (1.0 + magnitude(x).max()):
        return f"generator: NumPy and onnxruntime differ by {np.abs(y - want).max():.3g}"
    return None


def check(seed, folder):
    """A failure message for one network, or None."""
    model, forward, n, ops, magnitude = random_nets.random_net(seed)
    rng = np.random.default_rng(seed + 1_000_000)
    lo, hi, kind = random_nets.random_box(rng, n)
    name = f"seed {seed} ({kind} box; {' '.join(ops)})"
    message = check_generator(model, forward, magnitude, np.clip(0.0, lo, hi))
    if message:
        return f"{name}: {message}"
    path, spec = os.path.join(folder, f"n{seed}.onnx"), os.path.join(folder, f"n{seed}.vnnlib")
    onnx.save(model, path)
    sampling.box_spec(spec, lo, hi)
    x = points_of(lo, hi, rng)
    with np.errstate(over="ignore", invalid="ignore"):
        y, size = forward(x), magnitude(x)
    runs = [("eigen", m) for m in ("ibp", "crown", "alpha")]
    if TORCH and seed % 3 == 0:
        runs.append(("torch", "crown" if seed % 2 == 0 else "alpha"))
    got = {}
    for engine, method in runs:
        try:
            b_lo, b_hi, _ = sampling.bounds(path, spec, method, "--engine", engine)
        except RuntimeError as e:
            return f"{name}: {engine} {method}: {e}"
        got[engine, method] = (b_lo, b_hi)
        bad, worst = outside(y, b_lo, b_hi, REL, size)
        if bad:
            return f"{name}: {engine} {method}: {bad} of {len(y)} points outside (worst {worst:.3g})"
        if kind == "point":
            bad, worst = outside(np.vstack([b_lo, b_hi]), y[0], y[0], 1e-6, size[:2])
            if bad:
                return f"{name}: {engine} {method}: not the point's outputs (off by {worst:.3g})"
    c_lo, c_hi = got["eigen", "crown"]
    a_lo, a_hi = got["eigen", "alpha"]
    scale = 1.0 + np.maximum(np.abs(c_lo), np.abs(c_hi))
    if ((c_lo - a_lo) / scale > 1e-9).any() or ((a_hi - c_hi) / scale > 1e-9).any():
        return f"{name}: alpha looser than crown"
    return None


@pytest.mark.skipif(not os.path.exists(sampling.PROPDAG), reason="propdag not built")
def test_random_networks():
    failures = []
    with tempfile.TemporaryDirectory() as folder:
        for seed in range(SEED, SEED + NETS):
            message = check(seed, folder)
            if message:
                failures.append(message)
                print(message)
    print(f"{NETS} random networks from seed {SEED}: {len(failures)} failing")
    assert not failures, "\n".join(failures[:20])


VERIFY_NETS = int(os.environ.get("PROPDAG_VERIFY_NETS", "60"))
# Settings of `propdag verify` that take different paths: input splitting with CROWN, ReLU
# splitting with alpha and beta, and (with the torch engine) batches of boxes.
VERIFY_RUNS = [("--method", "crown", "--split", "300"),
               ("--method", "alpha", "--split", "100", "--branch", "relu"),
               ("--method", "ibp", "--split", "300")]
VERIFY_TORCH = ("--method", "crown", "--split", "300", "--engine", "torch", "--batch", "16")


def verify_case(seed, folder, counts):
    """`propdag verify` on a random network and the property "output 0 <= t" (its unsafe set),
    with t near the smallest sampled value of output 0, on either side of it. A `verified` must
    hold at every sampled point; a `falsified` point must reach the unsafe set in float64."""
    model, forward, n, ops, magnitude = random_nets.random_net(seed)
    rng = np.random.default_rng(seed + 2_000_000)
    lo, hi, kind = random_nets.random_box(rng, n)
    if kind == "far":  # such boxes are not split to a decision; the bounds test covers them
        hi = np.minimum(hi, lo + 2.0)
    x = points_of(lo, hi, rng)
    with np.errstate(over="ignore", invalid="ignore"):
        y0, size = forward(x)[:, 0], magnitude(x)
    if not np.isfinite(y0).all():
        return None
    low = float(y0.min())
    t = low + rng.uniform(-0.1, 0.05) * (1.0 + float(y0.max() - low))
    path, spec = os.path.join(folder, f"v{seed}.onnx"), os.path.join(folder, f"v{seed}.vnnlib")
    onnx.save(model, path)
    outputs = forward(x[:1]).shape[1]
    sampling.box_spec(spec, lo, hi)
    with open(spec, "a") as f:
        f.write("".join(f"(declare-const Y_{i} Real)\n" for i in range(outputs)))
        f.write(f"(assert (<= Y_0 {t!r}))\n")
    runs = list(VERIFY_RUNS)
    if TORCH and seed % 4 == 0:
        runs.append(VERIFY_TORCH)
    name = f"seed {seed} ({kind} box, t {t:.6g}, sampled minimum {low:.6g}; {' '.join(ops)})"
    for args in runs:
        rc, out, err = sampling.propdag("verify", path, spec, "--timeout", "20", *args)
        verdict = out.split("\n")[0]
        counts[verdict] = counts.get(verdict, 0) + 1
        if rc != 0:
            return f"{name}: {' '.join(args)}: exit {rc}: {err.strip()}"
        tol = REL * (1.0 + abs(t) + size.max())
        if verdict == "verified" and low <= t - tol:
            return f"{name}: {' '.join(args)}: verified, but a sampled point reaches {low:.9g}"
        if verdict == "falsified":
            point = np.array([float(line.strip("()").split()[1]) for line in out.split("\n")[1:]
                              if line.startswith("(X_")])
            if point.size != n or (point < lo).any() or (point > hi).any():
                return f"{name}: {' '.join(args)}: the point printed is not in the box"
            got = forward(point[None, :])[0, 0]
            if got > t + REL * (1.0 + abs(t) + magnitude(point[None, :]).max()):
                return f"{name}: {' '.join(args)}: falsified at a point where output 0 is {got!r}"
    return None


@pytest.mark.skipif(not os.path.exists(sampling.PROPDAG), reason="propdag not built")
def test_verify_on_random_networks():
    failures, counts = [], {}
    with tempfile.TemporaryDirectory() as folder:
        for seed in range(SEED, SEED + VERIFY_NETS):
            message = verify_case(seed, folder, counts)
            if message:
                failures.append(message)
                print(message)
    print(f"verify on {VERIFY_NETS} random networks from seed {SEED}: {len(failures)} failing;"
          f" verdicts {counts}")
    assert not failures, "\n".join(failures[:20])
    assert counts.get("verified", 0) > 0 and counts.get("falsified", 0) > 0, counts
