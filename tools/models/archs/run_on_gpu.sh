#!/usr/bin/env bash
# Regenerates assets/models/archs on the lent GPU machine (which has torch, onnx and onnxruntime;
# everything runs on its CPU). usage (repository root): bash tools/models/archs/run_on_gpu.sh
# Writes archs.tar into $OUT: tar -xf archs.tar -C assets/models/archs
set -uo pipefail
out=${OUT:?OUT must name the folder whose files come back}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 tools/models/archs/make_archs.py --out "$work/archs" 2>&1 | tee "$out/make_archs.log"
rc=${PIPESTATUS[0]}
[ -d "$work/archs" ] && tar -C "$work/archs" -cf "$out/archs.tar" .
echo "make_archs exit status: $rc" | tee -a "$out/make_archs.log"
