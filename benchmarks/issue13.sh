#!/usr/bin/env bash
# Issue 13 in one run of `synthformer bench`: every target's rows, then the targets table, printed beside
# the CPU model, its bf16 units and its measured fp32 / bf16 matmul GFLOP/s. Run from the repository root.
#   layer: V, R, Fix, R+V at L = 256, 1024, 4096 (d=256, H=4, 8192 tokens), train, fp32;
#          V and R under bf16 autocast at 256 and 1024
#   model: the small preset (d=256, 4 layers), 8192 tokens, train (fp32 at 256 and 1024, bf16 at 256
#          where the CPU has no bf16 units: the emulated bf16 step is ~100x slower) and greedy decode.
# THREADS=1 (default here): on a shared 2-core machine, 2-thread timings of many-op paths are dominated by
# OpenMP barrier waits (~8 ms per parallel op measured when another process holds a core).
set -euo pipefail
OUT=${OUT:-benchmarks/results}
THREADS=${THREADS:-1}
BF16_MODEL_LENGTHS=${BF16_MODEL_LENGTHS:-256}
mkdir -p "$OUT"
python -m synthformer.bench --threads "$THREADS" --no-memory --repeats "${REPEATS:-3}" --decode-repeats 2 \
  --scope layer,model --modes train,decode \
  --lengths 256,1024,4096 --variants V,R,Fix,R+V \
  --precision fp32,bf16 --bf16-lengths 256,1024 --bf16-variants V,R --bf16-model-lengths "$BF16_MODEL_LENGTHS" \
  --preset small --model-lengths 256,1024 --model-tokens 8192 --model-variants V,R,dynamicconv \
  --out "$OUT/issue13-cpu-${THREADS}thread.jsonl" "$@"
