"""torchonnx's command line: many inputs, colliding stems, stdin, --stats, errors, determinism,
a batch kept in dim 0, control flow, sequences (batch_test.py: batches that move, devices, RNNs).

    TORCHONNX=build/torchonnx/torchonnx /usr/bin/python3 -m pytest torchonnx/tests/cli_test.py
"""

import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from vnncomp import imports

EXE = os.environ.get("TORCHONNX", os.path.join(os.path.dirname(__file__), "..", "..", "build",
                                               "torchonnx", "torchonnx"))


def run(*args, stdin=None):
    return subprocess.run([EXE, *map(str, args)], input=stdin, capture_output=True)


def vmap(fn):
    """torch.vmap (torch 2.x) or functorch.vmap (torch 1.13)."""
    if hasattr(torch, "vmap"):
        return torch.vmap(fn)
    from functorch import vmap as functorch_vmap
    return functorch_vmap(fn)


def mlp_model(path):
    """x[1,2,3] -> Reshape([1, 6]) -> MatMul(w) + b -> Relu: batch 1 hard-coded in the reshape."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((6, 4)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["f"], name="flat"),
             helper.make_node("MatMul", ["f", "w"], ["m"], name="mm"),
             helper.make_node("Add", ["m", "b"], ["a"], name="bias"),
             helper.make_node("Relu", ["a"], ["y"], name="act")]
    inits = [numpy_helper.from_array(np.array([1, 6], dtype=np.int64), "shape"),
             numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    onnx.save(model, str(path))
    return w, b


def bad_model(path):
    """A random-number op: generated code cannot reproduce it, so it has no lowering."""
    nodes = [helper.make_node("RandomUniformLike", ["x"], ["y"], name="rand node")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


def load(out, stem, cls="Model"):
    model = getattr(imports.module(stem, os.path.join(out, stem + ".py")), cls)()
    model.load_state_dict(torch.load(os.path.join(out, stem + ".pth"), weights_only=True))
    return model.eval()


@pytest.fixture(scope="module", autouse=True)
def need_exe():
    if not os.access(EXE, os.X_OK):
        pytest.skip(f"torchonnx not built at {EXE}")


def test_colliding_stems_get_suffixes_and_mapping_is_printed(tmp_path):
    a, b = tmp_path / "a" / "net.onnx", tmp_path / "b" / "net.onnx"
    mlp_model(a)
    mlp_model(b)
    r = run(a, b, "-o", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().splitlines() == [f"{a} -> {tmp_path}/out/net.py",
                                               f"{b} -> {tmp_path}/out/net_2.py"]
    assert sorted(os.listdir(tmp_path / "out")) == ["net.pth", "net.py", "net_2.pth", "net_2.py"]


def test_stdin_named_by_class_name_and_stats(tmp_path):
    mlp_model(tmp_path / "m.onnx")
    r = run("-", "-o", tmp_path / "out", "--class-name", "Net", "--stats",
            stdin=(tmp_path / "m.onnx").read_bytes())
    assert r.returncode == 0, r.stderr
    stats = [json.loads(line) for line in r.stderr.decode().splitlines()]
    assert len(stats) == 1 and stats[0]["model"] == "-" and stats[0]["nodes"] == 4
    assert stats[0]["nodes_after"] == 3  # MatMul + Add slimmed into one Gemm
    assert isinstance(stats[0]["ms"], float)
    model = load(tmp_path / "out", "Net", "Net")
    assert model(torch.zeros(1, 2, 3)).shape == (1, 4)


def test_error_is_one_line_exit_2_and_writes_nothing_for_that_model(tmp_path):
    bad_model(tmp_path / "bad.onnx")
    mlp_model(tmp_path / "good.onnx")
    r = run(tmp_path / "bad.onnx", tmp_path / "good.onnx", "-o", tmp_path / "out")
    assert r.returncode == 2
    lines = r.stderr.decode().splitlines()
    assert lines == [f"torchonnx: {tmp_path}/bad.onnx: node 'rand node' (RandomUniformLike): "
                     "op has no PyTorch lowering (opset 13)"]
    assert sorted(os.listdir(tmp_path / "out")) == ["good.pth", "good.py"]


def test_jobs_convert_several_models_at_once_and_report_in_order(tmp_path):
    models = []
    for i in range(7):
        path = tmp_path / f"m{i}.onnx"
        (bad_model if i in (1, 4) else mlp_model)(path)
        models.append(path)
    runs = {}
    for jobs in (1, 3):
        out = tmp_path / f"out{jobs}"
        r = run(*models, "-o", out, "-j", jobs, "--report", tmp_path / f"r{jobs}.md")
        assert r.returncode == 2
        stdout = r.stdout.decode().replace(str(out), "OUT")
        runs[jobs] = (stdout, r.stderr, (tmp_path / f"r{jobs}.md").read_text())
    stdout, stderr, report = runs[1]
    assert runs[3] == runs[1]  # the same lines in the same order, and the same report
    good = [i for i in range(7) if i not in (1, 4)]
    assert stdout.splitlines() == [f"{models[i]} -> OUT/m{i}.py" for i in good]
    assert [line.split(":")[1].strip() for line in stderr.decode().splitlines()] == [
        str(models[1]), str(models[4])]
    for i in good:
        for ext in (".py", ".pth"):
            one, three = (tmp_path / d / f"m{i}{ext}" for d in ("out1", "out3"))
            assert one.read_bytes() == three.read_bytes()
    assert sorted(os.listdir(tmp_path / "out3")) == sorted(
        f"m{i}{ext}" for i in good for ext in (".py", ".pth"))
    r = run(models[0], "-o", tmp_path / "out0", "-j", 0)
    assert r.returncode == 2 and b"--jobs" in r.stderr.splitlines()[0]
    assert not (tmp_path / "out0").exists()


def test_list_ops_and_missing_arguments():
    r = run("--list-ops")
    assert r.returncode == 0
    ops = r.stdout.decode().split()
    assert ops == sorted(set(ops))
    assert {"Conv", "Gemm", "MaxPool", "LpPool", "Identity", "OneHot", "Split"} <= set(ops)
    assert "RandomUniformLike" not in ops
    for args, message in ((["-o", "out"], b"missing input model"), (["m.onnx"], b"missing --output")):
        r = run(*args)
        assert r.returncode == 2 and r.stderr.count(b"\n") == 1 and message in r.stderr


def test_bad_class_name_is_rejected(tmp_path):
    mlp_model(tmp_path / "m.onnx")
    r = run(tmp_path / "m.onnx", "-o", tmp_path / "out", "--class-name", "class")
    assert r.returncode == 2
    assert b"not a valid identifier" in r.stderr


def test_output_is_deterministic(tmp_path):
    mlp_model(tmp_path / "m.onnx")
    for out in ("o1", "o2"):
        assert run(tmp_path / "m.onnx", "-o", tmp_path / out).returncode == 0
    for name in ("m.py", "m.pth"):
        assert (tmp_path / "o1" / name).read_bytes() == (tmp_path / "o2" / name).read_bytes()


def test_any_batch_size_vmap_and_values(tmp_path):
    w, b = mlp_model(tmp_path / "mlp.onnx")
    assert run(tmp_path / "mlp.onnx", "-o", tmp_path / "out").returncode == 0
    subprocess.run([sys.executable, "-m", "py_compile", str(tmp_path / "out" / "mlp.py")], check=True)
    model = load(tmp_path / "out", "mlp")
    x = torch.randn(5, 2, 3)
    with torch.no_grad():
        batch = model(x)
        loop = torch.cat([model(x[i:i + 1]) for i in range(5)])
    expected = np.maximum(x.numpy().reshape(5, 6) @ w + b, 0)
    np.testing.assert_allclose(batch.numpy(), expected, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(batch, loop)
    torch.testing.assert_close(vmap(model)(x.unsqueeze(1)).squeeze(1), loop)


def control_model(path, kind):
    """'loop': a Loop whose trip count is a graph input; 'if': an If on a graph input whose branches
    have different shapes; 'where': an If on a graph input whose branches have the same shape."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])
    if kind == "loop":
        body = helper.make_graph([helper.make_node("Identity", ["c_in"], ["c_out"]),
                                  helper.make_node("Neg", ["v_in"], ["v_out"])], "body",
                                 [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                                  helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
                                  helper.make_empty_tensor_value_info("v_in")],
                                 [helper.make_empty_tensor_value_info("c_out"),
                                  helper.make_empty_tensor_value_info("v_out")])
        node = helper.make_node("Loop", ["n", "", "x"], ["y"], name="repeat", body=body)
        inputs = [helper.make_tensor_value_info("n", TensorProto.INT64, []), x]
        out_shape = [1, 3]
    else:
        other = "Sigmoid" if kind == "where" else "Transpose"  # Transpose: [3, 1] against [1, 3]
        branches = {b: helper.make_graph([helper.make_node(op, ["x"], [b + "_out"])], b, [],
                                         [helper.make_empty_tensor_value_info(b + "_out")])
                    for b, op in (("then", "Relu"), ("else", other))}
        node = helper.make_node("If", ["c"], ["y"], name="choose", then_branch=branches["then"],
                                else_branch=branches["else"])
        inputs = [x, helper.make_tensor_value_info("c", TensorProto.BOOL, [])]
        out_shape = [1, 3]
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


