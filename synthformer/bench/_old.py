"""``synthformer bench``: time synthetic attention against vanilla and the baselines; write JSONL rows.

Two scopes, each over sequence lengths at a fixed number of tokens per batch (batch = tokens // length):

* ``layer``: one token-mixing layer (d=256, H=4 by default). ``train`` = forward + backward (gradients
  reset to None each step, as ``optimizer.zero_grad()``); ``infer`` = forward under ``no_grad`` in eval.
* ``model``: a whole decoder LM of the ``tiny`` preset. ``train`` = forward + cross-entropy + backward
  + AdamW step; ``infer`` = forward; ``decode`` = greedy incremental decoding with the KV cache, one
  token per step, reported as generated tokens/s with the cache size.

Timing: warm-up steps, then ``--repeats`` timed steps; variants are interleaved round by round so load
from other processes hits all of them alike, and the median is reported. Ratios are against vanilla
measured in the same run. Peak memory (``peak_bytes``): on CUDA ``torch.cuda.max_memory_allocated``
minus the memory in use before the step; on CPU the growth of the process's peak resident set during
one extra step (Linux ``/proc/self/clear_refs`` + ``VmHWM``), measured after all timings with glibc's
mmap threshold lowered to 64 KiB so that every tensor above it maps fresh pages and freed ones leave
the resident set (``peak_method`` names what was used; ``null`` where unavailable).
FLOPs (``gflops_per_s``): analytic multiply-adds x 2 of the forward pass (full L x L even when causal),
x 3 for a training step; the count is in ``flop``.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import math
import platform
import statistics
import sys
import time
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F

from .attention import SyntheticAttention, parse_synthesizers, short_spec
from .mixers import MIXERS, build_mixer

DEFAULT_VARIANTS = "V,R,Fix,FR,D,R+V,D+V,dynamicconv,lightconv"
DEFAULT_MODEL_VARIANTS = "V,R,D,R+V,dynamicconv,lightconv"


@dataclass
class Row:
    """One JSONL row: one (variant, scope, mode, length) measurement."""

    variant: str  # spec in the paper's notation ("R+V") or a baseline name ("dynamicconv")
    scope: str  # layer | model
    mode: str  # train | infer | decode
    length: int  # sequence length L
    batch: int  # batch size B (tokens per batch = B * L, except decode: B sequences)
    dtype: str  # e.g. float32
    device: str  # device name, e.g. "cpu (AMD EPYC)" or "NVIDIA H100"
    threads: int  # torch intra-op threads
    torch: str  # torch version
    embed_dim: int  # model width d
    num_heads: int  # H
    causal: bool  # causal masking
    median_ms: float  # median wall time of one step
    tokens_per_s: float  # tokens processed (decode: generated) per second
    flop: float | None  # analytic FLOPs of one step (None for decode)
    gflops_per_s: float | None  # flop / median time
    peak_bytes: int | None  # see module docstring
    peak_method: str | None  # how peak_bytes was measured
    cache_bytes: int | None = None  # decode: incremental-decoding cache size for the batch
    repeats: int = 0  # timed steps behind the median
    times_ms: list | None = None  # every timed step


# ----------------------------------------------------------------------------- helpers
def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"cpu ({cpu})"


def canonical_variant(name: str) -> str:
    """Baseline names stay as they are (lower case); synthesizer specs become the paper's notation."""
    if name.lower() in MIXERS:
        return name.lower()
    return short_spec(parse_synthesizers(name))


