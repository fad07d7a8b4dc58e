"""Command-line behaviour shared by the tools: bad input, --help, --version, pipes."""
import hashlib
import os
import subprocess
import sys

import pytest

import bad_models  # tests/, which pytest puts on sys.path (it has no __init__.py)


BUILD = os.environ.get("BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "build"))
TOOLS = {
    "shapeonnx": ["-o", "{out}"],
    "slimonnx": ["-o", "{out}"],
    "torchonnx": ["-o", "{outdir}"],
}


def tool_path(tool):
    return os.path.join(BUILD, tool, tool)


def available_tools():
    return [t for t in TOOLS if os.path.exists(tool_path(t))]


def run(tool, args, stdin=None):
    return subprocess.run([tool_path(tool), *args], input=stdin, capture_output=True, timeout=120)


@pytest.mark.parametrize("tool", available_tools())
@pytest.mark.parametrize("case", bad_models.cases() + bad_models.corpus_cases(), ids=lambda c: c[0])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tool, case, tmp_path):
    name, data, needles = case
    if name == "bomb.onnx.gz" and tool != "shapeonnx":
        pytest.skip("one tool suffices: every tool inflates with common::read_input")
    src = tmp_path / name
    src.write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    out = tmp_path / "out.onnx"
    outdir = tmp_path / "outdir"
    args = [a.format(out=out, outdir=outdir) for a in TOOLS[tool]]
    r = run(tool, [str(src), *args])
    err = r.stderr.decode()
    assert r.returncode == 2, err
    lines = err.strip("\n").split("\n")
    assert len(lines) == 1, err
    assert lines[0].startswith(f"{tool}: {src}"), err
    for needle in needles:
        assert needle in lines[0], err
    assert not out.exists()
    assert not outdir.exists() or not any(outdir.iterdir())
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "outdir") == [name]
    assert hashlib.sha256(src.read_bytes()).hexdigest() == digest  # input untouched


def check_survives(tool, src, tmp_path, timeout=60):
    """The tool on src: exit 0 with its output written, or exit 2 with one line naming src and
    nothing written; never a crash, never past `timeout` seconds."""
    out, outdir = tmp_path / "out.onnx", tmp_path / "outdir"
    args = [a.format(out=out, outdir=outdir) for a in TOOLS[tool]]
    r = subprocess.run([tool_path(tool), str(src), *args], capture_output=True, timeout=timeout)
    err = r.stderr.decode(errors="replace")
    assert r.returncode in (0, 2), f"{src.name}: exit {r.returncode}: {err[-2000:]}"
    written = out.exists() or (outdir.exists() and any(outdir.iterdir()))
    if r.returncode == 2:
        assert err.count("\n") == 1 and err.startswith(f"{tool}: {src}"), f"{src.name}: {err}"
        assert not written, src.name
    else:
        assert written, src.name
    for p in (out, *(outdir.iterdir() if outdir.exists() else ())):
        if p.exists():
            p.unlink()


@pytest.mark.parametrize("tool", available_tools())
def test_truncated_and_flipped_models_never_crash(tool, tmp_path):
    """A good model cut at 24 offsets and with 24 single-bit flips: each is rejected in one line
    with exit 2, or (where the damage leaves a valid model) converted."""
    for name, data in bad_models.damaged(bad_models.conv_model_bytes()):
        src = tmp_path / name
        src.write_bytes(data)
        check_survives(tool, src, tmp_path)
        src.unlink()


def limit_memory():
    """Child processes get 4 GiB of address space: a regression fails, not the machine."""
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


