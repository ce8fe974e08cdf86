#!/usr/bin/env python3
"""Export a TransformerNet (network.py) to ONNX the way the model zoo's fast-neural-style models
are laid out: opset 9, input `input1` [1,3,224,224] f32 RGB 0..255, output `output1` (0..255, not
clamped); Pad(reflect) / Conv / InstanceNormalization / Relu / Add / Upsample(nearest) nodes.

The graph is written node by node with onnx.helper instead of torch.onnx.export: torch 2.x
defaults to the dynamo exporter (a different opset and node set) and the TorchScript exporter is
deprecated there, while this file must give the same graph on torch 1.13 and 2.x.

Examples:
  # a small random-weight test fixture (seeded, 1/4 of the channels), fixed 1x3x224x224
  python3 export.py --random-seed 7 --channels-scale 0.25 -o tiny.onnx --check
  # dynamic height/width
  python3 export.py --random-seed 7 --channels-scale 0.25 --dynamic -o tiny_dyn.onnx --check
  # a trained checkpoint (train.py writes <style>.pth)
  python3 export.py --checkpoint candy.pth -o candy.onnx --check

--check runs the exported file and compares it with the torch module: with onnxruntime when it
is importable, otherwise with the small ONNX interpreter below (torch ops, independent of the
module's code path), and exits non-zero when they differ.
"""

import argparse
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from network import TransformerNet, randomize_  # noqa: E402

OPSET = 9
INPUT = "input1"
OUTPUT = "output1"


class _Builder:
    def __init__(self, net):
        self.state = {k: v.detach().float().cpu().numpy() for k, v in net.state_dict().items()}
        # Strides come from the module itself, so the graph cannot disagree with the network.
        self.strides = {name[:-len(".conv")]: m.stride[0] for name, m in net.named_modules()
                        if isinstance(m, torch.nn.Conv2d)}
        self.nodes = []
        self.inits = []
        self.count = 0

    def name(self, kind):
        self.count += 1
        return f"{kind}_{self.count}"

    def init(self, key):
        self.inits.append(numpy_helper.from_array(self.state[key].astype(np.float32), key))
        return key

    def node(self, op, inputs, **attrs):
        name = self.name(op)
        out = name + "_out"
        self.nodes.append(helper.make_node(op, inputs, [out], name=name, **attrs))
        return out

    def padded_conv(self, x, prefix):
        w = self.state[prefix + ".conv.weight"]
        k = w.shape[2]
        stride = self.strides[prefix]
        p = k // 2
        y = self.node("Pad", [x], mode="reflect", pads=[0, 0, p, p, 0, 0, p, p], value=0.0)
        return self.node("Conv", [y, self.init(prefix + ".conv.weight"), self.init(prefix + ".conv.bias")],
                         kernel_shape=[k, k], strides=[stride, stride], pads=[0, 0, 0, 0],
                         dilations=[1, 1], group=1)

    def inorm(self, x, prefix):
        return self.node("InstanceNormalization", [x, self.init(prefix + ".weight"), self.init(prefix + ".bias")],
                         epsilon=1e-5)

    def relu(self, x):
        return self.node("Relu", [x])

    def upsample(self, x):
        scales = self.name("scales")
        self.inits.append(numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), scales))
        return self.node("Upsample", [x, scales], mode="nearest")


