#!/usr/bin/env bash
# The samples' in-frame timings on the lent GPU: super-resolution (render at half size, upscale 2x,
# composite), detection on the rendered scene (NanoDet 416x416, YOLOv8n 640x640) and style transfer,
# each headless for FRAMES frames (no PNG written) at 1920x1080 output, the ML pass on the graphics
# queue and again with --async-compute. Every number comes from the sample's own timing.json (GPU
# timestamps per pass, medians over the frames after the warm-up); the table goes to stdout and
# $OUT/samples.md, the programs' output to $OUT/samples.log, the timing files to $OUT/samples/.
# usage (from the repository root, after the prefix VKML_PACK_SAMPLES="detect super_resolution style_transfer"
#   VKML_PACK_MODELS="esrgan-slim esrgan-medium human-models" bash bench/device/pack_upscale.sh
#   prints): bash bench/device/samples.sh
#   env: FRAMES (120), SIZE (1920x1080), SR_MODELS (anime4k-s anime4k-m anime4k-l esrgan-slim
#   esrgan-medium), SR_4K=1 also upscales 1920x1080 -> 3840x2160
set -uo pipefail
# The bundle's stubs are for the packed programs only.
libs=${LD_LIBRARY_PATH:-}
unset LD_LIBRARY_PATH
stage=${VKML_STAGE:-/opt/vkml/data/.dev-upscale-stage}
export VKML_MODELS=${VKML_MODELS:-$stage/models}
# Run from the repository root: the style and YOLO models are the committed ones.
export VKML_STYLE_DIR=${VKML_STYLE_DIR:-$PWD/assets/models/style}
yolo=${YOLO:-$PWD/assets/models/yolo/yolov8n.onnx}
export VKML_CACHE_DIR=${VKML_CACHE_DIR:-/tmp/vkml-cache}
out=${OUT:-/tmp}
log=$out/samples.log
table=$out/samples.md
mkdir -p "$out/samples"
: >"$log"
frames=${FRAMES:-120}
size=${SIZE:-1920x1080}
sr_models=${SR_MODELS:-anime4k-s anime4k-m anime4k-l esrgan-slim esrgan-medium}

# run NAME PROGRAM ARGS...: one headless run; its timing.json kept as $out/samples/NAME.json.
run() {
    local name=$1 prog=$2
    shift 2
    local dir=/tmp/vkml-samples/$name
    rm -rf "$dir" && mkdir -p "$dir"
    echo "== $name: $prog $*" >>"$log"
    if LD_LIBRARY_PATH=$libs "$prog" "$@" --headless --frames "$frames" --write none --out "$dir" >>"$log" 2>&1; then
        cp "$dir/timing.json" "$out/samples/$name.json"
    else
        echo "   $name failed (see $log)" | tee -a "$log"
    fi
}

for m in $sr_models; do
    run "sr-$m-$size" super_resolution --model "$m" --size "$size"
    run "sr-$m-$size-async" super_resolution --model "$m" --size "$size" --async-compute
    if [[ -n ${SR_4K:-} ]]; then
        run "sr-$m-3840x2160" super_resolution --model "$m" --size 3840x2160
        run "sr-$m-3840x2160-async" super_resolution --model "$m" --size 3840x2160 --async-compute
    fi
done
for d in nanodet yolov8n; do
    model=$d
    [[ $d == yolov8n ]] && model=$yolo
    run "detect-$d" detect --scene --model "$model" --size "$size" --stage-times
    run "detect-$d-async" detect --scene --model "$model" --size "$size" --async-compute --stage-times
done
run "style" style_transfer --size "$size"
run "style-async" style_transfer --size "$size" --async-compute

# One row per run: the GPU frame, then every pass's median (ms) and queue.
python3 - "$out/samples" "$frames" "$(LD_LIBRARY_PATH=$libs vkml info 2>/dev/null | awk '/^\[0\]/ {sub(/^\[0\] /, ""); print; exit}')" <<'EOF' | tee "$table"
import json, os, sys
d, frames, device = sys.argv[1], sys.argv[2], sys.argv[3]
print(f'Samples in the frame, {device}; {frames} frames each, medians after the warm-up (timing.json)\n')
print('| run | size | queue of the ML pass | GPU frame ms | passes (median ms) |')
print('| --- | --- | --- | --- | --- |')
for f in sorted(os.listdir(d)):
    t = json.load(open(os.path.join(d, f)))
    passes = ', '.join(f"{k} {v['median_ms']:.3f}" + (' (compute)' if v['queue'] == 'compute' else '')
                       for k, v in t['passes'].items())
    q = 'async compute' if t.get('async_compute_used') else 'graphics'
    print(f"| {f[:-5]} | {t['width']}x{t['height']} | {q} | {t['gpu_frame_ms_median']:.3f} | {passes} |")
EOF
