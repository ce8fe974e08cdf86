#!/usr/bin/env bash
# FusedConvStack on the lent GPU: Anime4K S/M/L (and M at 1080p) as one dispatch against layer
# by layer (--no-fused-stack), then the tuning alternatives (VKML_STACK_TILE, VKML_STACK_THREADS,
# VKML_STACK_ROWS) for M and L, then the fused tests on the real driver. A row whose steps are not
# 1 ran unfused (the tile asked for does not fit, or the pass declined). Logs: $OUT/stack.log.
# usage (after the prefix bench/device/pack.sh prints): bash bench/device/stack.sh [--quick]
set -uo pipefail
models=${VKML_MODELS:-/opt/vkml/data/.dev-stage/models}
export VKML_MODELS=$models VKML_CACHE_DIR=${VKML_CACHE_DIR:-/tmp/vkml-cache}
a=$models/websr/weights/anime4k
log=${OUT:-/tmp}/stack.log
: >"$log"
runs=${RUNS:-50}
# time LABEL SIZE MODEL [ENV=VALUE...] [-- EXTRA ARGS]
time_one() {
  local label=$1 size=$2 model=$3; shift 3
  local envs=() extra=()
  while [[ $# -gt 0 && $1 != -- ]]; do envs+=("$1"); shift; done
  [[ ${1:-} == -- ]] && shift && extra=("$@")
  local out
  out=$(env "${envs[@]}" vkml_perf bench model "$model" --size "$size" --runs "$runs" "${extra[@]}" 2>&1)
  echo "=== $label ${envs[*]} ${extra[*]}" >>"$log"
  echo "$out" >>"$log"
  printf '| %s | %s | %s | %s | %s |\n' "$label" "$size" "${envs[*]:-default} ${extra[*]}" \
    "$(awk '/^steps:/ {print $2}' <<<"$out")" "$(awk '/^GPU time:/ {print $3}' <<<"$out")"
}
printf '| network | size | settings | steps | GPU ms (median) |\n| --- | --- | --- | --- | --- |\n'
for n in s m l; do
  time_one "anime4k-$n" 960x540 "$a/cnn-2x-$n-an.json"
  time_one "anime4k-$n" 960x540 "$a/cnn-2x-$n-an.json" -- --no-fused-stack
done
time_one anime4k-m 1920x1080 "$a/cnn-2x-m-an.json"
time_one anime4k-m 1920x1080 "$a/cnn-2x-m-an.json" -- --no-fused-stack
[[ ${1:-} == --quick ]] && exit 0
for n in m l; do
  for tile in 32x32 32x24 24x24 32x16 24x16 16x16; do
    for thr in 256 512; do
      time_one "anime4k-$n" 960x540 "$a/cnn-2x-$n-an.json" VKML_STACK_TILE=$tile VKML_STACK_THREADS=$thr
    done
    time_one "anime4k-$n" 960x540 "$a/cnn-2x-$n-an.json" VKML_STACK_TILE=$tile VKML_STACK_ROWS=2
  done
done
vkml_op_tests --gtest_filter='FusedConvStack*' 2>&1 | tail -3
vkml_session_tests --gtest_filter='FusedStack*' 2>&1 | tail -3
