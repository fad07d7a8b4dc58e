"""Harness reports: JSON and Markdown, summaries, and merging shard reports.

JSON: {"results": [row, ...], "summary": {"passed", "failed", "errors", "skipped"}, "meta": {...}}
A row: benchmark, model, status (pass | fail | error | skipped), error (first problem, one line),
nodes_before, nodes_after, convert_ms, max_error_cpu, max_error_gpu, vmap, vmap_gpu, trace, export,
torch_export, meta_device, batch, device, box, validate_s; a row whose max_error_cpu exceeds the
tolerance also has reference_error: onnxruntime's error against the generated model run in float64
(null if it cannot run so), which shows when the reference itself is that far from the exact
result, and float64_error, ours against the same; such a row passes as float32 rounding when
float64_error <= 2 * reference_error and reference_error <= 1e-4 (accuracy_verdict "float32
rounding", else "within tolerance"; vnncomp/float64.py). max_error_gpu is judged the same way
(float64_error_gpu, accuracy_verdict_gpu; the float64 result is computed on the CPU). float64_semantic ("ok", "fail", "n/a")
and float64_semantic_error compare the ONNX model made double and run by onnxruntime with the
generated code in float64 at 1e-9 (float64_semantic_why says why it is "n/a": no double kernel,
subgraphs); it is recorded, not part of the status, since slimonnx folds constants in float32. vmap_error (and vmap_gpu_error) is the float32 vmap-vs-loop error; when it exceeds the
tolerance, vmap_float64_error and vmap_float32_noise record the same check in float64 and the
float32 loop's own error against float64 (the check passes as float32 rounding when the first is
<= 1e-9 and the error is at most twice the second; worker._vmap). Check fields are "ok", "fail" or
null (not run). `export` is torch.onnx.export run by onnxruntime; `torch_export` is graph capture
as torch.export does it (torch.export itself on torch 2.1+, make_fx over fake tensors on torch
1.13), the captured graph compared with eager. `meta_device` runs the model on torch's meta device
(shapes without data), where a tensor made on the CPU inside forward fails as it would on a GPU;
it is "n/a" when an op has no meta kernel. `batch` (the batch dimension grown to 8, at most
vmap_samples, vs the per-sample loop, for inputs that have one) is informational and does not
decide the status. vmap_samples is the number of feeds vmap stacked (64, fewer for models with
large activations; memplan.py); worker_peak_rss_mb the worker's peak resident memory (MiB) while
validating the model.
`skipped` rows are models named in instances.csv that are not on disk.
The last line printed by a run is summary_line(): "N passed, M failed", M = fails + errors.
"""

import json
import math
from collections import OrderedDict

FIELDS = ("benchmark", "model", "status", "error", "nodes_before", "nodes_after", "convert_ms",
          "max_error_cpu", "max_error_gpu", "vmap", "vmap_gpu", "trace", "export", "torch_export",
          "meta_device", "batch", "device", "box", "validate_s")
STATUSES = ("pass", "fail", "error", "skipped")


def make_row(entry, **fields):
    row = OrderedDict((f, None) for f in FIELDS)
    row["benchmark"], row["model"] = entry.benchmark, entry.model
    row.update(fields)
    return row


def _finite(v):
    return None if isinstance(v, float) and not math.isfinite(v) else v


def normalize(row):
    """A row with every field, in FIELDS order (extra fields are kept after them); non-finite
    numbers become null (JSON has no inf)."""
    out = OrderedDict((f, _finite(row.get(f))) for f in FIELDS)
    out.update((k, _finite(v)) for k, v in row.items() if k not in out)
    return out


def summary(rows):
    counts = {s: 0 for s in STATUSES}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    return {"passed": counts["pass"], "failed": counts["fail"], "errors": counts["error"],
            "skipped": counts["skipped"]}


def summary_line(s):
    return f"{s['passed']} passed, {s['failed'] + s['errors']} failed"


def sort_key(row):
    return (row["benchmark"], row["model"])


def to_json(rows, meta=None):
    rows = sorted((normalize(r) for r in rows), key=sort_key)
    return {"results": rows, "summary": summary(rows), "meta": meta or {}}


