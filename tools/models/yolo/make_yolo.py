#!/usr/bin/env python3
"""Builds YOLOv5n- and YOLOv8n-architecture detectors with seeded random weights, exports them to
ONNX the way users export theirs, and writes ONNX Runtime reference outputs on a few real photos.

No trained YOLO weights can be shipped with vkml, yet the detector must be proven on the ONNX files
that the common YOLO tool chains produce. So this script rebuilds the two published layer
structures (written here from the architecture description, not taken from any YOLO code base),
fills them with deterministic random weights, and records what ONNX Runtime computes on them.
vkml's conformance tests compare their outputs with those records.

Output (--out DIR):
  yolov5n.onnx, yolov8n.onnx        input `images` [N,3,640,640] f32 RGB 0..1, output `output0`
                                    (v5: [N,25200,85] xywh+obj+80 cls; v8: [N,84,8400] xywh+80 cls)
  LICENSE.md                        where everything comes from
  ref/<image>.png                   the exact letterboxed 640x640 RGB u8 input
  ref/<model>_<image>_rows.npy      int32 row indices (rows = boxes) that are stored
  ref/<model>_<image>_out.npy       f32 [K, C] ONNX Runtime outputs of those rows, all channels
  ref/<model>_<image>_dets.json     reference class-aware NMS on ORT's full output
  ref/manifest.json, ref/README.md  parameters, versions, checksums, how it was made

Runs with torch 1.13 .. 2.x, onnx 1.12+, and onnxruntime when present (without it, only the
torch-side steps run unless --allow-torch-ref is given, which is for testing the pipeline only).
"""

import argparse
import hashlib
import inspect
import json
import math
import os
import platform
import shutil
import sys
import time

import numpy as np
import torch
import torch.nn as nn

IMG = 640
NC = 80
DEFAULT_IMAGES = ["dog", "horses", "person", "kite"]

# COCO-80 class names (the order every YOLO export uses); written into the ONNX metadata like
# users' exports carry them, so a tool can label boxes.
COCO_NAMES = [
    "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat",
    "traffic light", "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat", "dog",
    "horse", "sheep", "cow", "elephant", "bear", "zebra", "giraffe", "backpack", "umbrella",
    "handbag", "tie", "suitcase", "frisbee", "skis", "snowboard", "sports ball", "kite",
    "baseball bat", "baseball glove", "skateboard", "surfboard", "tennis racket", "bottle",
    "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple", "sandwich", "orange",
    "broccoli", "carrot", "hot dog", "pizza", "donut", "cake", "chair", "couch", "potted plant",
    "bed", "dining table", "toilet", "tv", "laptop", "mouse", "remote", "keyboard", "cell phone",
    "microwave", "oven", "toaster", "sink", "refrigerator", "book", "clock", "vase", "scissors",
    "teddy bear", "hair drier", "toothbrush",
]

# Standard COCO anchors (pixels) of YOLOv5 P3/8, P4/16, P5/32.
V5_ANCHORS = [
    [(10, 13), (16, 30), (33, 23)],
    [(30, 61), (62, 45), (59, 119)],
    [(116, 90), (156, 198), (373, 326)],
]
STRIDES = [8, 16, 32]

# Scale (times 1/sqrt(fan_in)) of the random weights of the detect heads' last 1x1 convolutions.
# With the standard bias init alone, a random net scores nothing; with too large weights it flags
# everything. Random nets respond very differently to different photos (a photo's contrast changes
# the gain of every layer), so the seeds below were picked among the first few so that each of the
# four reference photos gets between none-to-few and ~100 boxes above 0.25 after NMS.
MODEL_SEEDS = {"yolov5n": 3, "yolov8n": 2}
HEAD_WEIGHT_SCALE = {"yolov5n": 1.3, "yolov8n": 1.7}

# Which rows are stored: every ROW_STEP-th row (steps coprime with the grid widths 80/40/20 and the
# 3 anchors, so the sample covers all levels, anchors, rows and columns) plus every row whose best
# score exceeds ROW_SCORE (so every box that can survive NMS is stored exactly).
ROW_STEP = {"yolov5n": 37, "yolov8n": 13}
ROW_SCORE = 0.05


def log(msg):
    print(msg, flush=True)


# ------------------------------------------------------------------------------------------------
# Architecture (YOLOv5 v6+ and YOLOv8 layer structure, n scale: depth 0.33, width 0.25)
# ------------------------------------------------------------------------------------------------


def width(c, w=0.25, max_c=1024):
    """Channel count scaled by the width multiple and rounded up to a multiple of 8."""
    return int(math.ceil(min(c, max_c) * w / 8) * 8)


def depth(n, d=0.33):
    return max(round(n * d), 1)


class Conv(nn.Module):
    """Conv2d (no bias) + BatchNorm (eps 1e-3) + SiLU; fuse() folds the BN into the conv, as every
    YOLO export does."""

    def __init__(self, c1, c2, k=1, s=1, p=None):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, k // 2 if p is None else p, bias=False)
        self.bn = nn.BatchNorm2d(c2, eps=1e-3, momentum=0.03)
        self.act = nn.SiLU()

    def forward(self, x):
        x = self.conv(x)
        if self.bn is not None:
            x = self.bn(x)
        return self.act(x)

    @torch.no_grad()
    def fuse(self):
        bn = self.bn
        # Folded in float64 so the fused weights do not depend on the float32 rounding order.
        w = self.conv.weight.double()
        inv = bn.weight.double() / torch.sqrt(bn.running_var.double() + bn.eps)
        fused = nn.Conv2d(self.conv.in_channels, self.conv.out_channels, self.conv.kernel_size,
                          self.conv.stride, self.conv.padding, bias=True)
        fused.weight.copy_((w * inv.view(-1, 1, 1, 1)).float())
        fused.bias.copy_((bn.bias.double() - bn.running_mean.double() * inv).float())
        self.conv = fused
        self.bn = None