def layer_flops(variant: str, b: int, length: int, d: int, h: int, n: int, k_fr: int = 8, kernel: int = 31) -> float:
    """Analytic forward FLOPs of one mixing layer (2 per multiply-add)."""
    t, dh = b * length, d // h
    if variant.lower() in MIXERS:
        name = variant.lower()
        if name == "linformer":
            return 2 * t * d * d * 4 + 2 * 2 * b * d * length * 256 + 2 * 2 * b * h * length * 256 * dh
        extra = 2 * t * d * h * kernel if name == "dynamicconv" else 0  # per-token kernel prediction
        return 2 * t * d * d * 2 + 2 * t * d * kernel + extra  # in/out projections + the convolution
    names = parse_synthesizers(variant)
    flop = 2 * t * d * d * 2  # value and output projections
    pv = 2 * b * h * length * length * dh  # weights @ values
    for m in names:
        if m == "vanilla":
            flop += 2 * t * d * d * 2 + 2 * b * h * length * length * dh
        elif m == "dense":
            flop += 2 * t * d * d + 2 * b * h * length * length * dh
        elif m == "factorized_random":
            flop += 2 * h * length * length * k_fr  # batch-independent
        elif m == "factorized_dense":
            flop += 2 * t * d * d + 2 * t * h * dh * 2 * int(math.isqrt(n)) + b * h * length * length
    return float(flop + pv)


