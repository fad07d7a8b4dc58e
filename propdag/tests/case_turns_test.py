"""`propdag verify` takes turns over a property's open cases (propdag/README.md), so one hard case
does not keep the others from being decided, and a search on several threads (`--threads`)
proves no more than one thread can. lsnc quadrotor2d_state_0 (13 cases over one box; every
published tool that decided it says it holds): its Lyapunov-decrease case stays open after
13 million bound computations on one thread, and its 12 other cases are proved in 0.3 s
together. Searched one case after another with the Lyapunov case first, only 10 were proved
within the timeout."""

import json
import os

import pytest

import sampling

LSNC = os.path.join(sampling.BENCH, "lsnc")


def run(*extra):
    rc, out, err = sampling.propdag(
        "verify", os.path.join(LSNC, "onnx", "quadrotor2d_state.onnx.gz"),
        os.path.join(LSNC, "vnnlib", "quadrotor2d_state_0.vnnlib.gz"), "--split", "1000000000",
        "--timeout", "15", "--method", "alpha", "--refine-budget", "1e9", "--stats", *extra)
    assert rc == 0, err
    return out.split("\n")[0], json.loads(err.strip().split("\n")[-1])


@pytest.mark.skipif(not os.path.isdir(LSNC), reason="no lsnc benchmark")
@pytest.mark.parametrize("threads", ["1", "2"])
def test_every_case_gets_turns(threads):
    verdict, s = run("--threads", threads)
    assert verdict == "unknown", s
    assert s["cases"] == 13 and s["cases_proved"] == 12, s
