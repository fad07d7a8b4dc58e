"""Command-line behaviour shared by the tools: bad input, --help, --version, pipes."""
import hashlib
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import bad_models  # noqa: E402

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
@pytest.mark.parametrize("case", bad_models.cases(), ids=lambda c: c[0])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tool, case, tmp_path):
    name, data, needles = case
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
