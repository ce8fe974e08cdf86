#!/usr/bin/env bash
# One measuring round on the lent GPU, after the prefix bench/device/pack.sh prints: the device's
# capabilities, the convolution-family tests on the real driver, the large Conv/MatMul op benches
# and whole-model benches with tensor cores on and off. Logs go to $OUT/round.log.
# usage: bash bench/device/round.sh [--quick]
set -uo pipefail
models=${VKML_MODELS:-/opt/vkml/data/.dev-stage/models}
export VKML_MODELS=$models VKML_CACHE_DIR=/tmp/vkml-cache
log=${OUT:-/tmp}/round.log
: >"$log"
step() { echo "=== $*" | tee -a "$log"; local t0=$SECONDS; "$@" 2>&1 | tee -a "$log" | tail -n ${TAILN:-40}; echo "--- ${*:1:3}: $((SECONDS - t0)) s" | tee -a "$log"; }
step vkml_perf info
TAILN=6 step vkml_op_tests --gtest_filter="Conv*"
for coop in ${ROUND_COOP:-0 1}; do
  export VKML_DISABLE_COOPMAT=$coop
  echo "##### VKML_DISABLE_COOPMAT=$coop" | tee -a "$log"
  step vkml_perf bench ops --large --filter Conv --runs 30
  step vkml_perf bench ops --large --filter MatMul --runs 30
  for m in esrgan-slim/models/x2/model.json websr/weights/anime4k/cnn-2x-m-rl.json; do
    TAILN=8 step vkml_perf bench model "$models/$m" --size 960x540 --runs 30
  done
done
unset VKML_DISABLE_COOPMAT
TAILN=8 step vkml_session_tests --gtest_filter='ModelTest.Esrgan*'
