"""The VNN-COMP regression harness (run it through scripts/vnncomp.sh).

    vnncomp.sh (--benchmarks DIR | --models DIR) [--benchmark NAME]... [--device cpu|cuda|all]
        [--shard I/N] [--jobs J] [--json FILE] [--markdown FILE] [--keep DIR] [--tolerance T]
        [--timeout S] [--batch B] [--missing-is-error] [--large-models all|largest]
    vnncomp.sh --merge A.json B.json ... [--json FILE] [--markdown FILE]

Models are converted by torchonnx in batches (one process per batch) on a converter thread while
J long-lived worker processes validate converted ones (see worker.py). The last line printed is
exactly "N passed, M failed"; the exit code is 1 when anything failed or errored, 2 on usage errors.
"""

import argparse
import os
import queue
import shutil
import sys
import tempfile
import threading
import time

from . import convert, discover, memplan, pool, report
from .progress import Progress

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class UsageError(Exception):
    pass


def _shard(text):
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected I/N, got {text!r}") from None
    if n < 1 or not 0 <= i < n:
        raise argparse.ArgumentTypeError(f"shard {text}: need 0 <= I < N")
    return i, n


def parser():
    p = argparse.ArgumentParser(prog="vnncomp.sh", description="VNN-COMP regression harness")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--benchmarks", metavar="DIR", help="VNN-COMP benchmarks folder")
    src.add_argument("--models", metavar="DIR", help="every .onnx/.onnx.gz below DIR")
    src.add_argument("--merge", nargs="+", metavar="JSON", help="merge shard reports")
    p.add_argument("--benchmark", action="append", default=[], metavar="NAME")
    p.add_argument("--device", choices=("cpu", "cuda", "all"), default="cpu")
    p.add_argument("--shard", type=_shard, metavar="I/N",
                   help="every N-th model from the I-th (0-based)")
    p.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1))
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--markdown", metavar="FILE")
    p.add_argument("--keep", metavar="DIR", help="keep the generated code here")
    p.add_argument("--tolerance", type=float, default=1e-5)
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per model and stage")
    p.add_argument("--batch", type=int, default=8, help="models per torchonnx process")
    p.add_argument("--points", type=int, default=5, help="random points besides the centre")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--missing-is-error", action="store_true",
                   help="models listed in instances.csv but absent are errors, not skipped")
    p.add_argument("--large-models", choices=("all", "largest"), default="all",
                   help="of the models over 64 MiB decompressed, check all or only the largest "
                        "of each benchmark")
    return p


def torchonnx_path():
    exe = os.environ.get("TORCHONNX") or os.path.join(REPO, "build", "torchonnx", "torchonnx")
    if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
        raise UsageError(f"torchonnx not found at {exe} (build it or set TORCHONNX)")
    return os.path.abspath(exe)


def devices(choice):
    if choice == "cpu":
        return ["cpu"]
    import torch
    if torch.cuda.is_available() or os.environ.get("VNNCOMP_GPU_DEVICE") == "cpu":
        return ["cuda"] if choice == "cuda" else ["cpu", "cuda"]
    if choice == "cuda":
        raise UsageError("--device cuda: CUDA is not available")
    print("vnncomp: warning: --device all without CUDA; checking on CPU only", file=sys.stderr)
    return ["cpu"]


def entries_of(args):
    root = args.benchmarks or args.models
    if not os.path.isdir(root):
        raise UsageError(f"not a directory: {root}")
    find = discover.from_benchmarks if args.benchmarks else discover.from_models
    entries = find(root, tuple(args.benchmark))
    if not entries:
        raise UsageError(f"no models found under {root}")
    fallbacks = _fallbacks(entries)  # from all entries, so that shards see the same boxes
    if args.large_models == "largest":
        entries = discover.largest_of_large(entries)
    if args.shard:
        entries = discover.shard(entries, *args.shard)
    return entries, fallbacks


def _fallbacks(entries):
    """Per benchmark: vnnlib files of its models, for models whose own vnnlib is absent."""
    by_bench = {}
    for e in entries:
        if e.vnnlib and e.vnnlib not in by_bench.setdefault(e.benchmark, []):
            by_bench[e.benchmark].append(e.vnnlib)
    return by_bench


def _size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _node_count(path):
    """Nodes of an ONNX file for error rows (None when unreadable)."""
    from . import onnxinfo
    try:
        return onnxinfo.node_count(onnxinfo.load(path))
    except Exception:  # noqa: BLE001 - a corrupt model is exactly what leads here
        return None


def _need(path, activations=None):
    """Bytes a worker needs to validate the model at `path`: pool.cost of its size and of its
    activations per sample (memplan.estimate unless given)."""
    if activations is None:
        activations = memplan.estimate(path)
    return pool.cost(pool.model_bytes(path), activations)


