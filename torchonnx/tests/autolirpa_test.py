"""auto_LiRPA 0.5.0 (../shared/clients/) on the generated code of a few shared VNN-COMP models.

Each model exercises one form torchonnx writes for verifiers (torchonnx/README.md, "Generated code
for verifiers"): a product with a 1-D weight as `(x * w).sum(-1)` (ml4acopf), a constant matrix
times a 1-D input as `F.linear` (test_small), a division by a computed tensor as a product with
its reciprocal (mscn). auto_LiRPA must build the module and its IBP (and CROWN where noted)
bounds must contain the model's outputs at the box's centre and four random points.
Skipped when auto_LiRPA, its dependencies (python3-tqdm, python3-appdirs) or the models are absent.
The full sweep is benchmarks/torchonnx_autolirpa.py.
"""

import os

import pytest

from vnncomp import imports

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SHARED = os.path.join(ROOT, "..", "shared")
BENCH = os.path.join(SHARED, "vnncomp2024", "benchmarks")
LIRPA = os.path.join(SHARED, "clients", "auto_LiRPA-0.5.0")
TORCHONNX = os.environ.get("TORCHONNX", os.path.join(ROOT, "build", "torchonnx", "torchonnx"))
PROPDAG = os.environ.get("PROPDAG", os.path.join(ROOT, "build", "propdag", "propdag"))
SLIMONNX = os.environ.get("SLIMONNX", os.path.join(ROOT, "build", "slimonnx", "slimonnx"))

pytest.importorskip("tqdm")
pytest.importorskip("appdirs")
if not os.path.isdir(os.path.join(LIRPA, "auto_LiRPA")) or not os.path.isdir(BENCH):
    pytest.skip("auto_LiRPA 0.5.0 or the shared models are absent", allow_module_level=True)


def _sweep():
    mod = imports.module("torchonnx_autolirpa",
                         os.path.join(ROOT, "benchmarks", "torchonnx_autolirpa.py"))
    import warnings
    warnings.simplefilter("ignore")
    imports.package("auto_LiRPA", LIRPA)  # imported once, before the forks
    return mod


SWEEP = _sweep()

# Where a divisor's interval reaches 0 (mscn's mask sums on its vnnlib box), auto_LiRPA refuses
# the reciprocal: a property of the box, not of the code (with `/` it could not bound it at all).
NONPOSITIVE = "AssertionError: Only positive values are supported in BoundReciprocal"

# (benchmark, model file, form in the generated code, accepted IBP results, CROWN expected)
CASES = [
    # CROWN: auto_LiRPA 0.5.0's Gather with an index tensor fails in backward mode.
    ("ml4acopf_2024", "14_ieee_ml4acopf-linear-nonresidual.onnx.gz", ").sum(-1)", ("ok",), False),
    ("test", "test_small.onnx", "F.linear(X_0, self.const1)", ("ok",), False),  # no batch dim
    ("nn4sys_2023", "mscn_128d.onnx.gz", "* torch.reciprocal(", ("ok", NONPOSITIVE), False),
    ("acasxu_2023", "ACASXU_run2a_1_1_batch_2000.onnx.gz", "F.linear(", ("ok",), True),
]


class _Args:
    timeout = 240
    memory_gb = 4.0


@pytest.mark.parametrize("bench,model,form,ibp,crown", CASES, ids=[c[1] for c in CASES])
def test_autolirpa_bounds(tmp_path, bench, model, form, ibp, crown):
    from vnncomp import discover
    entries = [e for e in discover.from_benchmarks(BENCH, (bench,)) if e.model.endswith(model)]
    if not entries or entries[0].missing:
        pytest.skip(f"{bench}/{model} absent")
    row = SWEEP.run_one(entries[0], TORCHONNX, str(tmp_path), _Args)
    code = open(next(tmp_path.glob("*.py"))).read()
    assert form in code
    assert row["built"], row.get("error")
    assert row["ibp"] in ibp, row["ibp"]
    if crown:
        assert row["crown"] == "ok", row["crown"]


def test_batch_free_model_with_add_batch_dim(tmp_path):
    """pensieve_small_parallel is declared [12, 8] and reshapes itself to [1, 12, 8]: as declared,
    auto_LiRPA takes its 12 rows for a batch. With --add-batch-dim the input is [N, 12, 8], one
    sample per box, and the bounds are of the one output of that sample."""
    from vnncomp import discover
    entries = [e for e in discover.from_benchmarks(BENCH, ("nn4sys_2023",))
               if e.model.endswith("pensieve_small_parallel.onnx.gz") and not e.missing]
    if not entries:
        pytest.skip("pensieve_small_parallel absent")
    row = SWEEP.run_one(entries[0], TORCHONNX, str(tmp_path), _Args, ["--add-batch-dim"])
    code = open(next(tmp_path.glob("*.py"))).read()
    assert "float [N, 12, 8]" in code and "reshape(1, 12, 8)" not in code
    assert row["built"], row.get("error")
    assert row["ibp"] == "ok" and row["crown"] == "ok", (row["ibp"], row["crown"])
    assert len(row["ibp_lb"]) == 1  # one sample's one output


# IBP is one method: auto_LiRPA's float32 bounds on the generated code and propdag's float64 ones
# on the graph that code computes (slimonnx's rewrite) agree up to rounding; propdag's bounds on
# the model as given enclose them (slimonnx merges tllverifybench's consecutive affine layers,
# which tightens IBP by 40%). The sweep's --propdag --slimonnx counts every shared model.
THREE_WAY = [
    ("acasxu_2023", "ACASXU_run2a_1_1_batch_2000.onnx.gz"),
    ("tllverifybench_2023", "tllBench_n=2_N=M=16_m=1_instance_1_0.onnx.gz"),
]


@pytest.mark.parametrize("bench,model", THREE_WAY, ids=[c[1] for c in THREE_WAY])
def test_ibp_agrees_with_propdag(tmp_path, bench, model):
    if not os.path.exists(PROPDAG) or not os.path.exists(SLIMONNX):
        pytest.skip("propdag or slimonnx not built")
    from vnncomp import discover
    entries = [e for e in discover.from_benchmarks(BENCH, (bench,)) if e.model.endswith(model)]
    if not entries or entries[0].missing:
        pytest.skip(f"{bench}/{model} absent")

    class Args(_Args):
        propdag = PROPDAG
        slimonnx = SLIMONNX
    row = SWEEP.run_one(entries[0], TORCHONNX, str(tmp_path), Args)
    assert row["ibp"] == "ok" and row["propdag"] == "ok", (row["ibp"], row["propdag"])
    assert row["agree"], row["ibp_rel"]
    assert row["onnx_contains"], row["ibp_rel_onnx"]


def test_ibp_comparison_sees_a_difference():
    assert SWEEP.ibp_rel_diff([1.0, -2.0], [1.0, -2.0]) == 0
    assert SWEEP.ibp_rel_diff([100.0], [100.0 * (1 + 2 * SWEEP.AGREE_REL)]) > SWEEP.AGREE_REL
    assert SWEEP.ibp_rel_diff([0.0], [2 * SWEEP.AGREE_REL]) > SWEEP.AGREE_REL
    assert SWEEP.ibp_rel_diff([1.0], [float("nan")]) == float("inf")
    assert SWEEP.ibp_rel_diff([1.0], [1.0, 2.0]) == float("inf")
