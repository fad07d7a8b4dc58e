"""The propdag CLI: output formats, verdicts and one-line errors with exit code 2."""

import json
import os
import subprocess

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import sampling


def net1(folder):
    """Network 1 of engine_test.cc: y = relu(x1 + x2) + relu(x1 - x2); on [-1, 1]^2 IBP gives
    [0, 4] and CROWN [0, 3] (hand-computed there)."""
    w1 = numpy_helper.from_array(np.array([[1, 1], [1, -1]], np.float32), "w1")
    w2 = numpy_helper.from_array(np.array([[1], [1]], np.float32), "w2")
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("MatMul", ["r", "w2"], ["y"])]
    g = helper.make_graph(nodes, "net1", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1])], [w1, w2])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    path = os.path.join(folder, "net1.onnx")
    onnx.save(m, path)
    return path


def prop(folder, text):
    path = os.path.join(folder, "p.vnnlib")
    with open(path, "w") as f:
        f.write("(declare-const X_0 Real)\n(declare-const X_1 Real)\n(declare-const Y_0 Real)\n"
                "(assert (>= X_0 -1))\n(assert (<= X_0 1))\n(assert (>= X_1 -1))\n(assert (<= X_1 1))\n"
                + text)
    return path


def test_bounds_json(tmp_path):
    model = net1(str(tmp_path))
    for method, hi in (("ibp", 4.0), ("crown", 3.0)):
        rc, out, err = sampling.propdag("bounds", model, "--input-box", "-1,1", "--method", method,
                                        "--json")
        assert rc == 0, err
        data = json.loads(out)
        assert data["outputs"] == [{"name": "y", "lower": [0.0], "upper": [hi]}]
        assert data["ms"] >= 0


def test_bounds_text_and_vnnlib_box(tmp_path):
    model = net1(str(tmp_path))
    rc, out, _ = sampling.propdag("bounds", model, "--vnnlib", prop(str(tmp_path), ""))
    assert rc == 0
    assert out == '"y"\n  0: [0, 3]\n'


def test_verify(tmp_path):
    model = net1(str(tmp_path))
    # y >= 3.5 is impossible (CROWN: y <= 3), but IBP (y <= 4) cannot show it.
    spec = prop(str(tmp_path), "(assert (>= Y_0 3.5))\n")
    assert sampling.propdag("verify", model, spec)[1] == "verified\n"
    assert sampling.propdag("verify", model, spec, "--method", "ibp")[1] == "unknown\n"
    # y >= 2.5 is impossible too (true max 2) but beyond CROWN's y <= 3.
    spec = prop(str(tmp_path), "(assert (>= Y_0 2.5))\n")
    assert sampling.propdag("verify", model, spec)[1] == "unknown\n"


def net4(folder):
    """Network 4 of engine_test.cc: y = 0.5 relu(2 x) - 0.5 x on [-1, 1]; CROWN's lower bound is
    -0.5, alpha's tuned slope 0.5 gives the true minimum 0 (hand-computed there)."""
    consts = [numpy_helper.from_array(np.array([v], np.float32), n)
              for n, v in (("two", 2.0), ("half", 0.5))]
    nodes = [helper.make_node("Mul", ["x", "two"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Mul", ["r", "half"], ["a"]),
             helper.make_node("Mul", ["x", "half"], ["b"]), helper.make_node("Sub", ["a", "b"], ["y"])]
    g = helper.make_graph(nodes, "net4", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1])], consts)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    path = os.path.join(folder, "net4.onnx")
    onnx.save(m, path)
    return path


def test_alpha_method(tmp_path):
    model = net4(str(tmp_path))
    rc, out, err = sampling.propdag("bounds", model, "--input-box", "-1,1", "--method", "alpha",
                                    "--json")
    assert rc == 0, err
    out = json.loads(out)["outputs"][0]
    assert -1e-6 < out["lower"][0] <= 0 and out["upper"][0] == 0.5
    spec = os.path.join(str(tmp_path), "p.vnnlib")
    with open(spec, "w") as f:
        f.write("(declare-const X_0 Real)\n(declare-const Y_0 Real)\n(assert (>= X_0 -1))\n"
                "(assert (<= X_0 1))\n(assert (<= Y_0 -0.25))\n")
    # y <= -0.25 is impossible (y >= 0): alpha proves it, CROWN (y >= -0.5) cannot, and neither
    # can alpha without steps.
    assert sampling.propdag("verify", model, spec, "--method", "alpha")[1] == "verified\n"
    assert sampling.propdag("verify", model, spec)[1] == "unknown\n"
    assert sampling.propdag("verify", model, spec, "--method", "alpha",
                            "--alpha-steps", "0")[1] == "unknown\n"


