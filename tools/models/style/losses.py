"""Perceptual losses for style training on a non-VGG loss network.

Why the softmax: Gram-matrix style losses work well on VGG but poorly on most other networks.
Wang, Li and Vasconcelos ("Rethinking and Improving the Robustness of Image Style Transfer",
CVPR 2021) trace this to the other networks' activations: a few very large, peaky responses with
low entropy dominate their Gram matrices, so matching them ignores most of what the style looks
like. Passing the activations through a softmax before the Gram matrix smooths them (raises
their entropy) and brings back the spread of responses that VGG's Grams capture.

Our version: at each layer the activations are first divided by a per-layer scale taken once from
the style image (so the softmax temperature means the same at every layer and for every loss
network), then a softmax runs over the channels at each position (each pixel becomes a
distribution over the layer's features; this keeps the transform independent of the image size,
so a style image of any size gives Grams comparable with 256x256 training crops), times the
channel count so the values average 1. The Gram matrix of these per-pixel distributions, averaged
over positions, is the style statistic.
"""

import torch
import torch.nn.functional as F


def smooth(f, scale, temperature=1.0, mode="channel"):
    """The softmax transform of activations f [N,C,H,W] (float32)."""
    z = f / (scale * temperature)
    n, c, h, w = z.shape
    if mode == "channel":
        return F.softmax(z, dim=1) * c
    if mode == "spatial":
        return F.softmax(z.reshape(n, c, h * w), dim=2).reshape(n, c, h, w) * (h * w)
    if mode == "none":
        return f / scale
    raise ValueError(f"unknown softmax mode {mode}")


def gram(f):
    """[N,C,H,W] -> [N,C,C], averaged over positions."""
    n, c, h, w = f.shape
    x = f.reshape(n, c, h * w)
    return torch.bmm(x, x.transpose(1, 2)) / (h * w)


def total_variation(y):
    """Mean absolute difference between neighbouring pixels (y in 0..255 -> in 0..1 units)."""
    dx = (y[:, :, :, 1:] - y[:, :, :, :-1]).abs().mean()
    dy = (y[:, :, 1:, :] - y[:, :, :-1, :]).abs().mean()
    return (dx + dy) / 255.0


class StyleTarget:
    """The style image's per-layer scales and smoothed Gram matrices."""

    def __init__(self, loss_net, style_image, layers, temperature=1.0, mode="channel"):
        self.layers, self.temperature, self.mode = list(layers), temperature, mode
        with torch.no_grad():
            feats = loss_net(style_image)
        self.scales = {k: feats[k].float().std().clamp_min(1e-6) for k in self.layers}
        self.grams = {k: gram(smooth(feats[k].float(), self.scales[k], temperature, mode)) for k in self.layers}
        # Each layer's loss is divided by its target's own size, so the layers weigh alike.
        self.norms = {k: self.grams[k].pow(2).mean().clamp_min(1e-12) for k in self.layers}

    def loss(self, feats):
        total = 0.0
        for k in self.layers:
            g = gram(smooth(feats[k].float(), self.scales[k], self.temperature, self.mode))
            total = total + ((g - self.grams[k]) ** 2).mean() / self.norms[k]
        return total / len(self.layers)


def content_loss(feats_y, feats_x, layer):
    """MSE between the output's and the photo's activations at a deeper layer, relative to the
    photo's activation power (scale-free across loss networks)."""
    fx = feats_x[layer].float()
    return F.mse_loss(feats_y[layer].float(), fx) / fx.pow(2).mean().clamp_min(1e-12)
