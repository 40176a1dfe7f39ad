"""Shared interface of the synthesizing functions.

A synthesizing function turns the input into attention *logits* for one layer, all heads at once.
It returns them in one of two forms, so the layer can pick the fastest exact way to use them:

* :class:`DotLogits` -- ``S = q @ k^T`` for per-head feature tables ``q`` (queries) and ``k`` (keys).
  Vanilla attention, Dense (token features against learned per-position keys) and Factorized Random
  (two learned position tables) all have this form, which fits fused attention kernels.
* :class:`FullLogits` -- the logits themselves, ``S`` of shape (B or 1, H, Lq, Lk).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ...errors import ConfigError
from ...utils.typed import check_fields


@dataclass
class DotLogits:
    """Logits ``scale_h * q @ k^T``; a synthesizer's own scale (1/sqrt(d_h)) is already folded into ``q``."""

    q: Tensor  # (B or 1, H, Lq, E)
    k: Tensor  # (B or 1, H, Lk, E)
    scale: Tensor | None = None  # (H,) per-head factor (a mixture weight), kept apart so a kernel may apply it itself

    def scaled(self, alpha: Tensor) -> "DotLogits":
        """Multiply the logits by a per-head weight ``alpha`` of shape (H,)."""
        return DotLogits(self.q, self.k, alpha if self.scale is None else self.scale * alpha)

    def features(self) -> Tensor:
        """The query features with the scale folded in: ``features() @ k^T`` are the logits."""
        return self.q if self.scale is None else self.q * self.scale.view(1, -1, 1, 1)

    def materialize(self) -> Tensor:
        return self.features() @ self.k.transpose(-2, -1)  # (B or 1, H, Lq, Lk)


@dataclass
class FullLogits:
    """Logits given in full."""

    s: Tensor  # (B or 1, H, Lq, Lk)
    scale: Tensor | None = None  # (H,) per-head factor, kept apart so fast paths apply it block by block

    def scaled(self, alpha: Tensor) -> "FullLogits":
        return FullLogits(self.s, alpha if self.scale is None else self.scale * alpha)

    def materialize(self) -> Tensor:
        return self.s if self.scale is None else self.s * self.scale.view(1, -1, 1, 1)


@dataclass(frozen=True)
class SynthesizerOptions:
    """Options of the synthesizing functions: declared here once (type, default, the comment that is
    their `synthformer train --help` text, the range in OPTION_RULES); ModelConfig takes every field but
    ``bias`` over as a field of its own and hands the layers one SynthesizerOptions built from them."""

    factorized_k: int = 8  # rank k of Factorized Random (paper: 8; 32 for encoding tasks)
    dense_factors: tuple[int, int] | None = None  # (a, b) of Factorized Dense with a*b = max_seq_len; None = closest to sqrt
    random_init_scale: float = 1.0  # multiplier of the init bound of R / FR tables (see random_init; the official code's 3-D Glorot is ~sqrt(2/(H+N)) of the per-head bound; docs/recipe.md)
    bias: bool = True  # biases on the Q/K projections of the dot product (as nn.MultiheadAttention)
    random_init: str = "xavier"  # R / FR table init: "xavier" per head, bound sqrt(6/(2N)); "glorot3d" the official Mesh TF fans over [N, H, N], bound sqrt(6/(N(H+N))) (see init_bound)

    def __post_init__(self):
        """The one check of every option (a model config builds its options once, so it checks them here)."""
        check_fields(self, OPTION_RULES)