def test_control_flow_that_cannot_be_static_is_one_line_error(tmp_path):
    control_model(tmp_path / "loop.onnx", "loop")
    control_model(tmp_path / "if.onnx", "if")
    for stem, expected in (("loop", "node 'repeat' (Loop): trip count 'n' is not known at compile time"),
                           ("if", "node 'choose' (If): output 'y': the branches differ in shape or type")):
        r = run(tmp_path / f"{stem}.onnx", "-o", tmp_path / "out")
        assert r.returncode == 2
        lines = r.stderr.decode().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"torchonnx: {tmp_path}/{stem}.onnx: {expected}"), lines
    assert not os.path.exists(tmp_path / "out") or os.listdir(tmp_path / "out") == []


def test_if_on_an_input_becomes_where_and_vmaps(tmp_path):
    control_model(tmp_path / "choose.onnx", "where")
    r = run(tmp_path / "choose.onnx", "-o", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    assert "torch.where(" in (tmp_path / "out" / "choose.py").read_text()
    model = load(tmp_path / "out", "choose")
    x = torch.randn(1, 3)
    assert torch.equal(model(x, torch.tensor(True)), torch.relu(x))
    assert torch.equal(model(x, torch.tensor(False)), torch.sigmoid(x))
    torch.manual_seed(0)
    xs, cs = torch.randn(8, 1, 3), torch.arange(8) % 2 == 0
    batched = vmap(model)(xs, cs)
    looped = torch.stack([model(xs[k], cs[k]) for k in range(8)])
    # Batched and per-sample sigmoid may take different vector kernels: equal up to rounding.
    assert torch.allclose(batched, looped, rtol=1e-6, atol=0)
    assert torch.equal(batched[::2], torch.relu(xs[::2]))


def test_loop_body_with_hostile_names_and_malformed_loops(tmp_path):
    """Body names with quotes, newlines and Python code only reach escaped comments; a body whose
    inputs do not match and a loop with no trip count and a condition that stays true are one-line
    errors, not hangs."""
    F, B, I64 = TensorProto.FLOAT, TensorProto.BOOL, TensorProto.INT64
    info, empty = helper.make_tensor_value_info, helper.make_empty_tensor_value_info
    n = numpy_helper.from_array(np.array(3, np.int64), "n")

    def save(name, body, loop_inputs, inits):
        node = helper.make_node("Loop", loop_inputs, ["class"], name=name, body=body)
        graph = helper.make_graph([node], "g", [info("x", F, [1, 2])], [info("class", F, [1, 2])], inits)
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(tmp_path / f"{name[:4]}.onnx"))

    save("loop\"'\n", helper.make_graph(
        [helper.make_node("Identity", ["c\"in"], ["c\nout"], name="id\"\n"),
         helper.make_node("Add", ["v in", "x"], ["__import__('os')"], name="def")], "body",
        [info("i", I64, []), info("c\"in", B, []), empty("v in")], [empty("c\nout"), empty("__import__('os')")]),
        ["n", "", "x"], [n])
    save("bad body", helper.make_graph([helper.make_node("Identity", ["c"], ["c2"])], "body",
                                       [info("c", B, [])], [empty("c2")]), ["n", "", "x"], [n])
    save("endless", helper.make_graph([helper.make_node("Identity", ["c"], ["c2"]),
                                       helper.make_node("Identity", ["v"], ["v2"])], "body",
                                      [info("i", I64, []), info("c", B, []), empty("v")], [empty("c2"), empty("v2")]),
         ["", "t", "x"], [numpy_helper.from_array(np.array(True), "t")])

    r = run(tmp_path / "loop.onnx", "-o", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    subprocess.run([sys.executable, "-m", "py_compile", str(tmp_path / "out" / "loop.py")], check=True)
    x = torch.randn(1, 2)
    assert torch.allclose(load(tmp_path / "out", "loop")(x), 4 * x)
    for stem, message in (("bad ", "body inputs/outputs do not match the loop-carried values"),
                          ("endl", "more than 100000 iterations")):
        r = run(tmp_path / f"{stem}.onnx", "-o", tmp_path / "err")
        lines = r.stderr.decode().splitlines()
        assert r.returncode == 2 and len(lines) == 1 and lines[0].endswith(message), lines
    assert not os.path.exists(tmp_path / "err")


def test_scan_past_the_length_limit_is_refused_before_unrolling(tmp_path):
    F = TensorProto.FLOAT
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x_t"], ["s_out"]),
         helper.make_node("Identity", ["s_out"], ["y_t"])], "body",
        [helper.make_tensor_value_info(n, F, [1]) for n in ("s_in", "x_t")],
        [helper.make_tensor_value_info(n, F, [1]) for n in ("s_out", "y_t")])
    scan = helper.make_node("Scan", ["s0", "xs"], ["s", "ys"], name="long scan", body=body,
                            num_scan_inputs=1)
    graph = helper.make_graph(
        [scan], "g",
        [helper.make_tensor_value_info("s0", F, [1]), helper.make_tensor_value_info("xs", F, [100001, 1])],
        [helper.make_tensor_value_info("s", F, [1]), helper.make_tensor_value_info("ys", F, [100001, 1])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)]),
              str(tmp_path / "scan.onnx"))
    r = run(tmp_path / "scan.onnx", "-o", tmp_path / "out")
    assert r.returncode == 2
    assert r.stderr.decode() == (f"torchonnx: {tmp_path}/scan.onnx: node 'long scan' (Scan): "
                                 "more than 100000 iterations\n")
    assert not (tmp_path / "out").exists()