def test_errors_are_one_line_exit_2(tmp_path):
    model = net1(str(tmp_path))
    cases = [
        (["bounds", model, "--input-box", "1,0"],
         "propdag: --input-box expects LO,HI with LO <= HI, got '1,0'\n"),
        (["bounds", model], "propdag: bounds needs --vnnlib SPEC or --input-box LO,HI\n"),
        (["bounds", model, "--input-box", "0,1", "--method", "foo"],
         "propdag: unknown method 'foo' (ibp, crown, alpha)\n"),
        (["bounds", model, "--input-box", "0,1", "--alpha-steps", "-1"],
         "propdag: --alpha-steps: Value -1 not in range 0 to 1000000\n"),
        (["verify", model, model, "--branch", "widest"],
         "propdag: --branch: widest not in {input,relu}\n"),
        (["bounds", str(tmp_path / "missing.onnx"), "--input-box", "0,1"], None),
    ]
    for args, message in cases:
        rc, out, err = sampling.propdag(*args)
        assert rc == 2 and out == "", args
        assert err.count("\n") == 1 and err.startswith("propdag: "), err
        if message:
            assert err == message


def test_verify_writes_a_vnncomp_result_file(tmp_path):
    folder = str(tmp_path)
    model = net1(folder)
    result = os.path.join(folder, "out", "result.txt")
    os.mkdir(os.path.dirname(result))

    def verdict(spec_text, *args):
        if os.path.exists(result):
            os.remove(result)
        rc, out, err = sampling.propdag("verify", model, prop(folder, spec_text), "--result", result,
                                        *args)
        assert rc == 0, err
        with open(result) as f:
            return out, f.read()

    assert verdict("(assert (>= Y_0 3.5))\n") == ("verified\n", "unsat\n")
    assert verdict("(assert (<= Y_0 0.5))\n") == ("unknown\n", "unknown\n")
    # Past the limit before any case starts: the property stays open, and the file says why.
    assert verdict("(assert (<= Y_0 0.5))\n", "--split", "100", "--timeout", "1e-9") == \
        ("unknown\n", "timeout\n")
    # y = relu(x0 + x1) + relu(x0 - x1) <= 0.5: the box centre is a counterexample.
    out, text = verdict("(assert (<= Y_0 0.5))\n", "--split", "100")
    assert out.startswith("falsified\n")
    lines = text.split("\n")
    assert lines[0] == "sat" and lines[1].startswith("((X_0 ") and text.endswith("))\n")
    values = {}
    for item in text[len("sat\n"):].replace("(", " ").replace(")", " ").strip().split("\n"):
        name, value = item.split()
        values[name] = float(value)
    assert sorted(values) == ["X_0", "X_1", "Y_0"]
    x0, x1 = values["X_0"], values["X_1"]
    assert values["Y_0"] == max(x0 + x1, 0) + max(x0 - x1, 0) <= 0.5
    # A result file that cannot be written is a one-line error, exit code 2.
    rc, _, err = sampling.propdag("verify", model, prop(folder, "(assert (>= Y_0 3.5))\n"),
                                  "--result", os.path.join(folder, "missing", "r.txt"))
    assert rc == 2 and err.count("\n") == 1 and "r.txt" in err


def shifted_net1(folder):
    """Network 1 plus 1 at the output: y' = y + 1 >= 1 everywhere."""
    m = onnx.load(net1(folder))
    m.graph.initializer.append(numpy_helper.from_array(np.array([[1]], np.float32), "one"))
    m.graph.node[-1].output[0] = "y0"
    m.graph.node.append(helper.make_node("Add", ["y0", "one"], ["y"]))
    path = os.path.join(folder, "net1_shifted.onnx")
    onnx.save(m, path)
    return path