# Inputs fuzz_torchonnx found, and the one line each now gets:
# - avgpool_dim_2pow31: AveragePool over a declared 2^31 dim with uneven pads made the
#   padding-correction buffer of every output position (22 GB resident, then the OOM killer).
# - scatter_elements_axis_out_of_range (UBSan): ScatterElements with axis 3 on a rank-2 input
#   indexed the input shape at -1.
# - tfidf_negative_ngram_count (ASan): a negative ngram_counts entry was used as an offset into
#   pool_int64s (a heap read before the vector).
TORCHONNX_REGRESSIONS = [
    ("avgpool_dim_2pow31", "node 'AveragePool_0' (AveragePool): more than 2^24 output positions "
     "to correct for padding (opset 6)"),
    ("scatter_elements_axis_out_of_range",
     "node 'ScatterElements_0' (ScatterElements): axis 3 out of range for rank 2 (opset 16)"),
    ("tfidf_negative_ngram_count", "node 'TfIdfVectorizer_0' (TfIdfVectorizer): ngram_counts does "
     "not match pool_int64s (opset 9)"),
    # fuzz_shapeonnx (UBSan): two Concat inputs of 2^62 along the axis; the sum overflowed.
    ("concat_sum_overflow", "node 'Concat_0' (Concat): Concat output dim 0 overflows int64"),
    # fuzz_torchonnx (a 60 s timeout under ASan): a Scan so long that unrolling it built two
    # million nodes before failing; its length is now checked before unrolling (a well-formed
    # Scan past the limit: torchonnx/tests/cli_test.py). This one's body also declares an input
    # of element type 24, which no ONNX version defines: bodies are read on load, so that is
    # what is reported now.
    ("scan_length_past_limit", "node 'Scan_0' (Scan): body: graph input 'sum_in' has unknown "
     "element type 24"),
    # fuzz_shapeonnx (UBSan): ConvTranspose's output dim multiplied a stride of 2^62 in int64.
    ("conv_transpose_dim_overflow", "node 'ConvTranspose_0' (ConvTranspose): ConvTranspose output "
     "dim 1 is negative or past int64"),
    # fuzz_torchonnx (UBSan): TfIdfVectorizer's table-size check multiplied a max_gram_length of
    # 2^62 in int64.
    ("tfidf_max_n_2pow62", "node 'TfIdfVectorizer_0' (TfIdfVectorizer): input too long for the "
     "n-gram position tables (opset 18)"),
]


@pytest.mark.parametrize("name,message", TORCHONNX_REGRESSIONS)
def test_torchonnx_fuzz_regressions_are_one_line_errors(name, message, tmp_path):
    if "torchonnx" not in available_tools():
        pytest.skip("torchonnx not built")
    src = os.path.join(os.path.dirname(__file__), "fuzz", "regress", name + ".onnx")
    r = subprocess.run([tool_path("torchonnx"), src, "-o", str(tmp_path / "out")], timeout=60,
                       capture_output=True, preexec_fn=limit_memory)
    assert r.returncode == 2 and not (tmp_path / "out").exists()
    assert r.stderr.decode() == f"torchonnx: {src}: {message}\n"


# Inputs fuzz_propdag found, and the one line each now gets (the process used to die):
# - concat_omitted_input: node test concat_1d_axis_0, second input renamed to ""; the Concat rule
#   read the omitted input's shape (SIGSEGV or std::length_error).
# - max_omitted_input: node test max_two_inputs, second input renamed to "", after Min/Max got
#   bound rules (SIGSEGV in the fuzz target, "internal error" from the CLI).
# - transpose_negative_perm: transpose_all_permutations_5 with perm [-1, 1, 0]; the rule indexed
#   the input shape at -1 (SIGSEGV).
# - concat_dim_2pow62: concat_1d_axis_negative_1 with a declared dim of 2^62; Concat's per-element
#   map asked for a vector past max_size() ("internal error").
PROPDAG_REGRESSIONS = [
    ("concat_omitted_input", "node 'Concat_0' (Concat): Concat input 1 is missing"),
    ("max_omitted_input", "node 'Max_0' (Max): input 1 is missing"),
    ("transpose_negative_perm",
     "node 'Transpose_0' (Transpose): Transpose perm is not a permutation of the axes"),
    ("concat_dim_2pow62", "value 'value0' has more than 2^28 elements (propdag's limit)"),
    # fuzz_shapeonnx (UBSan): a Reshape shape of float16 NaNs was cast to int64 as it was.
    ("reshape_shape_nan",
     "node 'Reshape_1' (Reshape): shape has 0 at axis 2 beyond the input rank"),
]


@pytest.mark.parametrize("name,message", PROPDAG_REGRESSIONS)
def test_propdag_fuzz_regressions_are_one_line_errors(name, message):
    propdag = os.path.join(BUILD, "propdag", "propdag")
    if not os.path.exists(propdag):
        pytest.skip("propdag not built")
    src = os.path.join(os.path.dirname(__file__), "fuzz", "regress", name + ".onnx")
    r = subprocess.run([propdag, "bounds", src, "--input-box", "-1,1"], capture_output=True,
                       timeout=60, preexec_fn=limit_memory)
    assert r.returncode == 2 and r.stdout == b""
    assert r.stderr.decode() == f"propdag: {src}: {message}\n"


