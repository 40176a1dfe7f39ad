#!/usr/bin/env bash
# Issue 13 on a GPU (target 6), in about 8 minutes: (1) benchmarks/gpu_checks.py -- the FlexAttention path of
# learned full logits beside a dot product equals the literal equations in value and gradient, and every
# variant, mixture and baseline trains a step in fp32 and bf16 autocast, checked against the literal path;
# (2) a small R+V language model trains under bf16 on the GPU, beyond one causal block, and generates;
# (3) benchmarks/gpu_routes.py -- R, Fix and FR train steps through today's path (shared_softmax on CUDA since
# session 12) and the CPU's paths forced; R+V, FD+V and FD through today's path (literal up to 2^26 logits) and
# flex / blocked / literal forced; every route checked to agree; (4) every layer ratio (fp32 and bf16), the small-LM step and decoding, with
# the targets table. Run from the repository root (PYTHONPATH=. or an install); commit $OUT's files and the
# table with the GPU's name. Each part has a time limit: a part cut short keeps what it wrote, and the script
# still ends in time. DEVICE=cpu runs the same parts on the CPU (smaller) to try the script before a GPU is lent.
set -uo pipefail
OUT=${OUT:-benchmarks/results}
DEVICE=${DEVICE:-cuda}
PY=${PY:-python3}  # the GPU images name their torch interpreter python3
BENCH_S=${BENCH_S:-270}  # the bench's share of the ~8 minutes; rows of finished groups are kept if it is cut
PARTS=${PARTS:-1234}  # which of the four parts to run (a rerun can skip what passed)
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
status=0
work=$(mktemp -d)
stamp() { echo "== $(date +%T) $*"; }

stamp "machine"
$PY -c "import torch, platform; print('torch', torch.__version__, 'python', platform.python_version(),
'cuda', torch.version.cuda, torch.cuda.get_device_name() if torch.cuda.is_available() else 'no GPU')"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader

stamp "1. checks"
[[ $PARTS == *1* ]] && { timeout 150 $PY benchmarks/gpu_checks.py --device "$DEVICE" || { status=1; echo "checks FAILED or cut"; }; }

stamp "2. a small R+V LM, bf16, 256 tokens (two causal row blocks), trains and generates"
[[ $PARTS == *2* ]] && {
cat README.md CHANGELOG.md docs/*.md reproductions/*.md > "$work/text.txt"
if timeout 90 $PY -m synthformer train --task lm --data "$work/text.txt" --attention R+V --preset tiny \
    --max_seq_len 256 --seq_len 256 --batch_size 4 --steps 60 --warmup_steps 10 --eval_every 0 --log_every 20 --vocab_size 1000 \
    --device "$DEVICE" --precision "$([ "$DEVICE" = cpu ] && echo fp32 || echo bf16)" --out "$work/run" \
  && timeout 30 $PY -m synthformer generate --run "$work/run" --device "$DEVICE" --max-new-tokens 20 "The layer"
then echo "train + generate ok"; else status=1; echo "train/generate FAILED or cut"; fi; }

stamp "3. routes of shared logits"
[[ $PARTS == *3* ]] && { timeout 150 $PY benchmarks/gpu_routes.py --device "$DEVICE" --mixtures R+V,FD+V,FD \
  $([ "$DEVICE" = cpu ] && echo --repeats 1 --tokens 1024 || echo --repeats 10) \
  | tee "$OUT/routes-$DEVICE.md" || { status=1; echo "routes FAILED or cut"; }; }

stamp "4. bench"
if [[ $PARTS == *4* ]]; then
jsonl="$OUT/issue13-$DEVICE.jsonl"
if [ "$DEVICE" = cpu ]; then  # a try of the script: bf16 is emulated on most CPUs
  sizes=(--precision fp32 --lengths 256 --model-lengths 256 --model-tokens 2048 --repeats 2 --warmup 1)
else sizes=(--precision fp32,bf16 --lengths 256,1024,4096 --model-lengths 256,1024 --model-tokens 8192 --repeats 10
            --decode-repeats 3 --warmup 3); fi
timeout "$BENCH_S" $PY -m synthformer.bench --device "$DEVICE" --scope layer,model --modes train,infer,decode \
  --variants V,R,Fix,FR,D,FD,R+V,D+V,dynamicconv,lightconv --preset small \
  --model-variants V,R,D,R+V,dynamicconv "${sizes[@]}" --out "$jsonl" "$@" || { status=1; echo "bench FAILED or cut"; }
stamp "targets table"
$PY -m synthformer.bench --report "$jsonl" | tee "$OUT/issue13-$DEVICE.md" || status=1
fi
rm -rf "$work"
stamp "done, status $status"
exit $status
