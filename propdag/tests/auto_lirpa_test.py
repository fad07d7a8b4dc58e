"""propdag's CROWN against auto_LiRPA 0.5.0's CROWN (../shared/clients, an independent
implementation).

1. The first dist_shift instance: a Gemm / ReLU / Sigmoid chain whose Sigmoid input needs a
   backward pass of cost 2.5e8 (784 rows x 316k coefficients) to be bounded by CROWN. With the
   default budget (full CROWN here) every output's width is at most auto_LiRPA's (measured:
   0.77-0.90 of it); at a budget of 2e8 the Sigmoid's input keeps IBP bounds and the widths were
   110-1,024 times auto_LiRPA's. The torch model is built from the ONNX graph node by node.
2. Softmax (vit_2023's first instance, benchmarks/propdag_softmax_models_vs_autolirpa.py): the
   lower bound of every margin the property needs is at least auto_LiRPA's (its softmax written
   as exp / sum, the same function, since 0.5.0 has no bound for Softmax).
3. A sample of models of other kinds, through benchmarks/propdag_vs_autolirpa.py (torchonnx's
   module bounded by auto_LiRPA, propdag with its default options on the same box): the summed
   output width of propdag's CROWN must be at most 1.001 x auto_LiRPA's, and propdag must report
   nothing cut short. The full run over every model is that script."""

import json
import os

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import sampling
from vnncomp import imports, vnnlib

LIRPA = os.path.join(sampling.REPO, "..", "shared", "clients", "auto_LiRPA-0.5.0")
BENCH = os.path.join(sampling.BENCH, "dist_shift_2023")


def lirpa():
    """The auto_LiRPA module, or None when it or what it needs is missing."""
    if not os.path.isdir(LIRPA):
        return None
    try:
        return imports.package("auto_LiRPA", LIRPA)
    except ImportError:
        return None


def torch_chain(path):
    """nn.Sequential of a graph that is a chain of Gemm, Relu, Sigmoid, Tanh and Reshape."""
    import torch
    g = sampling.load(path).graph
    init = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    layers = []
    for n in g.node:
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
        if n.op_type == "Gemm":
            assert attrs.get("transA", 0) == 0
            w = init[n.input[1]].astype(np.float32) * attrs.get("alpha", 1.0)
            w = w if attrs.get("transB", 0) else w.T
            lin = torch.nn.Linear(w.shape[1], w.shape[0])
            lin.weight.data = torch.tensor(w)
            b = init[n.input[2]] * attrs.get("beta", 1.0) if len(n.input) > 2 else 0 * w[:, 0]
            lin.bias.data = torch.tensor(b.astype(np.float32))
            layers.append(lin)
        elif n.op_type in ("Relu", "Sigmoid", "Tanh"):
            layers.append({"Relu": torch.nn.ReLU, "Sigmoid": torch.nn.Sigmoid,
                           "Tanh": torch.nn.Tanh}[n.op_type]())
        else:
            assert n.op_type == "Reshape", n.op_type  # a flat vector stays flat here
    return torch.nn.Sequential(*layers).eval()


def first_instance():
    """The first dist_shift instance: model path, property path, auto_LiRPA's bounded module and
    its input."""
    import torch
    from auto_LiRPA import BoundedModule, BoundedTensor
    from auto_LiRPA.perturbations import PerturbationLpNorm
    model = sampling.on_disk(os.path.join(BENCH, "onnx", "mnist_concat.onnx"))
    spec = sampling.on_disk(os.path.join(BENCH, "vnnlib", "index2101_delta0.13.vnnlib"))
    box = vnnlib.read(spec)
    lo = torch.tensor(np.asarray(box.lower, np.float32)).reshape(1, -1)
    hi = torch.tensor(np.asarray(box.upper, np.float32)).reshape(1, -1)
    bounded = BoundedModule(torch_chain(model), torch.zeros_like(lo))
    x = BoundedTensor((lo + hi) / 2, PerturbationLpNorm(x_L=lo, x_U=hi))
    return model, spec, bounded, x


def lirpa_bounds(bounded, x, method):
    return (t.detach().numpy().ravel().astype(np.float64)
            for t in bounded.compute_bounds(x=(x,), method=method))


def propdag_bounds(model, spec, method):
    rc, out, err = sampling.propdag("bounds", model, "--vnnlib", spec, "--method", method,
                                    "--json")
    assert rc == 0, err
    o = json.loads(out)["outputs"][0]
    return np.array(o["lower"]), np.array(o["upper"])


