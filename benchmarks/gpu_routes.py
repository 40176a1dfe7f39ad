"""Which path should logits shared by the batch (R, Fix, FR) take in training on a GPU? The H200 run of
benchmarks/gpu.sh (session 10) found the CPU-tuned ``shared_blocked`` kernel (Python loops over heads and row
blocks) launch-bound there: R 0.77x V at L=256, 0.36x at 4096. Since session 12 the library routes them to
``shared_softmax`` on CUDA (one (H, L, L) softmax and one GEMM with the batch folded, autograd's backward).
This times a training step of one layer through that path and through the CPU's choice forced
(``shared_blocked``; FR also ``shared_fused``), checks that they give the same output and gradients, and
prints V beside them. ``--mixtures R+V,R+D,FD+V,R+D+V`` also times learned full logits beside a dot product
(and FD) through today's path (literal on CUDA up to ``paths.cuda_literal_elements`` logits) against
the others forced.

    python benchmarks/gpu_routes.py --device cuda    # --device cpu tries it here (small sizes)
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

from gpu_checks import Taken  # benchmarks/ is the script's folder, on sys.path
from synthformer import SyntheticAttention
from synthformer.attention.kernels import paths


def step_time(layer, x, device, repeats: int, force: paths.Path | None) -> tuple[float, list]:
    """Median ms of forward + backward, and the output and gradients of the last step."""
    times = []
    for i in range(repeats + 2):  # two warm-ups
        layer.zero_grad(set_to_none=True)
        x.grad = None
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        with Taken(force):
            out, _ = layer(x)
        out.backward(torch.ones_like(out))
        if device.type == "cuda":
            torch.cuda.synchronize()
        if i >= 2:
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), [out.detach(), x.grad] + [p.grad for p in layer.parameters()]


def disagreement(got: list, want: list) -> float:
    """Largest error of output and gradients, each against its own scale floored at 1% of the largest (the
    key bias's true gradient is zero, so its own scale is float noise)."""
    top = max(b.abs().max().item() for b in want if b is not None)
    return max(((a.float() - b.float()).abs().max() / max(b.abs().max().item(), 1e-2 * top)).item()
               for a, b in zip(got, want) if b is not None)


D_MODEL, HEADS = 256, 4  # one layer as in the bench


def table(specs: list[str], forced: tuple, lengths: list[int], tokens: int, device, repeats: int, skip) -> None:
    """One markdown table: per length, causal or not, and spec, the step through today's path and through each
    of `forced` (skipped where it is today's path or ``skip(spec, path)``), and whether all agree."""
    print(f"\n| L | causal | V ms | spec | today's path | ms | {' | '.join(f'{p.value} ms' for p in forced)} | equal |")
    print("|---|---|---|---|---|---|" + "---|" * len(forced) + "---|")
    for length in lengths:
        for causal in (False, True):
            torch.manual_seed(0)
            x = torch.randn(max(1, tokens // length), length, D_MODEL, device=device, requires_grad=True)
            v_ms, _ = step_time(SyntheticAttention(D_MODEL, HEADS, length, "V", causal=causal).to(device), x,
                                device, repeats, None)
            for spec in specs:
                layer = SyntheticAttention(D_MODEL, HEADS, length, spec, causal=causal).to(device).train()
                with Taken() as t:
                    layer(x)
                today, got = step_time(layer, x, device, repeats, None)
                cells, err = [], 0.0
                for force in forced:
                    if force is t.paths[0] or skip(spec, force):
                        cells.append("-")
                        continue
                    ms, want = step_time(layer, x, device, repeats, force)
                    err = max(err, disagreement(got, want))
                    cells.append(f"{ms:.2f}")
                print(f"| {length} | {causal} | {v_ms:.2f} | {spec} | {t.paths[0].value} | {today:.2f} | "
                      f"{' | '.join(cells)} | {'yes' if err < 1e-3 else f'NO ({err:.1e})'} |", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--lengths", default=None, help="comma-separated (default: 256,1024,4096; cpu: 256)")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--tokens", type=int, default=8192, help="tokens of a step (the batch is tokens / L)")
    ap.add_argument("--mixtures", default="", help="also time these (e.g. R+V,R+D,FD+V,FD): today's path against "
                    "flex, blocked and literal forced")
    ap.add_argument("--shared", default="R,Fix,FR", help="shared-logit variants to time ('' skips them)")
    args = ap.parse_args()
    device = torch.device(args.device)
    lengths = [int(v) for v in (args.lengths or ("256" if device.type == "cpu" else "256,1024,4096")).split(",")]
    print(f"{torch.cuda.get_device_name() if device.type == 'cuda' else 'cpu'}, torch {torch.__version__}; "
          f"one layer d={D_MODEL}, H={HEADS}, {args.tokens} tokens, train step (ms, median of {args.repeats})")
    P = paths.Path
    shared = [v for v in args.shared.split(",") if v]
    if shared:  # logits shared by the batch: the CPU's paths forced (shared_fused: FR's dot products only)
        table(shared, (P.SHARED_SOFTMAX, P.SHARED_BLOCKED, P.SHARED_FUSED), lengths, args.tokens, device, args.repeats,
              lambda spec, force: force is P.SHARED_FUSED and spec != "FR")
    if args.mixtures:  # learned full logits (flex needs a dot product, and a GPU for its backward)
        table(args.mixtures.split(","), (P.FLEX, P.BLOCKED, P.LITERAL), lengths, args.tokens, device, args.repeats,
              lambda spec, force: force is P.FLEX and (spec == "FD" or device.type == "cpu"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
