"""Two generations of torchonnx output for the same models, timed against each other in one process.

    /usr/bin/python3 benchmarks/torchonnx_ab.py OLD_DIR NEW_DIR [STEM.py ...]

OLD_DIR and NEW_DIR hold `<stem>.py` + `<stem>.pth` written by two torchonnx builds from the same models
(e.g. `torchonnx $(find ../shared/vnncomp2024/benchmarks -name '*.onnx*') -o NEW_DIR`). Without stems, every
file whose code differs is compared. Each pair runs at batch 1 on one thread, eager under no_grad, on the
same random inputs (shapes from the header, N = 1); old and new alternate for three rounds and each keeps
its fastest 0.1 s median, so both see the same machine load. Prints old µs, new µs, new/old and the largest
output difference. Separate runs of torchonnx_bench.py are not comparable model by model (onnxruntime's
own times move by up to ±30% between runs); this comparison is.
"""

import filecmp
import importlib.util
import os
import re
import statistics
import sys
import time

import torch


def load(folder, py, tag):
    spec = importlib.util.spec_from_file_location(tag + py[:-3], os.path.join(folder, py))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.Model()
    model.load_state_dict(torch.load(os.path.join(folder, py[:-3] + ".pth")))
    return model.eval()


def input_shapes(source):
    """Shapes of forward's inputs from the header lines '#   name: dtype [d0, d1, ...]' (N -> 1)."""
    shapes = []
    for line in source.splitlines()[2:]:
        if not line.startswith("#   "):
            break
        dims = re.search(r"\[(.*)\]", line).group(1).replace("N", "1")
        shapes.append([int(d) for d in dims.split(",") if d.strip()])
    return shapes


def median_us(fn, seconds=0.1):
    for _ in range(5):
        fn()
    times, start = [], time.perf_counter()
    while len(times) < 5 or time.perf_counter() - start < seconds:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    old, new = argv[0], argv[1]
    names = argv[2:] or [f for f in sorted(os.listdir(new)) if f.endswith(".py") and os.path.exists(
        os.path.join(old, f)) and not filecmp.cmp(os.path.join(old, f), os.path.join(new, f), shallow=False)]
    torch.set_num_threads(1)
    torch.manual_seed(0)
    for py in names:
        with open(os.path.join(new, py)) as f:
            xs = [torch.rand(*s) for s in input_shapes(f.read())]
        a, b = load(old, py, "old_"), load(new, py, "new_")
        with torch.no_grad():
            ya, yb = a(*xs), b(*xs)
            ya, yb = (ya,) if isinstance(ya, torch.Tensor) else ya, (yb,) if isinstance(yb, torch.Tensor) else yb
            diff = max(float((p - q).abs().max()) for p, q in zip(ya, yb))
            ta = tb = float("inf")
            for _ in range(3):
                ta, tb = min(ta, median_us(lambda: a(*xs))), min(tb, median_us(lambda: b(*xs)))
        print(f"{py[:60]:60s} old {ta:9.1f} new {tb:9.1f} new/old {tb / ta:.3f} max diff {diff:.2e}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
