"""The ``mixture`` kernel: flash-style attention with a learned bias on CPU, exact gradients, no (B, H, Lq, Lk) tensors.

A "+V" mixture's logits are ``a_h q k^T / sqrt(d_h) + b_h S_h`` with S_h a table shared by the batch (R, Fix),
or a dot product (D, FR: concatenated to the features), or a per-example table (FD). PyTorch's fused CPU
kernel neither returns the gradient of a float mask nor takes q, k wider than v (D+V, FR+V: the
``fused`` path pads v to the features' width). This kernel (C++, ``mixture_kernel.cpp``, built once
by ``torch.utils.cpp_extension`` on first use) does both:

* forward: per (batch, head, block of query rows), an online softmax over blocks of keys, the bias
  added block by block (times its per-head scale, never scaled in full), key padding and a causal
  mask applied inside (fully masked key blocks skipped); saves q, k, v, out and the log-sum-exp;
* backward: per (head, row block, key block), the batch innermost, P = exp(q k^T + bias - lse)
  recomputed, the five GEMMs of the flash backward, and dS summed over the batch while the block is
  in cache: the bias gradient costs O(H Lq Lk) memory for a shared table, the scale's gradient
  (the mixture weight) is a dot per block.

Memory per layer call: q, k, v, out, lse (O(B L)), the bias gradient; nothing of size B x L^2.
Where the extension cannot be built (no C++ compiler, no exported ``sgemm_``), :func:`available` is False
and the layer keeps its ``blocked`` / ``fused`` routes (the rule in :mod:`synthformer.attention.kernels.paths`).

Shapes (legend in ``__init__``): q, k (B, H, L, E); v (B, H, Lk, dv), dv <= E allowed, any strides with unit stride
along the last dimension (the layer's (B, L, H, E) projections are read in place; out and the gradients of q, k, v
are laid out so, as PyTorch's flash kernel does, so merging the heads is a view); bias (1 or B, H, Lq, Lk)
or None; scale (H,) or None; pad (B, Lk) bool (True = padding) or None. Rows with no visible key output zeros.
"""
from __future__ import annotations

import contextlib
import functools
import os
import platform
import sys
import warnings
from pathlib import Path

import torch
from torch import Tensor

# (query rows, keys) per block. Forward: 128 x 512; backward (which holds P and dS): 128 x 256, 128 KiB each in fp32.
# Measured best of 32..256 rows x 128..512 keys (attention alone, 1 thread, d_h = 64, 4096 tokens, L = 256 and 1024)
FORWARD_BLOCK = (128, 512)
BACKWARD_BLOCK = (128, 256)
SOURCE = Path(__file__).with_name("mixture_kernel.cpp")


def _build_dir() -> Path:
    """Where the kernel is built: torch's extension cache (``TORCH_EXTENSIONS_DIR`` moves it), one folder per
    Python and torch version, so that a new torch never loads a binary built against another."""
    from torch.utils.cpp_extension import get_default_build_root
    tag = f"py{sys.version_info.major}{sys.version_info.minor}-torch{torch.__version__}"
    return Path(get_default_build_root()) / f"synthformer_mixture-{tag}"



