#!/usr/bin/env bash
# Packs `vkml upscale --benchmark` (decode + upscale, nothing encoded) for the lent GPU machine (see
# ../../../shared/tools/device-pack): about 11 MiB of bundle where the whole FFmpeg closure would be
# 52 MiB. It carries the stripped `vkml` program, libvkml, the FFmpeg libraries decoding needs
# (libavformat, libavcodec, libavutil, libswresample), libx264 (`vkml upscale --make-clip`, which
# writes the test clip on the device, encodes with it), the Anime4K S/M/L (rl) weights, and for
# every other library that libavcodec, libavformat and libavutil name in DT_NEEDED (x265, codec2,
# rsvg, SVT-AV1, aom, jxl, gnutls, ... 49 of them, 81 MiB, with the 31 MiB of ICU data behind
# them not carried at all) a stub built here by bench/device/stub_libs.py: same soname, the symbols
# and symbol versions the kept libraries import, functions that abort naming themselves.
# libavcodec's first codec lookup asks the aom, VP9 and x265 encoders what they support, and
# libavformat's probe asks gme and openmpt whether they know the file: those stubs answer "nothing"
# (VKML_PACK_ZERO, VKML_PACK_EMPTY), so an x265 encode crashes instead of aborting with a message.
# Libraries a Vulkan driver may load too (X11, xcb, drm) stay real, as the driver would get the stub.
# Before packing it checks that the staged program finds every library inside the stage (bar the C
# library's family, as device-pack) and that it writes and upscales a small clip on the local GPU
# (lavapipe here) with these stubs (VKML_PACK_NO_CHECK=1 skips that).
# VKML_PACK_SAMPLES="detect super_resolution style_transfer" adds those programs (stripped, GLFW
# kept) to the same stage and stubs, for bench/device/samples.sh (the samples' headless in-frame
# timings; the style and YOLO models come from the repository's assets/ on the device). In scene
# mode the samples never call FFmpeg: VKML_PACK_KEEP without the av* and x264 libraries (and
# VKML_PACK_NO_CHECK=1, the check being an upscale) stubs them too, 6 MiB less.
# usage (repository root): bash bench/device/pack_upscale.sh [BUILD_DIR]   (needs BUILD_DIR/bin/vkml:
#   cmake --build build --target vkml_tool; and BUILD_DIR/bin/SAMPLE for each of VKML_PACK_SAMPLES)
# then call the device tool with carry [".dev"] and a command that starts with the printed prefix,
# e.g. <prefix> bash bench/device/upscale.sh. After the prefix, LD_LIBRARY_PATH puts the stubs
# before the system's libraries for every program: xz (liblzma) fails; upscale.sh scopes it to vkml.
set -euo pipefail
build=${1:-build}
models=${VKML_MODELS:-$HOME/.cache/vkml/models}
root=$(git rev-parse --show-toplevel)
cd "$root"
[[ -x $build/bin/vkml ]] || { echo "pack_upscale: no $build/bin/vkml (cmake --build $build --target vkml_tool)" >&2; exit 1; }
stage=.dev-upscale-stage
rm -rf "$stage" && mkdir -p "$stage/bin" "$stage/models/websr/weights/anime4k"
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"; grep -qxF "/$stage/" "$exclude" 2>/dev/null || echo "/$stage/" >>"$exclude"
strip -o "$stage/bin/vkml" "$build/bin/vkml"
programs=("$stage/bin/vkml")
for b in ${VKML_PACK_SAMPLES:-}; do
  [[ -x $build/bin/$b ]] || { echo "pack_upscale: no $build/bin/$b (cmake --build $build --target the sample)" >&2; exit 1; }
  strip -o "$stage/bin/$b" "$build/bin/$b"
  programs+=("$stage/bin/$b")
done
keep='^lib(vkml|vkml_plugin|stb|avformat|avcodec|avutil|swresample|x264|protobuf|onnx_proto|z|stdc\+\+|gcc_s|vulkan|glfw'
keep+='|drm|X11|X11-xcb|xcb.*|Xau|Xdmcp|Xext|bsd|md|expat|zstd|wayland-.*)\.so\.'
# libavcodec's init_static_data of libaom, libvpx (VP9) and libx265 (run on the first codec lookup)
# and libavformat's gme and openmpt probes (run on every input)
zero=${VKML_PACK_ZERO:-aom_codec_version,aom_codec_av1_cx,aom_codec_get_caps,vpx_codec_vp9_cx,vpx_codec_get_caps,x265_api_get_199,openmpt_probe_file_header_without_filesize}
empty=${VKML_PACK_EMPTY:-gme_identify_header}
LD_LIBRARY_PATH=$(realpath $build/ml):$(realpath $build/engine_plugin)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} python3 bench/device/stub_libs.py --out "$stage/lib" --keep "${VKML_PACK_KEEP:-$keep}" --zero "$zero" \
  --empty-string "$empty" "${programs[@]}"
for n in s m l; do
  cp "$models/websr/weights/anime4k/cnn-2x-$n-rl.json" "$stage/models/websr/weights/anime4k/"
done
# VKML_PACK_MODELS="esrgan-slim esrgan-medium websr human-models": whole model packages besides
# (so one bundle also runs bench/run_peers.py, whose benches `vkml` carries), x2 only for esrgan
for m in ${VKML_PACK_MODELS:-}; do
  [[ -d $models/$m ]] && cp -r "$models/$m" "$stage/models/"
done
find "$stage/models" -path '*models/x[348]*' -prune -exec rm -rf {} +

# Every library inside the stage, except the C library's family (the target has it, device-pack
# does not carry it); the loader satisfied with every symbol bound at once (--help loads no driver:
# a driver's own libraries may need more of a stubbed one, lavapipe's LLVM of libxml2, which they
# would bind lazily; on the lent machine only NVIDIA's driver loads, and it needs none of them).
lib=$root/$stage/lib
for prog in "${programs[@]}"; do
  outside=$(LD_LIBRARY_PATH=$lib ldd "$prog" | awk '$2 == "=>" {print $1, $3}' |
    grep -v " $lib/" | grep -Ev '^(libc|libm|libdl|libpthread|librt|libresolv|ld-linux-x86-64)\.so' || true)
  [[ -z $outside ]] || { echo "pack_upscale: $prog resolves outside the stage:"$'\n'"$outside" >&2; exit 1; }
  LD_LIBRARY_PATH=$lib LD_BIND_NOW=1 "$prog" --help >/dev/null
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
if [[ -z ${VKML_PACK_NO_CHECK:-} ]]; then
  run() { LD_LIBRARY_PATH=$lib VKML_MODELS=$root/$stage/models "$root/$stage/bin/vkml" "$@"; }
  run upscale --make-clip "$tmp/check.mp4" --size 128x72 --frames 6 --preset fast >/dev/null
  check=$(run upscale "$tmp/check.mp4" --benchmark -m anime4k-s -q)
  echo "pack_upscale: check on the local GPU: $check" >&2
fi
# device-pack copies what ldd lists, so the program alone brings the stage's libraries (a stub
# itself needs nothing past libc, which device-pack's ldd scan would take for an error). Only its
# ldd sees the stage: its xz, cp and apt-get would get the stubs too (liblzma is one).
mkdir "$tmp/ldd"
printf '#!/bin/sh\nLD_LIBRARY_PATH=%q exec %q "$@"\n' "$lib" "$(command -v ldd)" >"$tmp/ldd/ldd"
chmod +x "$tmp/ldd/ldd"
PATH=$tmp/ldd:$PATH "${VKML_DEVICE_PACK:-../shared/tools/device-pack}" "${programs[@]}" "$stage/models"
