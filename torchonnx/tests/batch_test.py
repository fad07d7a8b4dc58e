"""The generated module's batch beyond dim 0, the device of tensors made in forward, recurrent
layers under vmap, and parameters swapped in from outside, through torchonnx's command line.

    TORCHONNX=build/torchonnx/torchonnx /usr/bin/python3 -m pytest torchonnx/tests/batch_test.py
"""

import copy

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

import cli_test
from cli_test import load, run, vmap

need_exe = cli_test.need_exe  # autouse: the tests skip without the binary


def made_tensors_model(path, n):
    """y = x * ConstantOfShape(Shape(x), 2.5) + Range(0.5, n + 0.5, 1) for x [1, n]."""
    fill = numpy_helper.from_array(np.array([2.5], np.float32), "fill")
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("ConstantOfShape", ["s"], ["c"], value=fill),
             helper.make_node("Range", ["start", "limit", "delta"], ["r"]),
             helper.make_node("Mul", ["x", "c"], ["m"]),
             helper.make_node("Add", ["m", "r"], ["y"])]
    inits = [numpy_helper.from_array(np.array(v, np.float32), name)
             for name, v in (("start", 0.5), ("limit", n + 0.5), ("delta", 1.0))]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


def test_tensors_made_in_forward_follow_the_module_device(tmp_path):
    """Fills and ranges too large to store as constants are made in forward, on the module's
    device. Checked on torch's meta device, where a CPU tensor meeting a meta one raises as it
    would meeting a CUDA one."""
    n = 10000  # above what shape inference keeps as a known value, so nothing is folded
    made_tensors_model(tmp_path / "made.onnx", n)
    r = run(tmp_path / "made.onnx", "-o", tmp_path / "out", "--no-slim")
    assert r.returncode == 0, r.stderr
    code = (tmp_path / "out" / "made.py").read_text()
    assert ".expand(1, 10000)" in code and "torch.arange(10000" in code  # made, not stored
    model = load(tmp_path / "out", "made")
    x = np.random.default_rng(0).standard_normal((1, n)).astype(np.float32)
    with torch.no_grad():
        y = model(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(y, x * 2.5 + (np.arange(n) + 0.5), rtol=1e-6)
    with torch.no_grad():
        assert model.to("meta")(torch.zeros(1, n, device="meta")).device.type == "meta"


def appended_token_model(path):
    """x [N, 3, 4] -> Transpose(1, 0, 2) -> Concat with a constant [3, 1, 4] on dim 1 -> Transpose back:
    the output has N + 1 rows, a size no batch can follow."""
    token = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 1, 4), "token")
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0, 2], name="to_seq_first"),
             helper.make_node("Concat", ["t", "token"], ["c"], axis=1, name="append_token"),
             helper.make_node("Transpose", ["c"], ["y"], perm=[1, 0, 2])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["M", 3, 4])], [token])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


def test_batch_that_cannot_be_followed_keeps_the_declared_size(tmp_path):
    appended_token_model(tmp_path / "t.onnx")
    r = run(tmp_path / "t.onnx", "-o", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    code = (tmp_path / "out" / "t.py").read_text()
    assert "#   x: float [1, 3, 4]\n" in code and "# N:" not in code
    assert "# Sizes as declared: append_token (Concat) does not keep the batch in dim 0" in code
    model = load(tmp_path / "out", "t")
    x = torch.randn(5, 1, 3, 4)
    token = torch.arange(12, dtype=torch.float32).reshape(3, 1, 4)
    expected = torch.stack([torch.cat([xi.transpose(0, 1), token], 1).transpose(0, 1) for xi in x])
    with torch.no_grad():
        assert torch.equal(model(x[0]), expected[0])
        assert torch.equal(vmap(model)(x), expected)


def seq_first_attention_model(path):
    """Self-attention laid out as nn.MultiheadAttention exports it: x [N, 5, 8] goes sequence-first,
    a product makes q, k, v, a Reshape to [5, N * 2, 4] merges the batch with 2 heads, and the result
    comes back through [5 * N, 8] to [N, 5, 8]. The Reshape targets hold -1 where the batch is."""
    rng = np.random.default_rng(5)
    inits = [numpy_helper.from_array(rng.uniform(-1, 1, (8, 24)).astype(np.float32), "w_qkv"),
             numpy_helper.from_array(rng.uniform(-1, 1, (8, 8)).astype(np.float32), "w_out"),
             numpy_helper.from_array(np.array([5, -1, 4], np.int64), "heads"),
             numpy_helper.from_array(np.array([-1, 8], np.int64), "rows"),
             numpy_helper.from_array(np.array([5, -1, 8], np.int64), "seq")]
    n = helper.make_node
    nodes = [n("Transpose", ["x"], ["t"], perm=[1, 0, 2]),
             n("MatMul", ["t", "w_qkv"], ["qkv"]),
             n("Split", ["qkv"], ["q", "k", "v"], axis=2),
             n("Reshape", ["q", "heads"], ["qh"]), n("Reshape", ["k", "heads"], ["kh"]),
             n("Reshape", ["v", "heads"], ["vh"]),
             n("Transpose", ["qh"], ["qb"], perm=[1, 0, 2]), n("Transpose", ["kh"], ["kb"], perm=[1, 2, 0]),
             n("Transpose", ["vh"], ["vb"], perm=[1, 0, 2]),
             n("MatMul", ["qb", "kb"], ["s"]), n("Softmax", ["s"], ["a"], axis=-1),
             n("MatMul", ["a", "vb"], ["o"]), n("Transpose", ["o"], ["os"], perm=[1, 0, 2]),
             n("Reshape", ["os", "rows"], ["flat"]), n("MatMul", ["flat", "w_out"], ["proj"]),
             n("Reshape", ["proj", "seq"], ["ps"]), n("Transpose", ["ps"], ["y"], perm=[1, 0, 2])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 5, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5, 8])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return {i.name: torch.from_numpy(numpy_helper.to_array(i).copy()) for i in inits[:2]}


