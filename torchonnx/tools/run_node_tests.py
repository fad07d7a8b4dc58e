"""Runs torchonnx-generated modules on ONNX backend node test data and compares outputs.

    /usr/bin/python3 run_node_tests.py MANIFEST.json

MANIFEST is a JSON list of {"name", "test_dir", "py", "pth", "fed"}: the generated files for the
node test in test_dir (model.onnx + test_data_set_*/input_*.pb, output_*.pb); the model takes the
first `fed` inputs (the others were frozen into it from data set 0, so only that set runs).
Every data set is run;
floats compare like ONNX's backend tests (rtol 1e-3, atol 1e-7 by default; NaN equals NaN),
other types exactly. Prints "FAIL <name>: <reason>" per failure and a last line
"node tests: P passed, F failed"; exit status 1 when any failed.
"""

import glob
import importlib.util
import json
import os
import sys

import numpy as np
import onnx
import torch
from onnx import numpy_helper


def _read(path):
    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return numpy_helper.to_array(tensor)


def _load(entry):
    spec = importlib.util.spec_from_file_location("m_" + entry["name"], entry["py"])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.Model()
    model.load_state_dict(torch.load(entry["pth"], weights_only=True))
    return model.eval()


def _compare(got, want, rtol, atol):
    if tuple(got.shape) != tuple(want.shape):
        return f"shape {tuple(got.shape)} != {tuple(want.shape)}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != {want.dtype}"
    if want.dtype.kind == "f":
        if not np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
            diff = np.nanmax(np.abs(got.astype(np.float64) - want.astype(np.float64)))
            return f"max |diff| {diff:.3g}"
        return None
    return None if np.array_equal(got, want) else "values differ"


def run(entry, rtol, atol):
    model = _load(entry)
    sets = sorted(glob.glob(os.path.join(entry["test_dir"], "test_data_set_*")))
    inputs_of = sorted(glob.glob(os.path.join(sets[0], "input_*.pb")))
    fed = entry.get("fed", len(inputs_of))
    if fed < len(inputs_of):
        sets = sets[:1]  # the other inputs were frozen to data set 0's values
    for data in sets:
        inputs = [_read(p) for p in sorted(glob.glob(os.path.join(data, "input_*.pb")),
                                           key=lambda p: int(p.rsplit("_", 1)[1][:-3]))][:fed]
        wants = [_read(p) for p in sorted(glob.glob(os.path.join(data, "output_*.pb")),
                                          key=lambda p: int(p.rsplit("_", 1)[1][:-3]))]
        with torch.no_grad():
            got = model(*[torch.from_numpy(np.array(x)) for x in inputs])
        got = list(got) if isinstance(got, tuple) else [got]
        if len(got) != len(wants):
            return f"{len(got)} outputs, expected {len(wants)}"
        for i, (g, w) in enumerate(zip(got, wants)):
            why = _compare(g.numpy(), w, rtol, atol)
            if why:
                return f"{os.path.basename(data)} output {i}: {why}"
    return None


def main(argv):
    with open(argv[1]) as f:
        entries = json.load(f)
    failed = 0
    for entry in entries:
        try:
            why = run(entry, entry.get("rtol", 1e-3), entry.get("atol", 1e-7))
        except Exception as e:  # noqa: BLE001 - any error fails that test only
            why = f"{type(e).__name__}: " + " ".join(str(e).split())[:300]
        if why:
            failed += 1
            print(f"FAIL {entry['name']}: {why}")
    print(f"node tests: {len(entries) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
