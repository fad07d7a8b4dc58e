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

CI runs PROPDAG_NETS networks (default 150) from PROPDAG_SEED (default 0); the longer sweep is
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


def spec_file(path, lo, hi):
    with open(path, "w") as f:
        for i, (a, b) in enumerate(zip(lo, hi)):
            f.write(f"(declare-const X_{i} Real)\n(assert (>= X_{i} {a!r}))\n(assert (<= X_{i} {b!r}))\n")


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
    spec_file(spec, lo, hi)
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