class Run:
    """One harness run: a converter thread feeding J validating workers."""

    def __init__(self, args, entries, fallbacks, devs, workdir):
        self.args, self.entries, self.devs, self.workdir = args, entries, devs, workdir
        self.fallbacks = fallbacks
        self.rows = [None] * len(entries)
        self.ready = queue.Queue()
        self.progress = Progress(len(entries))
        self.jobs = max(1, args.jobs)
        self.budget = pool.MemoryBudget(None)

    def finish(self, index, row):
        entry = self.entries[index]
        if row.get("status") == "error" and row.get("nodes_before") is None and not entry.missing:
            row["nodes_before"] = _node_count(entry.path)
        row = report.make_row(entry, **row)
        if row["status"] not in ("skipped",) and row.get("device") is None:
            row["device"] = "+".join(self.devs)
        self.rows[index] = row
        self.progress.done(row)

    def _convert_all(self, todo):
        conv = convert.Converter(torchonnx_path(), os.path.join(self.workdir, "torchonnx"),
                                 self.args.timeout)
        batch = max(1, self.args.batch)
        sizes = [1] + [batch] * len(todo)  # a first small batch gets the workers going
        pos = 0
        for size in sizes:
            items = todo[pos:pos + size]
            if not items:
                break
            pos += size
            for index, result in sorted(conv.convert(items).items()):
                self.ready.put((index, result))
        for _ in range(self.jobs):
            self.ready.put(None)

    def _request(self, index, converted):
        e = self.entries[index]
        return {"id": index, "onnx": e.path, "py": converted.py, "pth": converted.pth,
                "vnnlib": e.vnnlib, "fallback_vnnlib": self.fallbacks.get(e.benchmark, []),
                "devices": self.devs, "tolerance": self.args.tolerance, "points": self.args.points,
                "seed": self.args.seed, "scratch": self.workdir}

    def _validate_loop(self, slot):
        threads = max(1, (os.cpu_count() or 1) // self.jobs)
        worker = pool.Worker(os.path.join(self.workdir, f"worker_{slot}.log"), threads)
        try:
            while True:
                item = self.ready.get()
                if item is None:
                    return
                index, conv = item
                base = {"nodes_after": conv.nodes_after, "convert_ms": conv.ms}
                if conv.error:
                    self.finish(index, dict(base, status="error", error=conv.error))
                    continue
                self.progress.start(self.entries[index])
                request = self._request(index, conv)
                request["activation_bytes"] = memplan.estimate(request["onnx"])
                need = _need(request["onnx"], request["activation_bytes"])
                self.budget.acquire(need)
                try:
                    row = worker.validate(request, self.args.timeout)
                finally:
                    self.budget.release(need)
                row.pop("id", None)
                self.finish(index, dict(base, **row))
        finally:
            worker.close()

    def run(self):
        todo = []
        for i, e in enumerate(self.entries):
            if e.missing:
                status = "error" if self.args.missing_is_error or self.args.models else "skipped"
                where = "listed in instances.csv but " if self.args.benchmarks else ""
                self.finish(i, {"status": status, "error": f"missing: {where}not found: {e.path}"})
            else:
                todo.append((i, e))
        # Largest files first, so that no worker is left with a big model at the end.
        todo.sort(key=lambda item: -_size(item[1].path))
        # As many workers as the largest files leave memory for (their size and activations,
        # memplan); each validation then waits until its model fits beside those being validated.
        available = pool.mem_available()
        self.jobs = pool.plan([_need(e.path) for _, e in todo[:self.args.jobs]], available,
                              self.args.jobs)
        self.budget = pool.MemoryBudget(available)
        threads = [threading.Thread(target=self._validate_loop, args=(j,), daemon=True)
                   for j in range(self.jobs)]
        for t in threads:
            t.start()
        try:
            self._convert_all(todo)
        except BaseException:
            for _ in threads:
                self.ready.put(None)
            raise
        for t in threads:
            t.join()
        self.progress.close()
        return self.rows


def _meta(args, devs, seconds):
    meta = {"device": "+".join(devs), "tolerance": args.tolerance, "points": args.points,
            "seed": args.seed, "jobs": args.jobs, "seconds": round(seconds, 1),
            "source": os.path.abspath(args.benchmarks or args.models)}
    if args.shard:
        meta["shard"] = f"{args.shard[0]}/{args.shard[1]}"
    return meta


def run_models(args):
    entries, fallbacks = entries_of(args)
    devs = devices(args.device)
    torchonnx_path()
    start = time.monotonic()
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        workdir = os.path.abspath(args.keep)
    else:
        workdir = tempfile.mkdtemp(prefix="vnncomp_")
    try:
        rows = Run(args, entries, fallbacks, devs, workdir).run()
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    return report.to_json(rows, _meta(args, devs, time.monotonic() - start))


def main(argv=None):
    args = parser().parse_args(argv)
    try:
        if args.merge:
            doc = report.merge([report.load(p) for p in args.merge])
        else:
            doc = run_models(args)
        report.write(doc, args.json, args.markdown)
    except (UsageError, OSError, ValueError) as e:
        print(f"vnncomp: {e}", file=sys.stderr)
        return 2
    s = doc["summary"]
    sys.stderr.flush()
    print(report.summary_line(s), flush=True)
    return 1 if s["failed"] + s["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