@contextlib.contextmanager
def _build_guard(build_dir: Path):
    """Hold an OS lock on ``build_dir`` while torch builds or loads the kernel there (released by the OS when the
    holder dies, unlike torch's ``lock`` file). Holding it, a ``lock`` file found is one a build killed midway
    left (every synthformer process takes this lock first): it is removed, where torch would wait on it forever."""
    build_dir.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # no fcntl (Windows): torch's own lock file only
        yield build_dir
        return
    with open(build_dir / "synthformer.flock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        stale = build_dir / "lock"
        if stale.exists():
            warnings.warn(f"synthformer: removed {stale}, left by a build of the mixture kernel that was stopped "
                          "midway", RuntimeWarning, stacklevel=3)
            stale.unlink(missing_ok=True)
        yield build_dir


@functools.cache
def _extension():
    """The compiled extension, or None (built once per machine into torch's extension cache)."""
    if os.environ.get("SYNTHFORMER_NO_MIXTURE_KERNEL"):
        return None
    try:
        from torch.utils.cpp_extension import load_inline
        # -fopenmp: at::parallel_for is an OpenMP pragma in ATen's headers; compiled without it, the kernel ran on
        # one thread whatever torch.get_num_threads() said (session 30: 81k tokens/s at 1 and at 2 threads)
        flags = ["-O3", "-march=native", "-fno-math-errno", "-fopenmp"]
        if platform.machine() in ("x86_64", "AMD64"):
            flags.append("-mprefer-vector-width=512")  # AVX-512 where the CPU has it (GCC prefers 256 bits)
        with _build_guard(_build_dir()) as build_dir:
            return load_inline(name="synthformer_mixture", cpp_sources=[SOURCE.read_text()], extra_cflags=flags,
                               extra_ldflags=["-fopenmp"], build_directory=str(build_dir), verbose=False)
    except Exception as e:  # noqa: BLE001 - any build failure means: use the pure-PyTorch routes
        warnings.warn(f"synthformer: the mixture attention kernel could not be built ({type(e).__name__}: {e}); "
                      "mixtures with a learned table run the slower 'blocked' path", RuntimeWarning, stacklevel=2)
        return None


def available() -> bool:
    """The compiled kernel is there (building it on the first call)."""
    return _extension() is not None


class _MixtureAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, bias, scale, pad, shift, causal, qscale):
        ext = _extension()
        out, lse = ext.forward(q, k, v, bias, scale, pad, shift, causal, qscale, *FORWARD_BLOCK)
        ctx.save_for_backward(q, k, v, bias, scale, pad, out, lse, qscale)
        ctx.shift, ctx.causal = shift, causal
        return out

    @staticmethod
    def backward(ctx, dout):
        q, k, v, bias, scale, pad, out, lse, qscale = ctx.saved_tensors
        dout = _rows(dout)
        need_bias, need_scale = ctx.needs_input_grad[3], ctx.needs_input_grad[4]
        need_qscale = ctx.needs_input_grad[8]
        dq, dk, dv, dbias, dscale, dqscale = _extension().backward(
            dout, q, k, v, lse, out, bias, scale, pad, ctx.shift, ctx.causal, qscale, need_bias, need_scale,
            need_qscale, *BACKWARD_BLOCK)
        return (dq, dk, dv, dbias if need_bias else None, dscale if need_scale else None, None, None, None,
                dqscale if need_qscale else None)


def _rows(t: Tensor) -> Tensor:
    """fp32 ``t`` with unit stride along the features and rows that do not overlap, as the kernel reads it: the
    projections' (B, L, H, E) memory and a batch-shared (stride 0) q pass as they are, anything else is copied."""
    t = t.to(torch.float32)
    return t if t.stride(-1) == 1 and (t.shape[2] <= 1 or t.stride(2) >= t.shape[3]) else t.contiguous()


def mixture_attention(q: Tensor, k: Tensor, v: Tensor, bias: Tensor | None = None, scale: Tensor | None = None,
                      key_padding_mask: Tensor | None = None, causal_shift: int | None = None,
                      q_scale: Tensor | None = None) -> Tensor:
    """``softmax(q_scale[h] * q k^T + bias * scale[h], masked) @ v``, (B, H, Lq, dv); exact gradients for q, k, v,
    bias, scale and q_scale (the mixture weight of the dot product, applied inside: q is never scaled in full).

    q, k (B or 1, H, L, E) are broadcast to v's batch; ``bias`` (1 or B, H, Lq, Lk); ``scale`` (H,);
    ``key_padding_mask`` (B, Lk) True = padding; ``causal_shift``: key j visible from query i iff j <= i + shift.
    Computes in fp32 (inputs of another dtype are cast, their gradients cast back by autograd).
    """
    b = v.shape[0]
    dtype = v.dtype

    def dense(t):
        return None if t is None else t.to(torch.float32).contiguous()
    q, k = q.expand(b, -1, -1, -1), k.expand(b, -1, -1, -1)  # a batch-shared q (FR) is read with batch stride 0
    pad = None if key_padding_mask is None else key_padding_mask.to(torch.uint8).contiguous()
    out = _MixtureAttention.apply(_rows(q), _rows(k), _rows(v), dense(bias), dense(scale), pad,
                                  0 if causal_shift is None else int(causal_shift), causal_shift is not None,
                                  dense(q_scale))
    return out.to(dtype)