def test_batch_moved_and_merged_with_heads_stays_free(tmp_path):
    w = seq_first_attention_model(tmp_path / "att.onnx")
    r = run(tmp_path / "att.onnx", "-o", tmp_path / "out", "--no-slim")
    assert r.returncode == 0, r.stderr
    code = (tmp_path / "out" / "att.py").read_text()
    assert "# N: batch size, any value." in code and "Sizes as declared" not in code
    assert ".reshape(5, -1, 4)" in code and ".reshape(-1, 8)" in code
    model = load(tmp_path / "out", "att")
    x = torch.randn(6, 5, 8)

    def attention(xi):  # one sample [5, 8], two heads of 4
        q, k, v = (xi @ w["w_qkv"]).split(8, 1)
        heads = [torch.softmax(q[:, h:h + 4] @ k[:, h:h + 4].T, -1) @ v[:, h:h + 4] for h in (0, 4)]
        return torch.cat(heads, 1) @ w["w_out"]

    expected = torch.stack([attention(xi) for xi in x])
    with torch.no_grad():
        assert torch.allclose(model(x), expected, atol=1e-5)
        assert torch.allclose(vmap(model)(x[:, None]), expected[:, None], atol=1e-5)


def lstm_model(path):
    """LSTM over X [4 steps, 1, 2 inputs], hidden 3, default gates; outputs Y and Y_h."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(rng.uniform(-1, 1, shape).astype(np.float32), name)
             for name, shape in (("W", (1, 12, 2)), ("R", (1, 12, 3)), ("B", (1, 24)))]
    node = helper.make_node("LSTM", ["x", "W", "R", "B"], ["y", "y_h"], hidden_size=3)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 1, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 1, 1, 3]),
                               helper.make_tensor_value_info("y_h", TensorProto.FLOAT, [1, 1, 3])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), str(path))


def test_recurrent_ops_are_time_step_loops_that_vmap_unless_modules_are_asked_for(tmp_path):
    lstm_model(tmp_path / "lstm_steps.onnx")
    lstm_model(tmp_path / "lstm_layer.onnx")
    assert run(tmp_path / "lstm_steps.onnx", "-o", tmp_path / "out").returncode == 0
    assert run(tmp_path / "lstm_layer.onnx", "-o", tmp_path / "out", "--rnn-modules").returncode == 0
    steps_code = (tmp_path / "out" / "lstm_steps.py").read_text()
    assert "def lstm_steps1(self, x, h, c):" in steps_code and "nn.LSTM" not in steps_code
    assert "self.lstm1 = nn.LSTM(2, 3)" in (tmp_path / "out" / "lstm_layer.py").read_text()
    steps, layer = load(tmp_path / "out", "lstm_steps"), load(tmp_path / "out", "lstm_layer")
    # The loop's gate weights are parameters, as the layer's are: W (12 x 2) and R (12 x 3) and one
    # bias of 12 (the ONNX bias halves summed), where nn.LSTM keeps both halves.
    assert sum(p.numel() for p in steps.parameters()) == 12 * 2 + 12 * 3 + 12
    assert sum(p.numel() for p in layer.parameters()) == 12 * 2 + 12 * 3 + 2 * 12
    x = torch.randn(6, 4, 1, 2)
    with torch.no_grad():
        batched = vmap(steps)(x)
        for i in range(len(x)):
            for got, loop, other in zip(batched, steps(x[i]), layer(x[i])):
                assert torch.allclose(got[i], loop, atol=1e-6)
                assert torch.allclose(loop, other, atol=1e-6)


def conv_bn_gemm_model(path):
    """x [1, 2, 5, 5] -> Conv 3x3 -> BatchNormalization -> Relu -> Flatten -> Gemm to 4."""
    rng = np.random.default_rng(7)
    arrays = {"cw": (3, 2, 3, 3), "cb": (3,), "scale": (3,), "shift": (3,), "mean": (3,), "gw": (4, 27),
              "gb": (4,)}
    inits = [numpy_helper.from_array(rng.uniform(-1, 1, shape).astype(np.float32), name)
             for name, shape in arrays.items()]
    inits.append(numpy_helper.from_array(rng.uniform(0.5, 2, 3).astype(np.float32), "var"))
    n = helper.make_node
    nodes = [n("Conv", ["x", "cw", "cb"], ["c"], name="conv"),
             n("BatchNormalization", ["c", "scale", "shift", "mean", "var"], ["b"], name="bn"),
             n("Relu", ["b"], ["r"]), n("Flatten", ["r"], ["f"]),
             n("Gemm", ["f", "gw", "gb"], ["y"], transB=1, name="fc")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 5, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


def test_parameters_and_buffers_swapped_in_from_outside_are_the_ones_used(tmp_path):
    """functional_call and functorch.make_functional substitute parameters through attribute
    lookup; forward must read every weight and buffer that way, not from a cached reference or the
    module's internal dictionaries. The oracle is a second instance given the same tensors by
    load_state_dict."""
    conv_bn_gemm_model(tmp_path / "cbg.onnx")
    lstm_model(tmp_path / "lstm.onnx")
    for stem, args in (("cbg", ["--no-slim"]), ("cbg", []), ("lstm", [])):
        out = tmp_path / ("out_" + stem + "_".join(args))
        assert run(tmp_path / (stem + ".onnx"), "-o", out, *args).returncode == 0
        model = load(out, stem)
        x = torch.randn(1, 2, 5, 5) if stem == "cbg" else torch.randn(4, 1, 2)
        gen = torch.Generator().manual_seed(0)
        state = {k: torch.rand(v.shape, generator=gen) + 0.5 for k, v in model.state_dict().items()}
        other = load(out, stem)
        other.load_state_dict(state)
        if hasattr(torch, "func"):
            functional_call = torch.func.functional_call
        else:
            from torch.nn.utils.stateless import functional_call
        with torch.no_grad():
            expected = other(x)
            assert not torch.allclose(model(x)[0] if stem == "lstm" else model(x),
                                      expected[0] if stem == "lstm" else expected)
            torch.testing.assert_close(functional_call(model, state, (x,)), expected)
        if hasattr(torch, "func"):  # torch 2.x deprecates make_functional for functional_call
            continue
        from functorch import make_functional_with_buffers
        fmodel, params, buffers = make_functional_with_buffers(model)
        names = [k for k, _ in model.named_parameters()], [k for k, _ in model.named_buffers()]
        with torch.no_grad():
            got = fmodel([state[k] for k in names[0]], [state[k] for k in names[1]], x)
        torch.testing.assert_close(got, expected)


def test_a_layer_assigned_after_construction_is_the_one_used(tmp_path):
    """__init__ also puts the layers in the instance dict, so that forward reads `self.fc1`
    without nn.Module.__getattr__; assigning a layer must still change what forward uses."""
    conv_bn_gemm_model(tmp_path / "cbg.onnx")
    out = tmp_path / "out"
    assert run(tmp_path / "cbg.onnx", "-o", out).returncode == 0
    model = load(out, "cbg")
    x = torch.randn(1, 2, 5, 5)
    layers = list(model.named_children())
    assert layers
    with torch.no_grad():
        for name, layer in layers:
            assert getattr(model, name) is layer
            twin = copy.deepcopy(layer)
            for p in twin.parameters():
                p.mul_(2)
            before = model(x)
            setattr(model, name, twin)
            assert getattr(model, name) is twin and model._modules[name] is twin
            assert not torch.allclose(model(x), before)
