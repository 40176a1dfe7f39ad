"""What the benchmark times: one `Case` per (variant, scope, mode, length), with its analytic FLOPs.

A case is a step function plus what to record about it; `synthformer.bench.measure` times the steps.
Mixer options (kernel size, Linformer's k, Factorized Random's k) are the defaults of `ModelConfig`,
the same values the layers and models measured here are built with, so the FLOP counts match them.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..mixers.registry import build_token_mixer, display_name, resolve_mixer
from ..model import ModelConfig, build_model
from ..training.optim import adamw_speed_options

DEFAULT_VARIANTS = "V,R,Fix,FR,D,R+V,D+V,dynamicconv,lightconv"
DEFAULT_MODEL_VARIANTS = "V,R,D,R+V,dynamicconv,lightconv"


def config_default(name: str):
    """The default of ModelConfig field `name` (what a model built without overrides uses)."""
    return next(f.default for f in dataclasses.fields(ModelConfig) if f.name == name)


@dataclass
class Case:
    """One thing to time: a step function and what to record about it."""

    variant: str
    scope: str  # layer | model
    mode: str  # train | infer | decode
    length: int
    batch: int
    tokens: int  # tokens per step for tokens/s
    flop: float | None
    step: object  # callable
    cache_bytes: int | None = None
    precision: str = "fp32"  # fp32 | bf16 (autocast over fp32 weights, as train --precision bf16)


def canonical_variant(name: str) -> str:
    """Baseline names stay as they are (lower case); synthesizer specs become the paper's notation."""
    return display_name(name)


def _baseline_flops(name: str, t: int, b: int, length: int, d: int, h: int, kernel: int, linformer_k: int) -> int:
    dh = d // h
    if name == "linformer":  # q, k, v, out projections; E, F along the length; (L x k) attention
        k = linformer_k
        return 2 * t * d * d * 4 + 2 * 2 * b * d * length * k + 2 * 2 * b * h * length * k * dh
    extra = 2 * t * d * h * kernel if name == "dynamicconv" else 0  # per-token kernel prediction
    return 2 * t * d * d * 2 + 2 * t * d * kernel + extra  # in/out projections + the convolution


def layer_flops(variant: str, b: int, length: int, d: int, h: int, n: int, k_fr: int | None = None,
                kernel: int | None = None, linformer_k: int | None = None) -> float:
    """Analytic forward FLOPs of one mixing layer (2 per multiply-add). Options left None take
    ModelConfig's defaults (factorized_k, kernel_size, linformer_k), which the mixers are built with."""
    k_fr = config_default("factorized_k") if k_fr is None else k_fr
    kernel = config_default("kernel_size") if kernel is None else kernel
    linformer_k = config_default("linformer_k") if linformer_k is None else linformer_k
    t, dh = b * length, d // h
    spec = resolve_mixer(variant)
    if spec.is_baseline:
        return float(_baseline_flops(spec.name, t, b, length, d, h, kernel, linformer_k))
    flop = 2 * t * d * d * 2  # value and output projections
    pv = 2 * b * h * length * length * dh  # weights @ values
    for m in spec.members:
        if m == "vanilla":
            flop += 2 * t * d * d * 2 + 2 * b * h * length * length * dh
        elif m == "dense":
            flop += 2 * t * d * d + 2 * b * h * length * length * dh
        elif m == "factorized_random":
            flop += 2 * h * length * length * k_fr  # batch-independent
        elif m == "factorized_dense":
            flop += 2 * t * d * d + 2 * t * h * dh * 2 * int(math.isqrt(n)) + b * h * length * length
    return float(flop + pv)


def _layer(variant: str, d: int, h: int, n: int, causal: bool):
    return build_token_mixer(variant, embed_dim=d, num_heads=h, max_seq_len=n, causal=causal)


PRECISIONS = ("fp32", "bf16")


def with_precision(case: Case, precision: str, device) -> Case:
    """`case` run under ``--precision``: bf16 = autocast to bfloat16 over fp32 weights (the training loop's)."""
    if precision == "fp32":
        return case
    inner, dev = case.step, torch.device(device).type

    def step():
        with torch.autocast(dev, dtype=torch.bfloat16):
            inner()
    return dataclasses.replace(case, step=step, precision=precision)


