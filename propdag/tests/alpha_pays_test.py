"""`propdag verify --method alpha` tunes the halves of input splitting only while tuning pays
(propdag/README.md, `untuned` in --stats). lsnc quadrotor2d_state_2's Lyapunov case: alpha's
bounds alone prove about one sampled half in 10,000, so after the first 1,600 halves the rest
are bounded with CROWN; ACAS Xu 4_2 prop_2: about a quarter of the sampled halves are proved by
alpha alone, so every half is tuned. 8,000 bound computations per case each (lsnc through the
torch engine's batches: torch_engine_test.py). lsnc with CROWN's McCormick planes
(`--no-tune-planes`): with tuned ones alpha pays on every half there and the case is proved
within the 8,000."""

import json
import os

import pytest

import sampling

LSNC = os.path.join(sampling.BENCH, "lsnc")
ACAS = os.path.join(sampling.BENCH, "acasxu_2023")


def stats(model, spec, *extra):
    rc, out, err = sampling.propdag("verify", model, spec, "--split", "8000", "--method",
                                    "alpha", "--stats", *extra)
    assert rc == 0, err
    return json.loads(err.strip().split("\n")[-1]), out.split("\n")[0]


def lsnc_untuned(*extra):
    """`untuned` of lsnc quadrotor2d_state_2 with 8,000 bound computations per case, after
    checking that its twelve other cases were proved."""
    s, verdict = stats(os.path.join(LSNC, "onnx", "quadrotor2d_state.onnx.gz"),
                       os.path.join(LSNC, "vnnlib", "quadrotor2d_state_2.vnnlib.gz"),
                       "--timeout", "60", "--no-tune-planes", *extra)
    assert verdict == "unknown"  # the Lyapunov case needs more than 8,000 halves
    assert s["cases_proved"] == 12, s
    # It spent them all: its search moved on every turn, also through the torch engine's
    # batches, whose rounds stack more open boxes than a turn's 1,000 (a search that ended its
    # turns there before its first split stalled until the timeout).
    assert s["boxes"] > 8000, s
    return s["untuned"]


@pytest.mark.skipif(not os.path.isdir(LSNC), reason="no lsnc benchmark")
def test_tuning_stops_where_it_does_not_pay():
    # The Lyapunov case's 8,000 less the 1,600 before the first decision and the sampled ones.
    assert 5000 < lsnc_untuned() < 7000


@pytest.mark.skipif(not os.path.isdir(LSNC), reason="no lsnc benchmark")
def test_tuned_planes_pay_on_every_half():
    s, verdict = stats(os.path.join(LSNC, "onnx", "quadrotor2d_state.onnx.gz"),
                       os.path.join(LSNC, "vnnlib", "quadrotor2d_state_2.vnnlib.gz"),
                       "--timeout", "60")
    assert verdict == "verified", s
    assert s["untuned"] == 0, s


@pytest.mark.skipif(not os.path.isdir(ACAS), reason="no ACAS Xu benchmark")
def test_tuning_goes_on_where_it_pays():
    s, verdict = stats(os.path.join(ACAS, "onnx", "ACASXU_run2a_4_2_batch_2000.onnx.gz"),
                       os.path.join(ACAS, "vnnlib", "prop_2.vnnlib.gz"))
    assert verdict == "unknown"  # it takes about 100,000
    assert s["boxes"] > 7000 and s["untuned"] == 0, s
