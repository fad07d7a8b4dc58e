"""The harness end to end, with fake_torchonnx.py standing in for torchonnx."""

import gzip
import json
import os
import shutil
import subprocess

import pytest

from vnncomp import discover
from vnncomp.tests.conftest import REPO
from vnncomp.tests.models import mlp

pytestmark = pytest.mark.usefixtures("need_ort")
TIMING = ("convert_ms", "validate_s", "worker_peak_rss_mb")  # differ run to run


def harness(torchonnx, *args, timeout=600, tmpdir=None):
    env = dict(os.environ, TORCHONNX=torchonnx)
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    proc = subprocess.run([os.path.join(REPO, "scripts", "vnncomp.sh"), *args], env=env,
                          capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr


def rows_by_model(path):
    with open(path) as f:
        doc = json.load(f)
    return doc, {r["model"]: r for r in doc["results"]}


def gz(path):
    with open(path, "rb") as src, gzip.open(path + ".gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    os.unlink(path)
    return path + ".gz"


def test_error_rows(tmp_path, fake_torchonnx):
    d = tmp_path / "models"
    (d / "a").mkdir(parents=True)
    mlp(d / "a" / "good.onnx")
    mlp(d / "a" / "wrong.onnx", doc="fake:wrong")
    mlp(d / "a" / "crash.onnx", doc="fake:crash")
    mlp(d / "a" / "hang.onnx", doc="fake:hang")
    mlp(d / "a" / "convcrash.onnx", doc="fake:convert-crash")
    (d / "a" / "corrupt.onnx").write_bytes(b"\x08\x07garbage")
    os.symlink(str(tmp_path / "nowhere.onnx"), str(d / "a" / "missing.onnx"))
    out = tmp_path / "r.json"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    code, stdout, _ = harness(fake_torchonnx, "--models", str(d), "--json", str(out),
                              "--timeout", "8", "--jobs", "2", tmpdir=scratch)
    assert code == 1
    # killed and crashed workers leave nothing behind in TMPDIR
    assert os.listdir(scratch) == []
    assert stdout.splitlines()[-1] == "1 passed, 6 failed"
    doc, rows = rows_by_model(out)
    assert doc["summary"] == {"passed": 1, "failed": 1, "errors": 5, "skipped": 0}
    good = rows["good.onnx"]
    assert (good["status"], good["error"], good["benchmark"]) == ("pass", "", "a")
    assert (good["nodes_before"], good["nodes_after"]) == (2, 2)
    assert [good[k] for k in ("vmap", "trace", "export", "batch")] == ["ok"] * 4
    assert good["max_error_cpu"] <= 1e-6 and good["box"] == "[-1, 1]"
    assert rows["wrong.onnx"]["status"] == "fail"
    assert rows["wrong.onnx"]["error"].startswith("max_error_cpu: max error ")
    assert rows["corrupt.onnx"]["status"] == "error"
    assert "corrupt.onnx" in rows["corrupt.onnx"]["error"]
    assert rows["missing.onnx"]["error"].startswith("missing: not found: ")
    assert rows["crash.onnx"]["error"].startswith("worker crashed (signal 11)")
    assert rows["crash.onnx"]["nodes_before"] == 2
    assert rows["hang.onnx"]["error"] == "timeout after 8 s"
    # the converter aborting in a batch: the other models of the batch are converted again
    assert rows["convcrash.onnx"]["error"].startswith("torchonnx: killed by signal 6")


def make_benchmarks(root):
    """b1: listed models stored as .gz, one listed model absent, one unlisted; b2: plain files."""
    b1, b2 = root / "b1", root / "b2"
    for d in (b1 / "onnx", b1 / "vnnlib", b2):
        d.mkdir(parents=True)
    for i in range(3):
        gz(mlp(b1 / "onnx" / f"m{i}.onnx", seed=i)[0])
    spec = "".join(f"(declare-const X_{i} Real)\n" for i in range(4))
    spec += "(declare-const Y_0 Real)\n(assert (<= X_0 0.5))\n(assert (>= X_0 0.25))\n"
    (b1 / "vnnlib" / "p0.vnnlib").write_text(spec)
    gz(str(b1 / "vnnlib" / "p0.vnnlib"))
    (b1 / "instances.csv").write_text(
        "./onnx/m0.onnx,vnnlib/gone.vnnlib,60\nonnx/m0.onnx,vnnlib/p0.vnnlib,60\n"
        "onnx/m1.onnx,vnnlib/gone.vnnlib,60\nonnx/absent.onnx,vnnlib/gone.vnnlib,60\n")
    for i in range(3, 6):
        mlp(b2 / f"n{i}.onnx", seed=i)
    (b2 / "instances.csv").write_text("n3.onnx,x.vnnlib,1\n")
    return root


def test_discovery(tmp_path):
    entries = discover.from_benchmarks(str(make_benchmarks(tmp_path)))
    got = [(e.benchmark, e.model, e.vnnlib and os.path.basename(e.vnnlib), e.missing)
           for e in entries]
    assert got == [("b1", "onnx/absent.onnx", None, True),
                   ("b1", "onnx/m0.onnx.gz", "p0.vnnlib.gz", False),
                   ("b1", "onnx/m1.onnx.gz", None, False),
                   ("b1", "onnx/m2.onnx.gz", None, False),
                   ("b2", "n3.onnx", None, False), ("b2", "n4.onnx", None, False),
                   ("b2", "n5.onnx", None, False)]
    assert [e.model for e in discover.shard(entries, 1, 3)] == ["onnx/m0.onnx.gz", "n3.onnx"]


def test_largest_of_large(tmp_path):
    """Of the models over the limit only the largest of each benchmark stays; sizes of .gz files
    are their inflated sizes."""
    b1, b2 = tmp_path / "b1", tmp_path / "b2"
    b1.mkdir()
    b2.mkdir()
    pad = {"b1/m0.onnx": 0, "b1/m1.onnx": 300, "b1/m2.onnx": 200, "b2/n3.onnx": 400, "b2/n4.onnx": 0}
    for i, (name, n) in enumerate(pad.items()):
        path = mlp(tmp_path / name, seed=i, doc="x" * n)[0]
        if name.startswith("b1"):
            gz(path)
    entries = discover.from_benchmarks(str(tmp_path))
    sizes = {e.model: discover.model_bytes(e.path) for e in entries}
    for e in entries:
        if e.path.endswith(".gz"):
            with gzip.open(e.path, "rb") as f:
                assert sizes[e.model] == len(f.read())
    assert sizes["m0.onnx.gz"] == sizes["n4.onnx"] < sizes["m2.onnx.gz"] < sizes["m1.onnx.gz"]
    kept = discover.largest_of_large(entries, limit=sizes["m0.onnx.gz"] + 100)
    assert [e.model for e in kept] == ["m0.onnx.gz", "m1.onnx.gz", "n3.onnx", "n4.onnx"]
    assert discover.largest_of_large(entries) == entries


def test_shards_merged_equal_full_run(tmp_path, fake_torchonnx):
    bench = str(make_benchmarks(tmp_path / "bench"))
    full = tmp_path / "full.json"
    code, stdout, _ = harness(fake_torchonnx, "--benchmarks", bench, "--json", str(full),
                              "--markdown", str(tmp_path / "full.md"), "--jobs", "2")
    assert (code, stdout.splitlines()[-1]) == (0, "6 passed, 0 failed")
    shards = []
    for i in range(2):
        shards.append(str(tmp_path / f"s{i}.json"))
        code, _, _ = harness(fake_torchonnx, "--benchmarks", bench, "--shard", f"{i}/2",
                             "--json", shards[-1], "--jobs", "1")
        assert code == 0
    merged = tmp_path / "merged.json"
    code, stdout, _ = harness(fake_torchonnx, "--merge", *shards, "--json", str(merged),
                              "--markdown", str(tmp_path / "merged.md"))
    assert (code, stdout.splitlines()[-1]) == (0, "6 passed, 0 failed")
    doc_full, rows_full = rows_by_model(full)
    doc_merged, rows_merged = rows_by_model(merged)
    assert doc_full["summary"] == doc_merged["summary"]
    strip = lambda rows: [{k: v for k, v in r.items() if k not in TIMING} for r in rows]  # noqa
    assert strip(doc_full["results"]) == strip(doc_merged["results"])
    assert rows_full["onnx/m0.onnx.gz"]["box"] == "p0.vnnlib.gz"
    # m1 (shard 0) has no vnnlib of its own and borrows m0's (shard 1) in every run
    assert rows_full["onnx/m1.onnx.gz"]["box"] == "p0.vnnlib.gz (other instance)"
    assert rows_full["onnx/absent.onnx"]["status"] == "skipped"
    assert "| b1 | 4 | 3 | 0 | 0 | 1 |" in (tmp_path / "merged.md").read_text()


def test_real_benchmark_folder(benchmarks, fake_torchonnx, tmp_path):
    # the `test` benchmark: five small ACAS Xu-style models (two with initializers as inputs)
    code, stdout, _ = harness(fake_torchonnx, "--benchmarks", benchmarks, "--benchmark", "test",
                              "--json", str(tmp_path / "r.json"), "--keep", str(tmp_path / "k"))
    assert (code, stdout.splitlines()[-1]) == (0, "5 passed, 0 failed")
    _, rows = rows_by_model(tmp_path / "r.json")
    assert rows["test_sat.onnx"]["box"] == "test_prop.vnnlib"
    assert all(r["export"] == "ok" and r["vmap"] == "ok" for r in rows.values())


def test_usage_errors(tmp_path, fake_torchonnx):
    code, stdout, stderr = harness(fake_torchonnx, "--models", str(tmp_path / "none"))
    assert code == 2 and stdout == "" and stderr.startswith("vnncomp: not a directory")
    code, _, stderr = harness(str(tmp_path / "no-torchonnx"), "--models", str(tmp_path))
    assert code == 2


def test_gpu_code_path_on_cpu(tmp_path, fake_torchonnx, monkeypatch):
    # VNNCOMP_GPU_DEVICE=cpu runs the CUDA checks on the CPU, so the path is covered without a GPU
    monkeypatch.setenv("VNNCOMP_GPU_DEVICE", "cpu")
    d = tmp_path / "models"
    d.mkdir()
    mlp(d / "good.onnx")
    mlp(d / "wrong.onnx", doc="fake:wrong")
    out = tmp_path / "r.json"
    code, stdout, _ = harness(fake_torchonnx, "--models", str(d), "--device", "all",
                              "--json", str(out), "--jobs", "1")
    assert (code, stdout.splitlines()[-1]) == (1, "1 passed, 1 failed")
    _, rows = rows_by_model(out)
    good, wrong = rows["good.onnx"], rows["wrong.onnx"]
    assert good["device"] == "cpu+cuda" and good["vmap_gpu"] == "ok"
    assert good["max_error_gpu"] <= 1e-6 and good["max_error_cpu"] <= 1e-6
    assert wrong["max_error_gpu"] == pytest.approx(wrong["max_error_cpu"])
    assert wrong["max_error_gpu"] > 0.1
    code, _, _ = harness(fake_torchonnx, "--models", str(d), "--device", "cuda",
                         "--json", str(out), "--jobs", "1")
    _, rows = rows_by_model(out)
    assert rows["good.onnx"]["device"] == "cuda" and rows["good.onnx"]["max_error_cpu"] is None
    assert rows["wrong.onnx"]["error"].startswith("max_error_gpu: max error")
