#!/bin/bash
# The one command that trains vkml's style models on a CUDA machine (no internet needed) and
# packs everything for assets/models/style/. Run from the repository root, after
#   python3 tools/models/style/gather_images.py --out .cache/style-data
# on a Debian machine with the image packages (the folder, ~11 MB, holds the photos, the
# paintings and NanoDet's TF.js weights; carry it to the GPU machine).
#
#   OUT=/some/dir bash tools/models/style/run_on_gpu.sh [data-dir] [minutes]
#
# Writes into $OUT (at most 8 files, none over 16 MB): <style>.onnx for each style,
# style-results.tar.gz (ref/, style_grid.png, train.json, previews, sources.txt, logs) and run.log.
set -euo pipefail
DATA=${1:-.cache/style-data}
MINUTES=${2:-${STYLE_MINUTES:-7}}
STYLES=${STYLES:-starry_night,scream,elephants}
OUT=${OUT:?set OUT to the folder for the results}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT" "$WORK/style"
exec > >(tee "$OUT/run.log") 2>&1

echo "== $(date -u +%FT%TZ) vkml style training: data $DATA, styles $STYLES, budget $MINUTES min"
[ -f "$DATA/nanodet/nanodet.json" ] || { echo "error: $DATA/nanodet/nanodet.json missing (run gather_images.py and carry the folder)"; exit 1; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
python3 -c 'import torch, onnx, numpy; print("torch", torch.__version__, "cuda", torch.version.cuda, "onnx", onnx.__version__, "numpy", numpy.__version__)'
python3 -c 'import onnxruntime as o; print("onnxruntime", o.__version__)' || [ -n "${STYLE_DRY_RUN:-}" ]
# STYLE_DRY_RUN=1: a tiny CPU run of every step (3 steps at 64x64, references without ORT).
TRAIN_EXTRA=() REF_EXTRA=()
[ -n "${STYLE_DRY_RUN:-}" ] && TRAIN_EXTRA=(--steps 3 --size 64 --batch 2 --log-every 1) REF_EXTRA=(--allow-fallback)
# TRAIN_ARGS: more train.py options, e.g. TRAIN_ARGS="--style-weight 4".
read -r -a TRAIN_USER <<< "${TRAIN_ARGS:-}"
TRAIN_EXTRA+=("${TRAIN_USER[@]}")

echo "== loss network self-check (NanoDet from TF.js weights on darknet's dog.jpg or a training photo)"
PHOTO=/usr/share/darknet/data/dog.jpg
[ -f "$PHOTO" ] || PHOTO="$DATA/content/darknet_dog.jpg"
python3 "$HERE/tfjs_loss_net.py" --model "$DATA/nanodet/nanodet.json" --photo "$PHOTO" || echo "warning: self-check failed (see above)"

echo "== training"
python3 "$HERE/train.py" --data "$DATA" --out "$WORK/style" --styles "$STYLES" --minutes "$MINUTES" "${TRAIN_EXTRA[@]}"

echo "== ONNX Runtime vs torch on the trained weights"
for ck in "$WORK"/style/*.pth; do
    python3 "$HERE/export.py" --checkpoint "$ck" --dynamic -o "$WORK/check.onnx" --check
done
rm -f "$WORK/check.onnx"

echo "== references"
IFS=, read -r -a names <<< "$STYLES"
models=()
for s in "${names[@]}"; do models+=("$WORK/style/$s.onnx"); done
python3 "$HERE/make_references.py" --data "$DATA" --models "${models[@]}" --out "$WORK/style" "${REF_EXTRA[@]}"

echo "== packing"
cp "$DATA/sources.txt" "$HERE/LICENSES.md" "$WORK/style/"
cp "$OUT/run.log" "$WORK/style/run.log"
for s in "${names[@]}"; do cp "$WORK/style/$s.onnx" "$OUT/"; done
(cd "$WORK/style" && tar czf "$OUT/style-results.tar.gz" --exclude='*.pth' --exclude='*.onnx' .)
ls -la "$OUT"
cat "$WORK/style/train.json"
echo "== $(date -u +%FT%TZ) done"
