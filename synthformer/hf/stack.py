"""How the Hugging Face classes run synthformer's stacks: masks, left padding, hidden states,
attention weights and gradient checkpointing, around the synthformer modules themselves.

Left padding: synthformer's positions are absolute (a learned table, and the random / dense
synthesizers' tables are indexed by position), so a row padded on the left would see other
positions than the same row unpadded. Each left-padded row is therefore rotated to start at
position 0 before the stack (its padding moves to the end, where ``key_padding_mask`` hides it)
and the outputs are rotated back: a left-padded batch gives the logits of its rows run alone.
"""
from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor, nn

from ..errors import InputError


def padding_mask(attention_mask: Tensor | None) -> Tensor | None:
    """Hugging Face ``attention_mask`` (B, L), 1 = token -> synthformer ``key_padding_mask`` (True = padding);
    None when nothing is padded (synthformer's unmasked paths)."""
    if attention_mask is None:
        return None
    if attention_mask.dim() != 2:
        raise InputError(f"attention_mask must have shape (batch, length) with 1 = token, 0 = padding; "
                         f"got shape {tuple(attention_mask.shape)}")
    kpm = attention_mask == 0
    return kpm if bool(kpm.any()) else None


def left_padding(attention_mask: Tensor | None) -> Tensor | None:
    """The number of leading padding positions of each row (B,), or None when no row starts with padding."""
    if attention_mask is None or attention_mask.dim() != 2 or attention_mask.shape[1] == 0:
        return None
    lead = (attention_mask.cumsum(dim=1) == 0).sum(dim=1)  # (B,)
    return lead if bool(lead.any()) else None


def rotate(t: Tensor | None, lead: Tensor | None, dim: int = 1, back: bool = False) -> Tensor | None:
    """Rotate each row b of ``t`` along ``dim`` by ``lead[b]`` positions to the left (``back``: to the
    right, undoing it); ``t`` is (B, ..., L, ...)."""
    if t is None or lead is None:
        return t
    length = t.shape[dim]
    steps = torch.arange(length, device=t.device)[None, :] + (-lead if back else lead).to(t.device)[:, None]
    index = (steps % length).view(t.shape[0], *[length if d == dim else 1 for d in range(1, t.dim())])
    return t.gather(dim, index.expand_as(t))


def rotate_weights(t: Tensor, lead: Tensor | None) -> Tensor:
    """Attention weights (B, H, L, L) rotated back along both position axes (a Linformer's (B, H, L, k)
    along the query axis: its keys are projections of the whole sequence)."""
    t = rotate(t, lead, dim=2, back=True)
    return rotate(t, lead, dim=3, back=True) if t.shape[3] == t.shape[2] else t


def check_cache_padding(lead: Tensor | None, caching: bool) -> None:
    if caching and lead is not None:
        raise InputError("a left-padded batch cannot step through a synthformer cache (rows would sit at "
                         "different positions); call without past_key_values / use_cache, or pad on the right")


def _weights_hooks(stack: nn.Module, into: list) -> list:
    """Hooks that make every mixer of ``stack`` return its attention weights (B, H, Lq, Lk) into ``into``."""
    handles = []
    for i, layer in enumerate(stack.layers):
        def ask(module, args, kwargs):
            return args, {**kwargs, "need_weights": True}

        def keep(module, args, output, i=i):
            if output[1] is None:
                raise InputError(f"output_attentions: layer {i} is {type(module).__name__}, which has no attention "
                                 "weights to return; ask for output_hidden_states instead")
            into.append(output[1])

        handles += [layer.mixer.register_forward_pre_hook(ask, with_kwargs=True),
                    layer.mixer.register_forward_hook(keep)]
    return handles


def run_stack(stack: nn.Module, x: Tensor, key_padding_mask: Tensor | None = None, memory: Tensor | None = None,
              memory_padding_mask: Tensor | None = None, caches: list | None = None, *,
              hidden_states: bool = False, attentions: bool = False,
              checkpoint: Callable | None = None) -> tuple[Tensor, tuple | None, tuple | None]:
    """``stack(x, ...)`` (synthformer's ``Stack``: blocks, then the final LayerNorm), and optionally
    every layer's input and the final output (B, L, d) (``hidden_states``: embeddings first, the normed
    output last, as Hugging Face's decoders), every layer's attention weights (B, H, L, L), and
    ``checkpoint(layer, *args)`` around each block (gradient checkpointing)."""
    states = [x] if hidden_states else None
    weights: list = []
    hooks = _weights_hooks(stack, weights) if attentions else []
    try:
        for i, layer in enumerate(stack.layers):
            args = (x, key_padding_mask, memory, memory_padding_mask, caches[i] if caches else None)
            x = checkpoint(layer.__call__, *args) if checkpoint is not None else layer(*args)
            if hidden_states:
                states.append(x)
    finally:
        for handle in hooks:
            handle.remove()
    h = stack.norm(x)  # (B, L, d)
    if hidden_states:
        states[-1] = h
    return h, tuple(states) if hidden_states else None, tuple(weights) if attentions else None
