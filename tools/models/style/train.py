#!/usr/bin/env python3
"""Train fast-neural-style networks (network.py) for one or more styles, with NanoDet's backbone
(read from its TF.js weights by tfjs_loss_net.py) as the frozen loss network and softmax-smoothed
Gram matrices as the style statistic (losses.py says why).

Per step: a batch of random crops (random scale, random position, random horizontal flip) of the
content photos goes through the network; the loss is
    content_weight * content(s8) + style_weight * style(s2, s4, s8, s16) + tv_weight * TV.
Adam, learning rate decayed linearly over the last 30% of the steps. bf16 autocast on CUDA
(fp16 with a GradScaler if bf16 is unsupported), float32 on CPU. Fixed seeds.

A time budget (--minutes, for all styles together) caps the steps: after a short warm-up each
style measures its speed and shortens its schedule so that the whole run ends in time.

Per style it writes into --out: <style>.pth (checkpoint), <style>.onnx (export.py, opset 9,
dynamic H/W), <style>_preview.png (a few photos stylized), and for the whole run train.json
(final losses, steps, time, device, versions, arguments) plus the log on stdout.

  # on the GPU machine (see run_on_gpu.sh):
  python3 train.py --data /path/style-data --out out --styles starry_night,scream,elephants --minutes 7
  # a tiny CPU dry run of every code path:
  python3 train.py --data /tmp/style-data --out /tmp/st-out --styles scream,elephants --steps 3 --size 64 --batch 2
"""

import argparse
import glob
import json
import math
import os
import platform
import random
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from network import TransformerNet  # noqa: E402
from tfjs_loss_net import NanoDetFeatures, DEFAULT_MODEL  # noqa: E402
from losses import StyleTarget, content_loss, total_variation  # noqa: E402
from export import export_onnx  # noqa: E402


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def load_rgb(path):
    return torch.from_numpy(np.array(Image.open(path).convert("RGB"), dtype=np.uint8)).permute(2, 0, 1)


def resize_short(img_u8, side):
    """uint8 [3,H,W] -> float [1,3,h,w] 0..255 with short side `side`."""
    x = img_u8[None].float()
    h, w = x.shape[2:]
    s = side / min(h, w)
    return F.interpolate(x, size=(max(1, round(h * s)), max(1, round(w * s))), mode="bilinear",
                         align_corners=False).clamp(0, 255)


class CropSampler:
    """Random crops of the photos, kept on the training device (the whole set is a few MB)."""

    def __init__(self, paths, size, device, seed):
        self.images = [load_rgb(p).to(device) for p in paths]
        self.size = size
        self.rng = random.Random(seed)

    def batch(self, n):
        out = []
        for _ in range(n):
            img = self.images[self.rng.randrange(len(self.images))]
            h, w = img.shape[1:]
            # Random scale: the crop covers between the whole short side and 80% of it.
            side = min(h, w)
            c = max(8, int(side * self.rng.uniform(0.8, 1.0)))
            y0, x0 = self.rng.randrange(h - c + 1), self.rng.randrange(w - c + 1)
            crop = img[:, y0:y0 + c, x0:x0 + c][None].float()
            crop = F.interpolate(crop, size=(self.size, self.size), mode="bilinear", align_corners=False)
            if self.rng.random() < 0.5:
                crop = crop.flip(3)
            out.append(crop)
        return torch.cat(out).clamp_(0, 255)


def stylize(net, x, device):
    with torch.no_grad():
        return net(x.to(device)).float().clamp(0, 255).cpu()


