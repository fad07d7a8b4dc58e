"""Outputs stay atomic under kill -9: every tool is killed with SIGKILL at many moments of a run
(reading, converting, and while its output is being written) and afterwards each output file is
absent, its older version, or complete (equal to an uninterrupted run's); the input is untouched;
nothing else is left but hidden temporaries (`.NAME.PID-N.tmp`)."""
import fnmatch
import hashlib
import os
import re
import shutil
import signal
import subprocess
import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

BUILD = os.environ.get("BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "build"))
BENCHMARKS = os.environ.get("VNNCOMP_BENCHMARKS", os.path.join(
    os.path.dirname(__file__), "..", "..", "shared", "vnncomp2024", "benchmarks"))
# 1.4 MB compressed, 17 MB of weights: long enough that a kill lands in each phase.
SHARED_MODEL = os.path.join(BENCHMARKS, "tllverifybench_2023", "onnx",
                            "tllBench_n=2_N=M=32_m=1_instance_3_0.onnx.gz")
TEMPORARY = re.compile(r"^\..+\.tmp$")
OLD = b"an older output, to be replaced whole or kept whole\n"


def tool(name):
    return os.path.join(BUILD, name, name)


def made_model(path, inputs=512, hidden=2048):
    """x[1,inputs] -> MatMul -> Add -> Relu -> MatMul -> y[1,4]: 4 MiB of weights at the default."""
    rng = np.random.default_rng(28)
    w1 = rng.uniform(-1, 1, (inputs, hidden)).astype(np.float32) / inputs
    b1 = rng.uniform(-1, 1, hidden).astype(np.float32)
    w2 = rng.uniform(-1, 1, (hidden, 4)).astype(np.float32) / hidden
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Add", ["h", "b1"], ["a"]),
         helper.make_node("Relu", ["a"], ["r"]), helper.make_node("MatMul", ["r", "w2"], ["y"])],
        "made", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, inputs])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"),
         numpy_helper.from_array(w2, "w2")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


def made_spec(path, inputs):
    """X in [-1,1]^n, unsafe where Y_0 >= 100: far above any output of made_model's weights."""
    lines = [f"(declare-const X_{i} Real)" for i in range(inputs)]
    lines += [f"(declare-const Y_{j} Real)" for j in range(4)]
    for i in range(inputs):
        lines += [f"(assert (>= X_{i} -1))", f"(assert (<= X_{i} 1))"]
    path.write_text("\n".join(lines + ["(assert (>= Y_0 100))", ""]))


def cases(tmp):
    """(name, input files, command, outputs) for every tool that writes a file. Paths in the
    command are relative to the run folder; `in/` holds the inputs."""
    made = tmp / "made.onnx"
    made_model(made)
    small = tmp / "small.onnx"
    made_model(small, inputs=2, hidden=8)
    spec = tmp / "small.vnnlib"
    made_spec(spec, 2)
    out = []
    models = [("made", made)]
    if os.path.exists(SHARED_MODEL):
        models.append(("tll32", SHARED_MODEL))
    for label, model in models:
        src = "in/" + os.path.basename(model)
        out += [
            (f"shapeonnx-{label}", [model],
             [tool("shapeonnx"), src, "-o", "out.onnx", "--report", "report.md"],
             ["out.onnx", "report.md"]),
            (f"slimonnx-{label}", [model], [tool("slimonnx"), src, "-o", "out.onnx"], ["out.onnx"]),
            (f"torchonnx-{label}", [model],
             [tool("torchonnx"), src, "-o", "outdir", "--report", "report.md"],
             ["outdir/*.pth", "outdir/*.py", "report.md"]),
        ]
    out.append(("propdag-verify", [small, spec],
                [tool("propdag"), "verify", "in/small.onnx", "in/small.vnnlib", "--result",
                 "result.txt"], ["result.txt"]))
    return [c for c in out if os.path.exists(c[2][0])]


