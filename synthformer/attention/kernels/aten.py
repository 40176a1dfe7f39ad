"""Private ATen ops the fast paths use, each behind one function with a version check and a public fallback.

PyTorch may rename or re-sign an underscore op in any release. Each op is looked up once, only on a torch at
least as new as the first release known to have it, and only when its schema still has the arguments used
here (:func:`private_op`); otherwise the function falls back to public PyTorch with the same result
(tests/test_routes.py runs both and compares).

* :func:`attention_with_lse` -- ``aten._scaled_dot_product_flash_attention_for_cpu``: the CPU flash kernel,
  which also returns the log-sum-exp of every row (the blocked backward rebuilds the weights from it).
  Fallback: ``torch.nn.functional.scaled_dot_product_attention``, no log-sum-exp (the backward then
  recomputes the softmax).
* :func:`softmax_into` -- ``aten._softmax.out``: a softmax written into a given contiguous block of memory.
  Fallback (also for a strided block, which the op fills as if it were contiguous: torch 2.13, CPU):
  ``torch.softmax`` then a copy.
"""
from __future__ import annotations

import functools

import torch
import torch.nn.functional as F
from torch import Tensor

CPU_FLASH = ("_scaled_dot_product_flash_attention_for_cpu", "default", (2, 3), ("attn_mask", "scale", "is_causal"))
SOFTMAX_OUT = ("_softmax", "out", (2, 0), ("dim", "half_to_float", "out"))


def torch_version() -> tuple[int, int]:
    """(major, minor) of the installed torch."""
    major, minor = torch.__version__.split(".")[:2]
    return int(major), int("".join(c for c in minor if c.isdigit()) or 0)


@functools.cache
def private_op(name: str, overload: str, since: tuple[int, int], arguments: tuple[str, ...]):
    """``torch.ops.aten.<name>.<overload>`` when torch >= ``since`` and its schema has ``arguments``; else None."""
    if torch_version() < since or not hasattr(torch.ops.aten, name):
        return None
    op = getattr(getattr(torch.ops.aten, name), overload, None)
    if op is None or not set(arguments) <= {a.name for a in op._schema.arguments}:
        return None
    return op


def cpu_flash_available(q: Tensor) -> bool:
    """The CPU flash kernel (with its log-sum-exp) serves ``q``: CPU, fp32/fp64, and this torch has the op."""
    return (q.device.type == "cpu" and q.dtype in (torch.float32, torch.float64)
            and private_op(*CPU_FLASH) is not None)


def attention_with_lse(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None,
                       is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
    """``softmax(q k^T + mask) v`` (scale 1; ``is_causal`` also hides keys after each query) and, from the CPU
    flash kernel, the log-sum-exp of each row (B, H, Lq); None where the public kernel ran instead.

    q, k (B, H, L, E) and v (B, H, Lk, E) of one width; mask a float tensor broadcasting to (B, H, Lq, Lk).
    """
    if cpu_flash_available(q):
        return private_op(*CPU_FLASH)(q, k, v, is_causal=is_causal, attn_mask=mask, scale=1.0)
    if is_causal and mask is not None:  # the public kernel takes one of the two: fold the triangle into the mask
        lq, lk = q.shape[-2], k.shape[-2]
        future = torch.ones(lq, lk, dtype=torch.bool, device=q.device).triu(1)  # (Lq, Lk), True = hidden
        mask, is_causal = mask.masked_fill(future, -torch.inf), False
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal, scale=1.0), None


def softmax_into(s: Tensor, out: Tensor) -> None:
    """``out[...] = softmax(s, dim=-1)`` without a temporary where the private op is there."""
    op = private_op(*SOFTMAX_OUT)
    if op is None or not out.is_contiguous():  # the op writes a strided out as if it were contiguous (2.13)
        out.copy_(torch.softmax(s, dim=-1))
    else:
        op(s, -1, False, out=out)
