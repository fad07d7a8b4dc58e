"""Loads a torchonnx output, compares it with onnxruntime on the original model and runs vmap.

    /usr/bin/python3 scripts/run_generated.py OUTDIR STEM MODEL.onnx
"""
import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if (importlib.util.find_spec("vnncomp") is None
        and ROOT not in os.environ.get("PYTHONPATH", "").split(os.pathsep)):
    # Run by path, so sys.path has scripts/ and not the repository: again, with it on PYTHONPATH.
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))
    os.execv(sys.executable, sys.orig_argv)

import numpy as np  # noqa: E402
import torch  # noqa: E402

from vnncomp import imports, numerics, onnxinfo, ortref  # noqa: E402


def vmap(fn):
    if hasattr(torch, "vmap"):
        return torch.vmap(fn)
    import functorch
    return functorch.vmap(fn)


def main(outdir, stem, model_path):
    module = imports.module(stem, os.path.join(outdir, stem + ".py"))
    cls = next(getattr(module, n) for n in dir(module)
               if isinstance(getattr(module, n), type) and issubclass(getattr(module, n), torch.nn.Module))
    net = cls()
    net.load_state_dict(torch.load(os.path.join(outdir, stem + ".pth"), weights_only=True))
    net.eval()
    specs = onnxinfo.inputs(onnxinfo.load(model_path))
    worst = 0.0
    for feed in numerics.make_points(specs, points=5, seed=0):
        ref = ortref.run(model_path, feed)
        with torch.no_grad():
            got = net(*[torch.from_numpy(feed[s.name]) for s in specs])
        got = [got] if isinstance(got, torch.Tensor) else list(got)
        err, why = numerics.compare([g.numpy() for g in got], ref)
        worst = max(worst, err)
        assert why is None, why
    print(f"demo: {cls.__name__} equals onnxruntime on 6 points (max normalized error {worst:.2e})")
    x = torch.from_numpy(np.random.default_rng(1).uniform(-1, 1, (64, *specs[0].shape)).astype(np.float32))
    with torch.no_grad():
        batched = vmap(lambda s: net(s))(x)
        looped = torch.stack([net(s) for s in x])
    diff = (batched - looped).abs().max().item()
    print(f"demo: vmap over 64 samples of {list(specs[0].shape)} equals the loop (max |diff| {diff:.2e})")
    ortref.close()
    assert diff <= 1e-5 * max(1.0, looped.abs().max().item())


if __name__ == "__main__":
    main(*sys.argv[1:4])
