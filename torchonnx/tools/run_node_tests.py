"""Runs torchonnx-generated modules on ONNX backend node test data and compares outputs.

    /usr/bin/python3 run_node_tests.py MANIFEST.json

MANIFEST is a JSON list of {"name", "test_dir", "py", "pth", "fed"}: the generated files for the
node test in test_dir (model.onnx + test_data_set_*/input_*.pb, output_*.pb); the model takes the
first `fed` inputs (the others were frozen into it from data set 0, so only that set runs).
Sequence inputs and outputs are lists of tensors, absent optionals None. Every data set is run;
floats compare like ONNX's backend tests (rtol 1e-3, atol 1e-7 by default; NaN equals NaN),
other types exactly. Then each model runs once more on torch's meta device, where a tensor made
on the CPU instead of the module's device fails as it would on a GPU. Prints "FAIL <name>:
<reason>" per failure and a last line
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


def _read(path, kind="tensor_type"):
    """A test data file: an array, a list of arrays (sequence) or None/array/list (optional)."""
    proto = {"sequence_type": onnx.SequenceProto,
             "optional_type": onnx.OptionalProto}.get(kind, onnx.TensorProto)()
    with open(path, "rb") as f:
        proto.ParseFromString(f.read())
    if kind == "sequence_type":
        return numpy_helper.to_list(proto)
    if kind == "optional_type":
        return numpy_helper.to_optional(proto)
    return numpy_helper.to_array(proto)


def _kinds(ports):
    return [p.type.WhichOneof("value") for p in ports]


def _torch(value):
    """Arrays as tensors, lists as lists of tensors, None as None (what forward takes)."""
    if value is None:
        return None
    if isinstance(value, list):
        return [_torch(v) for v in value]
    return torch.from_numpy(np.array(value))


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
    graph = onnx.load(os.path.join(entry["test_dir"], "model.onnx")).graph
    in_kinds, out_kinds = _kinds(graph.input), _kinds(graph.output)
    by_index = lambda p: int(p.rsplit("_", 1)[1][:-3])  # noqa: E731
    for data in sets:
        inputs = [_read(p, in_kinds[by_index(p)])
                  for p in sorted(glob.glob(os.path.join(data, "input_*.pb")), key=by_index)][:fed]
        wants = [_read(p, out_kinds[by_index(p)])
                 for p in sorted(glob.glob(os.path.join(data, "output_*.pb")), key=by_index)]
        with torch.no_grad():
            got = model(*[_torch(x) for x in inputs])
        got = list(got) if isinstance(got, tuple) else [got]
        why = _compare_value(got, wants, rtol, atol, "output")
        if why:
            return f"{os.path.basename(data)} {why}"
    return _on_meta_device(model, inputs)


def _on_meta_device(model, inputs):
    """The model again on torch's meta device (shapes, no data): a tensor that forward makes on
    the CPU instead of the module's device meets a meta tensor and raises, as it would meeting a
    CUDA one. Ops that cannot run there (no meta kernel, or data-dependent) are not failures."""
    def meta(value):
        if value is None:
            return None
        return [meta(v) for v in value] if isinstance(value, list) else _torch(value).to("meta")
    def devices(value):
        if isinstance(value, (list, tuple)):
            return set().union(*[devices(v) for v in value]) if value else set()
        return {value.device.type} if isinstance(value, torch.Tensor) else set()
    try:
        with torch.no_grad():
            got = model.to("meta")(*[meta(x) for x in inputs])
    except Exception as e:  # noqa: BLE001 - only a device mismatch is a failure here
        message = " ".join(str(e).split())
        return f"on the meta device: {message[:200]}" if "device" in message.lower() else None
    off = devices(got) - {"meta"}
    return f"on the meta device, an output is on {sorted(off)[0]}" if off else None


def _compare_value(got, want, rtol, atol, part="element"):
    """Like _compare, for lists (`part` by `part`: the outputs, a sequence's elements) and None."""
    if want is None or got is None:
        return None if got is None and want is None else f"{got!r:.40} where {want!r:.40} is expected"
    if isinstance(want, list):
        if not isinstance(got, list):
            return f"a {type(got).__name__} where a list is expected"
        if len(got) != len(want):
            return f"{len(got)} {part}s, expected {len(want)}"
        for k, (g, w) in enumerate(zip(got, want)):
            why = _compare_value(g, w, rtol, atol)
            if why:
                return f"{part} {k}: {why}"
        return None
    return _compare(got.numpy(), want, rtol, atol)


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
