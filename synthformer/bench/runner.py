"""``synthformer bench``, run: build the case groups of the parsed options, time them, write rows, print
tables. The options and the error policy are the command line's (synthformer/cli/bench.py)."""
from __future__ import annotations

import json
from dataclasses import asdict

import torch

from ..training.distributed import device_name
from ..errors import ConfigError, SynthformerError
from ..model import PRESETS
from .cases import PRECISIONS, canonical_variant, layer_case, model_case, with_precision
from .measure import bf16_units, matmul_gflops, run_cases
from .report import Row, load_targets, ratio_table, targets_table, to_row

SCOPES, MODES = ("layer", "model"), ("train", "infer", "decode")


class BenchError(SynthformerError):
    """A bad benchmark option or input file (one line, exit status 2)."""


def _csv(text: str, cast=str) -> list:
    return [cast(t.strip()) for t in text.split(",") if t.strip()]


def run_benchmarks(args) -> int:
    """Run the benchmarks of the parsed options `args` (or, with ``args.report``, print the targets table
    of an earlier run); the caller's torch thread count is restored on return. Bad input: BenchError."""
    threads = torch.get_num_threads()
    try:
        return _report(args) if args.report else _run(args)
    finally:
        torch.set_num_threads(threads)  # callers in the same process keep their setting


def _report(args) -> int:
    try:
        with open(args.report) as f:
            rows = [json.loads(line) for line in f if line.strip()]
    except (OSError, json.JSONDecodeError) as e:
        raise BenchError(f"cannot read --report {args.report}: {e}") from None
    print(targets_table(rows, load_targets(args.targets)))  # a bad targets file: ConfigError
    return 0


def _resolve(args):
    """(device, dtype, scopes, modes, layer variants, model variants); ValueError on a bad value."""
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"--device {args.device}: CUDA is not available here; use --device cpu")
    dtype = getattr(torch, args.dtype)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.preset not in PRESETS:
        raise ValueError(f"--preset {args.preset!r}: use one of {', '.join(PRESETS)}")
    scopes, modes = _csv(args.scope), _csv(args.modes)
    bad = [s for s in scopes if s not in SCOPES] + [m for m in modes if m not in MODES]
    if bad:
        raise ValueError(f"unknown scope/mode {bad}; scopes: {', '.join(SCOPES)}; modes: {', '.join(MODES)}")
    layer_vars = [canonical_variant(v) for v in _csv(args.variants)]
    model_vars = [canonical_variant(v) for v in _csv(args.model_variants)]
    precisions = _csv(args.precision)
    if not precisions or any(p not in PRECISIONS for p in precisions):
        raise ValueError(f"--precision {args.precision!r}: use {', '.join(PRECISIONS)} or fp32,bf16")
    if "bf16" in precisions and dtype != torch.float32:
        raise ValueError("--precision bf16 autocasts fp32 weights: leave --dtype at float32")
    _check_sizes(args, dtype)
    return device, dtype, scopes, modes, layer_vars, model_vars