def save_preview(net, photos, path, device, side=192):
    tiles = []
    for p in photos:
        x = resize_short(load_rgb(p), side)
        h, w = (x.shape[2] // 4) * 4, (x.shape[3] // 4) * 4
        x = x[:, :, :h, :w]
        y = stylize(net, x, device)
        tiles.append(torch.cat([x, y], dim=2))  # photo above, stylized below
    width = sum(t.shape[3] for t in tiles)
    height = max(t.shape[2] for t in tiles)
    canvas = torch.zeros(3, height, width)
    xo = 0
    for t in tiles:
        canvas[:, :t.shape[2], xo:xo + t.shape[3]] = t[0]
        xo += t.shape[3]
    Image.fromarray(canvas.permute(1, 2, 0).round().byte().numpy()).save(path)


def train_style(style, args, loss_net, sampler, device, deadline, amp_dtype):
    style_path = os.path.join(args.data, "style", f"{style}.jpg")
    if not os.path.isfile(style_path):
        sys.exit(f"train: {style_path}: no such style image (run gather_images.py)")
    torch.manual_seed(args.seed)
    net = TransformerNet(channels_scale=args.channels_scale).to(device)
    with torch.no_grad():
        net.conv_out.conv.bias.fill_(127.5)  # start from mid-grey rather than black
    if device.type == "cuda":
        net = net.to(memory_format=torch.channels_last)
    opt = torch.optim.Adam(net.parameters(), lr=args.lr)
    scaler = torch.cuda.amp.GradScaler() if amp_dtype == torch.float16 else None

    style_img = resize_short(load_rgb(style_path), args.style_size).to(device)
    target = StyleTarget(loss_net, style_img, args.style_layers, args.temperature, args.softmax)

    steps = args.steps
    warmup = (10, 30)  # speed measured between these steps (after cudnn's autotuning)
    t0 = time.time()
    t_warm = None
    hist = {"content": [], "style": [], "tv": [], "total": []}
    step = 0
    while step < steps:
        if step == warmup[0] and device.type == "cuda":
            torch.cuda.synchronize()
            t_warm = time.time()
        if step == warmup[1] and t_warm is not None:
            # Fit the schedule to this style's share of the time budget.
            torch.cuda.synchronize()
            per_step = (time.time() - t_warm) / (warmup[1] - warmup[0])
            fit = int((deadline - time.time()) / per_step) + step
            if fit < steps:
                log(f"{style}: {per_step * 1000:.0f} ms/step -> {fit} steps fit the time budget (asked {steps})")
                steps = max(fit, step + 1)
        # The learning rate decays linearly to 10% over the last 30% of the schedule.
        frac = step / max(steps - 1, 1)
        lr = args.lr * (1.0 if frac < 0.7 else 1.0 - 0.9 * (frac - 0.7) / 0.3)
        for g in opt.param_groups:
            g["lr"] = lr

        x = sampler.batch(args.batch)
        if device.type == "cuda":
            x = x.contiguous(memory_format=torch.channels_last)
        with torch.autocast(device_type=device.type, dtype=amp_dtype, enabled=amp_dtype is not None):
            y = net(x)
            fy = loss_net(y)
            with torch.no_grad():
                fx = loss_net(x)
        lc = content_loss(fy, fx, args.content_layer)
        ls = target.loss(fy)
        tv = total_variation(y.float())
        loss = args.content_weight * lc + args.style_weight * ls + args.tv_weight * tv
        opt.zero_grad(set_to_none=True)
        if scaler:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        step += 1
        for k, v in (("content", lc), ("style", ls), ("tv", tv), ("total", loss)):
            hist[k].append(v.detach())
        if step % args.log_every == 0 or step == steps:
            n = min(args.log_every, len(hist["total"]))
            avg = {k: torch.stack(v[-n:]).float().mean().item() for k, v in hist.items()}
            if not math.isfinite(avg["total"]):  # checked here, not per step: no GPU sync per step
                sys.exit(f"train: {style}: the loss became {avg['total']} by step {step}")
            el = time.time() - t0
            log(f"{style} step {step}/{steps}  total {avg['total']:.4f}  content {avg['content']:.4f}  "
                f"style {avg['style']:.4f}  tv {avg['tv']:.4f}  lr {lr:.2e}  {step / el:.1f} it/s")
            for k in hist:  # keep only what the averages need
                hist[k] = hist[k][-args.log_every:]
        if time.time() > deadline + 30:
            log(f"{style}: over the time budget, stopping at step {step}")
            break
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.time() - t0
    n = min(50, len(hist["total"]))
    final = {k: torch.stack(v[-n:]).float().mean().item() for k, v in hist.items()}

    net = net.float().to(memory_format=torch.contiguous_format).eval()
    ck = os.path.join(args.out, f"{style}.pth")
    torch.save({"model": {k: v.cpu() for k, v in net.state_dict().items()},
                "channels_scale": args.channels_scale, "style": style, "steps": step}, ck)
    onnx_path = os.path.join(args.out, f"{style}.onnx")
    cpu_net = TransformerNet(channels_scale=args.channels_scale)
    cpu_net.load_state_dict({k: v.cpu() for k, v in net.state_dict().items()})
    export_onnx(cpu_net.eval(), onnx_path, dynamic=True,
                doc=f"fast-neural-style '{style}', trained by vkml tools/models/style/train.py "
                    f"({step} steps, NanoDet loss network, softmax-smoothed Gram style loss)",
                metadata={"style": style, "steps": step, "input_range": "0..255 RGB",
                          "output_range": "0..255 RGB (not clamped)"})
    photos = sorted(glob.glob(os.path.join(args.data, "content", "darknet_*.jpg")))[:3] or sampler_paths(args)[:3]
    save_preview(net, photos, os.path.join(args.out, f"{style}_preview.png"), device)
    log(f"{style}: {step} steps in {seconds:.0f} s; final (mean of last {n}) {final}; wrote {ck}, {onnx_path}")
    return {"steps": step, "seconds": round(seconds, 1), "final_losses": final,
            "ms_per_step": round(1000 * seconds / max(step, 1), 2), "onnx": os.path.basename(onnx_path)}


def sampler_paths(args):
    return sorted(glob.glob(os.path.join(args.data, "content", "*.jpg")))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="folder made by gather_images.py (content/, style/)")
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--styles", default="starry_night,scream,elephants",
                    help="comma-separated names of <data>/style/<name>.jpg")
    ap.add_argument("--model", default=None,
                    help="NanoDet TF.js model.json (the loss network); default <data>/nanodet/nanodet.json "
                         "when present, else the vkml model cache's")
    ap.add_argument("--steps", type=int, default=4000, help="steps per style (the time budget may cut them)")
    ap.add_argument("--minutes", type=float, default=0, help="time budget for all styles (0: none)")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--size", type=int, default=256, help="crop size")
    ap.add_argument("--style-size", type=int, default=384, help="style image's short side for its Grams")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--content-weight", type=float, default=1.0)
    # 4: the committed models' weight. 50 (the first default) and 12 let the style wash out the
    # photo's content with the softmax Gram loss; 4 keeps the objects recognizable.
    ap.add_argument("--style-weight", type=float, default=4.0)
    ap.add_argument("--tv-weight", type=float, default=0.5)
    ap.add_argument("--content-layer", default="s8")
    ap.add_argument("--style-layers", default="s2,s4,s8,s16")
    ap.add_argument("--softmax", default="channel", choices=["channel", "spatial", "none"],
                    help="the softmax transform before the Gram matrices (losses.py)")
    ap.add_argument("--temperature", type=float, default=0.5)
    ap.add_argument("--channels-scale", type=float, default=1.0, help="network width (1 = the zoo's)")
    ap.add_argument("--amp", default="auto", choices=["auto", "bf16", "fp16", "off"])
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--log-every", type=int, default=100)
    ap.add_argument("--device", default="auto")
    args = ap.parse_args()
    if args.model is None:
        local = os.path.join(args.data, "nanodet", "nanodet.json")
        args.model = local if os.path.isfile(local) else DEFAULT_MODEL
    args.style_layers = [s for s in args.style_layers.split(",") if s]
    styles = [s for s in args.styles.split(",") if s]

    start = time.time()
    device = torch.device("cuda" if args.device == "auto" and torch.cuda.is_available() else
                          (args.device if args.device != "auto" else "cpu"))
    amp_dtype = None
    if device.type == "cuda" and args.amp != "off":
        if args.amp in ("auto", "bf16") and torch.cuda.is_bf16_supported():
            amp_dtype = torch.bfloat16
        elif args.amp in ("auto", "fp16", "bf16"):
            amp_dtype = torch.float16
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True
    os.makedirs(args.out, exist_ok=True)

    paths = sampler_paths(args)
    if len(paths) < 2:
        sys.exit(f"train: {args.data}/content: no photos (run gather_images.py first)")
    layers = sorted(set(args.style_layers) | {args.content_layer})
    loss_net = NanoDetFeatures(args.model, layers=layers).to(device)
    sampler = CropSampler(paths, args.size, device, args.seed)
    log(f"device {device} ({torch.cuda.get_device_name(0) if device.type == 'cuda' else platform.processor()}), "
        f"torch {torch.__version__}, amp {amp_dtype}, {len(paths)} photos, styles {styles}")

    results = {}
    for i, style in enumerate(styles):
        if args.minutes > 0:
            left = args.minutes * 60 - (time.time() - start)
            # Each style's share of what is left; ~15 s per style for export and previews.
            deadline = time.time() + max(left / (len(styles) - i) - 15, 10)
        else:
            deadline = float("inf")
        results[style] = train_style(style, args, loss_net, sampler, device, deadline, amp_dtype)

    summary = {
        "styles": results,
        "total_seconds": round(time.time() - start, 1),
        "device": torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu",
        "torch": torch.__version__, "amp": str(amp_dtype),
        "photos": len(paths),
        "args": {k: v for k, v in vars(args).items() if k not in ("data", "out", "model")},
        "command": " ".join(sys.argv),
    }
    with open(os.path.join(args.out, "train.json"), "w") as f:
        json.dump(summary, f, indent=2)
    log(f"done in {summary['total_seconds']} s: {os.path.join(args.out, 'train.json')}")


if __name__ == "__main__":
    main()
