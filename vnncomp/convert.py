"""Drives the torchonnx CLI over batches of models (many models per process).

Each model of a batch is linked into `<dir>/in/m<index>_<stem>.onnx[.gz]`, so the output stems are
known and unique; torchonnx writes `<dir>/out/<stem>.py` and `.pth`, and `--stats` lines on stderr
give nodes after slimming and conversion time. When a batch crashes, times out or leaves models
without output, those models are converted again one per process, which also yields each one's own
error line.
"""

import json
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Optional


@dataclass
class Converted:
    py: Optional[str] = None
    pth: Optional[str] = None
    nodes_after: Optional[int] = None
    ms: Optional[float] = None
    error: Optional[str] = None


def _suffix(path):
    return ".onnx.gz" if path.endswith(".gz") else ".onnx"


def _stem(index, entry):
    base = os.path.basename(entry.path)
    base = base[:-len(_suffix(base))] if base.endswith(_suffix(base)) else base
    return f"m{index:04d}_" + re.sub(r"\W", "_", base)[:48]


def _last_error(stderr):
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip() and not ln.startswith("{")]
    return lines[-1] if lines else ""


def _run(cmd, timeout):
    """(returncode or None on timeout, stderr text)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        _, err = proc.communicate(timeout=timeout)
        return proc.returncode, err.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        return None, err.decode("utf-8", "replace")


class Converter:
    def __init__(self, exe, workdir, timeout=300.0, extra_args=()):
        self.exe = exe
        self.workdir = workdir
        self.timeout = timeout
        self.extra_args = list(extra_args)

    def convert(self, items):
        """{index: Converted} for [(index, Entry)] converted in one torchonnx process."""
        first = items[0][0]
        bdir = os.path.join(self.workdir, f"convert_{first:04d}" + ("" if len(items) > 1 else "_1"))
        in_dir, out_dir = os.path.join(bdir, "in"), os.path.join(bdir, "out")
        os.makedirs(in_dir, exist_ok=True)
        os.makedirs(out_dir, exist_ok=True)
        links = {}
        for index, entry in items:
            link = os.path.join(in_dir, _stem(index, entry) + _suffix(entry.path))
            if os.path.lexists(link):
                os.unlink(link)
            os.symlink(entry.path, link)
            links[index] = link
        start = time.monotonic()
        # A batch gets one model's time limit: if it needs longer, each model is redone alone.
        code, stderr = _run([self.exe, *links.values(), "-o", out_dir, "--stats", *self.extra_args],
                            self.timeout)
        elapsed_ms = (time.monotonic() - start) * 1000
        results = self._collect(items, links, out_dir, stderr)
        if code is None or code < 0:  # killed: trust only outputs whose stats line was printed
            for r in results.values():
                if r.ms is None:
                    r.py = r.pth = None
        redo = [(i, e) for i, e in items if results[i].py is None]
        if redo and len(items) > 1:
            for index, entry in redo:
                results.update(self.convert([(index, entry)]))
            return results
        for index, entry in redo:
            results[index].error = self._error(code, stderr).replace(links[index], entry.path)
        if len(items) == 1 and results[first].ms is None and results[first].py:
            results[first].ms = round(elapsed_ms, 1)
        return results

    def _error(self, code, stderr):
        if code is None:
            return f"torchonnx: timeout after {self.timeout:g} s"
        msg = _last_error(stderr)
        if code < 0:
            return f"torchonnx: killed by signal {-code}" + (f": {msg}" if msg else "")
        return msg or f"torchonnx: exit code {code} and no output"

    def _collect(self, items, links, out_dir, stderr):
        stats = {}
        for line in stderr.splitlines():
            if line.startswith("{"):
                try:
                    s = json.loads(line)
                    stats[os.path.abspath(s["model"])] = s
                    stats.setdefault(os.path.realpath(s["model"]), s)
                except (ValueError, KeyError, TypeError):
                    pass
        results = {}
        for index, entry in items:
            link = links[index]
            py, pth = _outputs(out_dir, os.path.basename(link)[:-len(_suffix(entry.path))])
            s = stats.get(os.path.abspath(link)) or stats.get(os.path.realpath(link)) or {}
            results[index] = Converted(py, pth, s.get("nodes_after"), s.get("ms"))
        return results


def _outputs(out_dir, stem):
    """(py, pth) written for `stem`, also when torchonnx adjusted the stem (m<index>_ prefix)."""
    py, pth = os.path.join(out_dir, stem + ".py"), os.path.join(out_dir, stem + ".pth")
    if os.path.isfile(py) and os.path.isfile(pth):
        return py, pth
    prefix = stem.split("_", 1)[0] + "_"
    found = sorted(f for f in os.listdir(out_dir) if f.startswith(prefix) and f.endswith(".py"))
    if len(found) == 1 and os.path.isfile(os.path.join(out_dir, found[0][:-3] + ".pth")):
        return os.path.join(out_dir, found[0]), os.path.join(out_dir, found[0][:-3] + ".pth")
    return None, None
