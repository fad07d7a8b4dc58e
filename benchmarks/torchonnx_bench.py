"""Generated-code latency against onnxruntime, and conversion time, over VNN-COMP models.

    /usr/bin/python3 benchmarks/torchonnx_bench.py [--benchmarks DIR] [--torchonnx EXE]
        [--filter TEXT] [--min-seconds 0.1] [--rounds 3] [--json FILE]

1. Converts every model with ONE torchonnx process (--stats) and reports the total time.
2. For each model: the generated module at batch 1 on one CPU thread (eager, no_grad, median of
   repeated calls after warm-up) against onnxruntime-node on the same inputs (one intra-op
   thread, all graph optimizations; benchmarks/torchonnx_bench.js), as the ratio torch / ort.
   The two are measured alternately, --rounds times each, and each keeps its fastest median, so
   a change in machine load during the run affects both sides alike.
3. Unless --no-traced: the same module through torch.jit.trace + torch.jit.freeze (TorchScript, no
   Python between ops), measured in the same rounds, as a second ratio traced / ort.
Prints the machine's BLAS (which kernels OpenBLAS picked decides batch-1 products: see
benchmarks/RESULTS.md, stop 18), one row per model and a summary (median, geometric mean, max).
"""

import argparse
import ctypes
import glob
import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
if (importlib.util.find_spec("vnncomp") is None
        and REPO not in os.environ.get("PYTHONPATH", "").split(os.pathsep)):
    # Run by path, so sys.path has benchmarks/ and not the repository: again, with it on PYTHONPATH.
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, sys.orig_argv)

import numpy as np  # noqa: E402
import torch  # noqa: E402

from vnncomp import checks, onnxinfo, ortref  # noqa: E402


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--benchmarks", default=os.path.join(REPO, "..", "shared", "vnncomp2024", "benchmarks"))
    p.add_argument("--torchonnx", default=os.path.join(REPO, "build", "torchonnx", "torchonnx"))
    p.add_argument("--filter", default="")
    p.add_argument("--min-seconds", type=float, default=0.1)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--max-runs", type=int, default=2000)
    p.add_argument("--json")
    p.add_argument("--no-traced", dest="traced", action="store_false",
                   help="skip the torch.jit.trace + freeze measurement")
    return p.parse_args(argv)


def convert_all(exe, models, out):
    start, cpu = time.monotonic(), os.times()
    proc = subprocess.run([exe, *models, "-o", out, "--stats"], capture_output=True, text=True)
    total = time.monotonic() - start
    after = os.times()
    cpu_s = (after.children_user - cpu.children_user) + (after.children_system - cpu.children_system)
    stems, stats = {}, {}
    for line in proc.stdout.splitlines():
        src, _, dst = line.partition(" -> ")
        stems[src] = dst
    for line in proc.stderr.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            stats[row["model"]] = row["ms"]
        else:
            print(line, file=sys.stderr)
    return total, cpu_s, stems, stats


def median_us(fn, min_s, max_runs):
    for _ in range(5):
        fn()
    times, start = [], time.perf_counter()
    while len(times) < max_runs and (len(times) < 5 or time.perf_counter() - start < min_s):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


def load_model(py, specs, feed):
    model = checks.load_module(py, py[:-3] + ".pth")
    return model, [torch.from_numpy(feed[s.name]) for s in specs]


def make_feed(specs, rng):
    feed = {}
    for s in specs:
        if np.issubdtype(s.dtype, np.floating):
            feed[s.name] = rng.uniform(-1, 1, s.shape).astype(s.dtype)
        else:
            feed[s.name] = np.zeros(s.shape, dtype=s.dtype)
    return feed


class OrtTimer:
    """One long-lived torchonnx_bench.js process; time(job) returns microseconds or an error text."""

    def __init__(self, scratch):
        self.proc = subprocess.Popen(["node", os.path.join(HERE, "torchonnx_bench.js")],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=ortref.node_env(scratch))

    def time(self, job):
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            return "onnxruntime-node exited"
        row = json.loads(line)
        return row.get("us", row.get("error"))

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def traced_module(model, xs):
    """The module through torch.jit.trace + torch.jit.freeze, or an error text."""
    try:
        with torch.no_grad():
            return torch.jit.freeze(torch.jit.trace(model, tuple(xs), strict=False, check_trace=False))
    except Exception as e:  # noqa: BLE001 - reported in the row
        return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


def interleaved(model, xs, job, ort, args, traced=None):
    """Fastest median of each side over args.rounds alternating measurements: (torch, ort, traced)."""
    best_torch, best_ort, best_traced = math.inf, math.inf, math.inf
    with torch.no_grad():
        for _ in range(args.rounds):
            best_torch = min(best_torch, median_us(lambda: model(*xs), args.min_seconds, args.max_runs))
            if traced is not None and not isinstance(traced, str):
                best_traced = min(best_traced,
                                  median_us(lambda: traced(*xs), args.min_seconds, args.max_runs))
            us = ort.time(job)
            if not isinstance(us, (int, float)):
                return best_torch, us, None
            best_ort = min(best_ort, us)
    if traced is None:
        return best_torch, best_ort, None
    return best_torch, best_ort, traced if isinstance(traced, str) else best_traced


def summary(label, ratios):
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"ratio {label}/ort over {len(ratios)} models: median {statistics.median(ratios):.2f}, "
          f"geometric mean {geo:.2f}, max {max(ratios):.2f}, <= 2x: {sum(r <= 2 for r in ratios)}")


