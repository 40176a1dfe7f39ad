"""The ``synthformer bench`` command line: parse, build the case groups, time them, write rows, print tables."""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

import torch

from ..errors import ConfigError
from ..model import ModelConfig
from .cases import DEFAULT_MODEL_VARIANTS, DEFAULT_VARIANTS, canonical_variant, layer_case, model_case
from .measure import device_name, run_cases
from .report import DEFAULT_TARGETS, Row, load_targets, ratio_table, targets_table, to_row

SCOPES, MODES = ("layer", "model"), ("train", "infer", "decode")
DESCRIPTION = ("``synthformer bench``: time synthetic attention against vanilla and the baselines; "
               "write JSONL rows.")


def _csv(text: str, cast=str) -> list:
    return [cast(t.strip()) for t in text.split(",") if t.strip()]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="synthformer bench", description=DESCRIPTION,
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
                   help="run nothing: print the targets table (markdown) from an earlier --out file")
    p.add_argument("--targets", default=str(DEFAULT_TARGETS), metavar="YAML",
                   help="targets file of --report (default: the repository's benchmarks/targets.yaml)")
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``synthformer bench``; returns an exit code."""
    args = build_parser().parse_args(argv)
    threads = torch.get_num_threads()
    try:
        return _report(args) if args.report else _run(args)
    finally:
        torch.set_num_threads(threads)  # callers in the same process keep their setting


def _error(message) -> int:
    print(f"synthformer bench: error: {message}", file=sys.stderr)
    return 2


def _report(args) -> int:
    try:
        with open(args.report) as f:
            rows = [json.loads(line) for line in f if line.strip()]
    except (OSError, json.JSONDecodeError) as e:
        return _error(f"cannot read --report {args.report}: {e}")
    try:
        targets = load_targets(args.targets)
    except ConfigError as e:
        return _error(e)
    print(targets_table(rows, targets))
    return 0


def _resolve(args):
    """(device, dtype, scopes, modes, layer variants, model variants); ValueError on a bad value."""
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"--device {args.device}: CUDA is not available here; use --device cpu")
    dtype = getattr(torch, args.dtype)
    if args.threads:
        torch.set_num_threads(args.threads)
    scopes, modes = _csv(args.scope), _csv(args.modes)
    bad = [s for s in scopes if s not in SCOPES] + [m for m in modes if m not in MODES]
    if bad:
        raise ValueError(f"unknown scope/mode {bad}; scopes: {', '.join(SCOPES)}; modes: {', '.join(MODES)}")
    layer_vars = [canonical_variant(v) for v in _csv(args.variants)]
    model_vars = [canonical_variant(v) for v in _csv(args.model_variants)]
    return device, dtype, scopes, modes, layer_vars, model_vars


def _groups(args, device, dtype, scopes, modes, layer_vars, model_vars) -> dict:
    """(scope, mode, length) -> case makers. Variants inside a group are interleaved and compared; a
    group's modules are built just before it runs and dropped after, so memory stays bounded."""
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
    return groups


def _run(args) -> int:
    try:
        device, dtype, scopes, modes, layer_vars, model_vars = _resolve(args)
    except ValueError as e:  # a bad flag value (the registries raise ValueError subclasses)
        return _error(e)
    print(f"device {device_name(device)}, {torch.get_num_threads()} threads, torch {torch.__version__}, {args.dtype}")
    rows: list[Row] = []
    for key, makers in _groups(args, device, dtype, scopes, modes, layer_vars, model_vars).items():
        group = [make() for make in makers]
        print(f"{key[0]} {key[1]} L={key[2]}: {', '.join(c.variant for c in group)}", flush=True)
        res = run_cases(group, args.repeats, args.warmup, device, not args.no_memory,
                        log=lambda s: print(s, flush=True))
        if key[0] == "layer":
            d, h, causal = args.embed_dim, args.heads, args.causal
        else:
            cfg = ModelConfig.preset(args.preset)
            d, h, causal = cfg.embed_dim, cfg.num_heads, True
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