class Bottleneck(nn.Module):
    def __init__(self, c1, c2, shortcut, k=(1, 3)):
        super().__init__()
        self.cv1 = Conv(c1, c2, k[0])
        self.cv2 = Conv(c2, c2, k[1])
        self.add = shortcut and c1 == c2

    def forward(self, x):
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C3(nn.Module):
    """YOLOv5 CSP block: two 1x1 branches, one through n bottlenecks, concatenated and mixed."""

    def __init__(self, c1, c2, n, shortcut=True):
        super().__init__()
        h = c2 // 2
        self.cv1 = Conv(c1, h)
        self.cv2 = Conv(c1, h)
        self.cv3 = Conv(2 * h, c2)
        self.m = nn.Sequential(*[Bottleneck(h, h, shortcut, (1, 3)) for _ in range(n)])

    def forward(self, x):
        return self.cv3(torch.cat([self.m(self.cv1(x)), self.cv2(x)], 1))


class C2f(nn.Module):
    """YOLOv8 block: 1x1 conv split in two halves, the second fed through n bottlenecks whose every
    output is kept, all concatenated and mixed by a 1x1 conv."""

    def __init__(self, c1, c2, n, shortcut=False):
        super().__init__()
        self.c = c2 // 2
        self.cv1 = Conv(c1, 2 * self.c)
        self.cv2 = Conv((2 + n) * self.c, c2)
        self.m = nn.ModuleList([Bottleneck(self.c, self.c, shortcut, (3, 3)) for _ in range(n)])

    def forward(self, x):
        ys = list(self.cv1(x).chunk(2, 1))
        for m in self.m:
            ys.append(m(ys[-1]))
        return self.cv2(torch.cat(ys, 1))