def sequence_model(path):
    """s: sequence of float[2], o: optional float[2], x: float[2] -> (z, t) with
    z = s[-1] + o when o holds a value, else s[-1]; t = s with x appended."""
    F = TensorProto.FLOAT
    then = helper.make_graph([helper.make_node("OptionalGetElement", ["o"], ["v"]),
                              helper.make_node("Add", ["last", "v"], ["sum"])], "then", [],
                             [helper.make_tensor_value_info("sum", F, [2])])
    other = helper.make_graph([helper.make_node("Identity", ["last"], ["same"])], "else", [],
                              [helper.make_tensor_value_info("same", F, [2])])
    nodes = [helper.make_node("SequenceAt", ["s", "minus1"], ["last"], name="pick"),
             helper.make_node("OptionalHasElement", ["o"], ["has"], name="has"),
             helper.make_node("If", ["has"], ["z"], name="maybe add", then_branch=then, else_branch=other),
             helper.make_node("SequenceInsert", ["s", "x"], ["t"], name="append")]
    opt = helper.make_value_info("o", helper.make_optional_type_proto(helper.make_tensor_type_proto(F, [2])))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_sequence_value_info("s", F, [2]), opt,
                                           helper.make_tensor_value_info("x", F, [2])],
                              [helper.make_tensor_value_info("z", F, [2]),
                               helper.make_tensor_sequence_value_info("t", F, [2])],
                              [numpy_helper.from_array(np.array(-1, np.int64), "minus1")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), str(path))


