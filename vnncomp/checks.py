"""Checks of one generated PyTorch model (runs inside a vnncomp worker, which imports torch).

Every check returns a small dict; exceptions are turned into one-line messages by the caller.
"""

import contextlib
import copy
import inspect
import math
import os
import re
import sys

import numpy as np
import torch

from . import imports, numerics, ortref

# The GPU device; VNNCOMP_GPU_DEVICE=cpu lets the tests walk the GPU code path without a GPU.
GPU = os.environ.get("VNNCOMP_GPU_DEVICE", "cuda")


def vmap_fn():
    """torch.vmap (torch 2.x) or functorch.vmap (torch 1.13)."""
    if hasattr(torch, "vmap"):
        return torch.vmap
    import functorch
    return functorch.vmap


def class_name(py_path, requested=None):
    """The generated nn.Module class: `requested` when given, else the first class in the file."""
    if requested:
        return requested
    with open(py_path, encoding="utf-8") as f:
        m = re.search(r"^class\s+([A-Za-z_]\w*)\s*[(:]", f.read(), re.MULTILINE)
    if not m:
        raise RuntimeError(f"no class in {os.path.basename(py_path)}")
    return m.group(1)


_loaded = 0


def load_module(py_path, pth_path, cls=None):
    """Instantiates the generated class and loads its weights the documented way."""
    global _loaded
    _loaded += 1
    name = f"vnncomp_generated_{_loaded}"
    # Its folder on sys.path while it executes, as when it is imported from there: a --custom-op
    # model imports its functions' module, which may sit next to it.
    module = imports.module(name, py_path, with_folder=True)
    model = getattr(module, class_name(py_path, cls))()
    kwargs = {}
    if "weights_only" in inspect.signature(torch.load).parameters:
        kwargs["weights_only"] = True
    model.load_state_dict(torch.load(pth_path, map_location="cpu", **kwargs))
    model.eval()
    return model


def unload_all():
    for name in [n for n in sys.modules if n.startswith("vnncomp_generated_")]:
        del sys.modules[name]


def as_list(out):
    if isinstance(out, (tuple, list)):
        return list(out)
    return [out]


def to_numpy(outs):
    return [o.detach().cpu().numpy() if torch.is_tensor(o) else np.asarray(o)
            for o in as_list(outs)]


def tensors(feed, specs, device="cpu"):
    return [torch.from_numpy(np.ascontiguousarray(feed[s.name])).to(device) for s in specs]


def run(model, feed, specs, device="cpu"):
    with torch.no_grad():
        return to_numpy(model(*tensors(feed, specs, device)))


def reference(onnx_path, feeds):
    return [ortref.run(onnx_path, feed) for feed in feeds]


def _stack(feeds, specs, device):
    return [torch.from_numpy(np.stack([f[s.name] for f in feeds])).to(device) for s in specs]


def per_sample(model, feeds, specs, device="cpu"):
    """The model run on each feed alone, on `device`: the reference vmap is compared with."""
    return [run(model, f, specs, device) for f in feeds]


def vmap_check(model, specs, feeds, device="cpu", loop=None):
    """functorch/torch vmap over the stacked feeds vs the per-sample `loop` (default: run on
    `device`): max error."""
    loop = loop if loop is not None else per_sample(model, feeds, specs, device)
    with torch.no_grad():
        batched = to_numpy(vmap_fn()(model)(*_stack(feeds, specs, device)))
    worst = 0.0
    for i, ref in enumerate(loop):
        err, why = numerics.compare([b[i] for b in batched], ref)
        if why:
            return math.inf, why
        worst = max(worst, err)
    return worst, None


def _wide(feed):
    return {k: v.astype(np.float64) if np.issubdtype(v.dtype, np.floating) else v
            for k, v in feed.items()}


def vmap_float64_check(model, specs, feeds, loop, device="cpu"):
    """The vmap check repeated in float64, to tell a vmap bug from float32 rounding: (max error of
    float64 vmap against the float64 loop, max error of the float32 `loop` against the float64
    loop). Raises when the model cannot run in float64."""
    import copy
    m64 = copy.deepcopy(model).double().cpu()
    wide = [_wide(f) for f in feeds]
    loop64 = [run(m64, f, specs, "cpu") for f in wide]
    with torch.no_grad():
        batched = to_numpy(vmap_fn()(m64.to(device))(*_stack(wide, specs, device)))
    err64 = noise = 0.0
    for i, (ref, got32) in enumerate(zip(loop64, loop)):
        err, why = numerics.compare([b[i] for b in batched], ref)
        if why:
            return math.inf, math.inf
        err64 = max(err64, err)
        noise = max(noise, numerics.compare(got32, ref)[0])
    return err64, noise