class Synthesizer(nn.Module):
    """Base class: one synthesizing function for all heads of one layer.

    Subclasses set the class attributes (``uses_keys``, ``input_dependent``, ``position_tables``) and
    implement :meth:`logits`.
    """

    uses_keys: bool = False  # True when logits need per-key features that incremental decoding caches
    input_dependent: bool = True  # False when logits do not depend on X (shared by the whole batch)
    # Attribute names of the position-indexed tables (a row per position, e.g. Random's ("r",)): the
    # optimizer gives them the tables' group (own lr multiplier, no decay; synthformer/training/optim.py).
    # A name that is a buffer (Fixed Random's r) has nothing to train and is skipped.
    position_tables: tuple[str, ...] = ()
    # False when the declared tables are buffers, never trained (Fixed Random): with it the class says,
    # without building a model, whether the optimizer's tables group gets anything from it.
    trainable: bool = True

    def __init__(self, embed_dim: int, num_heads: int, max_seq_len: int, options: SynthesizerOptions):
        super().__init__()
        self.embed_dim, self.num_heads, self.max_seq_len = embed_dim, num_heads, max_seq_len
        self.head_dim = embed_dim // num_heads
        self.options = options

    def key_features(self, x_k: Tensor) -> Tensor | None:
        """Per-key features to cache during decoding, (B, H, Lk, E); None for most synthesizers."""
        return None

    def logits(self, x_q: Tensor, keys: Tensor | None, offset: int, k_len: int) -> DotLogits | FullLogits:
        """Logits for queries ``x_q`` (B, Lq, d) at positions ``offset .. offset+Lq-1`` over ``k_len`` keys.

        ``keys`` is :meth:`key_features` of all keys (uses_keys only).
        """
        raise NotImplementedError

    def split_heads(self, t: Tensor) -> Tensor:
        """(B, L, H*E) -> (B, H, L, E)."""
        b, length, _ = t.shape
        return t.view(b, length, self.num_heads, -1).transpose(1, 2)


def positions(table: Tensor, dim: int, start: int, length: int) -> Tensor:
    """``table`` cut to ``length`` positions from ``start`` along ``dim`` (a view, in eager mode).

    While ``torch.export`` traces, the rows are gathered instead: slicing a table of N positions to a symbolic
    length L makes the tracer ask whether the slice is contiguous, that is whether L == N, and that guard
    would pin a dynamic length (``Dim("L", max=max_seq_len)``) to one side of N.
    """
    if torch.compiler.is_exporting():
        return table.index_select(dim, torch.arange(start, start + length, device=table.device))
    return table.narrow(dim, start, length)


RANDOM_INITS = ("xavier", "glorot3d")
# Range of every option whose type alone does not say it (the type is the field's annotation).
OPTION_RULES = {
    "factorized_k": (lambda v: v >= 1, "a positive integer (paper: 8; 32 for encoding tasks)"),
    "dense_factors": (lambda v: all(x >= 1 for x in v), "a pair of positive integers (a, b) with a*b = max_seq_len, "
                                                        "or None for the pair nearest sqrt(max_seq_len)"),
    "random_init_scale": (lambda v: v > 0, "> 0 (1.0 = per-head Xavier-uniform)"),
    "random_init": (lambda v: v in RANDOM_INITS, f"one of {', '.join(RANDOM_INITS)}"),
}


def init_bound(kind: str, rows: int, cols: int, heads: int, scale: float = 1.0) -> float:
    """Uniform bound of a per-head position table of shape (H, rows, cols) (R: N x N; R1, R2: N x k).

    ``"xavier"``: Xavier/Glorot per head, fans (rows, cols): ``sqrt(6 / (rows + cols))`` (R: ``sqrt(3/N)``).
    ``"glorot3d"``: what the official Mesh TensorFlow code draws, Glorot-uniform over the 3-D variable
    [rows, heads, cols], whose fans count the leading axis as receptive field: fan_in = rows * heads,
    fan_out = rows * cols, bound ``sqrt(6 / (rows * (heads + cols)))`` (R: ``sqrt(6 / (N (H + N)))``,
    about ``sqrt(2 / (H + N))`` times the per-head bound). Either is multiplied by ``scale``.
    """
    if kind == "xavier":
        return scale * math.sqrt(6.0 / (rows + cols))
    if kind == "glorot3d":
        return scale * math.sqrt(6.0 / (rows * (heads + cols)))
    raise ConfigError(f"random_init={kind!r} must be one of {', '.join(RANDOM_INITS)}")


def random_table(heads: int, rows: int, cols: int, options: SynthesizerOptions) -> Tensor:
    """A (heads, rows, cols) table drawn uniformly within :func:`init_bound` of ``options``."""
    bound = init_bound(options.random_init, rows, cols, heads, options.random_init_scale)
    with torch.no_grad():
        return torch.empty(heads, rows, cols).uniform_(-bound, bound)


def xavier_uniform_(t: Tensor, fan_in: int, fan_out: int, scale: float) -> Tensor:
    """Xavier/Glorot-uniform init with its bound multiplied by ``scale``."""
    bound = scale * math.sqrt(6.0 / (fan_in + fan_out))
    with torch.no_grad():
        return t.uniform_(-bound, bound)
