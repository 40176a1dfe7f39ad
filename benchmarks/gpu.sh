#!/usr/bin/env bash
# Issue 13 on a GPU (target 6): every variant runs on CUDA, the FlexAttention path of learned biases beside
# a dot product (R+V, R+D, FD+V in training) matches the literal equations in value and gradient, and every
# layer ratio is measured (fp32 and bf16 autocast), plus the small-LM step and decoding.
# Run from the repository root on a machine with a CUDA GPU; commit the JSONL and the table with the GPU's name.
# NOT YET RUN ON A GPU (no GPU was available to the session that wrote it).
set -euo pipefail
OUT=${OUT:-benchmarks/results}
mkdir -p "$OUT"
python - <<'PY'
import torch
from synthformer import SyntheticAttention
from synthformer.attention import paths
from synthformer.attention.registry import SYNTHESIZERS
assert torch.cuda.is_available(), "no CUDA device"
print("GPU:", torch.cuda.get_device_name())
torch.manual_seed(0)
# 1. every variant and the paper's mixtures train one step on the GPU, fp32 and bf16 autocast
for spec in [*SYNTHESIZERS, "R+V", "D+V", "R+D", "FR+V", "FD+V", "R+D+V"]:
    for bf16 in (False, True):
        attn = SyntheticAttention(256, 4, 512, spec, causal=True).cuda().train()
        x = torch.randn(4, 512, 256, device="cuda", requires_grad=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
            out, _ = attn(x)
        out.float().square().mean().backward()
        assert all(p.grad is None or torch.isfinite(p.grad).all() for p in attn.parameters()), spec
print("every variant trains on CUDA (fp32, bf16)")
# 2. the flex path against the literal equations: values and gradients (R's summed over the batch)
for spec in ["R+V", "R+D", "FD+V"]:
    for causal in (False, True):
        attn = SyntheticAttention(128, 4, 256, spec, causal=causal).cuda().train()
        with torch.no_grad():
            for p in attn.parameters():
                p.add_(torch.randn_like(p) * 0.3)
        x = torch.randn(3, 256, 128, device="cuda")
        taken = []
        choose = paths.choose_path
        paths.choose_path = lambda r: taken.append(choose(r)) or taken[-1]
        got, _ = attn(x)
        paths.choose_path = choose
        assert taken == [paths.Path.FLEX], taken
        g = torch.randn_like(got)
        grads = torch.autograd.grad(got, list(attn.parameters()), g)
        want, _ = attn(x, need_weights=True)
        wgrads = torch.autograd.grad(want, list(attn.parameters()), g)
        err = max((a - b).abs().max().item() / (b.abs().max().item() + 1e-6) for a, b in zip(grads, wgrads))
        print(f"flex {spec} causal={causal}: out err {(got - want).abs().max().item():.2e}, grad rel err {err:.2e}")
        assert torch.allclose(got, want, atol=1e-4, rtol=1e-3) and err < 1e-3
PY
# 3. every layer ratio (train and infer, fp32 and bf16), the small-LM step and decoding, with the targets table
python -m synthformer.bench --device cuda --scope layer,model --modes train,infer,decode \
  --lengths 256,1024,4096 --variants V,R,Fix,FR,D,FD,R+V,D+V,dynamicconv,lightconv --precision fp32,bf16 \
  --preset small --model-lengths 256,1024 --model-tokens 8192 --model-variants V,R,D,R+V,dynamicconv \
  --repeats 10 --warmup 3 --out "$OUT/issue13-cuda.jsonl" "$@"