@pytest.mark.parametrize("tool", available_tools())
def test_deeply_nested_subgraphs_do_not_crash(tool, tmp_path):
    src = tmp_path / "nested.onnx"
    src.write_bytes(bad_models.nested_if(300))
    check_survives(tool, src, tmp_path)


# The declarations and input box of bad_models.good_model_bytes() (x: 1x4, y: 1x4).
BOX = "".join(f"(declare-const X_{i} Real)\n" for i in range(4)) + "".join(
    f"(declare-const Y_{i} Real)\n" for i in range(4)) + "".join(
    f"(assert (>= X_{i} 0))\n(assert (<= X_{i} 1))\n" for i in range(4))


@pytest.mark.parametrize("text, needle", [
    (BOX + "(assert (<= X_7 1))\n", ":17: 'X_7' is not declared"),
    (BOX + "(assert (<= Y_9 0))\n", ":17: 'Y_9' is not declared"),
    (BOX + "(assert (<= Y_0 1)\n", "unclosed '('"),
    (BOX + "(assert (<= Y_0 1)))\n", "unexpected ')'"),
    (BOX + "(assert (<= Y_0 foo))\n", "unknown term 'foo'"),
    ("(declare-const X_0 Real)\n(assert (<= X_0 1))\n", "input X_0 is not bounded"),
    (BOX + "(assert " + "(" * 100000 + ")" * 100001 + "\n", ":17: lists nested deeper than 1000"),
    (BOX + "(assert (<= X_-1 1))\n", ":17: unknown term 'X_-1'"),  # found by fuzz_vnnlib
], ids=["undeclared-input", "undeclared-output", "unclosed", "extra-paren", "unknown-term",
        "unbounded", "nested-deep", "negative-index"])
def test_bad_vnnlib_is_one_line_exit_2(text, needle, tmp_path):
    propdag = os.path.join(BUILD, "propdag", "propdag")
    if not os.path.exists(propdag):
        pytest.skip("propdag not built")
    model = tmp_path / "m.onnx"
    model.write_bytes(bad_models.good_model_bytes())
    spec = tmp_path / "p.vnnlib"
    spec.write_text(text)
    r = subprocess.run([propdag, "bounds", str(model), "--vnnlib", str(spec)], capture_output=True,
                       timeout=60)
    err = r.stderr.decode()
    assert r.returncode == 2 and r.stdout == b"", err
    assert err.count("\n") == 1 and err.startswith(f"propdag: {spec}"), err
    assert needle in err, err


@pytest.mark.parametrize("tool", available_tools())
def test_help_and_version(tool):
    r = run(tool, ["--help"])
    assert r.returncode == 0 and b"Usage" in r.stdout
    r = run(tool, ["--version"])
    assert r.returncode == 0 and r.stdout.decode().startswith(tool + " ")


@pytest.mark.parametrize("tool", available_tools())
def test_missing_file(tool, tmp_path):
    r = run(tool, [str(tmp_path / "nope.onnx"), "-o", str(tmp_path / "o")])
    assert r.returncode == 2
    assert r.stderr.decode() == f"{tool}: {tmp_path / 'nope.onnx'}: cannot open: No such file or directory\n"


def test_shapeonnx_stdin_to_stdout_and_stats():
    if "shapeonnx" not in available_tools():
        pytest.skip("shapeonnx not built")
    r = run("shapeonnx", ["-", "--stats"], stdin=bad_models.good_model_bytes())
    assert r.returncode == 0, r.stderr
    import json
    import onnx
    stats = json.loads(r.stderr.decode().strip())
    assert set(stats) == {"values", "static", "ms"}
    assert stats["values"] == stats["static"] == 3  # x, h, y
    model = onnx.load_model_from_string(r.stdout)
    onnx.checker.check_model(model)
    shapes = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim]
              for vi in list(model.graph.value_info) + list(model.graph.output)}
    assert shapes == {"h": [1, 4], "y": [1, 4]}


