#!/usr/bin/env bash
# `vkml upscale --benchmark` on the lent GPU: decode + upscale, nothing encoded, 1080p -> 4K with
# Anime4K S, M and L (2x, rl weights). It first writes a synthetic 1920x1080 H.264 clip of 300
# frames with the packed program (`vkml upscale --make-clip`: x264 preset fast, crf 18, no audio;
# no media travels), then runs each model once on 30 frames (pipelines and caches warm) and once on
# the whole clip, with libavcodec's automatic decoder threads (-j 0:2:0, the default), and Anime4K-M
# again with 1, 4 and nproc decoder threads. fps: frames over the run's wall time (the first frame's
# session setup included); decode and gpu: frames over each stage's busy time (what the stage
# would reach alone). Table on stdout and in
# $OUT/upscale.md, every program's output in $OUT/upscale.log.
# usage (after the prefix bench/device/pack_upscale.sh prints): bash bench/device/upscale.sh
#   env: SIZE (1920x1080), FRAMES (300), CLIP (an existing clip instead of the synthetic one)
set -uo pipefail
# The bundle's stubs (liblzma, libxml2, ...) are for vkml only: the other programs here load the
# system's libraries.
vkml_libs=${LD_LIBRARY_PATH:-}
unset LD_LIBRARY_PATH
vkml() { LD_LIBRARY_PATH=$vkml_libs command vkml "$@"; }
export VKML_MODELS=${VKML_MODELS:-/opt/vkml/data/.dev-upscale-stage/models}
export VKML_CACHE_DIR=${VKML_CACHE_DIR:-/tmp/vkml-cache}
out=${OUT:-/tmp}
log=$out/upscale.log
table=$out/upscale.md
: >"$log"
size=${SIZE:-1920x1080}
frames=${FRAMES:-300}
cores=$(nproc)
say() { echo "$*" | tee -a "$log"; }

info=$(vkml info 2>&1)
echo "$info" >>"$log"
say "host: $cores cores ($(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)); $(awk '/^\[0\]/ {sub(/^\[0\] /, ""); print; exit}' <<<"$info")"
clip=${CLIP:-/tmp/vkml-upscale-$size-$frames.mp4}
if [[ -z ${CLIP:-} && ! -f $clip ]]; then
  t0=$(date +%s.%N)
  if ! vkml upscale --make-clip "${clip%.mp4}.part.mp4" --size "$size" --frames "$frames" --fps 30 \
    --no-audio --preset fast --crf 18 >>"$log" 2>&1; then
    say "upscale.sh: could not write the clip (see $log)"
    exit 1
  fi
  mv "${clip%.mp4}.part.mp4" "$clip"
  say "clip: $clip, $size, $frames frames, $(($(stat -c %s "$clip") / 1024)) KiB, written in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s"
fi
[[ -f $clip ]] || { say "upscale.sh: no clip $clip"; exit 1; }

# run LABEL THREADS MODEL: one measured run; prints a table row
run() {
  local label=$1 threads=$2 model=$3 line
  echo "=== $label -j $threads:2:0 (warm-up: 30 frames, then the whole clip)" >>"$log"
  vkml upscale "$clip" --benchmark -m "$model" -j "$threads:2:0" --frames 30 -q >>"$log" 2>&1
  line=$(vkml upscale "$clip" --benchmark -m "$model" -j "$threads:2:0" -q 2>>"$log")
  echo "$line" >>"$log"
  # vkml upscale: 300 frames in 2.51 s (119.52 fps); decode 812.40 fps, gpu 121.03 fps
  awk -v label="$label" -v thr="$threads" -v cores="$cores" '
    { for (i = 1; i <= NF; ++i) {
        if ($(i + 1) == "frames" && $(i + 2) == "in") n = $i
        if ($(i + 1) == "s") s = $i
        if ($(i + 1) == "fps);") { t = $i; sub(/^\(/, "", t) }
        if ($i == "decode") d = $(i + 1)
        if ($i == "gpu") g = $(i + 1) } }
    END {
      if (n == "") { printf "| %s | %s | failed (see the log) | | | | |\n", label, thr; exit }
      printf "| %s | %s | %s | %s | %s | %s | %s |\n", label, (thr == 0 ? "auto (" cores " cores)" : thr), n, s, t, d, g }' <<<"$line"
}

{
  # shellcheck disable=SC2016
  printf '\n%s -> 2x, `vkml upscale --benchmark` (nothing encoded), GPU frames in flight 2\n\n' "$size"
  printf '| model | decoder threads | frames | seconds | fps | decode fps | gpu fps |\n'
  printf '| --- | --- | --- | --- | --- | --- | --- |\n'
  for n in s m l; do run "anime4k-$n" 0 "anime4k-$n"; done
  for t in 1 4 "$cores"; do run anime4k-m "$t" anime4k-m; done
} | tee "$table"
tee -a "$log" <"$table" >/dev/null