def batch_check(model, specs, feeds, loop, size=8):
    """The batch dimension grown to `size` vs the loop (inputs that have a batch dim)."""
    feeds, loop = feeds[:size], loop[:size]
    args = [torch.from_numpy(np.concatenate([f[s.name] for f in feeds])) for s in specs]
    with torch.no_grad():
        batched = to_numpy(model(*args))
    worst = 0.0
    for i, ref in enumerate(loop):
        err, why = numerics.compare([b[i:i + 1] for b in batched], ref)
        if why:
            return math.inf, why
        worst = max(worst, err)
    return worst, None


def meta_check(model, specs, feeds):
    """A copy of the model on the meta device (shapes, no data) run on the first feed. A tensor
    that forward makes on the CPU instead of the module's device then meets a meta tensor and
    raises, as it would on a GPU, so this finds such code without one. Raises what forward raised
    (also for ops that have no meta kernel in this torch; the caller tells those apart)."""
    meta = copy.deepcopy(model).to("meta")
    with torch.no_grad():
        outs = as_list(meta(*tensors(feeds[0], specs, "meta")))
    off = sorted({o.device.type for o in outs if isinstance(o, torch.Tensor)} - {"meta"})
    return (math.inf, f"an output is on {off[0]}, not the module's device") if off else (0.0, None)


def _against_eager(fn, model, specs, feeds):
    """(worst error, reason) of fn(*inputs) against the model run eagerly, over the feeds."""
    worst = 0.0
    for feed in feeds:
        with torch.no_grad():
            got = to_numpy(fn(*tensors(feed, specs)))
        err, why = numerics.compare(got, run(model, feed, specs))
        if why:
            return math.inf, why
        worst = max(worst, err)
    return worst, None


def _trace_fuser():
    """The TorchScript fuser setting for running traced graphs. Where torch was built with LLVM
    (Debian's torch 2.x), the CPU fuser (NNC) compiles fusion groups, and it stalls for more than
    ten minutes on ordinary graphs (torchvision's MobileNetV3, a torch.cat result meeting a tensor in
    an element-wise op); there the traced graph runs unfused. Elsewhere torch's default applies."""
    llvm = getattr(torch._C, "_llvm_enabled", lambda: False)()
    return torch.jit.fuser("none") if llvm else contextlib.nullcontext()


def trace_check(model, specs, feeds):
    """torch.jit.trace on the first feed, then traced vs eager on the others."""
    with torch.no_grad():
        traced = torch.jit.trace(model, tuple(tensors(feeds[0], specs)), check_trace=False)
    with _trace_fuser():
        return _against_eager(traced, model, specs, feeds[1:] or feeds)


def _capture(model, args):
    """The model as a captured graph: torch.export (torch 2.1+), else make_fx over fake tensors
    (torch 1.13's form of the same capture: tensors without data, so any Python that reads a
    tensor's value raises). Returns a function of the input tensors."""
    try:
        import torch.export as torch_export
    except ImportError:
        torch_export = None
    with torch.no_grad():
        if torch_export is not None and hasattr(torch_export, "export"):
            program = torch_export.export(model, args).module()
            return lambda *a: program(*a)
        from torch.fx.experimental.proxy_tensor import make_fx
        from torch.nn.utils.stateless import functional_call
        state = dict(model.named_parameters())
        state.update(model.named_buffers())
        graph = make_fx(lambda s, *a: functional_call(model, s, a),
                        tracing_mode="fake")(state, *args)
        return lambda *a: graph(state, *a)


def torch_export_check(model, specs, feeds):
    """Graph capture as torch.export does it (see _capture) on the first feed; the captured graph
    against eager on every feed."""
    return _against_eager(_capture(model, tuple(tensors(feeds[0], specs))), model, specs, feeds)


def export_check(model, specs, feeds, refs, path, opset=17):
    """torch.onnx.export of the generated model, run by onnxruntime, vs the original's outputs."""
    kwargs = {}
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False
    names = [f"input_{i}" for i in range(len(specs))]
    try:
        with torch.no_grad():
            torch.onnx.export(model, tuple(tensors(feeds[0], specs)), path, input_names=names,
                              opset_version=opset, do_constant_folding=True, **kwargs)
        feeds_x = [{n: feed[s.name] for n, s in zip(names, specs)} for feed in feeds]
        worst, reason = 0.0, None
        for feed, ref in zip(feeds_x, refs):
            got = _run_exported(path, feed)
            err, why = numerics.compare(got, ref)
            worst = max(worst, err)
            reason = reason or why
        return worst, reason
    finally:
        if os.path.exists(path):
            os.unlink(path)


def _run_exported(path, feed):
    try:
        return ortref.run(path, feed)
    except ortref.OrtError:
        from . import onnxinfo  # the exporter may drop inputs the graph does not use
        kept = {s.name for s in onnxinfo.inputs(onnxinfo.load(path))}
        if kept == set(feed):
            raise
        return ortref.run(path, {n: v for n, v in feed.items() if n in kept})


def disable_tf32():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def cuda_available():
    return GPU == "cpu" or torch.cuda.is_available()