def merge(docs):
    """One report from shard reports (rows sorted; a model present twice is kept once)."""
    seen, rows = set(), []
    for doc in docs:
        for r in doc["results"]:
            if sort_key(r) not in seen:
                seen.add(sort_key(r))
                rows.append(r)
    meta = dict(docs[0].get("meta", {})) if docs else {}
    meta.pop("shard", None)
    meta["merged"] = len(docs)
    return to_json(rows, meta)


def _cell(v):
    if v is None:
        return ""
    if isinstance(v, float):
        if not math.isfinite(v):
            return "inf"
        return f"{v:.2e}" if v and (abs(v) < 1e-2 or abs(v) >= 1e4) else f"{v:.3g}"
    return str(v).replace("|", "\\|").replace("\n", " ")


def _bench_table(rows):
    lines = ["| benchmark | models | pass | fail | error | skipped | convert ms | validate s |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    groups = OrderedDict()
    for r in rows:
        groups.setdefault(r["benchmark"], []).append(r)
    groups["**total**"] = rows
    for name, rs in groups.items():
        s = summary(rs)
        ms = sum(r.get("convert_ms") or 0 for r in rs)
        vs = sum(r.get("validate_s") or 0 for r in rs)
        lines.append(f"| {_cell(name)} | {len(rs)} | {s['passed']} | {s['failed']} | {s['errors']} "
                     f"| {s['skipped']} | {ms:.0f} | {vs:.1f} |")
    return lines


def _float64_lines(rows):
    """The float64 checks' coverage: semantic check results, rows passed as float32 rounding."""
    sem = [r.get("float64_semantic") for r in rows if r.get("float64_semantic")]
    if not sem:
        return []
    rounding = [f"{r['benchmark']}/{r['model']}" for r in rows
                if "float32 rounding" in (r.get("accuracy_verdict"), r.get("accuracy_verdict_gpu"))]
    counts = ", ".join(f"{sem.count(k)} {k}" for k in ("ok", "fail", "n/a"))
    return [f"float64 semantic check: {counts}; passed as float32 rounding: {len(rounding)}"
            + (f" ({', '.join(rounding)})" if rounding else ""), ""]


def to_markdown(doc):
    rows, s, meta = doc["results"], doc["summary"], doc.get("meta", {})
    head = ", ".join(f"{k} {v}" for k, v in meta.items() if k in ("device", "tolerance", "shard"))
    lines = ["# VNN-COMP regression report", "",
             f"{summary_line(s)} ({s['failed']} fail, {s['errors']} error, {s['skipped']} skipped)"
             + (f"; {head}" if head else ""), "", *_float64_lines(rows), "## Per benchmark", ""]
    lines += _bench_table(rows)
    lines += ["", "## Models", "",
              "| benchmark | model | nodes before | nodes after | convert ms | status | "
              "max error CPU | max error GPU | vmap | trace | export | torch.export | meta device | "
              "device | error |",
              "|---|---|---:|---:|---:|---|---:|---:|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["status"] == "skipped":
            continue
        vmap = r.get("vmap") or ""
        if r.get("vmap_gpu"):
            vmap = f"{vmap}/{r['vmap_gpu']} (gpu)"
        cells = [r["benchmark"], r["model"], r.get("nodes_before"), r.get("nodes_after"),
                 r.get("convert_ms"), r["status"], r.get("max_error_cpu"), r.get("max_error_gpu"),
                 vmap, r.get("trace"), r.get("export"), r.get("torch_export"), r.get("meta_device"),
                 r.get("device"), r.get("error")]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    skipped = [r for r in rows if r["status"] == "skipped"]
    if skipped:
        lines += ["", f"Skipped ({len(skipped)}, listed in instances.csv but not on disk): "
                  + ", ".join(f"{r['benchmark']}/{r['model']}" for r in skipped)]
    return "\n".join(lines) + "\n"


def write(doc, json_path=None, md_path=None):
    if json_path:
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1, allow_nan=False, default=str)
            f.write("\n")
    if md_path:
        with open(md_path, "w", encoding="utf-8") as f:
            f.write(to_markdown(doc))


def load(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or "results" not in doc:
        raise ValueError(f"{path}: not a vnncomp report")
    return doc