def machine():
    """CPU, torch version and the BLAS torch's products go through (OpenBLAS: the kernels it chose)."""
    info = {"torch": torch.__version__, "cpu": "", "avx512": False, "blas": "", "blas_core": None,
            "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE")}
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
        info["cpu"] = next((l.split(":", 1)[1].strip() for l in text.splitlines()
                            if l.startswith("model name")), "")
        info["avx512"] = " avx512f" in text
    except OSError:
        pass
    torch.mm(torch.ones(2, 2), torch.ones(2, 2))  # make sure the BLAS is loaded
    try:
        with open("/proc/self/maps") as f:
            libs = sorted({l.split()[-1] for l in f if "blas" in l.split()[-1]})
    except OSError:
        libs = []
    info["blas"] = ", ".join(os.path.realpath(l) for l in libs)
    openblas = next((l for l in libs if "libopenblas" in l), None)
    if openblas:
        lib = ctypes.CDLL(openblas)  # the copy already loaded: same library state as torch's
        lib.openblas_get_corename.restype = ctypes.c_char_p
        info["blas_core"] = lib.openblas_get_corename().decode()
    return info


def print_machine(info):
    core = (f" (OpenBLAS kernels: {info['blas_core']}; OPENBLAS_CORETYPE "
            f"{info['OPENBLAS_CORETYPE'] or 'unset'})" if info["blas_core"] else "")
    print(f"machine: {info['cpu']}{' with AVX-512' if info['avx512'] else ''}; torch {info['torch']}; "
          f"BLAS {info['blas'] or 'unknown'}{core}")
    avx512_cores = ("skylakex", "cooperlake", "sapphirerapids")
    if info["avx512"] and info["blas_core"] and info["blas_core"].lower() not in avx512_cores:
        why = ("OPENBLAS_CORETYPE in the environment keeps" if info["OPENBLAS_CORETYPE"]
               else "this OpenBLAS did not recognise the CPU, which keeps")
        print(f"note: {why} torch's products off OpenBLAS's AVX-512 kernels, while onnxruntime uses "
              "AVX-512; batch-1 products run several times slower so (RESULTS.md, stop 18)")


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(1)
    info = machine()
    print_machine(info)
    models = sorted(p for p in glob.glob(os.path.join(args.benchmarks, "**", "*.onnx*"), recursive=True)
                    if args.filter in p and p.endswith((".onnx", ".onnx.gz")))
    # The generated code and weights of all models (1.3 GB for the 146) go when the run ends.
    with tempfile.TemporaryDirectory(prefix="torchonnx_bench_") as work:
        return measure(args, models, work, info)


def measure(args, models, work, info):
    """Converts `models` into `work`, times each against onnxruntime, prints and writes the rows."""
    total, cpu_s, stems, conv_ms = convert_all(args.torchonnx, models, work)
    print(f"conversion: {len(stems)}/{len(models)} models in one process, {total:.2f} s wall, "
          f"{cpu_s:.2f} s CPU (user + system)")
    rng = np.random.default_rng(0)
    rows, ratios, traced_ratios = [], [], []
    ort = OrtTimer(work)
    print(f"{'model':70s} {'torch us':>10s} {'ort us':>10s} {'ratio':>7s}"
          + (f" {'traced us':>10s} {'ratio':>7s}" if args.traced else ""))
    for path in models:
        if path not in stems:
            continue
        specs = onnxinfo.inputs(onnxinfo.load(path))
        feed = make_feed(specs, rng)
        inputs = []
        for i, s in enumerate(specs):
            f = os.path.join(work, f"in_{len(rows)}_{i}.bin")
            feed[s.name].tofile(f)
            inputs.append({"name": s.name, "type": str(np.dtype(s.dtype)),
                           "dims": list(s.shape), "file": f})
        job = {"model": path, "inputs": inputs, "min_s": args.min_seconds, "max_runs": args.max_runs}
        row = {"model": os.path.relpath(path, args.benchmarks), "convert_ms": conv_ms.get(path)}
        try:
            model, xs = load_model(stems[path], specs, feed)
            traced = traced_module(model, xs) if args.traced else None
            row["torch_us"], row["ort_us"], traced_us = interleaved(model, xs, job, ort, args, traced)
            if args.traced:
                row["traced_us"] = traced_us
        except Exception as e:  # noqa: BLE001 - report and go on
            row["torch_us"], row["ort_us"] = f"{type(e).__name__}: {e}", None
        checks.unload_all()
        ok = isinstance(row["torch_us"], float) and isinstance(row["ort_us"], (int, float))
        row["ratio"] = row["torch_us"] / row["ort_us"] if ok else None
        rows.append(row)
        traced_ok = ok and isinstance(row.get("traced_us"), float)
        if traced_ok:
            row["traced_ratio"] = row["traced_us"] / row["ort_us"]
            traced_ratios.append(row["traced_ratio"])
        if ok:
            ratios.append(row["ratio"])
            extra = ""
            if args.traced:
                extra = (f" {row['traced_us']:10.1f} {row['traced_ratio']:7.2f}" if traced_ok
                         else f" {row.get('traced_us')}")
            print(f"{row['model'][:70]:70s} {row['torch_us']:10.1f} {row['ort_us']:10.1f} "
                  f"{row['ratio']:7.2f}{extra}", flush=True)
        else:
            print(f"{row['model'][:70]:70s} {row['torch_us']} {row['ort_us']}", flush=True)
    ort.close()
    if ratios:
        summary("torch", ratios)
    if traced_ratios:
        summary("traced", traced_ratios)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": info, "conversion_s": total, "conversion_cpu_s": cpu_s,
                       "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