def test_sequence_and_optional_inputs_and_outputs(tmp_path):
    """A sequence input is a list of --sequence-length tensors, an optional input a tensor or
    (--absent) None; a sequence output is a list. Without the length: a one-line error."""
    sequence_model(tmp_path / "seq.onnx")
    sequence_model(tmp_path / "seq_absent.onnx")  # another stem: modules are cached by name
    r = run(tmp_path / "seq.onnx", "-o", tmp_path / "out", "--sequence-length", "s=3")
    assert r.returncode == 0, r.stderr
    r = run(tmp_path / "seq_absent.onnx", "-o", tmp_path / "out", "--sequence-length", "s=3", "--absent", "o")
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "out" / "seq.py").read_text()
    assert "#   s: list of 3 (float [2], float [2], float [2])" in text
    assert "#   t: list of 4 (float [2], float [2], float [2], float [2])" in text
    torch.manual_seed(0)
    s, o, x = [torch.randn(2) for _ in range(3)], torch.randn(2), torch.randn(2)
    z, t = load(tmp_path / "out", "seq")(s, o, x)
    assert torch.equal(z, s[2] + o)
    assert isinstance(t, list) and len(t) == 4 and all(torch.equal(a, b) for a, b in zip(t, s + [x]))
    z, t = load(tmp_path / "out", "seq_absent")(s, None, x)
    assert torch.equal(z, s[2]) and all(torch.equal(a, b) for a, b in zip(t, s + [x]))
    model = load(tmp_path / "out", "seq")
    ss, os_, xs = [torch.randn(8, 2) for _ in range(3)], torch.randn(8, 2), torch.randn(8, 2)
    zb, tb = vmap(model)(ss, os_, xs)
    for k in range(8):
        zk, tk = model([e[k] for e in ss], os_[k], xs[k])
        assert torch.equal(zb[k], zk) and all(torch.equal(a[k], b) for a, b in zip(tb, tk))

    for args, message in (([], "input 's' is a sequence: its length must be given (--sequence-length s=N)"),
                          (["--sequence-length", "s=3", "--absent", "x"],
                           "input 'x' is given no value but is not optional"),
                          (["--sequence-length", "s=three"], "--sequence-length expects NAME=N, got 's=three'")):
        r = run(tmp_path / "seq.onnx", "-o", tmp_path / "err", *args)
        lines = r.stderr.decode().splitlines()
        assert r.returncode == 2 and len(lines) == 1 and lines[0].endswith(message), lines
    assert not os.path.exists(tmp_path / "err")


def test_a_failed_write_leaves_neither_file_nor_temporaries(tmp_path):
    mlp_model(tmp_path / "m.onnx")
    out = tmp_path / "out"
    assert run(tmp_path / "m.onnx", "-o", out).returncode == 0
    assert sorted(os.listdir(out)) == ["m.pth", "m.py"]
    # The .py cannot be renamed over a folder: the new .pth, already in place by then, is
    # removed again, so no .pth is left beside a .py it does not belong to.
    (out / "m.py").unlink()
    (out / "m.py").mkdir()
    (out / "m.py" / "keep").write_text("")
    r = run(tmp_path / "m.onnx", "-o", out)
    assert r.returncode == 2
    lines = r.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"torchonnx: {out}/m.py: cannot rename into place: "), lines
    assert os.listdir(out) == ["m.py"] and os.listdir(out / "m.py") == ["keep"]
