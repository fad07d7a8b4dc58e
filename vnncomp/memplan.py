"""Memory planning per model: how many samples the vmap and batch checks stack, and what a worker
validating the model holds.

The generated forward keeps every intermediate in a local until it returns, so one forward holds
about the sum of the model's activations (every node output). vmap over N samples holds N times
that, and its float64 repeat (worker._vmap, on a float32 difference above the tolerance) twice as
much again. The sample count is the largest one, at most VMAP_SAMPLES, whose float64 vmap stays
within VMAP_BUDGET; models whose activations sum to at most VMAP_BUDGET / (2 * VMAP_SAMPLES)
(24 MiB per sample) keep all VMAP_SAMPLES. Measured on torchvision's ConvNeXt-Tiny (activations
321 MB by this estimate): float32 vmap grew the worker by 3.1 GB for 16 samples, float64 by 5.5 GB.
"""

import os

import numpy as np

from . import onnxinfo

VMAP_SAMPLES = 64  # feeds stacked by vmap: the box centre and 63 seeded points
MIN_SAMPLES = 4  # fewer would hardly test the batching
BATCH_SIZE = 8  # the batch check's batch, at most the vmap sample count
VMAP_BUDGET = int(os.environ.get("VNNCOMP_VMAP_BUDGET_MB", "3072")) << 20
FLOAT64_FACTOR = 2  # the float64 repeat holds every activation twice as wide

# What a worker holds besides the stacked samples: onnxruntime's session, the PyTorch module, its
# float64 copy and the traced and exported programs (MODEL_COPIES), plus the worker itself once
# torch is imported.
MODEL_COPIES = 6
WORKER_BYTES = 512 << 20


def vmap_samples(activation_bytes, budget=VMAP_BUDGET):
    """Feeds the vmap check stacks for a model whose forward holds `activation_bytes` per sample
    (None: unknown, all of them)."""
    if not activation_bytes:
        return VMAP_SAMPLES
    fit = budget // (FLOAT64_FACTOR * activation_bytes)
    return int(max(MIN_SAMPLES, min(VMAP_SAMPLES, fit)))


def batch_size(samples):
    """The batch check's batch for a vmap of `samples` feeds."""
    return min(BATCH_SIZE, samples)


def worker_bytes(model_size, activation_bytes, budget=VMAP_BUDGET):
    """Bytes a worker needs while it validates a model of `model_size` bytes whose forward holds
    `activation_bytes` per sample (None: unknown, counted as nothing)."""
    stacked = FLOAT64_FACTOR * (activation_bytes or 0) * vmap_samples(activation_bytes, budget)
    return WORKER_BYTES + MODEL_COPIES * model_size + stacked


def _concrete(model):
    """Symbolic, 0 and -1 input dims set to 1 (a batch of one) so that shapes propagate."""
    for vi in model.graph.input:
        for d in vi.type.tensor_type.shape.dim:
            if not d.HasField("dim_value") or d.dim_value <= 0:
                d.Clear()
                d.dim_value = 1


def _value_bytes(vi):
    """Bytes of a value with a fully known shape, else None."""
    tt = vi.type.tensor_type
    if not tt.HasField("shape") or not all(d.HasField("dim_value") for d in tt.shape.dim):
        return None
    try:
        item = onnxinfo._np_dtype(tt.elem_type).itemsize
    except (KeyError, TypeError, ValueError):
        item = 4
    return int(np.prod([d.dim_value for d in tt.shape.dim], dtype=np.int64)) * item


def activation_bytes(model):
    """Sum of the bytes of every node output of `model` (onnx.ModelProto, modified) for a batch
    of one, by ONNX shape inference. An output whose shape stays unknown counts as its node's
    largest input (what a reshape, a roll or an element-wise op makes), else as the largest known
    activation. None when inference fails."""
    from onnx import shape_inference
    _concrete(model)
    try:
        inferred = shape_inference.infer_shapes(model, data_prop=True)
    except Exception:  # noqa: BLE001 - invalid or over 2 GiB: no estimate
        return None
    graph = inferred.graph
    values = list(graph.input) + list(graph.value_info) + list(graph.output)
    known = {vi.name: b for vi in values if (b := _value_bytes(vi)) is not None}
    weights = {t.name for t in graph.initializer}
    largest = max(known.values(), default=0)
    total = 0
    for node in graph.node:  # topologically sorted: an output's size is set before its users
        guess = max((known[i] for i in node.input if i in known and i not in weights),
                    default=largest)
        for out in (o for o in node.output if o):
            known.setdefault(out, guess)
            total += known[out]
    return total or None


def estimate(path):
    """activation_bytes of the model at `path`, None when it cannot be read."""
    try:
        return activation_bytes(onnxinfo.load(path))
    except Exception:  # noqa: BLE001 - an unreadable model is the worker's error to report
        return None
