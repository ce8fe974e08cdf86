#!/usr/bin/env python3
"""Reference outputs of the trained style models, for vkml's CI (which checks its own output for
the committed ONNX files against these) and the style grid for the README.

For each photo: <out>/ref/<photo>.png, the exact model input (RGB u8, small), and for each model
<out>/ref/<style>_<photo>.npy, ONNX Runtime's f32 output [1,3,H,W] (0..255, not clamped) for
that input as float32 0..255. One photo has a size that is not a multiple of 4, where the output
is larger than the input (the two stride-2 convs round up), exactly as with the zoo's models.
<out>/ref/refs.json records sizes, runtime version and value ranges; <out>/style_grid.png shows
photos (rows) x original + styles (columns).

  python3 make_references.py --data .cache/style-data --models out/starry_night.onnx out/scream.onnx --out out

Needs onnxruntime (the GPU machine has it); without it (--allow-fallback) it uses export.py's
small ONNX interpreter, for dry runs only.
"""

import argparse
import json
import os
import sys

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# name -> (photo in gather_images.py's folder, width, height): small, real photos of Debian's
# darknet and opencv-doc. The copies in the data folder (short side 320) are used, so the
# references are the same on a machine without those packages (the GPU machine).
PHOTOS = {
    "dog": ("content/darknet_dog.jpg", 160, 120),
    "horses": ("content/darknet_horses.jpg", 192, 128),
    "person": ("content/darknet_person.jpg", 192, 128),
    "fruits": ("content/opencv_fruits.jpg", 142, 106),  # not a multiple of 4 on purpose
}
# Larger versions for the grid image (not references).
GRID_SIDE = 224


def fit(path, w, h):
    """Resize to cover w x h, then centre-crop: the exact model input (u8 RGB)."""
    img = Image.open(path).convert("RGB")
    s = max(w / img.width, h / img.height)
    img = img.resize((max(w, round(img.width * s)), max(h, round(img.height * s))), Image.LANCZOS)
    x0, y0 = (img.width - w) // 2, (img.height - h) // 2
    return img.crop((x0, y0, x0 + w, y0 + h))


def to_input(img):
    return np.ascontiguousarray(np.asarray(img, dtype=np.float32).transpose(2, 0, 1)[None])


def make_runner(path, allow_fallback):
    try:
        import onnxruntime as ort
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        name_in, name_out = sess.get_inputs()[0].name, sess.get_outputs()[0].name
        return (lambda x: sess.run([name_out], {name_in: x})[0]), f"onnxruntime {ort.__version__} CPU"
    except ImportError:
        if not allow_fallback:
            sys.exit("make_references: onnxruntime is not importable (references must come from ONNX Runtime; "
                     "--allow-fallback for a dry run)")
        import onnx
        from export import run_onnx_reference
        model = onnx.load(path)
        return (lambda x: run_onnx_reference(model, x)), "export.py reference interpreter (DRY RUN, not ORT)"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", required=True, help="<style>.onnx files")
    ap.add_argument("--out", required=True, help="writes <out>/ref/ and <out>/style_grid.png")
    ap.add_argument("--data", required=True, help="the folder made by gather_images.py")
    ap.add_argument("--allow-fallback", action="store_true")
    args = ap.parse_args()

    ref = os.path.join(args.out, "ref")
    os.makedirs(ref, exist_ok=True)
    photos = {k: (os.path.join(args.data, p), w, h) for k, (p, w, h) in PHOTOS.items()}
    for p, _, _ in photos.values():
        if not os.path.isfile(p):
            sys.exit(f"make_references: {p}: missing (run gather_images.py)")
    inputs = {}
    for name, (src, w, h) in photos.items():
        img = fit(src, w, h)
        img.save(os.path.join(ref, f"{name}.png"))
        inputs[name] = to_input(img)

    record = {"photos": {}, "models": {}}
    for name, (src, w, h) in photos.items():
        record["photos"][name] = {"source": src, "width": w, "height": h, "file": f"{name}.png"}
    grid_rows = {name: [fit(photos[name][0], GRID_SIDE * 4 // 3, GRID_SIDE)] for name in photos}
    for path in args.models:
        style = os.path.splitext(os.path.basename(path))[0]
        run, how = make_runner(path, args.allow_fallback)
        record["models"][style] = {"file": os.path.basename(path), "runtime": how, "outputs": {}}
        for name, x in inputs.items():
            y = run(x).astype(np.float32)
            if not np.isfinite(y).all():
                sys.exit(f"make_references: {path} on {name}: non-finite output")
            np.save(os.path.join(ref, f"{style}_{name}.npy"), y)
            record["models"][style]["outputs"][name] = {
                "file": f"{style}_{name}.npy", "shape": list(y.shape),
                "min": float(y.min()), "max": float(y.max()), "mean": float(y.mean())}
            print(f"{style} x {name}: {x.shape[3]}x{x.shape[2]} -> {list(y.shape)}  "
                  f"range {y.min():.1f}..{y.max():.1f} ({how})")
        for name in photos:
            y = run(to_input(grid_rows[name][0]))
            grid_rows[name].append(Image.fromarray(np.clip(y[0].transpose(1, 2, 0), 0, 255).round().astype(np.uint8)))
    with open(os.path.join(ref, "refs.json"), "w") as f:
        json.dump(record, f, indent=2)

    tw, th = GRID_SIDE * 4 // 3, GRID_SIDE
    gap = 4
    cols = 1 + len(args.models)
    grid = Image.new("RGB", (cols * tw + (cols - 1) * gap, len(photos) * th + (len(photos) - 1) * gap), (255, 255, 255))
    for r, name in enumerate(photos):
        for c, tile in enumerate(grid_rows[name]):
            grid.paste(tile.crop((0, 0, tw, th)), (c * (tw + gap), r * (th + gap)))
    grid.save(os.path.join(args.out, "style_grid.png"))
    print(f"wrote {ref}/ ({len(photos)} photos x {len(args.models)} models) and {args.out}/style_grid.png "
          f"(columns: photo, {', '.join(os.path.splitext(os.path.basename(p))[0] for p in args.models)})")


if __name__ == "__main__":
    main()
