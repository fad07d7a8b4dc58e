#!/usr/bin/env bash
# Boxes bounded per second by propdag's torch engine (CPU, K = 1, 64, 1024 boxes per call; with
# --device=cuda on the GPU, K up to 65536) over its Eigen engine (one box at a time on the CPU),
# CROWN and alpha ("MODEL alpha"; "MODEL f32": the torch engine in float32 at the largest K),
# per second of wall time, measured in one run of propdag_torch_bench, and load + one CROWN
# bound per model. The torch engine uses $OMP_NUM_THREADS threads (LibTorch's default: its count of physical cores; 1 on the 2-core VM, so set 2 there).
# With --benchmark_repetitions=N each rate is the median of N runs (the VM's rates vary by up to
# 1.5x from run to run; --benchmark_enable_random_interleaving=true spreads that drift evenly).
#   benchmarks/propdag_torch_ratio.sh [BUILD_DIR] [--device=cpu|cuda] [--benchmark_filter=...]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$here/build}"
shift || true
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
"$build/benchmarks/propdag_torch_bench" --benchmark_format=json --benchmark_out="$out" \
  --benchmark_out_format=json "$@" >/dev/null
/usr/bin/python3 - "$out" <<'PY'
import json
import sys

runs = json.load(open(sys.argv[1]))["benchmarks"]
rate = {}
load = {}
# With --benchmark_repetitions, each benchmark's median stands for it.
medians = {r["run_name"] for r in runs if r.get("aggregate_name") == "median"}
for r in runs:
    if r.get("run_name") in medians and r.get("aggregate_name") != "median":
        continue
    if r.get("run_type") == "aggregate" and r.get("aggregate_name") != "median":
        continue
    if r.get("error_occurred"):
        print("%s: %s" % (r["name"], r.get("error_message", "error")))
        continue
    parts = r["name"].split("/")
    if parts[0] in ("boxes", "alpha"):
        ks = [p for p in parts[3:] if p.isdigit()]  # after it: min_time:..., iterations:...
        model = parts[2] + ("" if parts[0] == "boxes" else " alpha")
        engine = parts[1]
        if engine == "torch32":  # float32: its own line, against the same Eigen rate
            model, engine = model + " f32", "torch"
            rate.setdefault((model, "eigen", "1"), None)
        key = (model, engine, ks[0] if ks else "1")
        rate[key] = r["boxes_per_s"]
    elif parts[0] == "load_crown":
        load[(parts[2], parts[1])] = r["real_time"] / 1000.0
for (m, engine, k) in list(rate):
    if rate[(m, engine, k)] is None:  # a float32 line: the float64 model's Eigen rate
        rate[(m, engine, k)] = rate.get((m[:-4], "eigen", "1"))
models = sorted({k[0] for k in rate} | {k[0] for k in load})
print("%-20s %6s %14s %14s %8s" % ("model", "K", "torch box/s", "eigen box/s", "ratio"))
for m in models:
    e = rate.get((m, "eigen", "1"))
    for (mm, engine, k), v in sorted(rate.items(), key=lambda i: (i[0][0], int(i[0][2]))):
        if mm != m or engine != "torch":
            continue
        ratio = "%8.2f" % (v / e) if e else "%8s" % "-"
        print("%-20s %6s %14.1f %14s %s" % (m, k, v, "%.1f" % e if e else "-", ratio))
print()
print("%-14s %14s %14s" % ("model", "eigen load+crown s", "torch load+crown s"))
for m in sorted({k[0] for k in load}):
    e, t = load.get((m, "eigen")), load.get((m, "torch"))
    print("%-14s %14s %14s" % (m, "%.3f" % e if e else "-", "%.3f" % t if t else "-"))
PY
