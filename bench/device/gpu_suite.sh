#!/usr/bin/env bash
# The GPU test suites on the real driver (issue 13, part 4): every packed GoogleTest binary, with
# the tensor cores on (the default API: NV where offered), on through VK_KHR_cooperative_matrix
# (VKML_COOPMAT=khr: the shaders' KHR twins; a device without KHR runs with them off and says so)
# and off (VKML_DISABLE_COOPMAT=1), validation layer off (the lent machine has none). Run after the prefix bench/device/pack.sh prints; logs go to $OUT/suite-*.log and a summary
# table to stdout.  usage: bash bench/device/gpu_suite.sh [BINARY...]
set -uo pipefail
export VKML_MODELS=${VKML_MODELS:-/opt/vkml/data/.dev-stage/models} VKML_CACHE_DIR=${VKML_CACHE_DIR:-/tmp/vkml-cache}
bins=("$@")
[[ ${#bins[@]} -gt 0 ]] || bins=(vkml_gpu_tests vkml_op_tests vkml_session_tests)
out=${OUT:-/tmp}
printf '| suite | tensor cores | passed | failed | skipped | seconds |\n| --- | --- | --- | --- | --- | --- |\n' >"$out/suite.md"
for coop in on khr off; do
  for b in "${bins[@]}"; do
    log="$out/suite-$b-$coop.log"
    t0=$SECONDS
    case $coop in
      off) VKML_DISABLE_COOPMAT=1 "$b" >"$log" 2>&1 ;;
      khr) VKML_COOPMAT=khr "$b" >"$log" 2>&1 ;;
      *) "$b" >"$log" 2>&1 ;;
    esac
    rc=$?
    passed=$(grep -c '^\[       OK \]' "$log")
    failed=$(grep -c '^\[  FAILED  \] [A-Za-z].*(' "$log")
    skipped=$(grep -c '^\[  SKIPPED \] [A-Za-z].*(' "$log")
    printf '| %s | %s | %d | %d | %d | %d |\n' "$b" "$coop" "$passed" "$failed" "$skipped" $((SECONDS - t0)) >>"$out/suite.md"
    [[ $rc -eq 0 ]] || grep '^\[  FAILED  \] [A-Za-z].*(' "$log" | head -20
  done
done
cat "$out/suite.md"