class SPPF(nn.Module):
    """Three chained 5x5 max pools (= pools of 5, 9, 13) concatenated with the input."""

    def __init__(self, c1, c2, k=5):
        super().__init__()
        h = c1 // 2
        self.cv1 = Conv(c1, h)
        self.cv2 = Conv(4 * h, c2)
        self.pool = nn.MaxPool2d(k, 1, k // 2)

    def forward(self, x):
        x = self.cv1(x)
        y1 = self.pool(x)
        y2 = self.pool(y1)
        return self.cv2(torch.cat([x, y1, y2, self.pool(y2)], 1))


def upsample(x):
    return nn.functional.interpolate(x, scale_factor=2.0, mode="nearest")


class DetectV5(nn.Module):
    """Anchor-based head: per level a 1x1 conv to 3 x (5 + nc), decoded in the graph:
    xy = (2*sigmoid - 0.5 + grid) * stride, wh = (2*sigmoid)^2 * anchor, obj/cls = sigmoid."""

    def __init__(self, ch, nc=NC):
        super().__init__()
        self.nc, self.no, self.na = nc, nc + 5, 3
        self.m = nn.ModuleList([nn.Conv2d(c, self.na * self.no, 1) for c in ch])
        self.register_buffer("anchors", torch.tensor(V5_ANCHORS, dtype=torch.float32))
        self._grids = {}
        self._anchors = {}

    def grid(self, i, ny, nx):
        # Built from Python ints, so a traced export holds them as constants (fixed 640 input).
        ny, nx = int(ny), int(nx)  # plain ints: a traced shape would make the grid dynamic
        key = (i, ny, nx)
        if key not in self._grids:
            yv, xv = torch.meshgrid(torch.arange(ny, dtype=torch.float32),
                                    torch.arange(nx, dtype=torch.float32), indexing="ij")
            g = torch.stack([xv, yv], -1).view(1, 1, ny, nx, 2) - 0.5
            a = self.anchors[i].view(1, self.na, 1, 1, 2).clone()
            self._grids[key] = (g, a)
        return self._grids[key]

    def forward(self, feats):
        z = []
        for i, x in enumerate(feats):
            x = self.m[i](x)
            # Batch as -1 and plain-int grid sizes: the export gets constant Reshape shapes and a
            # static [N, 25200, 85] output, like a fixed-size export with only the batch dynamic.
            # (The v8 head below keeps the traced batch size: Shape/Gather ops and symbolic output
            # dims, like a fully dynamic export; the two files cover both styles.)
            ny, nx = int(x.shape[2]), int(x.shape[3])
            x = x.view(-1, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2)
            y = x.sigmoid()
            xy, wh, conf = y.split([2, 2, self.nc + 1], 4)
            g, a = self.grid(i, ny, nx)
            xy = (xy * 2 + g) * STRIDES[i]
            wh = (wh * 2) ** 2 * a
            z.append(torch.cat([xy, wh, conf], 4).view(-1, self.na * ny * nx, self.no))
        return torch.cat(z, 1)


class DFL(nn.Module):
    """Distribution focal loss integral: softmax over 16 bins, expected value by a fixed 1x1 conv
    whose weights are 0..15."""

    def __init__(self, reg_max=16):
        super().__init__()
        self.reg_max = reg_max
        self.conv = nn.Conv2d(reg_max, 1, 1, bias=False).requires_grad_(False)
        self.conv.weight.data[:] = torch.arange(reg_max, dtype=torch.float32).view(1, reg_max, 1, 1)

    def forward(self, x):
        b, _, a = x.shape
        x = x.view(b, 4, self.reg_max, a).transpose(2, 1).softmax(1)
        return self.conv(x).view(b, 4, a)


class DetectV8(nn.Module):
    """Decoupled anchor-free head: per level a box branch (2 Conv + 1x1 to 4*16 DFL bins) and a
    class branch (2 Conv + 1x1 to nc); decoded in the graph to xywh pixels and class sigmoid."""

    def __init__(self, ch, nc=NC, reg_max=16):
        super().__init__()
        self.nc, self.reg_max = nc, reg_max
        self.no = nc + 4 * reg_max
        c2 = max(16, ch[0] // 4, 4 * reg_max)
        c3 = max(ch[0], min(nc, 100))
        self.cv2 = nn.ModuleList([nn.Sequential(Conv(c, c2, 3), Conv(c2, c2, 3),
                                                nn.Conv2d(c2, 4 * reg_max, 1)) for c in ch])
        self.cv3 = nn.ModuleList([nn.Sequential(Conv(c, c3, 3), Conv(c3, c3, 3),
                                                nn.Conv2d(c3, nc, 1)) for c in ch])
        self.dfl = DFL(reg_max)
        self._anchors = {}
        self._grids = {}

    def anchor_points(self, shapes):
        key = tuple(shapes)
        if key not in self._anchors:
            pts, strides = [], []
            for (ny, nx), s in zip(shapes, STRIDES):
                yv, xv = torch.meshgrid(torch.arange(ny, dtype=torch.float32) + 0.5,
                                        torch.arange(nx, dtype=torch.float32) + 0.5, indexing="ij")
                pts.append(torch.stack([xv, yv], 0).view(2, -1))
                strides.append(torch.full((1, ny * nx), float(s)))
            self._anchors[key] = (torch.cat(pts, 1).unsqueeze(0), torch.cat(strides, 1))
        return self._anchors[key]

    def forward(self, feats):
        bs = feats[0].shape[0]
        shapes = [(int(f.shape[2]), int(f.shape[3])) for f in feats]
        x = [torch.cat([self.cv2[i](f), self.cv3[i](f)], 1) for i, f in enumerate(feats)]
        x = torch.cat([xi.view(bs, self.no, -1) for xi in x], 2)
        box, cls = x.split([4 * self.reg_max, self.nc], 1)
        anchors, strides = self.anchor_points(shapes)
        lt, rb = self.dfl(box).chunk(2, 1)
        x0y0 = anchors - lt
        x1y1 = anchors + rb
        xywh = torch.cat([(x0y0 + x1y1) / 2, x1y1 - x0y0], 1) * strides
        return torch.cat([xywh, cls.sigmoid()], 1)


class YOLOv5n(nn.Module):
    def __init__(self, nc=NC):
        super().__init__()
        c = [width(x) for x in (64, 128, 256, 512, 1024)]  # 16 32 64 128 256
        self.b0 = Conv(3, c[0], 6, 2, 2)
        self.b1 = Conv(c[0], c[1], 3, 2)
        self.b2 = C3(c[1], c[1], depth(3))
        self.b3 = Conv(c[1], c[2], 3, 2)
        self.b4 = C3(c[2], c[2], depth(6))
        self.b5 = Conv(c[2], c[3], 3, 2)
        self.b6 = C3(c[3], c[3], depth(9))
        self.b7 = Conv(c[3], c[4], 3, 2)
        self.b8 = C3(c[4], c[4], depth(3))
        self.b9 = SPPF(c[4], c[4], 5)
        self.h10 = Conv(c[4], c[3], 1, 1)
        self.h13 = C3(2 * c[3], c[3], depth(3), False)
        self.h14 = Conv(c[3], c[2], 1, 1)
        self.h17 = C3(2 * c[2], c[2], depth(3), False)
        self.h18 = Conv(c[2], c[2], 3, 2)
        self.h20 = C3(2 * c[2], c[3], depth(3), False)
        self.h21 = Conv(c[3], c[3], 3, 2)
        self.h23 = C3(2 * c[3], c[4], depth(3), False)
        self.detect = DetectV5([c[2], c[3], c[4]], nc)

    def forward(self, x):
        x = self.b1(self.b0(x))
        p3 = self.b4(self.b3(self.b2(x)))
        p4 = self.b6(self.b5(p3))
        p5 = self.b9(self.b8(self.b7(p4)))
        h10 = self.h10(p5)
        h14 = self.h14(self.h13(torch.cat([upsample(h10), p4], 1)))
        o3 = self.h17(torch.cat([upsample(h14), p3], 1))
        o4 = self.h20(torch.cat([self.h18(o3), h14], 1))
        o5 = self.h23(torch.cat([self.h21(o4), h10], 1))
        return self.detect([o3, o4, o5])


class YOLOv8n(nn.Module):
    def __init__(self, nc=NC):
        super().__init__()
        c = [width(x) for x in (64, 128, 256, 512, 1024)]  # 16 32 64 128 256
        self.b0 = Conv(3, c[0], 3, 2)
        self.b1 = Conv(c[0], c[1], 3, 2)
        self.b2 = C2f(c[1], c[1], depth(3), True)
        self.b3 = Conv(c[1], c[2], 3, 2)
        self.b4 = C2f(c[2], c[2], depth(6), True)
        self.b5 = Conv(c[2], c[3], 3, 2)
        self.b6 = C2f(c[3], c[3], depth(6), True)
        self.b7 = Conv(c[3], c[4], 3, 2)
        self.b8 = C2f(c[4], c[4], depth(3), True)
        self.b9 = SPPF(c[4], c[4], 5)
        self.h12 = C2f(c[4] + c[3], c[3], depth(3))
        self.h15 = C2f(c[3] + c[2], c[2], depth(3))
        self.h16 = Conv(c[2], c[2], 3, 2)
        self.h18 = C2f(c[2] + c[3], c[3], depth(3))
        self.h19 = Conv(c[3], c[3], 3, 2)
        self.h21 = C2f(c[3] + c[4], c[4], depth(3))
        self.detect = DetectV8([c[2], c[3], c[4]], nc)

    def forward(self, x):
        x = self.b1(self.b0(x))
        p3 = self.b4(self.b3(self.b2(x)))
        p4 = self.b6(self.b5(p3))
        p5 = self.b9(self.b8(self.b7(p4)))
        h12 = self.h12(torch.cat([upsample(p5), p4], 1))
        o3 = self.h15(torch.cat([upsample(h12), p3], 1))
        o4 = self.h18(torch.cat([self.h16(o3), h12], 1))
        o5 = self.h21(torch.cat([self.h19(o4), p5], 1))
        return self.detect([o3, o4, o5])


MODELS = {"yolov5n": YOLOv5n, "yolov8n": YOLOv8n}
# Published sizes (parameters of the PyTorch model before Conv+BN fusion; DFL's fixed conv counted
# in v8 as the published summary does). The check allows a little slack.
PUBLISHED_PARAMS = {"yolov5n": 1.9e6, "yolov8n": 3.2e6}
OUTPUT_SHAPE = {"yolov5n": (25200, 85), "yolov8n": (84, 8400)}


def count_params(model):
    return sum(p.numel() for p in model.parameters())


# ------------------------------------------------------------------------------------------------
# Seeded weights
# ------------------------------------------------------------------------------------------------


def pink_noise_images(rs, n, size=IMG):
    """Synthetic natural-like images: 1/f amplitude spectrum (like photos), correlated colour
    channels, grey letterbox bands of random height; values 0..1."""
    out = np.zeros((n, size, size, 3), np.float64)
    fy = np.fft.fftfreq(size)[:, None]
    fx = np.fft.rfftfreq(size)[None, :]
    f = np.sqrt(fx ** 2 + fy ** 2)
    f[0, 0] = 1.0

    def field():
        spec = rs.standard_normal(f.shape) + 1j * rs.standard_normal(f.shape)
        return np.fft.irfft2(spec / f, s=(size, size))

    for i in range(n):
        lum = field()
        img = np.stack([lum + 0.4 * field() for _ in range(3)], -1)
        img = (img - img.mean()) / img.std() * 0.22 + 0.45
        band = rs.randint(0, 120)
        img[:band] = 114 / 255
        img[size - band:] = 114 / 255
        out[i] = np.clip(img, 0, 1)
    return torch.from_numpy(out.transpose(0, 3, 1, 2).copy())


def head_convs(model):
    """The last 1x1 conv of each detect branch, with its stride and kind (v5 / box / cls)."""
    d = model.detect
    if isinstance(d, DetectV5):
        return [(m, s, "v5") for m, s in zip(d.m, STRIDES)]
    return ([(seq[-1], s, "box") for seq, s in zip(d.cv2, STRIDES)] +
            [(seq[-1], s, "cls") for seq, s in zip(d.cv3, STRIDES)])


@torch.no_grad()
def init_weights(name, model, seed, photos):
    """Deterministic random weights from numpy's legacy RandomState (its stream is frozen across
    numpy versions), drawn in module order. BN affine parameters are random; BN running statistics
    are then measured in float64 on the calibration photos (u8 NHWC, letterboxed) plus two 1/f-noise
    images, so every layer sees roughly normalised inputs as in a trained net (without this, random
    layers compound gains and the heads saturate), and the statistics are non-trivial."""
    rs = np.random.RandomState(seed)
    heads = {id(m): (s, kind) for m, s, kind in head_convs(model)}
    for mod in model.modules():
        if isinstance(mod, nn.Conv2d) and mod.weight.requires_grad:  # not the fixed DFL conv
            fan_in = mod.in_channels * mod.kernel_size[0] * mod.kernel_size[1]
            scale = HEAD_WEIGHT_SCALE[name] if id(mod) in heads else math.sqrt(2.0)
            w = rs.standard_normal(mod.weight.shape) * (scale / math.sqrt(fan_in))
            mod.weight.copy_(torch.from_numpy(w))
            if mod.bias is not None:
                s, kind = heads[id(mod)]
                b = np.zeros(mod.out_channels)
                # Standard YOLO bias init (prior: a few objects per image, rare classes).
                if kind == "v5":
                    b = b.reshape(3, NC + 5)
                    b[:, 4] += math.log(8 / (IMG / s) ** 2)
                    b[:, 5:] += math.log(0.6 / (NC - 0.99))
                    b = b.reshape(-1)
                elif kind == "box":
                    b[:] = 1.0
                else:
                    b[:] = math.log(5 / NC / (IMG / s) ** 2)
                mod.bias.copy_(torch.from_numpy(b))
        elif isinstance(mod, nn.BatchNorm2d):
            mod.weight.copy_(torch.from_numpy(rs.uniform(0.6, 1.4, mod.num_features)))
            mod.bias.copy_(torch.from_numpy(rs.uniform(-0.4, 0.4, mod.num_features)))
    photos = torch.from_numpy(np.stack(photos).astype(np.float64).transpose(0, 3, 1, 2) / 255)
    calib = torch.cat([photos, pink_noise_images(rs, 2)], 0)

    model.double().train()
    for mod in model.modules():
        if isinstance(mod, nn.BatchNorm2d):
            mod.reset_running_stats()
            mod.momentum = None  # cumulative average: one batch sets the statistics exactly
    model(calib)
    model.float().eval()
    # The decode constants were cached in float64 during calibration: rebuild them in float32.
    model.detect._grids, model.detect._anchors = {}, {}
    for mod in model.modules():
        if isinstance(mod, nn.BatchNorm2d):
            mod.momentum = 0.03
    return model


def fuse(model):
    for mod in list(model.modules()):
        if isinstance(mod, Conv):
            mod.fuse()
    return model.eval()


# ------------------------------------------------------------------------------------------------
# Images
# ------------------------------------------------------------------------------------------------


def resize_bilinear(img, nw, nh):
    """Bilinear resize of an HWC float array, half-pixel centres, edge clamp, no antialiasing
    (the convention of OpenCV's INTER_LINEAR, which YOLO preprocessing uses)."""
    h, w = img.shape[:2]

    def axis(n_out, n_in):
        src = (np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5
        src = np.clip(src, 0, n_in - 1)
        i0 = np.floor(src).astype(np.int64)
        i1 = np.minimum(i0 + 1, n_in - 1)
        return i0, i1, src - i0

    y0, y1, fy = axis(nh, h)
    x0, x1, fx = axis(nw, w)
    fx = fx[None, :, None]
    top = img[y0][:, x0] * (1 - fx) + img[y0][:, x1] * fx
    bot = img[y1][:, x0] * (1 - fx) + img[y1][:, x1] * fx
    return top * (1 - fy[:, None, None]) + bot * fy[:, None, None]


def letterbox(path, size=IMG):
    from PIL import Image
    with Image.open(path) as im:
        src = np.asarray(im.convert("RGB"), dtype=np.float64)
    h, w = src.shape[:2]
    scale = min(size / w, size / h)
    nw, nh = int(round(w * scale)), int(round(h * scale))
    body = src if (nw, nh) == (w, h) else resize_bilinear(src, nw, nh)
    body = np.clip(np.floor(body + 0.5), 0, 255).astype(np.uint8)
    left, top = (size - nw) // 2, (size - nh) // 2
    out = np.full((size, size, 3), 114, np.uint8)
    out[top:top + nh, left:left + nw] = body
    info = {"source": os.path.basename(path), "source_size": [w, h], "scale": scale,
            "resized_size": [nw, nh], "pad_left": left, "pad_top": top, "pad_value": 114}
    return out, info


def to_input(imgs_u8):
    x = np.stack(imgs_u8).astype(np.float32).transpose(0, 3, 1, 2) / np.float32(255)
    return np.ascontiguousarray(x)


# ------------------------------------------------------------------------------------------------
# Export
# ------------------------------------------------------------------------------------------------


def export_onnx(model, path, opset):
    kwargs = {}
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False  # the TorchScript exporter: what YOLO tool chains use; opset 12
    dummy = torch.zeros(1, 3, IMG, IMG)
    with torch.no_grad():
        ref_shape = model(dummy).shape  # also caches the 640x640 decode grids as constants
    torch.onnx.export(model, dummy, path, opset_version=opset, input_names=["images"],
                      output_names=["output0"], do_constant_folding=True,
                      dynamic_axes={"images": {0: "batch"}, "output0": {0: "batch"}}, **kwargs)
    import onnx
    m = onnx.load(path)
    stride = {"yolov5n": 32, "yolov8n": 32}
    meta = {"author": "vkml tools/models/yolo/make_yolo.py",
            "description": "YOLO-architecture detector with seeded RANDOM weights (not trained); "
                           "for conformance tests only",
            "stride": str(max(stride.values())), "task": "detect", "batch": "dynamic",
            "imgsz": str([IMG, IMG]), "names": str({i: n for i, n in enumerate(COCO_NAMES)})}
    # The exporter names the non-batch output dims symbolically (they come out of a traced
    # Reshape); declare them, as fixed-size exports do, so a consumer can pick the decoder from
    # the declared shape: [batch, 25200, 85] / [batch, 84, 8400].
    dims = m.graph.output[0].type.tensor_type.shape.dim
    for i, d in enumerate(dims):
        if i == 0:
            d.dim_param = "batch"
        else:
            d.dim_value = int(ref_shape[i])
    del m.metadata_props[:]
    for k, v in meta.items():
        p = m.metadata_props.add()
        p.key, p.value = k, v
    onnx.checker.check_model(m)
    onnx.save(m, path)
    ops = {}
    for n in m.graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    return ops


# ------------------------------------------------------------------------------------------------
# Reference post-processing
# ------------------------------------------------------------------------------------------------


def rows_of(name, out):
    """[N_rows, C] view of one image's output (v8's [84, 8400] transposed)."""
    return out.T if name == "yolov8n" else out


def best_scores(name, rows):
    """Per row: (best class, its score). v5: obj * cls; v8: cls."""
    rows = rows.astype(np.float64)
    cls = rows[:, 5:] * rows[:, 4:5] if name == "yolov5n" else rows[:, 4:]
    c = np.argmax(cls, 1)
    return c, cls[np.arange(len(rows)), c]


def xywh_to_xyxy(b):
    b = b.astype(np.float64)
    return np.stack([b[:, 0] - b[:, 2] / 2, b[:, 1] - b[:, 3] / 2,
                     b[:, 0] + b[:, 2] / 2, b[:, 1] + b[:, 3] / 2], 1)


def iou_one(box, boxes):
    ix0 = np.maximum(box[0], boxes[:, 0])
    iy0 = np.maximum(box[1], boxes[:, 1])
    ix1 = np.minimum(box[2], boxes[:, 2])
    iy1 = np.minimum(box[3], boxes[:, 3])
    inter = np.clip(ix1 - ix0, 0, None) * np.clip(iy1 - iy0, 0, None)
    area = lambda b: np.clip(b[..., 2] - b[..., 0], 0, None) * np.clip(b[..., 3] - b[..., 1], 0, None)
    union = area(box) + area(boxes) - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


def reference_nms(name, rows, score_thr, iou_thr, max_det, margin=0.01):
    """Class-aware greedy NMS in float64: best class per row, keep score > score_thr, visit rows by
    score descending (ties: lower row index first), drop a row when its IoU with a kept row of the
    same class is > iou_thr, stop after max_det kept. Also returns the decisions that lie within
    `margin` of a threshold (rows whose score is near score_thr, kept/visited pairs whose IoU is
    near iou_thr): an f16 implementation may decide those differently, so tests can allow them."""
    cls, score = best_scores(name, rows)
    cand = np.nonzero(score > score_thr)[0]
    order = cand[np.lexsort((cand, -score[cand]))]
    boxes = xywh_to_xyxy(rows[:, :4])
    kept, near = [], []
    alive = np.ones(len(order), bool)
    for i, r in enumerate(order):
        if not alive[i]:
            continue
        kept.append(int(r))
        if len(kept) == max_det:
            break
        rest = np.arange(i + 1, len(order))
        rest = rest[alive[rest] & (cls[order[rest]] == cls[r])]
        if len(rest):
            ious = iou_one(boxes[r], boxes[order[rest]])
            alive[rest[ious > iou_thr]] = False
            near += [(r, order[q], v) for q, v in zip(rest, ious) if abs(v - iou_thr) < margin]
    near_iou = [[int(r), int(q), float(v)] for r, q, v in near if abs(v - iou_thr) < margin]
    near_score = np.nonzero(np.abs(score - score_thr) < margin)[0]
    near = {"margin": margin, "score_rows": [int(r) for r in near_score], "iou_pairs": near_iou,
            "tied_scores": int(len(cand) - len(np.unique(score[cand])))}
    dets = [{"row": r, "class": int(cls[r]), "name": COCO_NAMES[cls[r]], "score": float(score[r]),
             "box": [float(v) for v in boxes[r]]} for r in kept]
    return dets, int(len(cand)), near


def select_rows(name, rows):
    _, score = best_scores(name, rows)
    sel = np.zeros(len(rows), bool)
    sel[::ROW_STEP[name]] = True
    sel |= score > ROW_SCORE
    return np.nonzero(sel)[0].astype(np.int32)


# ------------------------------------------------------------------------------------------------
# Main
# ------------------------------------------------------------------------------------------------


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def ort_session(path):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1  # single-threaded CPU: reproducible summation order
    so.inter_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output directory (created)")
    ap.add_argument("--images", default="/usr/share/darknet/data",
                    help="folder holding the photos (default: Debian darknet's data folder)")
    ap.add_argument("--names", default=",".join(DEFAULT_IMAGES),
                    help="comma-separated photo names without .jpg (default: %(default)s)")
    ap.add_argument("--calib-names", default=",".join(DEFAULT_IMAGES),
                    help="photos (in --images) whose statistics set the BatchNorm statistics: part "
                         "of the weight recipe, keep the default (%(default)s)")
    ap.add_argument("--models", default="yolov5n,yolov8n", help="default: %(default)s")
    ap.add_argument("--opset", type=int, default=12, help="ONNX opset of the files (default 12)")
    ap.add_argument("--check-opsets", default="",
                    help="also export at these opsets (e.g. 13,17) to a temp dir and check them "
                         "(onnx.checker, and ORT against the main file when available)")
    ap.add_argument("--seed", type=int, default=None,
                    help="weight seed for all models (default: per model, " +
                         ", ".join(f"{k} {v}" for k, v in MODEL_SEEDS.items()) + ")")
    ap.add_argument("--score-thr", type=float, default=0.25)
    ap.add_argument("--iou-thr", type=float, default=0.45)
    ap.add_argument("--max-det", type=int, default=300)
    ap.add_argument("--require-ort", action="store_true",
                    help="fail when onnxruntime is missing (for the run that makes the files)")
    ap.add_argument("--allow-torch-ref", action="store_true",
                    help="without onnxruntime, write the references from torch outputs (pipeline "
                         "testing only: such files are marked and must not be committed)")
    args = ap.parse_args()

    t_start = time.time()
    torch.set_num_threads(max(1, min(8, os.cpu_count() or 1)))
    out_dir = os.path.abspath(args.out)
    ref_dir = os.path.join(out_dir, "ref")
    os.makedirs(ref_dir, exist_ok=True)
    names = [n for n in args.names.split(",") if n]
    models = [m for m in args.models.split(",") if m]
    for m in models:
        if m not in MODELS:
            sys.exit(f"make_yolo: unknown model '{m}' (known: {', '.join(MODELS)})")

    try:
        import onnxruntime as ort
        ort_version = ort.__version__
    except ImportError:
        if args.require_ort:
            sys.exit("make_yolo: onnxruntime is not installed (--require-ort)")
        ort = None
        ort_version = None
        log("onnxruntime is not installed: ORT steps are skipped" +
            (" (references come from torch: TESTING ONLY)" if args.allow_torch_ref else
             " and no reference files are written (use --allow-torch-ref to test the pipeline)"))
    import onnx

    versions = {"python": platform.python_version(), "torch": torch.__version__,
                "onnx": onnx.__version__, "numpy": np.__version__, "onnxruntime": ort_version}
    log("versions: " + json.dumps(versions))

    # Letterboxed photos.
    inputs, lb_info = {}, {}
    from PIL import Image
    for n in names:
        path = os.path.join(args.images, n + ".jpg")
        if not os.path.isfile(path):
            sys.exit(f"make_yolo: photo not found: {path} (pass --images DIR / --names)")
        img, info = letterbox(path)
        inputs[n] = img
        lb_info[n] = info
        Image.fromarray(img).save(os.path.join(ref_dir, n + ".png"), optimize=True)
        log(f"letterbox {n}: {info['source_size']} -> {info['resized_size']} "
            f"scale {info['scale']:.6f} pad left {info['pad_left']} top {info['pad_top']}")

    calib = []
    for n in [n for n in args.calib_names.split(",") if n]:
        path = os.path.join(args.images, n + ".jpg")
        if not os.path.isfile(path):
            sys.exit(f"make_yolo: calibration photo not found: {path}")
        calib.append(inputs[n] if n in inputs else letterbox(path)[0])

    manifest = {"versions": versions, "seeds": {m: (MODEL_SEEDS[m] if args.seed is None else args.seed) for m in models},
                "calibration_photos": args.calib_names, "opset": args.opset, "input_size": IMG,
                "score_threshold": args.score_thr, "iou_threshold": args.iou_thr,
                "max_detections": args.max_det, "row_score": ROW_SCORE, "row_step": ROW_STEP,
                "head_weight_scale": HEAD_WEIGHT_SCALE, "letterbox": lb_info,
                "reference_source": "onnxruntime CPUExecutionProvider" if ort else "torch (TEST)",
                "models": {}}
    ok = True
    for name in models:
        t0 = time.time()
        torch.manual_seed(0)
        model = MODELS[name]()
        n_params = count_params(model)
        seed = MODEL_SEEDS[name] if args.seed is None else args.seed
        init_weights(name, model, seed, calib)
        fuse(model)
        n_fused = count_params(model)
        rel = abs(n_params - PUBLISHED_PARAMS[name]) / PUBLISHED_PARAMS[name]
        log(f"{name}: {n_params:,} parameters ({n_fused:,} after Conv+BN fusion); published "
            f"~{PUBLISHED_PARAMS[name] / 1e6:.1f} M: {'OK' if rel < 0.03 else 'MISMATCH'}")
        ok &= rel < 0.03

        onnx_path = os.path.join(out_dir, name + ".onnx")
        ops = export_onnx(model, onnx_path, args.opset)
        log(f"{name}: exported {onnx_path} ({os.path.getsize(onnx_path):,} bytes, opset "
            f"{args.opset}), onnx.checker OK; ops: " +
            ", ".join(f"{k} x{v}" for k, v in sorted(ops.items())))

        x = to_input([inputs[n] for n in names])
        with torch.no_grad():
            t_out = model(torch.from_numpy(x)).numpy()
        exp = OUTPUT_SHAPE[name]
        if t_out.shape[1:] != exp:
            log(f"{name}: torch output shape {t_out.shape}, expected [N, {exp[0]}, {exp[1]}]")
            ok = False
        else:
            log(f"{name}: torch output {list(t_out.shape)} OK")

        entry = {"file": name + ".onnx", "bytes": os.path.getsize(onnx_path),
                 "sha256": sha256(onnx_path), "parameters": n_params,
                 "parameters_fused": n_fused, "ops": ops, "output_shape": ["N", *exp],
                 "format": "yolov5" if name == "yolov5n" else "yolov8", "images": {}}

        ref_out = None
        if ort is not None:
            sess = ort_session(onnx_path)
            ins, outs = sess.get_inputs(), sess.get_outputs()
            log(f"{name}: ORT input {ins[0].name} {ins[0].shape}, output {outs[0].name} "
                f"{outs[0].shape}")
            per = []
            t1 = time.time()
            for i in range(len(names)):
                per.append(sess.run(["output0"], {"images": x[i:i + 1]})[0][0])
            ms = (time.time() - t1) * 1000 / len(names)
            ref_out = np.stack(per)
            batched = sess.run(["output0"], {"images": x})[0]
            d_batch = float(np.abs(batched - ref_out).max())
            d_torch = float(np.abs(t_out - ref_out).max())
            scale = float(np.abs(ref_out).max())
            log(f"{name}: ORT CPU {ms:.0f} ms/image (1 thread); batch {len(names)} vs batch 1 max "
                f"|diff| {d_batch:.3g}; torch vs ORT max |diff| {d_torch:.3g} (max |out| "
                f"{scale:.4g})")
            entry["ort_vs_torch_max_abs_diff"] = d_torch
            entry["ort_batch_vs_single_max_abs_diff"] = d_batch
            if d_torch > 1e-3 * max(1.0, scale) or d_batch > 1e-3 * max(1.0, scale):
                log(f"{name}: torch and ORT disagree more than expected")
                ok = False
        elif args.allow_torch_ref:
            ref_out = t_out

        if ref_out is not None:
            for i, n in enumerate(names):
                rows = rows_of(name, ref_out[i])
                idx = select_rows(name, rows)
                np.save(os.path.join(ref_dir, f"{name}_{n}_rows.npy"), idx)
                np.save(os.path.join(ref_dir, f"{name}_{n}_out.npy"),
                        np.ascontiguousarray(rows[idx], dtype=np.float32))
                dets, n_cand, near = reference_nms(name, rows, args.score_thr, args.iou_thr,
                                             args.max_det)
                t_dets, _, _ = reference_nms(name, rows_of(name, t_out[i]), args.score_thr,
                                          args.iou_thr, args.max_det)
                same = [d["row"] for d in dets] == [d["row"] for d in t_dets]
                doc = {"model": name, "image": n, "format": entry["format"],
                       "source": manifest["reference_source"], "versions": versions,
                       "score": "obj * cls (best class per row)" if name == "yolov5n"
                                else "cls (best class per row)",
                       "score_threshold": args.score_thr, "iou_threshold": args.iou_thr,
                       "max_detections": args.max_det, "class_aware": True,
                       "box_format": "x0,y0,x1,y1 in letterboxed 640x640 input pixels",
                       "candidates_above_threshold": n_cand, "near_threshold": near,
                       "letterbox": lb_info[n],
                       "detections": dets}
                with open(os.path.join(ref_dir, f"{name}_{n}_dets.json"), "w") as f:
                    json.dump(doc, f, indent=1)
                top = ", ".join(f"{d['name']} {d['score']:.2f}" for d in dets[:4])
                log(f"{name} {n}: {len(idx)} rows stored, {n_cand} rows above "
                    f"{args.score_thr}, {len(dets)} after NMS ({top}...); torch NMS "
                    f"{'identical' if same else 'DIFFERS'}")
                entry["images"][n] = {"rows_stored": int(len(idx)), "candidates": n_cand,
                                      "detections": len(dets), "torch_nms_identical": same}
                if not 1 <= len(dets) <= 100:
                    log(f"{name} {n}: {len(dets)} detections: outside the intended 1..100")

        for op in [int(v) for v in args.check_opsets.split(",") if v]:
            tmp = os.path.join(out_dir, f".check_{name}_op{op}.onnx")
            try:
                ops_o = export_onnx(model, tmp, op)
                msg = f"{name}: opset {op} export + onnx.checker OK ({len(ops_o)} op types)"
                if ort is not None:
                    o = ort_session(tmp).run(["output0"], {"images": x[:1]})[0][0]
                    msg += f", ORT vs opset {args.opset} max |diff| " \
                           f"{float(np.abs(o - ref_out[0]).max()):.3g}"
                log(msg)
            except Exception as e:  # report and continue: the main files are still valid
                log(f"{name}: opset {op} FAILED: {type(e).__name__}: {e}")
                ok = False
            finally:
                if os.path.exists(tmp):
                    os.remove(tmp)
        manifest["models"][name] = entry
        log(f"{name}: done in {time.time() - t0:.1f} s")

    if ort is not None or args.allow_torch_ref:
        with open(os.path.join(ref_dir, "manifest.json"), "w") as f:
            json.dump(manifest, f, indent=1)
        write_readme(ref_dir, manifest, names, models, args)
    write_license(out_dir)
    total = sum(os.path.getsize(os.path.join(ref_dir, f)) for f in os.listdir(ref_dir))
    log(f"ref/: {len(os.listdir(ref_dir))} files, {total:,} bytes; all done in "
        f"{time.time() - t_start:.1f} s: {'OK' if ok else 'WITH PROBLEMS (see above)'}")
    return 0 if ok else 1


def write_readme(ref_dir, manifest, names, models, args):
    v = manifest["versions"]
    lines = [
        "# YOLO conformance references",
        "",
        "Made by `tools/models/yolo/make_yolo.py` (see tools/models/yolo/README.md): YOLOv5n- and",
        "YOLOv8n-architecture models with **seeded random weights** (not trained: boxes and classes",
        "mean nothing), exported to ONNX, run by ONNX Runtime on the letterboxed photos below.",
        "",
        f"Source of the references: **{manifest['reference_source']}**; versions: "
        f"torch {v['torch']}, onnx {v['onnx']}, onnxruntime {v['onnxruntime']}, "
        f"numpy {v['numpy']}, python {v['python']}.",
        "",
        "Command (from the repository root):",
        "",
        "    python3 tools/models/yolo/make_yolo.py " + " ".join(
            a if not a.startswith("/") else "<path>" for a in sys.argv[1:]),
        "",
        "## Models (`../yolov5n.onnx`, `../yolov8n.onnx`)",
        "",
        f"Opset {manifest['opset']}, input `images` [N,3,640,640] f32 RGB in 0..1 (dynamic batch),",
        "output `output0`:",
        "",
        "- yolov5n: [N, 25200, 85]; a row = cx, cy, w, h (640-pixel units), objectness, 80 class",
        "  probabilities (all sigmoid-decoded in the graph). Rows: level P3/8 (80x80), P4/16, P5/32;",
        "  within a level anchor-major, then y, then x: row = level_offset + (a*ny + y)*nx + x.",
        "- yolov8n: [N, 84, 8400]; a column = cx, cy, w, h (640-pixel units), 80 class probabilities.",
        "  Columns: P3 (6400), P4 (1600), P5 (400), each y-major.",
        "",
        "| model | parameters | after Conv+BN fusion | bytes | sha256 |",
        "|---|---|---|---|---|",
    ]
    for m in models:
        e = manifest["models"][m]
        lines.append(f"| {m} | {e['parameters']:,} | {e['parameters_fused']:,} | {e['bytes']:,} | "
                     f"`{e['sha256'][:16]}...` |")
    lines += [
        "",
        "## Files",
        "",
        "- `<image>.png`: the exact model input, 640x640 RGB u8 (divide by 255). Letterbox: scale =",
        "  min(640/w, 640/h), resized size = round(w*scale) x round(h*scale), bilinear with",
        "  half-pixel centres and no antialiasing (OpenCV INTER_LINEAR convention, computed in",
        "  float64, rounded half up), placed at left = (640-nw)//2, top = (640-nh)//2, pad 114.",
        "- `<model>_<image>_rows.npy`: int32 [K] row indices (v8: column indices of [84, 8400]):",
        f"  every {manifest['row_step']['yolov5n']}th row (v5) / {manifest['row_step']['yolov8n']}th"
        f" (v8), plus every row whose best score > {manifest['row_score']}.",
        "- `<model>_<image>_out.npy`: f32 [K, C] ORT outputs of those rows, all channels (C = 85",
        "  for v5, 84 for v8: the v8 output transposed to rows). Batch-1 ORT runs, CPU provider,",
        "  one thread.",
        "- `<model>_<image>_dets.json`: reference NMS on ORT's full output: per row the best class,",
        "  score = obj*cls (v5) or cls (v8); rows with score > score_threshold, visited by score",
        "  descending (ties: lower row first); class-aware greedy suppression when IoU > "
        "iou_threshold",
        "  (float64); at most max_detections kept. Boxes x0,y0,x1,y1 in letterboxed input pixels;",
        "  `row` is the output row; thresholds and letterbox parameters recorded in the file.",
        "  `near_threshold` lists the decisions within `margin` (0.01) of a threshold (rows whose",
        "  score is near score_threshold; [kept row, other row, IoU] pairs of one class whose IoU is",
        "  near iou_threshold) and `tied_scores` counts equal scores among the candidates: an f16",
        "  implementation may decide those differently, so a test can allow them.",
        "- `manifest.json`: all parameters, versions, checksums, torch-vs-ORT differences.",
        "",
        "## Photos",
        "",
        "| image | source size | resized | scale | pad left | pad top |",
        "|---|---|---|---|---|---|",
    ]
    for n in names:
        i = manifest["letterbox"][n]
        lines.append(f"| {n} | {i['source_size'][0]}x{i['source_size'][1]} | "
                     f"{i['resized_size'][0]}x{i['resized_size'][1]} | {i['scale']:.6f} | "
                     f"{i['pad_left']} | {i['pad_top']} |")
    lines += ["", "## Results", "", "| model | image | rows stored | rows > score thr | "
              "detections | torch NMS identical |", "|---|---|---|---|---|---|"]
    for m in models:
        for n, r in manifest["models"][m]["images"].items():
            lines.append(f"| {m} | {n} | {r['rows_stored']} | {r['candidates']} | "
                         f"{r['detections']} | {r['torch_nms_identical']} |")
    lines += ["", "Max |torch - ORT| over the full outputs: " + ", ".join(
        f"{m} {manifest['models'][m].get('ort_vs_torch_max_abs_diff', 'n/a')}" for m in models),
        "", "Photos: Debian package darknet (/usr/share/darknet/data), by Joseph Redmon; licence",
        "GPL-3.0+ or MIT or WTFPL (debian/copyright). See ../LICENSE.md.", ""]
    with open(os.path.join(ref_dir, "README.md"), "w") as f:
        f.write("\n".join(lines))


def write_license(out_dir):
    text = """# Licence notes for assets/models/yolo

- `yolov5n.onnx`, `yolov8n.onnx`: generated by vkml's `tools/models/yolo/make_yolo.py` from a
  fixed seed. The weights are random numbers, not trained; no third-party weights or code are in
  them. The layer structure follows the published YOLOv5 (v6+) and YOLOv8 n-scale architectures,
  reimplemented from their description. Same licence as the vkml repository.
- `ref/*.png`: letterboxed copies of `dog.jpg`, `horses.jpg`, `person.jpg`, `kite.jpg` from the
  Debian package `darknet` (/usr/share/darknet/data), Copyright 2018 Joseph Redmon, licensed
  GPL-3.0+ or MIT or WTFPL (per the package's debian/copyright); used here under MIT.
- `ref/*.npy`, `ref/*.json`, `ref/README.md`: outputs of ONNX Runtime on the above, generated by
  the same script; same licence as the vkml repository.
"""
    with open(os.path.join(out_dir, "LICENSE.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    sys.exit(main())