def _set_grads_none(module):
    for p in module.parameters():
        p.grad = None


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class _PeakMeter:
    """Peak memory of one call: CUDA allocator stats, or the resident-set high-water mark on Linux CPU."""

    def __init__(self, device: torch.device):
        self.device = device
        self.method = None
        if device.type == "cuda":
            self.method = "cuda max_memory_allocated"
        else:
            try:
                with open("/proc/self/clear_refs", "w") as f:
                    f.write("5")
                self.method = "cpu peak RSS growth (VmHWM), mmap threshold 64KiB"
            except OSError:
                self.method = None

    @staticmethod
    def lower_mmap_threshold() -> None:
        try:  # M_MMAP_THRESHOLD = -3: big blocks get their own pages, freed ones leave RSS at once
            libc = ctypes.CDLL("libc.so.6")
            libc.mallopt(-3, 64 * 1024)
            libc.malloc_trim(0)  # hand back heap pages freed by earlier steps, so reuse cannot hide growth
        except (OSError, AttributeError):
            pass

    @staticmethod
    def _status(key: str) -> int:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
        raise KeyError(key)

    def measure(self, fn) -> int | None:
        if self.method is None:
            fn()
            return None
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            base = torch.cuda.memory_allocated(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            fn()
            torch.cuda.synchronize(self.device)
            return int(torch.cuda.max_memory_allocated(self.device) - base)
        if self.method.startswith("cpu"):
            self.lower_mmap_threshold()
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset VmHWM to the current RSS
        base = self._status("VmRSS:")
        fn()
        return max(0, self._status("VmHWM:") - base)


# ----------------------------------------------------------------------------- cases
@dataclass
class Case:
    """One thing to time: a step function and what to record about it."""

    variant: str
    scope: str
    mode: str
    length: int
    batch: int
    tokens: int  # tokens per step for tokens/s
    flop: float | None
    step: object  # callable
    cache_bytes: int | None = None


def _layer(variant: str, d: int, h: int, n: int, causal: bool):
    if variant in MIXERS:
        return build_mixer(variant, d, h, n, causal=causal)
    return SyntheticAttention(d, h, n, variant, causal=causal)


def layer_case(variant, mode, length, tokens, d, h, causal, device, dtype, seed=0) -> Case:
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


def model_case(variant, mode, length, tokens, causal, device, dtype, preset="tiny", vocab=1000, seed=0,
               decode_batch=8) -> Case:
    from . import ModelConfig, build_model
    torch.manual_seed(seed)
    cfg = ModelConfig.preset(preset, kind="lm", vocab_size=vocab, attention=variant, max_seq_len=length)
    model = build_model(cfg).to(device=device, dtype=dtype)
    d, h, layers = cfg.embed_dim, cfg.num_heads, cfg.num_layers
    b = max(1, tokens // length)
    ids = torch.randint(3, vocab, (b, length), device=device)
    per_layer = layer_flops(variant, b, length, d, h, length) + 2 * b * length * d * cfg.ffn_dim * 2
    flop = layers * per_layer + 2 * b * length * d * vocab
    if mode == "train":
        model.train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

        def step():
            opt.zero_grad(set_to_none=True)
            logits = model(ids[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
            loss.backward()
            opt.step()
        return Case(variant, "model", mode, length, b, b * (length - 1), flop * 3, step)
    if mode == "infer":
        model.eval()

        def step():
            with torch.no_grad():
                model(ids)
        return Case(variant, "model", mode, length, b, b * length, flop, step)
    # decode: greedy, one token per step through the incremental caches, from a 1-token prompt
    model.eval()
    bd = decode_batch
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


# ----------------------------------------------------------------------------- running
def run_cases(cases: list[Case], repeats: int, warmup: int, device, measure_memory: bool = True,
              log=print) -> list[dict]:
    """Warm up, then time all cases round-robin; then measure peak memory case by case."""
    times = {id(c): [] for c in cases}
    for c in cases:
        for _ in range(warmup):
            c.step()
    _sync(device)
    for r in range(repeats):
        for c in cases:
            _sync(device)
            t0 = time.perf_counter()
            c.step()
            _sync(device)
            times[id(c)].append(time.perf_counter() - t0)
        log(f"  round {r + 1}/{repeats} done")
    meter = _PeakMeter(device)
    if measure_memory and device.type == "cpu":
        meter.lower_mmap_threshold()
    rows = []
    for c in cases:
        peak = meter.measure(c.step) if measure_memory else None
        med = statistics.median(times[id(c)])
        rows.append(dict(case=c, median_s=med, times=times[id(c)], peak=peak,
                         method=meter.method if measure_memory else None))
    return rows


def to_row(r: dict, dtype, device, d, h, causal) -> Row:
    c: Case = r["case"]
    med = r["median_s"]
    return Row(variant=c.variant, scope=c.scope, mode=c.mode, length=c.length, batch=c.batch,
               dtype=str(dtype).replace("torch.", ""), device=device_name(device), threads=torch.get_num_threads(),
               torch=torch.__version__, embed_dim=d, num_heads=h, causal=causal, median_ms=round(med * 1e3, 3),
               tokens_per_s=round(c.tokens / med, 1), flop=c.flop,
               gflops_per_s=round(c.flop / med / 1e9, 2) if c.flop else None, peak_bytes=r["peak"],
               peak_method=r["method"] if r["peak"] is not None else None, cache_bytes=c.cache_bytes,
               repeats=len(r["times"]), times_ms=[round(t * 1e3, 3) for t in r["times"]])


def ratio_table(rows: list[Row]) -> str:
    """Speed ratio vs vanilla (V time / variant time) and memory ratio, per scope/mode/length."""
    lines = [f"{'scope':6} {'mode':6} {'L':>5} {'variant':12} {'ms':>9} {'speed x V':>9} {'mem / V':>8}"]
    base = {(r.scope, r.mode, r.length): r for r in rows if r.variant == "V"}
    for r in rows:
        v = base.get((r.scope, r.mode, r.length))
        speed = f"{v.median_ms / r.median_ms:9.2f}" if v else f"{'-':>9}"
        mem = (f"{r.peak_bytes / v.peak_bytes:8.2f}" if v and r.peak_bytes and v.peak_bytes else f"{'-':>8}")
        if r.mode == "decode" and v and r.cache_bytes and v.cache_bytes:
            mem = f"{r.cache_bytes / v.cache_bytes:7.2f}c"  # c: cache bytes ratio
        lines.append(f"{r.scope:6} {r.mode:6} {r.length:5d} {r.variant:12} {r.median_ms:9.1f} {speed} {mem}")
    return "\n".join(lines)


def targets_table(rows: list[dict]) -> str:
    """Markdown table of the targets of issue 5, each with its measured ratio (rows: JSONL dicts)."""
    latest = {(r["scope"], r["mode"], r["length"], r["variant"]): r for r in rows}

    def get(scope, mode, length, v):
        return latest.get((scope, mode, length, v))

    out = ["| target | L | measured | met |", "|---|---|---|---|"]

    def add(name, length, value, ok, fmt="{:.2f}x"):
        out.append(f"| {name} | {length} | {fmt.format(value) if value is not None else 'n/a'} | "
                   f"{'n/a' if value is None else ('yes' if ok else '**no**')} |")

    layer_lengths = sorted({r["length"] for r in rows if r["scope"] == "layer" and r["mode"] == "train"})
    for length in layer_lengths:
        v = get("layer", "train", length, "V")
        if not v:
            continue
        for var in ("R", "Fix"):
            r = get("layer", "train", length, var)
            need = 2.0 if length <= 1024 else 1.0
            sp = v["median_ms"] / r["median_ms"] if r else None
            add(f"{var} layer train speed vs V >= {need}x", length, sp, sp is not None and sp >= need)
        for var in ("D", "FR"):
            r = get("layer", "train", length, var)
            if length <= 1024:
                sp = v["median_ms"] / r["median_ms"] if r else None
                add(f"{var} layer train speed vs V >= 1.0x", length, sp, sp is not None and sp >= 1.0)
        fr = get("layer", "train", length, "FR")
        if length >= 4096 and fr and fr.get("peak_bytes"):
            full = fr["batch"] * fr["num_heads"] * length * length * 4  # the (B, H, L, L) fp32 weights alone
            add("FR peak memory / materialised (B,H,L,L) weights <= 0.5", length, fr["peak_bytes"] / full,
                fr["peak_bytes"] / full <= 0.5)
        for var in ("R+V", "D+V"):
            r = get("layer", "train", length, var)
            t = r["median_ms"] / v["median_ms"] if r else None
            add(f"{var} layer train time / V time <= 1.3", length, t, t is not None and t <= 1.3)
    for length in sorted({r["length"] for r in rows if r["scope"] == "model"}):
        v, r, dc = (get("model", "train", length, x) for x in ("V", "R", "dynamicconv"))
        if v and r:
            sp = r["tokens_per_s"] / v["tokens_per_s"]
            add("model train tokens/s R / V >= 1.3", length, sp, sp >= 1.3)
        if dc and r:
            sp = r["tokens_per_s"] / dc["tokens_per_s"]
            add("model train tokens/s R / dynamicconv >= 1.6", length, sp, sp >= 1.6)
        v, r = get("model", "decode", length, "V"), get("model", "decode", length, "R")
        if v and r:
            sp = r["tokens_per_s"] / v["tokens_per_s"]
            add("decode tokens/s R / V >= 1.0", length, sp, sp >= 1.0)
            if v.get("cache_bytes") and r.get("cache_bytes"):
                c = r["cache_bytes"] / v["cache_bytes"]
                add("decode cache bytes R / V <= 0.5", length, c, c <= 0.5)
    return "\n".join(out)


def _csv(text: str, cast=str) -> list:
    return [cast(t.strip()) for t in text.split(",") if t.strip()]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="synthformer bench", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scope", default="layer,model", help="layer, model or both (comma-separated)")
    p.add_argument("--modes", default="train,infer,decode", help="train, infer, decode (decode: model scope only)")
    p.add_argument("--lengths", default="256,1024,4096", help="layer sequence lengths")
    p.add_argument("--model-lengths", default="256", help="model sequence lengths (tiny preset, max_seq_len = L)")
    p.add_argument("--tokens", type=int, default=8192, help="tokens per batch (batch = tokens // length)")
    p.add_argument("--model-tokens", type=int, default=4096, help="tokens per batch of the model scope")
    p.add_argument("--variants", default=DEFAULT_VARIANTS, help="layer variants: specs or baseline names")
    p.add_argument("--model-variants", default=DEFAULT_MODEL_VARIANTS, help="model variants")
    p.add_argument("--embed-dim", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--causal", action="store_true", help="causal layer (the model scope is always a causal LM)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    p.add_argument("--repeats", type=int, default=3, help="timed steps per case (median reported)")
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--preset", default="tiny", help="model preset for the model scope")
    p.add_argument("--decode-batch", type=int, default=8)
    p.add_argument("--no-memory", action="store_true", help="skip the peak-memory step")
    p.add_argument("--out", default=None, help="append JSONL rows to this file")
    p.add_argument("--report", default=None, metavar="JSONL",
                   help="run nothing: print the issue-5 targets table (markdown) from an earlier --out file")
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``synthformer bench``; returns an exit code."""
    args = build_parser().parse_args(argv)
    threads = torch.get_num_threads()
    try:
        return _run(args)
    finally:
        torch.set_num_threads(threads)  # callers in the same process keep their setting


def _run(args) -> int:
    if args.report:
        try:
            with open(args.report) as f:
                rows = [json.loads(line) for line in f if line.strip()]
        except (OSError, json.JSONDecodeError) as e:
            print(f"synthformer bench: error: cannot read --report {args.report}: {e}", file=sys.stderr)
            return 2
        print(targets_table(rows))
        return 0
    try:
        device = torch.device(args.device)
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"--device {args.device}: CUDA is not available here; use --device cpu")
        dtype = getattr(torch, args.dtype)
        if args.threads:
            torch.set_num_threads(args.threads)
        scopes = _csv(args.scope)
        modes = _csv(args.modes)
        bad = [s for s in scopes if s not in ("layer", "model")] + [m for m in modes if m not in ("train", "infer", "decode")]
        if bad:
            raise ValueError(f"unknown scope/mode {bad}; scopes: layer, model; modes: train, infer, decode")
        layer_vars = [canonical_variant(v) for v in _csv(args.variants)]
        model_vars = [canonical_variant(v) for v in _csv(args.model_variants)]
    except ValueError as e:
        print(f"synthformer bench: error: {e}", file=sys.stderr)
        return 2
    print(f"device {device_name(device)}, {torch.get_num_threads()} threads, torch {torch.__version__}, {args.dtype}")
    # groups of (scope, mode, length): variants inside a group are interleaved and compared; a group's
    # modules are built just before it runs and dropped after, so memory stays bounded
    groups: dict = {}
    if "layer" in scopes:
        for length in _csv(args.lengths, int):
            for mode in [m for m in modes if m != "decode"]:
                groups[("layer", mode, length)] = [
                    lambda v=v, mode=mode, length=length: layer_case(
                        v, mode, length, args.tokens, args.embed_dim, args.heads, args.causal, device, dtype)
                    for v in layer_vars]
    if "model" in scopes:
        for length in _csv(args.model_lengths, int):
            for mode in modes:
                groups[("model", mode, length)] = [
                    lambda v=v, mode=mode, length=length: model_case(
                        v, mode, length, args.model_tokens, True, device, dtype, preset=args.preset,
                        decode_batch=args.decode_batch)
                    for v in model_vars]
    rows: list[Row] = []
    for key, makers in groups.items():
        group = [make() for make in makers]
        print(f"{key[0]} {key[1]} L={key[2]}: {', '.join(c.variant for c in group)}", flush=True)
        res = run_cases(group, args.repeats, args.warmup, device, not args.no_memory,
                        log=lambda s: print(s, flush=True))
        if key[0] == "layer":
            d, h, causal = args.embed_dim, args.heads, args.causal
        else:
            (d, h), causal = _model_dims(args.preset), True
        for r in res:
            row = to_row(r, dtype, device, d, h, causal)
            rows.append(row)
            if args.out:
                with open(args.out, "a") as f:
                    f.write(json.dumps(asdict(row)) + "\n")
        del group, res
    print(ratio_table(rows))
    if args.out:
        print(f"wrote {len(rows)} rows to {args.out}")
    return 0


def _model_dims(preset: str) -> tuple[int, int]:
    from . import ModelConfig
    cfg = ModelConfig.preset(preset)
    return cfg.embed_dim, cfg.num_heads


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