def _check_sizes(args, dtype) -> None:
    """Counts in range, and every case's (batch, heads, L, L) weights within this machine's memory, before
    anything is timed (ValueError naming the option)."""
    from ..training.memory import memory_limits

    counts = {"--tokens": args.tokens, "--model-tokens": args.model_tokens, "--embed-dim": args.embed_dim,
              "--heads": args.heads, "--repeats": args.repeats, "--decode-batch": args.decode_batch,
              "--threads": args.threads, "--decode-repeats": args.decode_repeats}
    for name, value in counts.items():
        if value is not None and value < 1:
            raise ValueError(f"{name} {value}: must be >= 1")
    if args.warmup < 0:
        raise ValueError(f"--warmup {args.warmup}: must be >= 0")
    limits = memory_limits()
    have = min(limits.values()) if limits else None
    heads = {"--lengths": args.heads, "--model-lengths": PRESETS[args.preset].get("num_heads", args.heads)}
    tokens = {"--lengths": args.tokens, "--model-lengths": args.model_tokens}
    for option in ("--lengths", "--bf16-lengths", "--model-lengths", "--bf16-model-lengths"):
        text = getattr(args, option[2:].replace("-", "_"))
        base = option.replace("bf16-", "")
        for length in _csv(text, int) if text is not None else []:
            if length < 1:
                raise ValueError(f"{option} {length}: every length must be >= 1")
            batch = max(1, tokens[base] // length)
            need = 4 * batch * heads[base] * length * length * dtype.itemsize  # logits, weights and gradients
            if have is not None and need > have:
                raise ValueError(f"{option} {length}: a case at this length needs about {need / 2**30:,.0f} GiB "
                                 f"for its (batch, heads, L, L) weights, more than the {have / 2**30:,.1f} GiB "
                                 "of memory here; lower the length")


def _groups(args, device, dtype, scopes, modes, layer_vars, model_vars) -> dict:
    """(scope, mode, length) -> case makers. Variants (and precisions) inside a group are interleaved and
    compared; a group's modules are built just before it runs and dropped after, so memory stays bounded."""
    precisions = _csv(args.precision)
    bf16_vars = None if args.bf16_variants is None else {canonical_variant(v) for v in _csv(args.bf16_variants)}

    def runs(variants, length, mode, bf16_lengths):
        """(variant, precision) pairs of one group: fp32 first, then bf16 where it applies."""
        out = []
        for prec in precisions:
            if prec == "bf16" and (mode == "decode" or length not in bf16_lengths):
                continue
            out += [(v, prec) for v in variants if prec == "fp32" or bf16_vars is None or v in bf16_vars]
        return out

    groups: dict = {}
    if "layer" in scopes:
        lengths = _csv(args.lengths, int)
        bf16_lengths = lengths if args.bf16_lengths is None else _csv(args.bf16_lengths, int)
        for length in sorted(set(lengths) | (set(bf16_lengths) if "bf16" in precisions else set())):
            for mode in [m for m in modes if m != "decode"]:
                pairs = [(v, p) for v, p in runs(layer_vars, length, mode, bf16_lengths)
                         if p == "bf16" or length in lengths]
                groups[("layer", mode, length)] = [
                    lambda v=v, p=p, mode=mode, length=length: with_precision(layer_case(
                        v, mode, length, args.tokens, args.embed_dim, args.heads, args.causal, device, dtype), p, device)
                    for v, p in pairs]
    if "model" in scopes:
        lengths = _csv(args.model_lengths, int)
        bf16_lengths = lengths if args.bf16_model_lengths is None else _csv(args.bf16_model_lengths, int)
        for length in sorted(set(lengths) | (set(bf16_lengths) if "bf16" in precisions else set())):
            for mode in modes:
                pairs = [(v, p) for v, p in runs(model_vars, length, mode, bf16_lengths)
                         if p == "bf16" or length in lengths]
                groups[("model", mode, length)] = [
                    lambda v=v, p=p, mode=mode, length=length: with_precision(model_case(
                        v, mode, length, args.model_tokens, True, device, dtype, preset=args.preset,
                        decode_batch=args.decode_batch), p, device)
                    for v, p in pairs]
    return {k: g for k, g in groups.items() if g}


def _run(args) -> int:
    try:
        device, dtype, scopes, modes, layer_vars, model_vars = _resolve(args)
    except ValueError as e:  # a bad flag value (the registries raise ValueError subclasses)
        raise BenchError(str(e)) from None
    matmul = {"fp32": matmul_gflops(device, torch.float32), "bf16": matmul_gflops(device, torch.bfloat16)}
    machine = (f"device {device_name(device)}, {torch.get_num_threads()} threads, torch {torch.__version__}; "
               f"matmul {matmul['fp32']} GFLOP/s fp32, {matmul['bf16']} GFLOP/s bf16; bf16 units: {bf16_units(device)}")
    print(f"{machine}; {args.dtype}, precision {args.precision}")
    rows: list[Row] = []
    for key, makers in _groups(args, device, dtype, scopes, modes, layer_vars, model_vars).items():
        group = [make() for make in makers]
        print(f"{key[0]} {key[1]} L={key[2]}: {', '.join(f'{c.variant} {c.precision}' for c in group)}", flush=True)
        repeats = args.decode_repeats if key[1] == "decode" and args.decode_repeats else args.repeats
        res = run_cases(group, repeats, args.warmup, device, not args.no_memory,
                        log=lambda s: print(s, flush=True))
        if key[0] == "layer":
            d, h, causal = args.embed_dim, args.heads, args.causal
        else:
            shape = PRESETS[args.preset]
            d, h, causal = shape["embed_dim"], shape["num_heads"], True
        for r in res:
            row = to_row(r, dtype, device, d, h, causal, matmul)
            rows.append(row)
            if args.out:
                with open(args.out, "a") as f:
                    f.write(json.dumps(asdict(row)) + "\n")
        del group, res
    print(ratio_table(rows))
    try:
        table = targets_table([asdict(r) for r in rows], load_targets(args.targets))
        print(f"\ntargets ({args.targets}) on {machine}\n{table}")
    except ConfigError as e:
        print(f"(no targets table: {e})")
    if args.out:
        print(f"wrote {len(rows)} rows to {args.out}")
    return 0
