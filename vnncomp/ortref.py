"""Reference outputs from onnxruntime.

`run(model_path, inputs)` returns the model's outputs in graph order. It uses the Python
`onnxruntime` package when importable, else one long-lived Node.js process (`ort_server.js`) with
onnxruntime-node from `<repo>/build/ort/node_modules` (env ORT_NODE_MODULES overrides), spoken to
with a compact binary framing (see ort_server.js). `.onnx.gz` files are decompressed in memory.

ORT 1.30 refuses models whose default-domain opset is <= 6: such models are converted to opset 7
with onnx.version_converter (into a temporary file) and run again.
"""

import atexit
import gzip
import os
import shutil
import struct
import subprocess
import tempfile
import threading

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODE = os.environ.get("ORTREF_NODE", "/usr/bin/node")
SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ort_server.js")

# ONNX TensorProto codes <-> numpy dtypes (the wire format of ort_server.js).
_CODE_OF = {
    np.dtype(np.float32): 1, np.dtype(np.uint8): 2, np.dtype(np.int8): 3,
    np.dtype(np.uint16): 4, np.dtype(np.int16): 5, np.dtype(np.int32): 6,
    np.dtype(np.int64): 7, np.dtype(np.bool_): 9, np.dtype(np.float16): 10,
    np.dtype(np.float64): 11, np.dtype(np.uint32): 12, np.dtype(np.uint64): 13,
}
_DTYPE_OF = {code: dt for dt, code in _CODE_OF.items()}


class OrtError(RuntimeError):
    """onnxruntime refused or failed to run a model; the message is ORT's text."""


def backend():
    """'python' when the onnxruntime package is importable, else 'node'."""
    try:
        import onnxruntime
        return "python" if onnxruntime else "node"
    except ImportError:
        return "node"


def node_available():
    modules = os.environ.get("ORT_NODE_MODULES", os.path.join(REPO, "build", "ort", "node_modules"))
    return os.path.exists(NODE) and os.path.isdir(os.path.join(modules, "onnxruntime-node"))


def available():
    return backend() == "python" or node_available()


def _pack_str(s):
    b = s.encode("utf-8")
    return struct.pack("<I", len(b)) + b


def _pack_tensor(name, array):
    a = np.ascontiguousarray(array)
    if a.dtype not in _CODE_OF:
        raise OrtError(f"unsupported input dtype {a.dtype} for '{name}'")
    head = struct.pack("<BB", _CODE_OF[a.dtype], a.ndim) + struct.pack(f"<{a.ndim}q", *a.shape)
    return [_pack_str(name), head, a.tobytes()]


class _Reader:
    def __init__(self, buf):
        self.buf = memoryview(buf)
        self.pos = 0

    def take(self, n):
        v = self.buf[self.pos:self.pos + n]
        self.pos += n
        return v

    def u8(self):
        return self.take(1)[0]

    def u32(self):
        return struct.unpack("<I", self.take(4))[0]

    def str(self):
        return bytes(self.take(self.u32())).decode("utf-8")

    def tensor(self):
        self.str()  # name: outputs come in graph order already
        code, rank = self.u8(), self.u8()
        dims = struct.unpack(f"<{rank}q", self.take(8 * rank))
        dtype = _DTYPE_OF[code]
        count = int(np.prod(dims, dtype=np.int64))
        data = self.take(count * dtype.itemsize)
        return np.frombuffer(data, dtype=dtype).reshape(dims).copy()


def node_env(scratch):
    """The environment for a node process that loads onnxruntime-node. Its library writes a log
    file per process into TMPDIR (`mat-debug-<pid>.log`), so TMPDIR is `scratch`, a folder the
    caller removes."""
    env = dict(os.environ)
    env["TMPDIR"] = scratch
    return env


