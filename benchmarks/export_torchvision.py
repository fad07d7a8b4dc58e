"""Exports torchvision architectures (random weights, no download) to ONNX for the harness's
memory run: `scripts/vnncomp.sh --models DIR --jobs 2` over models of ConvNeXt-Tiny's size.

    /usr/bin/python3 benchmarks/export_torchvision.py DIR [NAME...]
        (default NAMEs: convnext_tiny resnet50 efficientnet_b3 swin_t; opset 17, dynamic batch)
"""

import os
import sys

import torch
import torchvision


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    out, names = argv[0], argv[1:] or ["convnext_tiny", "resnet50", "efficientnet_b3", "swin_t"]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    for name in names:
        model = getattr(torchvision.models, name)(weights=None).eval()
        path = os.path.join(out, name + ".onnx")
        torch.onnx.export(model, (torch.randn(1, 3, 224, 224),), path + ".tmp",
                          input_names=["input"], output_names=["output"], opset_version=17,
                          do_constant_folding=True,
                          dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
        os.replace(path + ".tmp", path)
        print(name, os.path.getsize(path), "bytes", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