def build_model(net, dynamic=False, height=224, width=224, doc=""):
    """The ONNX ModelProto of `net` (a TransformerNet)."""
    b = _Builder(net)
    x = INPUT
    y = b.relu(b.inorm(b.padded_conv(x, "conv1"), "in1"))
    y = b.relu(b.inorm(b.padded_conv(y, "conv2"), "in2"))
    y = b.relu(b.inorm(b.padded_conv(y, "conv3"), "in3"))
    for i in range(len(net.res)):
        p = f"res.{i}"
        r = b.relu(b.inorm(b.padded_conv(y, p + ".conv1"), p + ".in1"))
        r = b.inorm(b.padded_conv(r, p + ".conv2"), p + ".in2")
        y = b.node("Add", [y, r])
    y = b.relu(b.inorm(b.padded_conv(b.upsample(y), "up1.body"), "in4"))
    y = b.relu(b.inorm(b.padded_conv(b.upsample(y), "up2.body"), "in5"))
    y = b.padded_conv(y, "conv_out")
    # Name the last node's output `output1` directly (no Identity), as the zoo's files do.
    b.nodes[-1].output[0] = OUTPUT

    if dynamic:
        in_shape = [1, 3, "height", "width"]
        out_shape = [1, 3, "out_height", "out_width"]
    else:
        in_shape = [1, 3, height, width]
        # Two stride-2 convs then two x2 upsamplings: sizes round up to /4 and come back x4.
        out_shape = [1, 3, _out_size(height), _out_size(width)]
    graph = helper.make_graph(
        b.nodes, "fast_neural_style",
        [helper.make_tensor_value_info(INPUT, TensorProto.FLOAT, in_shape)],
        [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, out_shape)],
        initializer=b.inits)
    model = helper.make_model(graph, producer_name="vkml tools/models/style/export.py",
                              opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 6  # opset 9 era; read by onnx 1.12+ and every onnxruntime since 1.0
    model.doc_string = doc
    onnx.checker.check_model(model)
    return model


def _out_size(n):
    n = (n + 2 - 3) // 2 + 1  # stride-2 3x3 conv after a 1-pixel reflection pad
    n = (n + 2 - 3) // 2 + 1
    return n * 4


def export_onnx(net, path, dynamic=False, height=224, width=224, doc="", metadata=None):
    model = build_model(net, dynamic, height, width, doc)
    for k, v in (metadata or {}).items():
        entry = model.metadata_props.add()
        entry.key, entry.value = str(k), str(v)
    onnx.save(model, path)
    return path


# --- a small ONNX interpreter for --check without onnxruntime (only the ops written above) ---
def run_onnx_reference(model, x):
    env = {init.name: torch.from_numpy(numpy_helper.to_array(init).copy()) for init in model.graph.initializer}
    env[model.graph.input[0].name] = torch.from_numpy(x)
    for n in model.graph.node:
        a = {at.name: helper.get_attribute_value(at) for at in n.attribute}
        ins = [env[i] for i in n.input]
        if n.op_type == "Pad":
            p = list(a["pads"])
            assert a["mode"] in (b"reflect", "reflect") and p[:2] == [0, 0] and p[4:6] == [0, 0]
            y = F.pad(ins[0], (p[3], p[7], p[2], p[6]), mode="reflect")
        elif n.op_type == "Conv":
            assert list(a.get("pads", [0, 0, 0, 0])) == [0, 0, 0, 0] and a.get("group", 1) == 1
            y = F.conv2d(ins[0], ins[1], ins[2] if len(ins) > 2 else None, stride=list(a["strides"]))
        elif n.op_type == "InstanceNormalization":
            m = ins[0].mean(dim=(2, 3), keepdim=True)
            v = ins[0].var(dim=(2, 3), keepdim=True, unbiased=False)
            y = (ins[0] - m) / torch.sqrt(v + a.get("epsilon", 1e-5))
            y = y * ins[1].view(1, -1, 1, 1) + ins[2].view(1, -1, 1, 1)
        elif n.op_type == "Relu":
            y = torch.clamp(ins[0], min=0)
        elif n.op_type == "Add":
            y = ins[0] + ins[1]
        elif n.op_type == "Upsample":
            s = ins[1].tolist()
            assert s[:2] == [1, 1] and s[2] == s[3] == 2
            y = ins[0].repeat_interleave(2, dim=2).repeat_interleave(2, dim=3)
        else:
            raise RuntimeError(f"reference interpreter: unsupported op {n.op_type}")
        env[n.output[0]] = y
    return env[model.graph.output[0].name].numpy()


def check(net, path, sizes):
    """Compare the ONNX file with the torch module on random 0..255 inputs. Returns max |diff|."""
    model = onnx.load(path)
    try:
        import onnxruntime as ort
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        runner, how = (lambda x: sess.run([OUTPUT], {INPUT: x})[0]), f"onnxruntime {ort.__version__}"
    except ImportError:
        runner, how = (lambda x: run_onnx_reference(model, x)), "the reference interpreter (no onnxruntime)"
    rng = np.random.default_rng(0)
    worst = 0.0
    net = net.float().cpu().eval()
    for h, w in sizes:
        x = (rng.random((1, 3, h, w), dtype=np.float32) * 255).astype(np.float32)
        with torch.no_grad():
            ref = net(torch.from_numpy(x)).numpy()
        got = runner(x)
        if got.shape != ref.shape:
            raise SystemExit(f"check: {path}: output shape {got.shape} != torch {ref.shape} at input {h}x{w}")
        diff = float(np.abs(got - ref).max())
        scale = float(np.abs(ref).max())
        print(f"check ({how}): {h}x{w} -> {got.shape[2]}x{got.shape[3]}: max |onnx - torch| = {diff:.3g} "
              f"(output max |.| {scale:.3g})")
        worst = max(worst, diff / max(scale, 1.0))
    if worst > 1e-3:
        raise SystemExit(f"check: {path}: ONNX output differs from torch (relative {worst:.3g})")
    return worst


def load_checkpoint(path):
    ck = torch.load(path, map_location="cpu")
    state = ck["model"] if isinstance(ck, dict) and "model" in ck else ck
    scale = ck.get("channels_scale", 1.0) if isinstance(ck, dict) and "model" in ck else 1.0
    net = TransformerNet(channels_scale=scale)
    net.load_state_dict(state)
    return net.eval()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--checkpoint", help="a .pth written by train.py (or a plain state_dict)")
    src.add_argument("--random-seed", type=int, help="seeded random weights (a test fixture)")
    ap.add_argument("--channels-scale", type=float, default=1.0,
                    help="channel widths x this (random weights only; 0.25 -> 8/16/32 channels)")
    ap.add_argument("-o", "--output", required=True, help="the .onnx file to write")
    ap.add_argument("--dynamic", action="store_true", help="dynamic height/width instead of 224x224")
    ap.add_argument("--height", type=int, default=224)
    ap.add_argument("--width", type=int, default=224)
    ap.add_argument("--check", action="store_true", help="compare the ONNX output with torch's")
    args = ap.parse_args()

    if args.checkpoint:
        if not os.path.isfile(args.checkpoint):
            sys.exit(f"export: {args.checkpoint}: no such checkpoint")
        net = load_checkpoint(args.checkpoint)
        doc = f"fast-neural-style, trained by vkml tools/models/style/train.py ({os.path.basename(args.checkpoint)})"
    else:
        torch.manual_seed(args.random_seed)
        net = randomize_(TransformerNet(channels_scale=args.channels_scale), args.random_seed).eval()
        doc = (f"fast-neural-style topology with seeded random weights (seed {args.random_seed}, "
               f"channels x{args.channels_scale}): a test fixture, not a trained model")
    export_onnx(net, args.output, args.dynamic, args.height, args.width, doc)
    print(f"wrote {args.output} ({os.path.getsize(args.output)} bytes, opset {OPSET}, "
          f"{'dynamic HxW' if args.dynamic else f'1x3x{args.height}x{args.width}'})")
    if args.check:
        sizes = [(100, 132), (37, 50), (64, 64)] if args.dynamic else [(args.height, args.width)]
        check(net, args.output, sizes)


if __name__ == "__main__":
    main()