def test_verify_model_from_stdin_with_check_model(tmp_path):
    folder = str(tmp_path)
    model = net1(folder)
    other = shifted_net1(folder)
    spec = prop(folder, "(assert (<= Y_0 0.5))\n")
    result = os.path.join(folder, "result.txt")

    def run(check):
        with open(model, "rb") as stdin:
            r = subprocess.run([sampling.PROPDAG, "verify", "-", spec, "--split", "100",
                                "--result", result, "--check-model", check],
                               stdin=stdin, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return r.stdout, r.stderr, open(result).read()

    # Checked on the model itself: the point stands; the file's Y_0 is the original's output.
    out, _, text = run(model)
    assert out.startswith("falsified\n") and text.startswith("sat\n")
    # On the shifted model (y' >= 1 > 0.5) no point is a counterexample: unknown, said on stderr.
    out, err, text = run(other)
    assert out == "unknown\n" and text == "unknown\n"
    assert "misses the property" in err and other in err
    # A property whose sizes do not fit the model to check against: one-line error, exit 2.
    bad = os.path.join(folder, "bad.vnnlib")
    with open(bad, "w") as f:
        f.write("(declare-const X_0 Real)\n(declare-const Y_0 Real)\n(assert (>= X_0 0))\n")
    with open(model, "rb") as stdin:
        r = subprocess.run([sampling.PROPDAG, "verify", "-", bad], stdin=stdin,
                           capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1


def test_refine_budget(tmp_path):
    """Network 1 then y = relu(r1 + r2 - 3). CROWN bounds r1 + r2 by [0, 3] (engine_test.cc), so
    with the refinement the second ReLU's input is in [-3, 0] and y in [0, 0]. With
    --refine-budget 1 that input (cost about 14) keeps IBP's [-3, 1] while the output's pass (up to
    50 x the budget) still runs: the chord y <= (z + 3) / 4 gives y <= (r1 + r2) / 4 <= 3/4. With 0
    every bound is IBP's: y in [0, 1]."""
    m = onnx.load(net1(str(tmp_path)))
    m.graph.initializer.append(numpy_helper.from_array(np.array([[3]], np.float32), "three"))
    m.graph.node[-1].output[0] = "s"
    m.graph.node.extend([helper.make_node("Sub", ["s", "three"], ["z"]),
                         helper.make_node("Relu", ["z"], ["y"])])
    path = os.path.join(str(tmp_path), "net1_relu.onnx")
    onnx.save(m, path)
    for budget, hi in (("2e8", 0.0), ("1", 0.75), ("0", 1.0)):
        rc, out, err = sampling.propdag("bounds", path, "--input-box", "-1,1", "--json",
                                        "--refine-budget", budget)
        assert rc == 0, err
        o = json.loads(out)["outputs"][0]
        assert o["lower"] == [0.0] and abs(o["upper"][0] - hi) < 1e-12, (budget, o)


def test_stats_say_what_crown_cut_short(tmp_path):
    """`--stats` adds a {"crown": ...} line: with the default budget (the model's; full CROWN on
    a net this small) both ReLU inputs are refined and nothing is cut short; with
    --refine-budget 1 both keep IBP's bounds (h: 2 rows x 8 = 16; the second, 1 element: about
    14, test_refine_budget) while the output's pass still runs, and the line says so, for bounds
    and, before its existing statistics line (which stays last), for verify."""
    m = onnx.load(net1(str(tmp_path)))
    m.graph.initializer.append(numpy_helper.from_array(np.array([[3]], np.float32), "three"))
    m.graph.node[-1].output[0] = "s"
    m.graph.node.extend([helper.make_node("Sub", ["s", "three"], ["z"]),
                         helper.make_node("Relu", ["z"], ["y"])])
    path = os.path.join(str(tmp_path), "net1_relu.onnx")
    onnx.save(m, path)

    def crown_line(err):
        lines = [json.loads(x) for x in err.splitlines() if x.startswith('{"crown"')]
        assert len(lines) == 1, err
        return lines[0]["crown"]

    rc, _, err = sampling.propdag("bounds", path, "--input-box", "-1,1", "--stats")
    assert rc == 0, err
    full = crown_line(err)
    assert full["budget_from"] == "model" and full["refine_budget"] is None, full
    assert full["engine"] == "eigen" and full["boxes"] == 1 and full["refined"] == 2, full
    assert full["ibp_budget"] == 0 and full["cut_short"] is False, full
    rc, _, err = sampling.propdag("bounds", path, "--input-box", "-1,1", "--stats",
                                  "--refine-budget", "1")
    assert rc == 0, err
    cut = crown_line(err)
    assert cut["budget_from"] == "option" and cut["refine_budget"] == 1, cut
    assert cut["refined"] == 0 and cut["ibp_budget"] == 2 and cut["elements_ibp"] == 3, cut
    assert cut["outputs_forward"] == 0 and cut["cut_short"] is True, cut
    assert cut["largest_skipped"] == 16, cut
    rc, _, err = sampling.propdag("bounds", path, "--input-box", "-1,1", "--method", "ibp",
                                  "--stats")
    assert rc == 0 and err == "", err  # IBP cuts nothing short: no line
    spec = prop(str(tmp_path), "(assert (>= Y_0 0.5))\n")
    rc, out, err = sampling.propdag("verify", path, spec, "--stats", "--refine-budget", "1")
    assert rc == 0, err
    lines = err.strip().splitlines()
    assert crown_line(err)["cut_short"] is True and lines[0].startswith('{"crown"'), err
    assert json.loads(lines[-1])["cases"] == 1, err
