"""What the harness needs to know about an ONNX file, read with the `onnx` Python package."""

import gzip
from dataclasses import dataclass

import numpy as np


@dataclass
class InputSpec:
    name: str
    shape: tuple  # concrete: symbolic, 0 and -1 dims are replaced by 1
    dtype: np.dtype
    batched: bool  # the first dim is symbolic/0/-1/1 and the rank is at least 2

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))


def load(path):
    """onnx.ModelProto from a .onnx or .onnx.gz file (raises on unreadable/corrupt files)."""
    import onnx
    if str(path).endswith(".gz"):
        with gzip.open(path, "rb") as f:
            return onnx.load_model_from_string(f.read())
    return onnx.load(str(path), load_external_data=False)


def default_opset(model):
    """The version of the default ONNX domain, None when the model does not import it."""
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return imp.version
    return None


def _np_dtype(elem_type):
    from onnx import helper
    if hasattr(helper, "tensor_dtype_to_np_dtype"):  # onnx >= 1.13 (onnx.mapping is gone later)
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))
    from onnx import mapping
    return np.dtype(mapping.TENSOR_TYPE_TO_NP_TYPE[elem_type])


def inputs(model):
    """Graph inputs that are not initializers, in graph order, with concrete shapes."""
    init = {t.name for t in model.graph.initializer}
    specs = []
    for vi in model.graph.input:
        if vi.name in init:
            continue
        tt = vi.type.tensor_type
        dims = []
        for d in tt.shape.dim:
            dims.append(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else 1)
        first = tt.shape.dim[0] if len(tt.shape.dim) else None
        batched = (first is not None and len(dims) >= 2 and
                   (not first.HasField("dim_value") or first.dim_value in (0, 1, -1)))
        specs.append(InputSpec(vi.name, tuple(dims), _np_dtype(tt.elem_type), batched))
    return specs


def outputs(model):
    return [vi.name for vi in model.graph.output]


def node_count(model):
    return len(model.graph.node)
