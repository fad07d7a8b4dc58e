"""A small input of a network too large for CROWN under the refine budget: once the whole box's
full CROWN bound leaves a case open, `propdag verify` bounds the parts it splits into with full
CROWN too (propdag/README.md). cGAN 32x32x3 prop_1 (5 inputs, a generator of transposed
convolutions and a convolutional discriminator; the output must stay in (0.22901, 0.25901)):
under the budget its case y >= 0.25901 misses by about 1,500 on the slimmed model, under full
CROWN by 0.0025, and eight bound computations prove both cases. Bounding the parts under the
budget, it stays open until the timeout. Sampled points of the box, evaluated by onnxruntime on
the original model, meet neither unsafe condition."""

import json
import os
import subprocess
import tempfile

import pytest

import sampling
from verify_vnncomp_test import assert_no_sampled_counterexample

CGAN = os.path.join(sampling.BENCH, "cgan_2023")
MODEL = os.path.join(CGAN, "onnx", "cGAN_imgSz32_nCh_3.onnx")
SPEC = os.path.join(CGAN, "vnnlib",
                    "cGAN_imgSz32_nCh_3_prop_1_input_eps_0.010_output_eps_0.015.vnnlib")
SLIMONNX = os.environ.get(
    "SLIMONNX",
    os.path.join(os.path.dirname(os.path.dirname(sampling.PROPDAG)), "slimonnx", "slimonnx"))


@pytest.mark.skipif(not sampling.ortref.available(), reason="no onnxruntime")
@pytest.mark.skipif(not (sampling.on_disk(MODEL) and sampling.on_disk(SPEC)),
                    reason="no cgan benchmark")
@pytest.mark.skipif(not os.access(SLIMONNX, os.X_OK), reason="no slimonnx")
def test_parts_of_a_small_input_get_full_crown():
    model, spec = sampling.on_disk(MODEL), sampling.on_disk(SPEC)
    with tempfile.TemporaryDirectory() as tmp:
        slim = os.path.join(tmp, "slim.onnx")
        subprocess.run([SLIMONNX, model, "-o", slim], check=True, capture_output=True)
        rc, out, err = sampling.propdag("verify", slim, spec, "--split", "1000000000", "--timeout",
                                        "150", "--method", "alpha", "--refine-budget", "1e9",
                                        "--stats")
    assert rc == 0, err
    stats = json.loads(err.strip().split("\n")[-1])
    assert out.split("\n")[0] == "verified", stats
    assert stats["boxes"] < 30, stats  # 8
    assert_no_sampled_counterexample(model, spec, 3, max_corners=32)
