#!/usr/bin/env bash
# Regenerates assets/models/yolo on the lent GPU machine in one device command (a minute or two;
# everything runs on the CPU there: ONNX Runtime's CPU provider is the reference).
#
# usage (from the repository root): bash tools/models/yolo/run_on_gpu.sh [IMAGES_DIR]
#   IMAGES_DIR: folder with dog.jpg horses.jpg person.jpg kite.jpg (default: build-yolo-images,
#   a copy of /usr/share/darknet/data/*.jpg carried from a machine that has Debian's darknet).
# Writes into $OUT (4 files, each under 16 MB; one archive of everything would be ~24 MB):
#   yolov5n.onnx, yolov8n.onnx   -> assets/models/yolo/
#   yolo_ref.tar                 -> tar -xf yolo_ref.tar -C assets/models/yolo  (ref/, LICENSE.md)
#   make_yolo.log                   the full log (parameter counts, ops, torch-vs-ORT differences)
set -uo pipefail

images=${1:-build-yolo-images}
out=${OUT:?OUT must name the folder whose files come back}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 tools/models/yolo/make_yolo.py --out "$work/yolo" --images "$images" \
    --check-opsets 13,17 --require-ort 2>&1 | tee "$out/make_yolo.log"
rc=${PIPESTATUS[0]}

for f in yolov5n.onnx yolov8n.onnx; do
    [ -f "$work/yolo/$f" ] && cp "$work/yolo/$f" "$out/"
done
if [ -d "$work/yolo/ref" ]; then
    tar -C "$work/yolo" -cf "$out/yolo_ref.tar" ref LICENSE.md
fi
ls -l "$out" | tee -a "$out/make_yolo.log"
echo "make_yolo exit status: $rc" | tee -a "$out/make_yolo.log"
exit "$rc"
