#!/usr/bin/env bash
# Packs vkml for the lent GPU machine (see ../../../shared/tools/device-pack): the stripped
# benchmark program (vkml_perf: no FFmpeg, so the bundle stays small) and GPU test binaries of
# build/bin and the model packages of $VKML_MODELS (default ~/.cache/vkml/models) into .dev/
# (git-ignored). The repository itself travels with every device call (assets/ included).
# usage (repository root): bash bench/device/pack.sh [BUILD_DIR]
# then call the device tool with carry [".dev"] and a command that starts with the printed prefix.
set -euo pipefail
build=${1:-build}
models=${VKML_MODELS:-$HOME/.cache/vkml/models}
root=$(git rev-parse --show-toplevel)
cd "$root"
stage=.dev-stage
rm -rf "$stage" && mkdir -p "$stage/bin" "$stage/models"
mkdir -p .git/info; grep -qxF "/$stage/" .git/info/exclude 2>/dev/null || echo "/$stage/" >>.git/info/exclude
for b in ${VKML_PACK_BINS:-vkml_perf vkml_op_tests vkml_session_tests vkml_gpu_tests}; do
  [[ -x $build/bin/$b ]] && strip -o "$stage/bin/$b" "$build/bin/$b"
done
# vkml's own shared libraries (the binaries find them through their build-tree RUNPATH, which the
# stripped copies lose, so ldd would not list them)
for l in "$build"/ml/libvkml.so.*.*.* "$build"/engine_plugin/libvkml_plugin.so.*.*.*; do
  [[ -f $l ]] && strip -o "$stage/bin/$(basename "${l%.*}")" "$l"
done
for m in ${VKML_PACK_MODELS:-esrgan-slim esrgan-medium websr human-models}; do
  [[ -d $models/$m ]] && cp -r "$models/$m" "$stage/models/"
done
# esrgan's other scales are not used by the benches or tests
find "$stage/models" -path '*models/x[348]*' -prune -exec rm -rf {} +
../shared/tools/device-pack "$stage"/bin/* "$stage/models" 2>&1
