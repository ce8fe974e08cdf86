#!/usr/bin/env python3
"""Writes the style-transfer test fixtures in tests/style/fixtures/ (committed: CI has no torch).

A fast-neural-style TransformerNet (tools/models/style/network.py) at 1/8 of the channels
(4/8/16), with seeded random weights, exported by torch.onnx.export the way the ONNX model zoo's
candy / mosaic / udnie / rain-princess / pointilism files were made, declared for 1x3x224x224:

  style_tiny_9.onnx   opset 9:  Pad-2 (pads/mode attributes, reflect), Upsample-9 (scales from a
                      Constant node), InstanceNormalization, Conv, Relu, Add  (the zoo's "-9" files)
  style_tiny_8.onnx   the same converted to opset 8 by onnx.version_converter: Upsample-7 with a
                      `scales` attribute                                   (the zoo's "-8" files)
  style_tiny_11.onnx  opset 11: Pad-11 (pads as an input) and Resize-11    (newer exporters)

and PyTorch's own output of the module, as the independent reference for vkml's run:

  input_29x37.npy     f32 [1, 3, 29, 37], seeded uniform 0..255 (odd sizes: the stride-2 convs round up)
  torch_29x37.npy     f32 [1, 3, 32, 40], the module's output for it

Run with /usr/bin/python3 (torch 1.13 or 2.x, onnx, numpy):  python3 tests/style/make_fixtures.py
"""
import inspect
import os
import sys

import numpy as np
import onnx
import torch
from onnx import version_converter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools", "models", "style"))
from network import TransformerNet, randomize_  # noqa: E402

OUT = os.path.join(HERE, "fixtures")
SEED = 11
CHANNELS_SCALE = 0.125


def export(net, path, opset):
    kwargs = {}
    # torch 2.x defaults to the dynamo exporter, which writes another graph; the zoo's files came
    # from the TorchScript exporter.
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False
    torch.onnx.export(net, torch.rand(1, 3, 224, 224) * 255, path, opset_version=opset,
                      input_names=["input1"], output_names=["output1"], do_constant_folding=True, **kwargs)
    onnx.checker.check_model(onnx.load(path))


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.manual_seed(SEED)
    net = randomize_(TransformerNet(channels_scale=CHANNELS_SCALE), SEED).eval()
    export(net, os.path.join(OUT, "style_tiny_9.onnx"), 9)
    export(net, os.path.join(OUT, "style_tiny_11.onnx"), 11)
    m8 = version_converter.convert_version(onnx.load(os.path.join(OUT, "style_tiny_9.onnx")), 8)
    onnx.checker.check_model(m8)
    onnx.save(m8, os.path.join(OUT, "style_tiny_8.onnx"))

    rng = np.random.default_rng(SEED)
    x = (rng.random((1, 3, 29, 37)) * 255).astype(np.float32)
    with torch.no_grad():
        y = net(torch.from_numpy(x)).numpy().astype(np.float32)
    np.save(os.path.join(OUT, "input_29x37.npy"), x)
    np.save(os.path.join(OUT, "torch_29x37.npy"), y)
    for name in sorted(os.listdir(OUT)):
        print(f"{name:24s} {os.path.getsize(os.path.join(OUT, name)):8d} bytes")
    print("output", y.shape, "range", float(y.min()), float(y.max()))


if __name__ == "__main__":
    main()
