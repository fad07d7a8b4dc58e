"""Float64 views of a model, to tell float32 rounding from translation errors.

- `gaps`: the generated code run in float64 serves as the exact result; how far the float32
  outputs of ours and of onnxruntime are from it. The fair float32 verdict (worker.py) passes a
  model over tolerance when ours is within 2x onnxruntime's own distance and onnxruntime is within
  REFERENCE_LIMIT of it.
- `semantic_error`: the ONNX model itself in double (float initializers, inputs, outputs and Cast
  targets widened) run by onnxruntime against the generated code in float64. Where onnxruntime
  has a double kernel for every op, both sides compute the same function with rounding near 1e-16,
  so a difference above SEMANTIC_LIMIT is a translation error, not rounding -- for code generated
  without slimming: slimonnx folds constants (BatchNorm into Conv, merged products) in float32,
  which float64 sees, and Floor/Round/comparisons turn tiny differences into whole steps. The
  harness records it per model without letting it decide the status.
"""

import copy
import itertools
import os

import numpy as np

from . import numerics

REFERENCE_LIMIT = 1e-4  # onnxruntime's float32 error against float64 that still counts as rounding
SEMANTIC_LIMIT = 1e-9   # relative error (numerics.error) between the float64 sides

_paths = itertools.count()  # onnxruntime sessions are cached by path: a new name per model


def _wide(feed):
    return {k: v.astype(np.float64) if np.issubdtype(v.dtype, np.floating) else v
            for k, v in feed.items()}


def _model64(model):
    """The float64 copy, on the CPU, of a loaded generated module (raises when it cannot be
    widened)."""
    return copy.deepcopy(model).double().cpu()


def gaps(model, specs, feeds, refs, ours):
    """(onnxruntime's error, ours' error) against the float64 run of the generated code, over the
    feeds; `ours` are our float32 outputs per feed. None when the model does not run in float64."""
    from . import checks
    try:
        m64 = _model64(model)
        ref_gap = our_gap = 0.0
        for feed, ref, got in zip(feeds, refs, ours):
            exact = [np.asarray(e) for e in checks.run(m64, _wide(feed), specs)]
            ref_gap = max(ref_gap, numerics.compare(ref, exact)[0])
            our_gap = max(our_gap, numerics.compare(got, exact)[0])
    except Exception:  # noqa: BLE001 - diagnostic only
        return None
    if not (np.isfinite(ref_gap) and np.isfinite(our_gap)):
        return None
    return ref_gap, our_gap


def fair_pass(err, tol, gap):
    """Whether a float32 error `err` over `tol` is rounding by the float64 `gap` (see gaps)."""
    if err <= tol:
        return True
    if gap is None:
        return False
    ref_gap, our_gap = gap
    return ref_gap <= REFERENCE_LIMIT and our_gap <= 2 * ref_gap


def _widen_tensor(t):
    from onnx import TensorProto, numpy_helper
    if t.data_type != TensorProto.FLOAT:
        return t
    wide = numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float64), t.name)
    t.CopyFrom(wide)
    return t


def double_model(proto):
    """A float64 copy of an ONNX ModelProto, or None when it has subgraphs or float16 values
    (left to the float32 checks)."""
    from onnx import AttributeProto, TensorProto
    m = copy.deepcopy(proto)
    g = m.graph
    for t in g.initializer:
        _widen_tensor(t)
    for vi in list(g.input) + list(g.output):
        tt = vi.type.tensor_type
        if tt.elem_type in (TensorProto.FLOAT16, TensorProto.BFLOAT16):
            return None
        if tt.elem_type == TensorProto.FLOAT:
            tt.elem_type = TensorProto.DOUBLE
    del g.value_info[:]
    for node in g.node:
        for a in node.attribute:
            if a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS):
                return None
            if a.type == AttributeProto.TENSOR:
                _widen_tensor(a.t)
            if node.op_type in ("Cast", "EyeLike", "RandomNormalLike") and a.name in ("to", "dtype") \
                    and a.i == TensorProto.FLOAT:
                a.i = TensorProto.DOUBLE
    return m


def semantic_error(onnx_path, model, specs, feeds, scratch):
    """(max relative error between onnxruntime on the double model and the generated code in
    float64, None) or (None, why not run): no double kernel, subgraphs, no float64 run."""
    from . import checks, onnxinfo, ortref
    proto = onnxinfo.load(onnx_path)
    wide = double_model(proto)
    del proto
    if wide is None:
        return None, "subgraphs or float16"
    path = os.path.join(scratch or "/tmp", f"double_{os.getpid()}_{next(_paths)}.onnx")
    with open(path, "wb") as f:
        f.write(wide.SerializeToString())
    del wide
    try:
        m64 = _model64(model)
        worst = 0.0
        for feed in feeds:
            w = _wide(feed)
            try:
                ref = ortref.run(path, w)
            except Exception as e:  # noqa: BLE001 - no double kernel (or no double model)
                text = str(e).splitlines()
                return None, "onnxruntime: " + (text[0][:200] if text else type(e).__name__)
            got = [np.asarray(x) for x in checks.run(m64, w, specs)]
            err, why = numerics.compare(got, ref)
            if why:
                return None, why
            worst = max(worst, err)
        return worst, None
    except Exception as e:  # noqa: BLE001 - the float64 run itself failed
        return None, f"float64 run: {type(e).__name__}"
    finally:
        os.unlink(path)