def assert_within(p_lo, p_hi, a_lo, a_hi):
    """propdag's widths at most auto_LiRPA's, which computes in float32: its bounds may be off by
    its rounding."""
    slack = 1e-4 * (1 + np.abs(a_lo) + np.abs(a_hi))
    assert np.all(p_hi - p_lo <= a_hi - a_lo + slack), (p_hi - p_lo) / (a_hi - a_lo)


needs = [pytest.mark.skipif(lirpa() is None, reason="no auto_LiRPA (or python3-tqdm / appdirs)"),
         pytest.mark.skipif(not os.path.isdir(BENCH), reason="no VNN-COMP benchmarks")]


@needs[0]
@needs[1]
def test_crown_at_least_as_tight_as_auto_lirpa_on_dist_shift():
    model, spec, bounded, x = first_instance()
    a_lo, a_hi = lirpa_bounds(bounded, x, "backward")
    p_lo, p_hi = propdag_bounds(model, spec, "crown")
    print(f"propdag / auto_LiRPA widths: {np.round((p_hi - p_lo) / (a_hi - a_lo), 3).tolist()}")
    assert_within(p_lo, p_hi, a_lo, a_hi)


@needs[0]
@needs[1]
def test_alpha_tighter_than_crown_on_dist_shift():
    """propdag's alpha (tuned tangent points of the sigmoid lines, tuned ReLU slopes) is within
    propdag's CROWN and auto_LiRPA's CROWN; its widths beside auto_LiRPA's alpha-CROWN
    (CROWN-Optimized, which also tunes the lines behind the intermediate bounds) are printed.
    Measured: 0.72-0.88 of auto_LiRPA's CROWN, 1.36-2.11 times its alpha-CROWN."""
    model, spec, bounded, x = first_instance()
    a_lo, a_hi = lirpa_bounds(bounded, x, "backward")
    c_lo, c_hi = propdag_bounds(model, spec, "crown")
    p_lo, p_hi = propdag_bounds(model, spec, "alpha")
    o_lo, o_hi = lirpa_bounds(bounded, x, "CROWN-Optimized")
    print(f"propdag alpha / auto_LiRPA CROWN widths: "
          f"{np.round((p_hi - p_lo) / (a_hi - a_lo), 3).tolist()}")
    print(f"propdag alpha / auto_LiRPA alpha-CROWN widths: "
          f"{np.round((p_hi - p_lo) / (o_hi - o_lo), 3).tolist()}")
    assert_within(p_lo, p_hi, a_lo, a_hi)
    assert np.all(p_lo >= c_lo - 1e-9) and np.all(p_hi <= c_hi + 1e-9)
    assert np.sum(p_hi - p_lo) < 0.97 * np.sum(c_hi - c_lo)


# (benchmark, model substring): a 2-D conv net, a 1-D conv net, and a net whose values are
# added back to later ones (quadrotor dynamics: MatMul, Relu, Mul, Slice, Concat; a DAG, not a
# chain). Measured: 1.0006, 1.0001 and 0.64 of auto_LiRPA's summed width (quadrotor: 0.62 when
# its products of Sin and the controller's output were intervals; McCormick planes are not
# pointwise tighter than the interval where factors change sign). (auto_LiRPA 0.5.0 cannot bound
# ml4acopf's residual nets: "There are unsupported operations".)
SAMPLE = [("metaroom_2023", "4cnn_ry_0_0"), ("collins_rul_cnn_2023", "NN_rul_small_window_20"),
          ("lsnc", "quadrotor2d_state")]
TORCHONNX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(sampling.PROPDAG))),
                         "torchonnx", "torchonnx")


@pytest.mark.skipif(lirpa() is None, reason="no auto_LiRPA (or python3-tqdm / python3-appdirs)")
@pytest.mark.skipif(not os.path.isdir(sampling.BENCH), reason="no VNN-COMP benchmarks")
@pytest.mark.skipif(not os.path.exists(TORCHONNX), reason="torchonnx is not built")
@pytest.mark.parametrize("bench,name", SAMPLE)
def test_default_crown_within_1_001_of_auto_lirpa(bench, name):
    import argparse
    import warnings
    pva = imports.module("propdag_vs_autolirpa",
                         os.path.join(sampling.REPO, "benchmarks", "propdag_vs_autolirpa.py"))
    warnings.simplefilter("ignore")
    args = argparse.Namespace(benchmarks=sampling.BENCH, only=[bench], model=[name],
                              torchonnx=TORCHONNX, propdag=sampling.PROPDAG, timeout=120,
                              memory_gb=6.0, propdag_arg=[], skip_unbounded=False)
    entries = pva.tal._entries(args)
    assert entries, (bench, name)
    row = pva.measure(entries[0], args, None)
    print(pva.line(row))
    assert row.get("crown") == "ok", row
    assert row.get("propdag") == "ok", row
    crown = [json.loads(s)["crown"] for s in row["propdag_stats"] if s.startswith('{"crown"')]
    assert crown and not crown[0]["cut_short"], crown
    assert row["ratio"] <= 1.001, row


