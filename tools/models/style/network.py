"""The fast-neural-style image transformation network, laid out like the ONNX model zoo's
candy / mosaic / udnie / rain-princess / pointilism models, so that one importer path in vkml
serves both the zoo's files and ours.

Layout (every conv is preceded by reflection padding of kernel//2, so sizes only change at the
strides and the upsamplings):
    9x9 conv 3->32, IN, ReLU
    3x3 conv 32->64 stride 2, IN, ReLU
    3x3 conv 64->128 stride 2, IN, ReLU
    5 x residual block: [3x3 conv, IN, ReLU, 3x3 conv, IN] + identity
    nearest x2, 3x3 conv 128->64, IN, ReLU
    nearest x2, 3x3 conv 64->32, IN, ReLU
    9x9 conv 32->3 (no norm, no activation)
IN = InstanceNorm2d with affine scale/bias. Input and output are RGB in 0..255 (the output is not
clamped, as in the zoo's models: consumers clamp when they convert to pixels).

Parameter names are stable: export.py reads them to write the ONNX graph by hand.
Works on torch 1.13 and torch 2.x (only long-standing nn APIs).
"""

import torch
from torch import nn
import torch.nn.functional as F


class PaddedConv(nn.Module):
    """Reflection pad by kernel//2, then a plain convolution: no zero borders, which would print
    dark frames into the stylized image."""

    def __init__(self, cin, cout, kernel, stride=1):
        super().__init__()
        self.pad = kernel // 2
        self.conv = nn.Conv2d(cin, cout, kernel, stride)

    def forward(self, x):
        return self.conv(F.pad(x, (self.pad,) * 4, mode="reflect"))


class UpConv(nn.Module):
    """Nearest-neighbour x2 then a padded conv: avoids the checkerboard that a transposed
    convolution leaves."""

    def __init__(self, cin, cout, kernel):
        super().__init__()
        self.body = PaddedConv(cin, cout, kernel)

    def forward(self, x):
        return self.body(F.interpolate(x, scale_factor=2.0, mode="nearest"))


class ResidualBlock(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.conv1 = PaddedConv(ch, ch, 3)
        self.in1 = nn.InstanceNorm2d(ch, affine=True)
        self.conv2 = PaddedConv(ch, ch, 3)
        self.in2 = nn.InstanceNorm2d(ch, affine=True)

    def forward(self, x):
        y = F.relu(self.in1(self.conv1(x)))
        return x + self.in2(self.conv2(y))


def channel_widths(scale=1.0):
    """(c1, c2, c3) = (32, 64, 128) times `scale` (at least 2 each): small widths make tiny test
    fixtures with the same topology."""
    return tuple(max(2, int(round(c * scale))) for c in (32, 64, 128))


class TransformerNet(nn.Module):
    def __init__(self, channels_scale=1.0, residual_blocks=5):
        super().__init__()
        c1, c2, c3 = channel_widths(channels_scale)
        self.widths = (c1, c2, c3)
        self.conv1 = PaddedConv(3, c1, 9)
        self.in1 = nn.InstanceNorm2d(c1, affine=True)
        self.conv2 = PaddedConv(c1, c2, 3, stride=2)
        self.in2 = nn.InstanceNorm2d(c2, affine=True)
        self.conv3 = PaddedConv(c2, c3, 3, stride=2)
        self.in3 = nn.InstanceNorm2d(c3, affine=True)
        self.res = nn.ModuleList([ResidualBlock(c3) for _ in range(residual_blocks)])
        self.up1 = UpConv(c3, c2, 3)
        self.in4 = nn.InstanceNorm2d(c2, affine=True)
        self.up2 = UpConv(c2, c1, 3)
        self.in5 = nn.InstanceNorm2d(c1, affine=True)
        self.conv_out = PaddedConv(c1, 3, 9)

    def forward(self, x):
        y = F.relu(self.in1(self.conv1(x)))
        y = F.relu(self.in2(self.conv2(y)))
        y = F.relu(self.in3(self.conv3(y)))
        for block in self.res:
            y = block(y)
        y = F.relu(self.in4(self.up1(y)))
        y = F.relu(self.in5(self.up2(y)))
        return self.conv_out(y)


def randomize_(net, seed):
    """Seeded random weights for test fixtures: default conv init, plus instance-norm scales and
    biases away from 1/0 so that a broken affine path in an importer shows. The output bias is
    moved to mid-grey so the fixture's outputs look like images (0..255-ish)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, nn.Conv2d):
                fan_in = m.in_channels * m.kernel_size[0] * m.kernel_size[1]
                bound = (3.0 / fan_in) ** 0.5
                m.weight.copy_((torch.rand(m.weight.shape, generator=g) * 2 - 1) * bound)
                m.bias.copy_((torch.rand(m.bias.shape, generator=g) * 2 - 1) * 0.1)
            elif isinstance(m, nn.InstanceNorm2d):
                m.weight.copy_(0.5 + torch.rand(m.weight.shape, generator=g))
                m.bias.copy_(torch.randn(m.bias.shape, generator=g) * 0.2)
        net.conv_out.conv.weight.mul_(40.0)
        net.conv_out.conv.bias.fill_(127.5)
    return net
