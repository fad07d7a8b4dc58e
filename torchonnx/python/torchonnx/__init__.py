"""ONNX to a PyTorch module from Python, through the torchonnx command-line tool.

    import torchonnx
    model = torchonnx.convert("net.onnx")                    # nn.Module, weights loaded, eval mode
    model = torchonnx.convert(onnx_bytes, batch_size=8)      # bytes work too
    py, pth = torchonnx.save("net.onnx", "out/")             # out/net.py and out/net.pth
    model = torchonnx.convert("m.onnx", custom_ops={"my.domain::Proj": "my_ops:proj"},
                              custom_op_shapes={"p": "float32[N,3]"})  # calls my_ops.proj(...)
    model = torchonnx.convert("pensieve.onnx", add_batch_dim=True)  # [12, 8] -> [N, 12, 8]

The tool is found through $TORCHONNX, then the path recorded when this package was built or
installed (_tool.py), then PATH. Weights are read with torch.load(weights_only=True).
"""

import importlib.util
import itertools
import os
import shutil
import subprocess
import tempfile

__all__ = ["ConversionError", "convert", "load", "save", "tool"]

_loaded = itertools.count()


class ConversionError(ValueError):
    """The tool rejected the model; the message is its error output (one line per problem)."""


def tool():
    """Path of the torchonnx executable this package runs."""
    exe = os.environ.get("TORCHONNX")
    if not exe:
        try:
            from ._tool import TOOL as exe
        except ImportError:
            exe = None
    if not exe or not os.path.exists(exe):
        exe = shutil.which("torchonnx") or exe
    if not exe or not os.path.exists(exe):
        raise FileNotFoundError("torchonnx executable not found (set $TORCHONNX)")
    return exe


def _target(fn):
    """"module:function" for a custom op: the text itself, or where a function is defined."""
    if isinstance(fn, str):
        return fn
    module, name = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if not module or module == "__main__" or not name.isidentifier():
        raise ValueError(f"custom op function {fn!r} must be a top-level function of an "
                         "importable module (or give 'module:function')")
    return f"{module}:{name}"


def _type_text(spec):
    """"float32[N,3]" from that text or from (dtype, dims)."""
    if isinstance(spec, str):
        return spec
    dtype, dims = spec
    return f"{dtype}[{','.join(str(d) for d in dims)}]"


def _arguments(class_name, batch_size, input_shapes, slim, report, custom_ops=None,
               custom_op_shapes=None, add_batch_dim=False):
    args = ["--class-name", class_name]
    if batch_size is not None:
        args += ["--batch-size", str(int(batch_size))]
    for name, dims in (input_shapes or {}).items():
        args += ["--input-shape", f"{name}={','.join(str(int(d)) for d in dims)}"]
    if not slim:
        args.append("--no-slim")
    if report:
        args += ["--report", os.fspath(report)]
    for op, fn in (custom_ops or {}).items():
        args.append(f"--custom-op={op}={_target(fn)}")
    for name, spec in (custom_op_shapes or {}).items():
        args.append(f"--custom-op-shape={name}={_type_text(spec)}")
    if add_batch_dim:
        args.append("--add-batch-dim")
    return args


def save(model, out_dir, *, class_name="Model", batch_size=None, input_shapes=None, slim=True,
         report=None, custom_ops=None, custom_op_shapes=None, add_batch_dim=False):
    """Converts `model` (a path, or the bytes of an ONNX model) into out_dir/<stem>.py and .pth.

    Returns (py_path, pth_path). `input_shapes` maps input names to full shapes; `report` names a
    Markdown report file to write (also when the conversion fails). `custom_ops` maps
    "domain::Op" to "module:function" or to the function itself (defined at the top level of an
    importable module); `custom_op_shapes` maps output names of such ops to "float32[N,3]" or
    (dtype, dims) where the model declares no type (--custom-op, --custom-op-shape).
    `add_batch_dim` gives inputs declared without a batch dim one (--add-batch-dim).
    Raises ConversionError.
    """
    with tempfile.TemporaryDirectory(prefix="torchonnx_") as tmp:
        if isinstance(model, (bytes, bytearray, memoryview)):
            path = os.path.join(tmp, class_name + ".onnx")
            with open(path, "wb") as f:
                f.write(bytes(model))
        else:
            path = os.fspath(model)
        cmd = [tool(), path, "-o", os.fspath(out_dir),
               *_arguments(class_name, batch_size, input_shapes, slim, report, custom_ops,
                           custom_op_shapes, add_batch_dim)]
        done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise ConversionError(done.stderr.strip() or f"torchonnx exited with {done.returncode}")
    py = done.stdout.strip().splitlines()[-1].rsplit(" -> ", 1)[1]
    return py, py[:-3] + ".pth"


def load(py, pth, class_name="Model"):
    """The class `class_name` of a generated .py, with the .pth weights loaded, in eval mode."""
    import torch
    spec = importlib.util.spec_from_file_location(f"torchonnx_generated_{next(_loaded)}", py)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    net = getattr(module, class_name)()
    net.load_state_dict(torch.load(pth, map_location="cpu", weights_only=True))
    return net.eval()


def convert(model, *, class_name="Model", batch_size=None, input_shapes=None, slim=True,
            report=None, custom_ops=None, custom_op_shapes=None, add_batch_dim=False):
    """An nn.Module computing the ONNX `model` (a path, or bytes); see save() for the options.

    The modules of custom-op functions must be importable when the module is loaded."""
    with tempfile.TemporaryDirectory(prefix="torchonnx_") as out:
        py, pth = save(model, out, class_name=class_name, batch_size=batch_size,
                       input_shapes=input_shapes, slim=slim, report=report,
                       custom_ops=custom_ops, custom_op_shapes=custom_op_shapes,
                       add_batch_dim=add_batch_dim)
        return load(py, pth, class_name)