def digest(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def prepare(run_dir, inputs, old_outputs=()):
    """A fresh run folder: the inputs copied into in/, and an older version of `old_outputs`, as
    a previous run would have left them."""
    if run_dir.exists():
        shutil.rmtree(run_dir)
    (run_dir / "in").mkdir(parents=True)
    for src in inputs:
        shutil.copy(src, run_dir / "in" / os.path.basename(src))
    for rel in old_outputs:
        (run_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (run_dir / rel).write_bytes(OLD)


def reference_run(run_dir, command, inputs):
    prepare(run_dir, inputs)
    start = time.monotonic()
    r = subprocess.run(command, cwd=run_dir, capture_output=True, timeout=120)
    elapsed = time.monotonic() - start
    assert r.returncode == 0, r.stderr.decode()
    produced = sorted(str(p.relative_to(run_dir)) for p in run_dir.rglob("*")
                      if p.is_file() and p.parent.name != "in")
    return elapsed, produced, {o: (run_dir / o).read_bytes() for o in produced}


def wait_for_temporary(proc, run_dir, folders, deadline):
    """Polls until a temporary appears in one of `folders` (the write has begun) or the process
    ends; returns whether one appeared."""
    while time.monotonic() < deadline and proc.poll() is None:
        for f in folders:
            d = run_dir / f
            if d.is_dir() and any(TEMPORARY.match(n) for n in os.listdir(d)):
                return True
        time.sleep(0.0005)
    return False


def check_after_kill(run_dir, inputs, in_digests, reference, seeded, moment):
    where = f"killed at {moment}"
    for src, h in zip(inputs, in_digests):
        copy = run_dir / "in" / os.path.basename(src)
        assert digest(copy) == h, f"{where}: input {copy.name} changed"
    assert sorted(os.listdir(run_dir / "in")) == sorted(os.path.basename(s) for s in inputs), where
    found = {}
    leftovers = 0
    for p in run_dir.rglob("*"):
        rel = str(p.relative_to(run_dir))
        if p.is_dir() or p.parent.name == "in":
            continue
        if TEMPORARY.match(p.name):
            leftovers += 1
            continue
        assert rel in reference, f"{where}: unexpected file {rel}"
        data = p.read_bytes()
        ok = data == reference[rel] or (seeded and data == OLD)
        assert ok, f"{where}: {rel} is partial ({len(data)} of {len(reference[rel])} bytes)"
        found[rel] = data
    pys = [r for r in reference if r.endswith(".py")]
    for py in pys:  # torchonnx's .py completes the pair: where it is new, its .pth is too
        pth = py[:-3] + ".pth"
        if found.get(py) == reference[py]:
            assert found.get(pth) == reference[pth], f"{where}: {py} without its {pth}"
        elif found.get(py) == OLD:
            assert found.get(pth) == OLD, f"{where}: old {py} beside a new {pth}"
    return leftovers


def kill_moments(elapsed, count):
    """Moments spread over the run, from just after the start to past its usual end."""
    return [elapsed * (0.02 + 1.1 * i / (count - 1)) for i in range(count)]


def test_outputs_survive_sigkill_whole_or_not_at_all(tmp_path):
    checked = killed_writing = leftovers = 0
    runs = cases(tmp_path)
    if not runs:
        pytest.skip("no tool built")
    for name, inputs, command, outputs in runs:
        in_digests = [digest(s) for s in inputs]
        run_dir = tmp_path / name
        elapsed, produced, reference = reference_run(run_dir, command, inputs)
        assert len(produced) == len(outputs), f"{name}: wrote {produced}"
        assert all(fnmatch.fnmatch(p, o) for p, o in zip(produced, sorted(outputs))), produced
        timed = kill_moments(elapsed, 5)
        writing = [0.0, 0.001, 0.01]  # seconds after the first temporary appears
        folders = sorted({os.path.dirname(o) or "." for o in outputs})
        for i, moment in enumerate([("t", t) for t in timed] + [("w", d) for d in writing]):
            seeded = i % 2 == 1
            prepare(run_dir, inputs, produced if seeded else ())
            proc = subprocess.Popen(command, cwd=run_dir, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            if moment[0] == "t":
                time.sleep(moment[1])
            elif wait_for_temporary(proc, run_dir, folders, time.monotonic() + 3 * elapsed + 5):
                killed_writing += 1
                time.sleep(moment[1])
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            leftovers += check_after_kill(run_dir, inputs, in_digests, reference, seeded,
                                          f"{name} {moment[0]}+{moment[1]:.4f}s")
            checked += 1
    print(f"{checked} kills over {len(runs)} runs, {killed_writing} while writing, "
          f"{leftovers} hidden temporaries left")
    assert checked == 8 * len(runs)
    # Write-phase kills must find the temporary (else the test did not test writing): every one
    # does here, a third of them suffice on a loaded machine.
    assert killed_writing >= len(runs), killed_writing
