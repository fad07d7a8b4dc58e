"""The harness with the real torchonnx on architectures exported by torch.onnx.export with a dynamic
batch: attention (nn.MultiheadAttention, nn.TransformerEncoder, torchvision's ViT and Swin), batch-first
recurrent layers, and torchvision convolutional networks. Every check must pass, and the generated code
must take any batch size directly (the harness's `batch` check), not only through vmap.

The torchvision models are skipped when python3-torchvision is not installed; the torch.nn ones need
only torch. Weights are random (seeded); batch-norm statistics are randomized so that folds matter.

TORCHONNX_EXPORT_OPSET (default 17, the newest torch 1.13 writes) sets the opset of the export; under
torch 2.x (scripts/torch2.sh) 18 to 20 make the opset-18+ forms (reductions and Split taking their
axes and sizes as inputs, and so on).
"""

import os
import subprocess

import pytest
import torch
from torch import nn

from vnncomp.tests.conftest import run_harness

pytestmark = pytest.mark.usefixtures("need_ort")


class SelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(16, 4, batch_first=True)

    def forward(self, x):
        return self.attn(x, x, x, need_weights=False)[0]


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    def forward(self, x):
        return self.encoder(x)


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(6, 8, batch_first=True)
        self.lstm = nn.LSTM(8, 5, batch_first=True, bidirectional=True)

    def forward(self, x):
        return self.lstm(self.gru(x)[0])[0]


class ProjectedAttention(nn.Module):
    """Attention written out by hand with separate q, k and v projections (as BERT-style code has
    them), a residual, and the output cut by two slices in a row."""

    def __init__(self):
        super().__init__()
        self.q, self.k, self.v, self.out = (nn.Linear(16, 16) for _ in range(4))

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = (p(x).reshape(b, t, 4, 4).transpose(1, 2) for p in (self.q, self.k, self.v))
        a = torch.softmax(q @ k.transpose(-1, -2) / 2.0, -1) @ v
        y = x + self.out(a.transpose(1, 2).reshape(b, t, 16))
        return y[:, 1:][:, :, 2:10]


def torch_nn_models():
    return {"self_attention": (SelfAttention(), torch.randn(1, 7, 16)),
            "projected_attention": (ProjectedAttention(), torch.randn(1, 7, 16)),
            "encoder": (Encoder(), torch.randn(1, 7, 16)),
            "recurrent": (Recurrent(), torch.randn(1, 5, 6))}


def torchvision_models():
    tv = pytest.importorskip("torchvision")
    from torchvision.models.swin_transformer import SwinTransformer
    from torchvision.models.vision_transformer import VisionTransformer
    vit = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=64,
                            mlp_dim=128, num_classes=10)
    nn.init.normal_(vit.heads.head.weight)  # torchvision starts the head at zero
    swin = SwinTransformer(patch_size=[4, 4], embed_dim=32, depths=[2, 2], num_heads=[2, 4],
                           window_size=[4, 4], num_classes=10)
    image = torch.randn(1, 3, 32, 32)
    return {"vit": (vit, image), "swin": (swin, image),
            "resnet18": (tv.models.resnet18(num_classes=10), image),
            "mobilenet_v3_small": (tv.models.mobilenet_v3_small(num_classes=10), image),
            "shufflenet_v2": (tv.models.shufflenet_v2_x0_5(num_classes=10), image)}


OPSET = int(os.environ.get("TORCHONNX_EXPORT_OPSET", "17"))


def export(models, folder):
    os.makedirs(folder, exist_ok=True)
    for name, (model, x) in models.items():
        model.eval()
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 1.5)
        torch.onnx.export(model, (x,), os.path.join(folder, name + ".onnx"), opset_version=OPSET,
                          input_names=["x"], dynamic_axes={"x": {0: "batch"}})


def harness(torchonnx, benchmarks, out):
    _, doc = run_harness(torchonnx, out, "--benchmarks", benchmarks, "--device", "cpu")
    return [r for r in doc["results"] if r["status"] != "skipped"]


def check_rows(rows, names):
    assert sorted(os.path.basename(r["model"])[:-5] for r in rows) == sorted(names)
    for r in rows:
        assert r["status"] == "pass", (r["model"], r["error"])
        for check in ("vmap", "trace", "export", "torch_export", "meta_device", "batch"):
            assert r[check] == "ok", (r["model"], check, r[check])


def test_torch_nn_attention_and_recurrent_layers(torchonnx, tmp_path):
    torch.manual_seed(0)
    models = torch_nn_models()
    folder = tmp_path / "b" / "torch_nn" / "onnx"
    export(models, str(folder))
    check_rows(harness(torchonnx, str(tmp_path / "b"), str(tmp_path)), models)
    # Lowered without slimonnx (which folds these products into larger linear maps), q, k and v
    # are one product and the two slices one subscript.
    subprocess.run([torchonnx, "--no-slim", str(folder / "projected_attention.onnx"), "-o",
                    str(tmp_path / "code")], check=True, capture_output=True)
    code = (tmp_path / "code" / "projected_attention.py").read_text()
    assert "nn.Linear(16, 48)" in code and ".split([16, 16, 16], -1)" in code, code
    assert "[:, 1:, 2:10]" in code, code


def test_torchvision_architectures(torchonnx, tmp_path):
    torch.manual_seed(0)
    models = torchvision_models()
    export(models, str(tmp_path / "b" / "torchvision" / "onnx"))
    check_rows(harness(torchonnx, str(tmp_path / "b"), str(tmp_path)), models)
