"""Issue 51 in one run: the +V mixtures against V, layer train step and small-LM step (not a test).

Prints the CPU model (/proc/cpuinfo), the measured fp32 matmul GFLOP/s, then one table: per length, each
variant's layer train step time (median of the round-robin interleaved repeats), its speed vs V
(V time / its time) and its peak memory vs V's (growth of the resident set during one extra step,
synthformer.bench.measure.PeakMeter), with the route the layer took; then the small-preset LM train step
ratio R+V vs V. One thread by default (the machine is shared).

    PYTHONPATH=. python benchmarks/mixtures.py                      # the RESULTS.md table
    PYTHONPATH=. python benchmarks/mixtures.py --lengths 1024 --variants V,R+V --repeats 3
"""
from __future__ import annotations

import argparse
import json

import torch

from synthformer.attention.kernels import paths
from synthformer.training.distributed import device_name
from synthformer.bench.cases import layer_case, model_case
from synthformer.bench.measure import PeakMeter, matmul_gflops, run_cases


def route_of(variant: str, length: int, d: int, h: int) -> str:
    """The path a training call of this layer takes (recorded by wrapping choose_path once)."""
    seen = []
    orig = paths.choose_path

    def spy(r):
        p = orig(r)
        seen.append(p.value)
        return p
    case = layer_case(variant, "train", length, length, d, h, False, torch.device("cpu"), torch.float32)
    paths.choose_path = spy
    try:
        case.step()
    finally:
        paths.choose_path = orig
    return seen[0] if seen else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lengths", default="256,1024,4096")
    ap.add_argument("--variants", default="V,R+V,FR+V,D+V")
    ap.add_argument("--tokens", type=int, default=4096, help="batch x length of the layer cases")
    ap.add_argument("--d", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--model-length", type=int, default=256, help="0: skip the LM step")
    ap.add_argument("--model-tokens", type=int, default=8192)
    ap.add_argument("--model-variants", default="V,R+V")
    ap.add_argument("--causal-model", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--jsonl", default=None, help="append one JSON row per case here")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    cpu = torch.device("cpu")
    print(f"CPU: {device_name(torch.device('cpu'))}; torch {torch.__version__}; threads {torch.get_num_threads()}; "
          f"fp32 matmul {matmul_gflops(cpu, torch.float32)} GFLOP/s")
    variants = args.variants.split(",")
    rows = []
    lengths = [int(x) for x in args.lengths.split(",")]
    groups = {}
    for length in lengths:  # timings first, every length: memory is measured after (it lowers glibc's mmap threshold)
        cases = [layer_case(v, "train", length, args.tokens, args.d, args.heads, False, cpu, torch.float32)
                 for v in variants]
        groups[length] = run_cases(cases, args.repeats, args.warmup, cpu, measure_memory=False, log=lambda *_: None)
    meter = PeakMeter(cpu)
    meter.lower_mmap_threshold()
    for res in groups.values():
        for r in res:
            r["peak"] = meter.measure(r["case"].step)
    print(f"\nlayer train step (forward + backward), d={args.d}, H={args.heads}, fp32, non-causal, "
          f"batch x length = {args.tokens}, median of {args.repeats} interleaved; peak = resident-set growth "
          f"during one step ({meter.method})")
    print("| L | B | variant | route | ms | speed vs V | peak MiB | peak vs V |")
    print("|---|---|---|---|---|---|---|---|")
    for length, res in groups.items():
        base = next(r for r in res if r["case"].variant == "V")
        for r in res:
            c = r["case"]
            speed = base["median_s"] / r["median_s"]
            mem = r["peak"] / base["peak"] if r["peak"] and base["peak"] else float("nan")
            route = route_of(c.variant, length, args.d, args.heads)
            print(f"| {length} | {c.batch} | {c.variant} | {route} | {r['median_s'] * 1e3:.1f} | {speed:.2f}x | "
                  f"{(r['peak'] or 0) / 2**20:.1f} | {mem:.2f}x |", flush=True)
            rows.append(dict(scope="layer", variant=c.variant, length=length, batch=c.batch, route=route,
                             ms=r["median_s"] * 1e3, times_ms=[t * 1e3 for t in r["times"]], peak_bytes=r["peak"],
                             speed_vs_v=speed, peak_vs_v=mem))
    if args.model_length:
        length = args.model_length
        cases = [model_case(v, "train", length, args.model_tokens, args.causal_model, cpu, torch.float32,
                            preset="small") for v in args.model_variants.split(",")]
        res = run_cases(cases, args.repeats, args.warmup, cpu, measure_memory=False, log=lambda *_: None)
        base = next(r for r in res if r["case"].variant == "V")
        print(f"\nsmall-preset LM train step (d=256, 4 layers, AdamW), L={length}, {args.model_tokens} tokens, "
              f"{'causal' if args.causal_model else 'non-causal'}, median of {args.repeats}")
        print("| variant | ms | speed vs V |")
        print("|---|---|---|")
        for r in res:
            speed = base["median_s"] / r["median_s"]
            print(f"| {r['case'].variant} | {r['median_s'] * 1e3:.0f} | {speed:.2f}x |")
            rows.append(dict(scope="model", variant=r["case"].variant, length=length, ms=r["median_s"] * 1e3,
                             times_ms=[t * 1e3 for t in r["times"]], speed_vs_v=speed))
    if args.jsonl:
        with open(args.jsonl, "a") as f:
            for row in rows:
                f.write(json.dumps(dict(row, cpu=device_name(torch.device("cpu")), torch=torch.__version__,
                                        threads=args.threads, d=args.d, heads=args.heads)) + "\n")


if __name__ == "__main__":
    main()