def control_flow_model(path):
    """x -> Loop (3 iterations: y <- tanh(y) * 1.5 + x, scan output y) -> If (sum(y) > 0: 2y, else -y)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    F = TensorProto.FLOAT
    empty = helper.make_empty_tensor_value_info
    body = helper.make_graph([helper.make_node("Tanh", ["y_in"], ["t"]),
                              helper.make_node("Mul", ["t", "k"], ["s"]),
                              helper.make_node("Add", ["s", "x"], ["y_out"]),
                              helper.make_node("Identity", ["y_out"], ["scan"]),
                              helper.make_node("Identity", ["c_in"], ["c_out"])], "body",
                             [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                              helper.make_tensor_value_info("c_in", TensorProto.BOOL, []), empty("y_in")],
                             [empty("c_out"), empty("y_out"), empty("scan")])
    then_b = helper.make_graph([helper.make_node("Add", ["y", "y"], ["twice"])], "then", [], [empty("twice")])
    else_b = helper.make_graph([helper.make_node("Neg", ["y"], ["neg"])], "else", [], [empty("neg")])
    nodes = [helper.make_node("Loop", ["n", "", "x"], ["y", "ys"], name="loop", body=body),
             helper.make_node("ReduceSum", ["y"], ["total"], keepdims=0),
             helper.make_node("Greater", ["total", "zero"], ["positive"]),
             helper.make_node("If", ["positive"], ["z"], name="choose", then_branch=then_b, else_branch=else_b)]
    inits = [numpy_helper.from_array(np.array(3, np.int64), "n"), numpy_helper.from_array(np.array(1.5, np.float32), "k"),
             numpy_helper.from_array(np.array(0, np.float32), "zero")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [2, 3])],
                              [helper.make_tensor_value_info("z", F, [2, 3]),
                               helper.make_tensor_value_info("ys", F, [3, 2, 3])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


@pytest.mark.parametrize("tool", [t for t in ("shapeonnx", "slimonnx") if t in available_tools()])
def test_unroll_flag_expands_control_flow_and_keeps_the_function(tool, tmp_path):
    import onnx
    src, out = tmp_path / "cf.onnx", tmp_path / "out.onnx"
    control_flow_model(src)
    r = run(tool, [str(src), "-o", str(out)])
    assert r.returncode == 2 and not out.exists()
    assert r.stderr.decode() == (f"{tool}: {src}: node 'loop' (Loop): control flow has no static shapes; "
                                 "--unroll expands it at compile time\n")
    r = run(tool, [str(src), "-o", str(out), "--unroll"])
    assert r.returncode == 0, r.stderr
    model = onnx.load(str(out))
    onnx.checker.check_model(model, full_check=True)
    assert not {"If", "Loop", "Scan"} & {n.op_type for n in model.graph.node}
    modules = os.environ.get("ORT_NODE_MODULES", os.path.join(BUILD, "ort", "node_modules"))
    if subprocess.run(["node", "--version"], capture_output=True).returncode or \
            not os.path.isdir(os.path.join(modules, "onnxruntime-node")):
        pytest.skip("node / onnxruntime-node not installed")
    import json
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    r = subprocess.run([sys.executable, "-m", "vnncomp.compare", str(src), str(out), "--points", "8"],
                       capture_output=True, cwd=root, timeout=120,
                       env={**os.environ, "ORT_NODE_MODULES": modules, "TMPDIR": str(tmp_path),
                            "PYTHONPATH": root})
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert result["outputs"] == 2 and result["max_error"] <= 1e-6, result


@pytest.mark.parametrize("tool", [t for t in ("shapeonnx", "slimonnx") if t in available_tools()])
def test_sequence_graph_input_is_one_line_error(tool, tmp_path):
    """Only torchonnx packs sequence and optional inputs again (as lists and None); the ONNX tools
    keep the model's interface, so such a port is an error there, with or without --unroll."""
    import onnx
    from onnx import TensorProto, helper
    node = helper.make_node("SequenceLength", ["s"], ["n"], name="count")
    graph = helper.make_graph([node], "g", [helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("n", TensorProto.INT64, [])])
    src, out = tmp_path / "seq.onnx", tmp_path / "out.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(src))
    for extra in ([], ["--unroll"]):
        r = run(tool, [str(src), "-o", str(out), *extra])
        assert r.returncode == 2 and not out.exists()
        assert r.stderr.decode() == (f"{tool}: {src}: graph input or output 's' is a sequence; only tensors are "
                                     "supported here (torchonnx converts sequences and optionals)\n")
