"""The correctness half of benchmarks/gpu.sh (issue 13, target 6): on CUDA, the FlexAttention path of learned
full logits beside a dot product equals the literal equations in value and gradient, and every variant, mixture
and baseline trains a step in fp32 and under bf16 autocast. ``--device cpu`` runs the same code where it can
(FlexAttention forward only, forced, as tests/test_flex.py), so the script is tried before a GPU is lent.

    python benchmarks/gpu_checks.py --device cuda    # exit status 1 if a check fails; each line says which
"""
from __future__ import annotations

import argparse
import time
import traceback
import warnings
from dataclasses import replace

import torch

from synthformer import SyntheticAttention
from synthformer.attention.kernels import paths
from synthformer.attention.synthesizers.registry import SYNTHESIZERS
from synthformer.mixers import MIXERS, build_mixer

FLEX_SPECS = ["R+V", "R+D", "FD+V", "R+D+V"]  # learned full logits beside a dot product: the flex path
MIXTURES = ["R+V", "D+V", "R+D", "FR+V", "FD+V", "R+D+V"]
D, H, L, B = 128, 4, 256, 3  # one shape for every check, so the compiled flex kernels are shared


class Taken:
    """Records the path of every layer call (wraps paths.choose_path; the layer then also asks it for the
    fallback path, which is not recorded); ``force`` replaces the path unless the call asked for the literal
    one (need_weights=True, fast=False, exporting)."""

    def __init__(self, force: paths.Path | None = None):
        self.paths: list[paths.Path] = []
        self.force = force

    def __enter__(self):
        self.choose = paths.choose_path

        def choose(r):
            p = self.choose(r)
            return self.force if self.force is not None and not (r.literal or r.exporting) else p

        def fallback(r):
            return self.choose(replace(r, input_dependent=True))

        def record(r):
            self.paths.append(choose(r))
            return self.paths[-1]
        self.fallback = paths.fallback_path
        paths.choose_path, paths.fallback_path = record, fallback
        return self

    def __exit__(self, *exc):
        paths.choose_path, paths.fallback_path = self.choose, self.fallback


def perturbed(spec: str, causal: bool, device) -> SyntheticAttention:
    """A layer with its weights moved off their init (mixture weights away from uniform, R off its small init)."""
    attn = SyntheticAttention(D, H, L, spec, causal=causal).to(device).train()
    with torch.no_grad():
        for p in attn.parameters():
            p.add_(torch.randn_like(p) * 0.3)
    return attn


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a.float() - b.float()).abs().max() / (b.float().abs().max() + 1e-6)).item()


def check_flex(device, spec: str, causal: bool, padded: bool) -> str:
    """Flex against the literal path: out and every parameter's gradient (CPU: forward only, path forced)."""
    attn = perturbed(spec, causal, device)
    x = torch.randn(B, L, D, device=device)
    kw = {}
    if padded:
        kw["key_padding_mask"] = torch.arange(L, device=device)[None, :] >= torch.tensor([[L - 37], [L]] * 2,
                                                                                        device=device)[:B]
    cuda = device.type == "cuda"
    with Taken(paths.Path.FLEX) as t, torch.set_grad_enabled(cuda), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # eager FlexAttention on CPU warns that it is unfused
        got, _ = attn(x, **kw)
    assert t.paths == [paths.Path.FLEX], f"took {t.paths}, not flex"
    with torch.set_grad_enabled(cuda):
        want, _ = attn(x, need_weights=True, **kw)  # the literal equations
    err = rel(got, want)
    msg = f"out rel err {err:.1e}"
    assert err < 1e-4, msg
    if cuda:
        g = torch.randn_like(got)
        params = [p for p in attn.parameters() if p.requires_grad]
        grads = torch.autograd.grad(got, params, g, allow_unused=True)
        wgrads = torch.autograd.grad(want, params, g, allow_unused=True)
        # against the largest gradient too: the key bias's true gradient is zero (softmax ignores a per-row
        # constant), so its own scale is float noise
        top = max(b.abs().max().item() for b in wgrads if b is not None)
        gerr = max(((a - b).abs().max() / max(b.abs().max().item(), 1e-2 * top)).item()
                   for a, b in zip(grads, wgrads) if b is not None)
        msg += f", grad rel err {gerr:.1e}"
        assert gerr < 1e-3, msg
    return msg


def check_step(device, spec: str, bf16: bool) -> str:
    """One causal (linformer: non-causal) training step of a variant (a synthesizer spec or a baseline mixer), finite gradients."""
    if spec in MIXERS:
        layer = build_mixer(spec, D, H, L, causal=spec != "linformer").to(device).train()  # linformer: encoders
    else:
        layer = SyntheticAttention(D, H, L, spec, causal=True).to(device).train()
    x = torch.randn(B, L, D, device=device, requires_grad=True)
    with Taken() as t, torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
        out = layer(x)
        out = out[0] if isinstance(out, tuple) else out
    out.float().square().mean().backward()
    bad = [n for n, p in layer.named_parameters() if p.grad is not None and not torch.isfinite(p.grad).all()]
    assert not bad and torch.isfinite(x.grad).all(), f"non-finite gradients: {bad or 'input'}"
    msg = f"path {','.join(p.value for p in t.paths) or '-'}"
    if isinstance(layer, SyntheticAttention):  # the fast path against the literal one, same precision
        with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            want, _ = layer(x, need_weights=True)
        err = rel(out, want)
        msg += f", out rel err vs literal {err:.1e}"
        assert err < (3e-2 if bf16 else 1e-4), msg
    return msg


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    device = torch.device(args.device)
    if device.type == "cuda":
        assert torch.cuda.is_available(), "no CUDA device"
        print(f"GPU: {torch.cuda.get_device_name()}, capability {torch.cuda.get_device_capability()}, "
              f"torch {torch.__version__}", flush=True)
    torch.manual_seed(0)
    checks = [(f"flex {s} causal={c} padded={p}", check_flex, (device, s, c, p))
              for s in FLEX_SPECS for c in (False, True) for p in (False, True)]
    checks += [(f"step {s} {'bf16' if b else 'fp32'}", check_step, (device, s, b))
               for s in [*SYNTHESIZERS, *MIXTURES, *MIXERS] for b in (False, True)]
    failed = 0
    for name, fn, fargs in checks:
        t0 = time.perf_counter()
        try:
            msg = fn(*fargs)
            print(f"ok   {name}: {msg} ({time.perf_counter() - t0:.1f} s)", flush=True)
        except Exception as e:  # report every check, then fail at the end
            failed += 1
            print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
            traceback.print_exc(limit=-3)
    if device.type == "cuda":  # each flex compile (shape, dtype, mask form); past the limit it runs unfused
        from torch._dynamo.utils import counters  # noqa: PLC0415
        print(f"dynamo: {dict(counters['stats'])}; recompiles {sum(counters['recompiles'].values())}")
    print(f"{len(checks) - failed} of {len(checks)} checks passed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
