#!/usr/bin/env bash
# Command lines behind benchmarks/RESULTS.md. Run from the repository root; each appends JSONL rows.
set -euo pipefail
OUT=${OUT:-benchmarks/results}
mkdir -p "$OUT"

# 1. The default run (issue 5 shapes: d=256, H=4, 8192 tokens per batch, L = 256, 1024, 4096,
#    layer train + infer, tiny LM train / infer / decode at L=256), torch's default threads.
python -m synthformer.bench --out "$OUT/cpu-2threads.jsonl"

# 2. The layer targets again with one thread: on a shared 2-core machine, 2-thread timings of
#    many-op paths are dominated by OpenMP barrier waits while other processes hold a core.
python -m synthformer.bench --scope layer --modes train --threads 1 --out "$OUT/cpu-1thread-layer.jsonl"

# 3. The targets table and the figure, from the JSONL alone.
python -m synthformer.bench --report "$OUT/cpu-2threads.jsonl"
python -m synthformer.plots bench "$OUT/cpu-2threads.jsonl" --out "$OUT/cpu-2threads.png"

# On a GPU (bf16 is the usual choice there):
# python -m synthformer.bench --device cuda --dtype bfloat16 --out "$OUT/cuda.jsonl"

# 4. Issue 13 in one run (fp32 + bf16 autocast, layer + small LM + decode, targets table); see RESULTS.md.
#    Run B of RESULTS.md: the fp32 targets only.
bash benchmarks/issue13.sh --out "$OUT/issue13-cpu-1thread-runA.jsonl"
bash benchmarks/issue13.sh --precision fp32 --out "$OUT/issue13-cpu-1thread.jsonl"
# On a GPU: bash benchmarks/gpu.sh

# 5. Session 3 (run C / C' of RESULTS.md): the layer targets after the R+V log-sum-exp backward, non-causal and causal.
python -m synthformer.bench --threads 1 --no-memory --repeats 3 --scope layer --modes train \
  --lengths 256,1024,4096 --variants V,R,Fix,R+V --precision fp32 --out "$OUT/issue13-s3-layer.jsonl"
python -m synthformer.bench --threads 1 --no-memory --repeats 3 --scope layer --modes train --causal \
  --lengths 256,1024,4096 --variants V,R,R+V --precision fp32 --out "$OUT/issue13-s3-layer-causal.jsonl"

# 6. Session 10: the whole-step rows of 13.4 after the causal strided-softmax fix.
python -m synthformer.bench --scope model --modes train --model-lengths 256,1024 --model-variants V,R,dynamicconv \
  --preset small --model-tokens 8192 --threads 1 --repeats 3 --warmup 1 --out "$OUT/issue13-s10-causal-fix-model.jsonl"
python -m synthformer.bench --threads 1 --no-memory --repeats 3 --scope layer --modes train --causal \
  --lengths 256,1024,4096 --variants V,R,Fix,R+V --precision fp32 --out "$OUT/issue13-s10-layer-causal.jsonl"

# Issue 51: the +V mixtures vs V (layer train step and peak memory at 256 / 1024 / 4096, 4096 tokens, one thread;
# the small-preset LM step R+V vs V), printed with the CPU model and its measured fp32 matmul GFLOP/s.
PYTHONPATH=. python benchmarks/mixtures.py --repeats 7 --jsonl "$OUT/issue51-cpu-1thread.jsonl"