def power_flow(path, va):
    """The power-flow part of an ml4acopf model as one-input ONNX bytes and its box: from the
    predicted voltage magnitudes vm and angles va to the branch flows (Gather, Sub, Sin, Cos,
    squares, products of two variables, constant products and sums). The input X = [vm, va]; vm
    is boxed by the model's own limits (its sigmoid layer's [lower_bound, lower_bound + scale]),
    va by [-va, va]. Written in forms auto_LiRPA 0.5.0 bounds backwards: each Gather (constant
    indices) and each part of X as a MatMul by a 0/1 matrix, vector constants as [1, n] rows."""
    from onnx import helper, numpy_helper, shape_inference, utils
    m = shape_inference.infer_shapes(sampling.load(path))
    init = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    scale = next(init[n.input[1]] for n in m.graph.node
                 if n.op_type == "Mul" and n.input[0] == "/layers.7/Sigmoid_output_0").ravel()
    lower = init["layers.7.lower_bound"].ravel()
    parts = ["/Slice_4_output_0", "/Slice_5_output_0"]
    flows = ["/Add_1_output_0", "/Add_4_output_0", "/Add_2_output_0", "/Add_5_output_0"]
    g = utils.Extractor(m).extract_model(parts, flows).graph
    n = [i.type.tensor_type.shape.dim[1].dim_value for i in g.input]
    consts = {c.output[0]: numpy_helper.to_array(c.attribute[0].t)
              for c in g.node if c.op_type == "Constant"}
    nodes, mats = [], {}
    for k, name in enumerate(parts):
        mats[name + "_pick"] = np.eye(sum(n), dtype=np.float32)[:, k * n[0]:k * n[0] + n[k]]
        nodes.append(helper.make_node("MatMul", ["X", name + "_pick"], [name]))
    for node in g.node:
        if node.op_type == "Gather":
            hot = np.eye(n[0], dtype=np.float32)[:, consts[node.input[1]]]
            mats[node.output[0] + "_hot"] = hot
            node = helper.make_node("MatMul", [node.input[0], node.output[0] + "_hot"],
                                    node.output)
        elif node.op_type == "Constant" and consts[node.output[0]].ndim == 1:
            row = consts[node.output[0]].reshape(1, -1)
            node.attribute[0].t.CopyFrom(numpy_helper.from_array(row))
        nodes.append(node)
    nodes.append(helper.make_node("Concat", flows, ["Y"], axis=1))
    x = helper.make_tensor_value_info("X", onnx.TensorProto.FLOAT, [1, sum(n)])
    y = helper.make_tensor_value_info("Y", onnx.TensorProto.FLOAT, None)
    graph = helper.make_graph(nodes, "power_flow", [x], [y],
                              [numpy_helper.from_array(v, k) for k, v in mats.items()])
    out = helper.make_model(graph, opset_imports=m.opset_import)
    vm = slice(len(lower) - n[0], len(lower))
    lo = np.concatenate([lower[vm], -va * np.ones(n[1])]).astype(np.float32)
    hi = np.concatenate([lower[vm] + scale[vm], va * np.ones(n[1])]).astype(np.float32)
    return out.SerializeToString(), lo.astype(np.float64), hi.astype(np.float64)


def lirpa_module(onnx_path, out_dir):
    """torchonnx's module of a model, with squares as torch.pow (auto_LiRPA 0.5.0 fuses x.square()
    into a node it leaves without an output shape)."""
    import re
    import subprocess
    import torch
    subprocess.run([TORCHONNX, "--no-slim", onnx_path, "-o", out_dir], check=True,
                   capture_output=True)
    stem = os.path.splitext(os.path.basename(onnx_path))[0]
    py = os.path.join(out_dir, stem + ".py")
    with open(py) as f:
        code = re.sub(r"(\w+)\.square\(\)", r"torch.pow(\1, 2)", f.read())
    with open(py, "w") as f:
        f.write(code)
    module = imports.module(stem, py).Model()
    module.load_state_dict(torch.load(os.path.join(out_dir, stem + ".pth")))
    return module.eval()


