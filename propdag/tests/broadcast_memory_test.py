"""Memory of broadcasting elementwise ops: `propdag bounds` on a model of 2^24-element broadcasting
Add, Mul and Sub stays under a per-element limit (address space capped, peak resident memory
measured). Their maps are index arithmetic (propdag/gather.h); built as sparse matrices they took
about 300 bytes per element, now under 25.

    python3 propdag/tests/broadcast_memory_test.py DIR [LOG2_N]   writes the models to DIR
"""

import json
import os
import resource
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# Peak resident bytes per element of the model's values (inputs, intermediate values, outputs).
BYTES_PER_ELEMENT = 50
# What the process has before the model counts (binary, libraries, allocator), in bytes.
BASE = 64 << 20


def save(path, nodes, inputs, outputs, inits):
    g = helper.make_graph(nodes, "bcast", inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, path)
    return path


def square_model(path, side):
    """x: [1, side]; y = x + x^T ([side, side], both operands broadcast), z = 2 y, w = z - x;
    out = w[0:2, 0:4]. On x in [-1, 1]^side, IBP: y in [-2, 2], z in [-4, 4], w in [-5, 5].
    Values: 3 side^2 + 2 side + 8 elements."""
    f = TensorProto.FLOAT
    inits = [numpy_helper.from_array(np.array([side, 1], np.int64), "shape"),
             numpy_helper.from_array(np.array([2.0], np.float32), "two"),
             numpy_helper.from_array(np.array([0, 0], np.int64), "starts"),
             numpy_helper.from_array(np.array([2, 4], np.int64), "ends")]
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["t"]),
             helper.make_node("Add", ["x", "t"], ["y"]),
             helper.make_node("Mul", ["y", "two"], ["z"]),
             helper.make_node("Sub", ["z", "x"], ["w"]),
             helper.make_node("Slice", ["w", "starts", "ends"], ["out"])]
    return save(path, nodes, [helper.make_tensor_value_info("x", f, [1, side])],
                [helper.make_tensor_value_info("out", f, [2, 4])], inits)


def three_adds_model(path, side):
    """The fuzz finding's shape: x: [1, 1, side, side]; a = x + c1 (c1: [1, 4, 1, 1]), b = a + x,
    c = b + c2 (c2: [1, 1, 1, side]): three Adds over 4 side^2 elements; out = c[..., 0:16] of
    the first row. c1 = (0, 1, 2, 3), c2 = 0: on x in [-1, 1], c[0, k] in [k - 2, k + 2]."""
    f = TensorProto.FLOAT
    inits = [numpy_helper.from_array(np.arange(4, dtype=np.float32).reshape(1, 4, 1, 1), "c1"),
             numpy_helper.from_array(np.zeros((1, 1, 1, side), np.float32), "c2"),
             numpy_helper.from_array(np.array([0, 0, 0, 0], np.int64), "starts"),
             numpy_helper.from_array(np.array([1, 4, 1, 16], np.int64), "ends")]
    nodes = [helper.make_node("Add", ["x", "c1"], ["a"]),
             helper.make_node("Add", ["a", "x"], ["b"]),
             helper.make_node("Add", ["b", "c2"], ["c"]),
             helper.make_node("Slice", ["c", "starts", "ends"], ["out"])]
    return save(path, nodes, [helper.make_tensor_value_info("x", f, [1, 1, side, side])],
                [helper.make_tensor_value_info("out", f, [1, 4, 1, 16])], inits)


def run_limited(args, limit):
    """Runs args with its address space capped at `limit` bytes: (returncode, stdout, stderr,
    peak resident bytes, seconds)."""
    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    start = time.time()
    p = subprocess.run(args, capture_output=True, text=True, preexec_fn=cap, timeout=120)
    seconds = time.time() - start
    # The largest peak of this process's children: this suite runs no other.
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    return p.returncode, p.stdout, p.stderr, peak, seconds


def test_square_broadcast_ibp(tmp_path):
    side = 4096  # y, z, w: 2^24 elements each
    model = square_model(str(tmp_path / "square.onnx"), side)
    elements = 3 * side * side + 2 * side + 8
    limit = BASE + BYTES_PER_ELEMENT * elements
    rc, out, err, peak, seconds = run_limited(
        [os.environ["PROPDAG"], "bounds", model, "--input-box", "-1,1", "--method", "ibp",
         "--json"], limit)
    assert rc == 0, err
    data = json.loads(out)
    assert data["outputs"][0]["lower"] == [-5.0] * 8
    assert data["outputs"][0]["upper"] == [5.0] * 8
    per_element = (peak - BASE) / elements
    print(f"square {side}: peak {peak / 2**20:.0f} MiB, {per_element:.1f} bytes per element "
          f"past {BASE >> 20} MiB, {seconds:.1f} s")
    assert per_element < BYTES_PER_ELEMENT


if __name__ == "__main__":
    folder = sys.argv[1]
    log2 = int(sys.argv[2]) if len(sys.argv) > 2 else 24
    os.makedirs(folder, exist_ok=True)
    print(square_model(os.path.join(folder, f"square_2p{log2}.onnx"), 1 << (log2 // 2)))
    print(three_adds_model(os.path.join(folder, f"three_adds_2p{log2}.onnx"), 1 << (log2 // 2)))