def _set_grads_none(module):
    for p in module.parameters():
        p.grad = None


def layer_case(variant, mode, length, tokens, d, h, causal, device, dtype, seed=0) -> Case:
    """One token-mixing layer: ``train`` = forward + backward, ``infer`` = forward under no_grad."""
    torch.manual_seed(seed)
    b = max(1, tokens // length)
    mod = _layer(variant, d, h, length, causal).to(device=device, dtype=dtype)
    x = torch.randn(b, length, d, device=device, dtype=dtype)
    flop = layer_flops(variant, b, length, d, h, length)
    if mode == "train":
        mod.train()
        xg = x.requires_grad_()

        def step():
            _set_grads_none(mod)
            xg.grad = None
            out, _ = mod(xg)
            out.backward(torch.ones_like(out))
        flop *= 3
    else:
        mod.eval()

        def step():
            with torch.no_grad():
                mod(x)
    return Case(variant, "layer", mode, length, b, b * length, flop, step)


def model_flops(variant: str, cfg: ModelConfig, b: int, length: int) -> float:
    """Forward FLOPs of a decoder LM built from `cfg`: mixers + feed-forward blocks + output projection."""
    d, h = cfg.embed_dim, cfg.num_heads
    mixer = layer_flops(variant, b, length, d, h, length, k_fr=cfg.factorized_k, kernel=cfg.kernel_size,
                        linformer_k=cfg.linformer_k)
    per_layer = mixer + 2 * b * length * d * cfg.ffn_dim * 2
    return cfg.num_layers * per_layer + 2 * b * length * d * cfg.vocab_size


def model_case(variant, mode, length, tokens, causal, device, dtype, preset="tiny", vocab=1000, seed=0,
               decode_batch=8) -> Case:
    """A whole decoder LM of `preset`: ``train`` (+ AdamW step), ``infer``, or greedy ``decode``."""
    torch.manual_seed(seed)
    cfg = ModelConfig.preset(preset, kind="lm", vocab_size=vocab, attention=variant, max_seq_len=length)
    model = build_model(cfg).to(device=device, dtype=dtype)
    b = max(1, tokens // length)
    ids = torch.randint(3, vocab, (b, length), device=device)
    flop = model_flops(variant, cfg, b, length)
    if mode == "train":
        return _model_train_case(variant, model, ids, length, b, flop)
    if mode == "infer":
        model.eval()

        def step():
            with torch.no_grad():
                model(ids)
        return Case(variant, "model", mode, length, b, b * length, flop, step)
    return _decode_case(variant, model, ids, length, decode_batch, vocab, device)


def _model_train_case(variant, model, ids, length, b, flop) -> Case:
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, **adamw_speed_options(model.parameters()))

    def step():
        opt.zero_grad(set_to_none=True)
        logits = model(ids[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
    return Case(variant, "model", "train", length, b, b * (length - 1), flop * 3, step)


def _decode_case(variant, model, ids, length, bd, vocab, device) -> Case:
    """Greedy decoding, one token per step through the incremental caches, from a 1-token prompt."""
    model.eval()
    caches = model.decoder.init_cache(bd)
    cache_bytes = sum(_nbytes(part) for c in caches for part in c.values())
    new = length - 1

    def step():
        with torch.no_grad():
            stepper = model.stepper(use_cache=True)
            seq = ids[:bd, :1] if ids.shape[0] >= bd else torch.randint(3, vocab, (bd, 1), device=device)
            n_new = 1
            for _ in range(new):
                nxt = stepper.step(seq, n_new).argmax(-1, keepdim=True)
                seq = torch.cat([seq, nxt], dim=1)
    return Case(variant, "model", "decode", length, bd, bd * new, None, step, cache_bytes)


def _nbytes(cache) -> int:
    if hasattr(cache, "nbytes") and callable(cache.nbytes):
        return int(cache.nbytes())
    return sum(t.nbytes for t in vars(cache).values() if isinstance(t, torch.Tensor))
