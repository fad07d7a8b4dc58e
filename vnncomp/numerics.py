"""Test points inside an input box, and the error rule the harness and compare CLI share."""

import math

import numpy as np


def finite_box(lower, upper):
    """Replaces unbounded sides so every element has a finite interval (default [-1, 1])."""
    lo = np.array(lower, dtype=np.float64)
    hi = np.array(upper, dtype=np.float64)
    lo_inf, hi_inf = ~np.isfinite(lo), ~np.isfinite(hi)
    lo[lo_inf] = np.where(hi_inf[lo_inf], -1.0, hi[lo_inf] - 2.0)
    hi[hi_inf] = lo[hi_inf] + 2.0
    return lo, hi


def split_box(specs, lower=None, upper=None):
    """Per-input (lower, upper) arrays shaped like each input.

    The box is flat over all inputs concatenated in graph order (VNN-LIB's X_i). Without a box, or
    for elements the box does not cover, the interval is [-1, 1].
    """
    total = sum(s.size for s in specs)
    lo = np.full(total, -1.0)
    hi = np.full(total, 1.0)
    if lower is not None:
        n = min(total, len(lower))
        lo[:n], hi[:n] = finite_box(lower[:n], upper[:n])
    parts, off = [], 0
    for s in specs:
        parts.append((lo[off:off + s.size].reshape(s.shape), hi[off:off + s.size].reshape(s.shape)))
        off += s.size
    return parts


def _cast(values, lo, hi, dtype):
    if dtype == np.bool_:
        return values > 0.5 * (lo + hi)
    if np.issubdtype(dtype, np.integer):
        return np.clip(np.rint(values), np.ceil(lo), np.floor(hi)).astype(dtype)
    return values.astype(dtype)


def make_points(specs, lower=None, upper=None, points=5, seed=0):
    """Box centre + `points` seeded uniform samples: a list of {input name: array} feeds."""
    boxes = split_box(specs, lower, upper)
    rng = np.random.default_rng(seed)
    feeds = [{s.name: _cast(0.5 * (lo + hi), lo, hi, s.dtype) for s, (lo, hi) in zip(specs, boxes)}]
    for _ in range(points):
        feeds.append({s.name: _cast(rng.uniform(lo, hi), lo, hi, s.dtype)
                      for s, (lo, hi) in zip(specs, boxes)})
    return feeds


def is_exact(dtype):
    dtype = np.dtype(dtype)
    return dtype == np.bool_ or np.issubdtype(dtype, np.integer)


def error(got, ref):
    """max|got - ref| / max(1, max|ref|); integers and bools must match exactly (else inf).

    Shape mismatches are inf; NaN in the same places on both sides counts as equal.
    """
    got = np.asarray(got)
    ref = np.asarray(ref)
    if got.shape != ref.shape:
        return math.inf
    if ref.size == 0:
        return 0.0
    if is_exact(ref.dtype):
        return 0.0 if np.array_equal(got.astype(ref.dtype), ref) else math.inf
    g = got.astype(np.float64)
    r = ref.astype(np.float64)
    gnan, rnan = np.isnan(g), np.isnan(r)
    if not np.array_equal(gnan, rnan):
        return math.inf
    g, r = g[~rnan], r[~rnan]
    if r.size == 0:
        return 0.0
    ginf, rinf = np.isinf(g), np.isinf(r)
    if not np.array_equal(g[ginf | rinf], r[ginf | rinf]):
        return math.inf
    g, r = g[~rinf], r[~rinf]
    if r.size == 0:
        return 0.0
    return float(np.max(np.abs(g - r)) / max(1.0, float(np.max(np.abs(r)))))


def compare(gots, refs):
    """(largest error() over paired outputs, reason) where reason names the first mismatch that is
    not a plain numeric difference (output count, shape), else None."""
    if len(gots) != len(refs):
        return math.inf, f"{len(gots)} outputs, expected {len(refs)}"
    worst = 0.0
    for i, (g, r) in enumerate(zip(gots, refs)):
        g, r = np.asarray(g), np.asarray(r)
        if g.shape != r.shape:
            return math.inf, f"output {i} has shape {list(g.shape)}, expected {list(r.shape)}"
        worst = max(worst, error(g, r))
    return worst, None