class NodeClient:
    """One ort_server.js process; restarted when it dies."""

    def __init__(self):
        self.proc = None
        self.scratch = None
        self.lock = threading.Lock()

    def _start(self):
        if self.scratch is None:
            self.scratch = tempfile.mkdtemp(prefix="ortref_")
        env = node_env(self.scratch)
        env.setdefault("ORTREF_THREADS", "1")
        self.proc = subprocess.Popen([NODE, SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env)

    def _read(self, n):
        data = self.proc.stdout.read(n)
        if data is None or len(data) < n:
            err = self.proc.stderr.read().decode("utf-8", "replace").strip().splitlines()
            code = self.proc.wait()
            self.proc = None
            last = err[-1] if err else "no message"
            raise OrtError(f"ort_server exited with code {code}: {last}")
        return data

    def run(self, model_path, inputs):
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                self._start()
            parts = [b"\x01", _pack_str(os.path.abspath(model_path)),
                     struct.pack("<I", len(inputs))]
            for name, array in inputs.items():
                parts += _pack_tensor(name, array)
            body = b"".join(parts)
            try:
                self.proc.stdin.write(struct.pack("<I", len(body)))
                self.proc.stdin.write(body)
                self.proc.stdin.flush()
            except BrokenPipeError:
                pass  # _read reports the exit
            reply = _Reader(self._read(struct.unpack("<I", self._read(4))[0]))
            if reply.u8() != 0:
                raise OrtError(reply.str())
            return [reply.tensor() for _ in range(reply.u32())]

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        self.proc = None
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None


class PythonClient:
    """The onnxruntime Python package, with a small session cache."""

    def __init__(self):
        import onnxruntime
        self.ort = onnxruntime
        self.sessions = {}

    def _session(self, model_path):
        st = os.stat(model_path)
        key = (os.path.abspath(model_path), st.st_size, st.st_mtime_ns)
        if key not in self.sessions:
            opts = self.ort.SessionOptions()
            opts.intra_op_num_threads = int(os.environ.get("ORTREF_THREADS", "1"))
            opts.log_severity_level = 3
            source = model_path
            if model_path.endswith(".gz"):
                with gzip.open(model_path, "rb") as f:
                    source = f.read()
            try:
                sess = self.ort.InferenceSession(source, opts, providers=["CPUExecutionProvider"])
            except Exception as e:  # noqa: BLE001 - ORT raises several private exception types
                raise OrtError(_one_line(e)) from None
            while len(self.sessions) >= 2:
                self.sessions.pop(next(iter(self.sessions)))
            self.sessions[key] = sess
        return self.sessions[key]

    def run(self, model_path, inputs):
        sess = self._session(model_path)
        try:
            return [np.asarray(o) for o in sess.run(None, inputs)]
        except Exception as e:  # noqa: BLE001
            raise OrtError(_one_line(e)) from None

    def close(self):
        self.sessions.clear()


def _one_line(e):
    return " | ".join(line.strip() for line in str(e).splitlines() if line.strip())


_client = None
_converted = {}  # original path -> temporary opset-7 copy


def client():
    global _client
    if _client is None:
        _client = PythonClient() if backend() == "python" else NodeClient()
    return _client


def close():
    global _client
    if _client is not None:
        _client.close()
    _client = None
    for path in _converted.values():
        if os.path.exists(path):
            os.unlink(path)
    _converted.clear()


atexit.register(close)


def _old_opset(model_path):
    from . import onnxinfo
    try:
        opset = onnxinfo.default_opset(onnxinfo.load(model_path))
        return opset is not None and opset <= 6
    except Exception:  # noqa: BLE001 - unreadable: report ORT's own error
        return False


def _upgrade(model_path):
    """Copy of an opset <= 6 model converted to opset 7 (cached per path)."""
    if model_path not in _converted:
        from onnx import version_converter
        from . import onnxinfo
        model = version_converter.convert_version(onnxinfo.load(model_path), 7)
        fd, tmp = tempfile.mkstemp(suffix=".onnx", prefix="ortref_")
        with os.fdopen(fd, "wb") as f:
            f.write(model.SerializeToString())
        _converted[model_path] = tmp
    return _converted[model_path]


def run(model_path, inputs):
    """Outputs (graph order) of `model_path` for `inputs` (name -> numpy array). Raises OrtError."""
    model_path = _converted.get(model_path, model_path)
    try:
        return client().run(model_path, inputs)
    except OrtError as e:
        # ORT 1.30 lacks kernels for opset <= 6 versions of many ops ("Could not find an
        # implementation for Add(6) node"): retry with an opset-7 copy of such models.
        if not _old_opset(model_path):
            raise
        try:
            upgraded = _upgrade(model_path)
        except Exception:  # noqa: BLE001 - the converter's failure is less telling than ORT's
            raise e from None
    return client().run(upgraded, inputs)
