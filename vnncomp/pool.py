"""Client side of vnncomp.worker: one long-lived /usr/bin/python3 process per job slot.

A request that takes longer than the per-model timeout kills the worker's process group (the
worker and its onnxruntime-node server) and yields an error row; so does a worker that dies while
validating (its last stderr line is the reason). The next request starts a fresh worker.

Each worker runs with its own TMPDIR, removed when the worker ends however it ends: a killed
worker cannot clean up after itself (onnxruntime-node's scratch folder, exported files).
"""

import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time

from . import memplan

PYTHON = os.environ.get("VNNCOMP_PYTHON", "/usr/bin/python3")
STARTUP_TIMEOUT = 300.0  # importing torch on a loaded machine; not part of a model's timeout
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _reason(path, offset):
    """What the worker wrote to stderr since `offset`: its fatal-error line, else the last line."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            text = f.read(1 << 20).decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    fatal = [ln for ln in lines if ln.startswith("Fatal Python error")]
    return (fatal or lines or [""])[-1 if not fatal else 0]


def mem_available(meminfo="/proc/meminfo"):
    """MemAvailable in bytes, or None where /proc/meminfo does not say."""
    try:
        with open(meminfo) as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def model_bytes(path):
    """The model's size as loaded: a .gz file's uncompressed size (its trailer), else the file's."""
    try:
        if path.endswith(".gz"):
            with open(path, "rb") as f:
                f.seek(-4, os.SEEK_END)
                return int.from_bytes(f.read(4), "little")  # modulo 4 GiB
        return os.path.getsize(path)
    except OSError:
        return 0


def cost(size, activation_bytes=None):
    """Bytes a worker needs while it validates a model of `size` bytes whose forward holds
    `activation_bytes` per sample (memplan.worker_bytes: the same figure that sizes its checks)."""
    return memplan.worker_bytes(size, activation_bytes)


def plan(needs, available, jobs):
    """How many of `jobs` workers to start so that the largest `needs` (bytes per worker, cost)
    fit side by side in `available` bytes (None: unknown, all of them); at least 1."""
    jobs = max(1, jobs)
    if available is None or not needs:
        return jobs
    workers, used = 0, 0
    for need in sorted(needs, reverse=True)[:jobs]:
        used += need
        if workers and used > available:
            break
        workers += 1
    return workers


class MemoryBudget:
    """Bytes the validating workers may hold together: acquire blocks while a model would not fit
    beside the ones being validated (one model alone always runs, whatever its size)."""

    def __init__(self, total):
        self.total = total
        self.used = 0
        self.cond = threading.Condition()

    def acquire(self, n):
        with self.cond:
            while self.used and self.total is not None and self.used + n > self.total:
                self.cond.wait()
            self.used += n

    def release(self, n):
        with self.cond:
            self.used -= n
            self.cond.notify_all()


def crash_text(code, reason):
    """The error of a worker that exited with `code` (negative: killed by that signal) while
    validating; a SIGKILL the harness did not send is the kernel's (out of memory, as a rule)."""
    if code == -signal.SIGKILL:
        how = "killed by SIGKILL, not by the harness: the kernel's out-of-memory killer?"
    else:
        how = f"signal {-code}" if code < 0 else f"exit code {code}"
    return f"worker crashed ({how})" + (f": {reason}" if reason else "")


class WorkerStartError(RuntimeError):
    pass


class Worker:
    def __init__(self, log_path, threads=1):
        self.log_path = log_path
        self.threads = threads
        self.proc = None
        self.scratch = None
        self.buf = b""

    def _start(self):
        env = dict(os.environ)
        self.scratch = tempfile.mkdtemp(prefix="vnncomp_worker_")
        env["TMPDIR"] = self.scratch
        env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
        env["VNNCOMP_THREADS"] = str(self.threads)
        env.setdefault("ORTREF_THREADS", "1")
        env.setdefault("OMP_NUM_THREADS", str(self.threads))
        self.log = open(self.log_path, "ab")
        offset = self.log.tell()
        self.proc = subprocess.Popen([PYTHON, "-m", "vnncomp.worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log, cwd=REPO, env=env,
                                     start_new_session=True)
        self.buf = b""
        line = self._readline(time.monotonic() + STARTUP_TIMEOUT)
        if line != b"ready":
            self._kill()
            reason = _reason(self.log_path, offset) or "no message"
            raise WorkerStartError(f"worker did not start: {reason}")

    def _kill(self):
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
            self.proc = None
            self.log.close()
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None

    def _readline(self, deadline):
        """A line, or None on timeout; b'' when the worker exited."""
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return b""
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def validate(self, request, timeout):
        """The worker's row for a request (dict), or an error row on timeout or crash."""
        if self.proc is None or self.proc.poll() is not None:
            try:
                self._start()
            except WorkerStartError as e:
                return {"status": "error", "error": str(e)}
        start = time.monotonic()
        offset = os.path.getsize(self.log_path)
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        line = self._readline(start + timeout)
        if line is None:
            self._kill()
            return {"status": "error", "error": f"timeout after {timeout:g} s",
                    "validate_s": round(time.monotonic() - start, 3)}
        if not line:
            code = self.proc.wait()
            self._kill()
            return {"status": "error", "error": crash_text(code, _reason(self.log_path, offset)),
                    "validate_s": round(time.monotonic() - start, 3)}
        return json.loads(line)

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        self._kill()