@pytest.mark.skipif(lirpa() is None, reason="no auto_LiRPA (or python3-tqdm / python3-appdirs)")
@pytest.mark.skipif(not os.path.isdir(sampling.BENCH), reason="no VNN-COMP benchmarks")
@pytest.mark.skipif(not os.path.exists(TORCHONNX), reason="torchonnx is not built")
def test_crown_within_auto_lirpa_on_ml4acopf_power_flow(tmp_path):
    """ml4acopf_2024 14_ieee's power flow (power_flow; auto_LiRPA 0.5.0 cannot bound the whole
    model, see RESULTS): propdag's CROWN (McCormick planes for the products, chord-slope lines for
    Sin and Cos) against auto_LiRPA's. Measured: summed widths 363.3 against 364.2 (0.997); with
    the products and Sin / Cos as intervals propdag's width was IBP's, 454.6 (1.25)."""
    import torch
    from auto_LiRPA import BoundedModule, BoundedTensor
    from auto_LiRPA.perturbations import PerturbationLpNorm
    path = os.path.join(sampling.BENCH, "ml4acopf_2024", "onnx", "14_ieee_ml4acopf.onnx.gz")
    data, lo, hi = power_flow(path, 0.2)
    model = str(tmp_path / "flow14.onnx")
    with open(model, "wb") as f:
        f.write(data)
    spec = str(tmp_path / "flow14.vnnlib")
    with open(spec, "w") as f:
        for i, (a, b) in enumerate(zip(lo, hi)):
            f.write(f"(declare-const X_{i} Real)\n(assert (>= X_{i} {a!r}))\n"
                    f"(assert (<= X_{i} {b!r}))\n")
        f.write("(declare-const Y_0 Real)\n(assert (>= Y_0 1e30))\n")
    t_lo = torch.tensor(lo, dtype=torch.float32).reshape(1, -1)
    t_hi = torch.tensor(hi, dtype=torch.float32).reshape(1, -1)
    bounded = BoundedModule(lirpa_module(model, str(tmp_path)), ((t_lo + t_hi) / 2,))
    x = BoundedTensor((t_lo + t_hi) / 2, PerturbationLpNorm(x_L=t_lo, x_U=t_hi))
    a_lo, a_hi = lirpa_bounds(bounded, x, "backward")
    p_lo, p_hi = propdag_bounds(model, spec, "crown")
    i_lo, i_hi = propdag_bounds(model, spec, "ibp")
    ratio = np.sum(p_hi - p_lo) / np.sum(a_hi - a_lo)
    print(f"summed widths: propdag CROWN {np.sum(p_hi - p_lo):.6g}, auto_LiRPA CROWN "
          f"{np.sum(a_hi - a_lo):.6g} (ratio {ratio:.4f}), IBP {np.sum(i_hi - i_lo):.6g}")
    assert ratio <= 1.0
    assert np.sum(p_hi - p_lo) < 0.85 * np.sum(i_hi - i_lo)


@pytest.mark.skipif(lirpa() is None, reason="no auto_LiRPA (or python3-tqdm / python3-appdirs)")
@pytest.mark.skipif(not os.path.isdir(os.path.join(sampling.BENCH, "vit_2023")),
                    reason="no VNN-COMP benchmarks")
@pytest.mark.skipif(not os.path.exists(TORCHONNX), reason="torchonnx is not built")
def test_crown_margins_within_auto_lirpa_on_vit():
    """Measured on pgd_2_3_16_8835: margins -3.26 ... -0.14 (sum -17.1) against auto_LiRPA's
    -7.48 ... -3.02 (sum -49.8); alpha -2.49 ... +0.36."""
    import argparse
    import csv
    import warnings
    script = imports.module(
        "propdag_softmax_models_vs_autolirpa",
        os.path.join(sampling.REPO, "benchmarks", "propdag_softmax_models_vs_autolirpa.py"))
    warnings.simplefilter("ignore")
    build = os.path.dirname(os.path.dirname(os.path.abspath(sampling.PROPDAG)))
    args = argparse.Namespace(propdag=sampling.PROPDAG, torchonnx=TORCHONNX,
                              slimonnx=os.path.join(build, "slimonnx", "slimonnx"))
    bench = os.path.join(sampling.BENCH, "vit_2023")
    with open(os.path.join(bench, "instances.csv")) as f:
        onnx_rel, spec_rel, _ = next(r for r in csv.reader(f) if r)
    row = script.compare(args, bench, onnx_rel, spec_rel)
    print({k: (v.round(3).tolist() if hasattr(v, "round") else v) for k, v in row.items()})
    # float32 rounding of auto_LiRPA's bounds aside, each margin is at least as tight.
    assert np.all(row["crown"] >= row["lirpa"] - 1e-4 * (1 + np.abs(row["lirpa"])))
    assert np.all(row["alpha"] >= row["crown"] - 1e-9 * (1 + np.abs(row["crown"])))

