#!/usr/bin/env python3
"""Small real-architecture ONNX models and ONNX Runtime reference outputs for vkml's tests.

Five architecture families that vkml's own code did not write, at small widths so they run in
seconds on lavapipe, with random weights from fixed seeds (nothing downloaded, no licence beyond
this repository's): a MobileNetV3-style classifier (depthwise convolutions, squeeze-excitation,
hard-swish), a ViT (patch embedding, multi-head self-attention, LayerNorm, GELU), a U-Net-style
segmentation net (max pooling, a transposed convolution, bilinear upsampling, skip concatenations),
a CRNN text recognizer (convolutions, then a bidirectional LSTM over the columns) and a 3-D
convolution net (Conv3d, BatchNorm3d, MaxPool3d, AvgPool3d).

For each, writes into --out: <name>.onnx (exported by PyTorch, opset 17), <name>_in.npy (a random
input from a fixed seed) and <name>_out.npy (ONNX Runtime's CPU provider on that input, f32), and
manifest.json listing them with the PyTorch-vs-ONNX Runtime difference. Needs torch, onnx and
onnxruntime (the lent GPU machine has them; run it there with tools/models/archs/run_on_gpu.sh).
"""
import argparse
import json
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class SqueezeExcite(nn.Module):
    def __init__(self, c, r=4):
        super().__init__()
        self.fc1 = nn.Conv2d(c, c // r, 1)
        self.fc2 = nn.Conv2d(c // r, c, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * F.hardsigmoid(self.fc2(F.relu(self.fc1(s))))


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, expand, stride, se):
        super().__init__()
        mid = cin * expand
        self.use_res = stride == 1 and cin == cout
        self.expand = nn.Sequential(nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.Hardswish())
        self.dw = nn.Sequential(nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False), nn.BatchNorm2d(mid),
                                nn.Hardswish())
        self.se = SqueezeExcite(mid) if se else nn.Identity()
        self.project = nn.Sequential(nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.project(self.se(self.dw(self.expand(x))))
        return x + y if self.use_res else y


class MobileNetSmall(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.Hardswish())
        self.blocks = nn.Sequential(InvertedResidual(16, 16, 2, 1, True), InvertedResidual(16, 24, 3, 2, False),
                                    InvertedResidual(24, 24, 3, 1, True), InvertedResidual(24, 40, 3, 2, True))
        self.head = nn.Sequential(nn.Conv2d(40, 64, 1), nn.Hardswish())
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = self.head(self.blocks(self.stem(x)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        b, n, d = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        a = torch.softmax(q @ k.transpose(-2, -1) * (d // self.heads) ** -0.5, dim=-1)
        return self.proj((a @ v).transpose(1, 2).reshape(b, n, d))


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = Attention(d, heads)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x):
        x = x + self.attn(self.n1(x))
        return x + self.mlp(self.n2(x))


class ViTTiny(nn.Module):
    def __init__(self, size=32, patch=8, d=32, heads=4, depth=2, classes=10):
        super().__init__()
        self.embed = nn.Conv2d(3, d, patch, patch)
        self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, (size // patch) ** 2 + 1, d) * 0.02)
        self.blocks = nn.Sequential(*[Block(d, heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        x = self.embed(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        return self.head(self.norm(self.blocks(x))[:, 0])


def conv_block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, 1, 1), nn.BatchNorm2d(cout), nn.ReLU())


class UNetSmall(nn.Module):
    def __init__(self, classes=4):
        super().__init__()
        self.e1, self.e2, self.mid = conv_block(3, 8), conv_block(8, 16), conv_block(16, 32)
        self.up2 = nn.ConvTranspose2d(32, 16, 2, 2)
        self.d2 = conv_block(32, 16)
        self.d1 = conv_block(24, 8)
        self.out = nn.Conv2d(8, classes, 1)

    def forward(self, x):
        e1 = self.e1(x)
        e2 = self.e2(F.max_pool2d(e1, 2))
        m = self.mid(F.max_pool2d(e2, 2))
        d2 = self.d2(torch.cat([self.up2(m), e2], 1))
        d1 = self.d1(torch.cat([F.interpolate(d2, scale_factor=2, mode="bilinear", align_corners=False), e1], 1))
        return self.out(d1)


class CRNN(nn.Module):
    def __init__(self, classes=11):
        super().__init__()
        self.cnn = nn.Sequential(nn.Conv2d(1, 16, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Conv2d(16, 32, 3, 1, 1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d((2, 1)),
                                 nn.Conv2d(32, 32, 3, 1, 1), nn.ReLU())
        self.rnn = nn.LSTM(32, 24, bidirectional=True)
        self.fc = nn.Linear(48, classes)

    def forward(self, x):
        f = self.cnn(x).mean(dim=2)       # [N, C, W]
        f = f.permute(2, 0, 1)             # [W, N, C]: one step per column
        y, _ = self.rnn(f)
        return F.log_softmax(self.fc(y), dim=-1)


class Conv3dNet(nn.Module):
    def __init__(self, classes=5):
        super().__init__()
        self.f = nn.Sequential(nn.Conv3d(1, 8, 3, 1, 1), nn.BatchNorm3d(8), nn.ReLU(), nn.MaxPool3d(2),
                               nn.Conv3d(8, 16, 3, 1, 1), nn.ReLU(), nn.AvgPool3d(2))
        self.fc = nn.Linear(16 * 2 * 8 * 8, classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.f(x), 1))


MODELS = {
    "mobilenet_small": (MobileNetSmall, (1, 3, 64, 64)),
    "vit_tiny": (ViTTiny, (1, 3, 32, 32)),
    "unet_small": (UNetSmall, (1, 3, 64, 64)),
    "crnn_lstm": (CRNN, (1, 1, 32, 64)),
    "conv3d_net": (Conv3dNet, (1, 1, 8, 32, 32)),
}


def randomize_norms(model, gen):
    # Fresh BatchNorm statistics are 0 and 1: give them values a trained net would have.
    for m in model.modules():
        if isinstance(m, (nn.BatchNorm2d, nn.BatchNorm3d)):
            m.running_mean.copy_(torch.randn(m.num_features, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=gen) * 0.5 + 0.5)
            m.weight.data.copy_(torch.rand(m.num_features, generator=gen) * 0.5 + 0.75)
            m.bias.data.copy_(torch.randn(m.num_features, generator=gen) * 0.1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    import onnx
    import onnxruntime as ort
    manifest = {"generator": "tools/models/archs/make_archs.py", "torch": torch.__version__,
                "onnxruntime": ort.__version__, "opset": 17, "models": {}}
    for i, (name, (cls, shape)) in enumerate(MODELS.items()):
        torch.manual_seed(100 + i)
        gen = torch.Generator().manual_seed(200 + i)
        model = cls().eval()
        with torch.no_grad():
            randomize_norms(model, gen)
            x = torch.randn(*shape, generator=gen)
            want = model(x)
        path = os.path.join(args.out, name + ".onnx")
        torch.onnx.export(model, (x,), path, input_names=["input"], output_names=["output"], opset_version=17,
                          dynamo=False)
        m = onnx.load(path)
        onnx.checker.check_model(m)
        ops = sorted({n.op_type for n in m.graph.node})
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        got = sess.run(None, {"input": x.numpy()})[0]
        diff = float(np.max(np.abs(got - want.numpy())))
        np.save(os.path.join(args.out, name + "_in.npy"), x.numpy().astype(np.float32))
        np.save(os.path.join(args.out, name + "_out.npy"), got.astype(np.float32))
        manifest["models"][name] = {"input": list(shape), "output": list(got.shape), "ops": ops,
                                    "torch_vs_ort_max_abs": diff, "bytes": os.path.getsize(path)}
        print(f"{name}: input {list(shape)} output {list(got.shape)} ops {ops} torch-vs-ORT {diff:.2e} "
              f"{os.path.getsize(path)} bytes")
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
