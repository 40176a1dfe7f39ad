"""Decoding strategies shared by the decoder LM and the seq2seq model: greedy, sampling, beam search.

The model supplies a :class:`Stepper`: ``step(tokens, n_new)`` returns next-token logits (B, V) given
all tokens so far (B, L), of which the last ``n_new`` are new since the previous call; ``reorder``
selects batch rows (beam search). The cached stepper feeds only the new tokens through the layers'
incremental caches; the uncached one recomputes the whole prefix, which tests compare against.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch
from torch import Tensor
from ..errors import InputError

STRATEGIES = ("greedy", "sample", "beam")


@dataclass
class Stepper:
    step: Callable[[Tensor, int], Tensor]  # (tokens (B, L), n_new) -> logits (B, V)
    reorder: Callable[[Tensor], None]  # batch row selection, (B',) indices


def filter_logits(logits: Tensor, top_k: int = 0, top_p: float = 1.0) -> Tensor:
    """Keep the top_k tokens and the smallest set whose probability reaches top_p; others -> -inf."""
    if top_k > 0:
        kth = torch.topk(logits, min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logits, order = torch.sort(logits, descending=True, dim=-1)
        cum = torch.softmax(sorted_logits, dim=-1).cumsum(dim=-1)
        drop = cum - torch.softmax(sorted_logits, dim=-1) >= top_p  # keep tokens until top_p is reached
        logits = logits.masked_fill(drop.scatter(-1, order, drop), float("-inf"))
    return logits


def decode(stepper: Stepper, tokens: Tensor, max_new_tokens: int, eos_id: int, pad_id: int,
           strategy: str = "greedy", temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0,
           num_beams: int = 4, length_penalty: float = 1.0, generator: torch.Generator | None = None,
           vocab_size: int | None = None) -> Tensor:
    """Extend ``tokens`` (B, L0) by up to ``max_new_tokens``; finished rows are padded after EOS.
    ``vocab_size`` (the model's) bounds the beam width: a beam wider than the vocabulary cannot be filled.

    Returns (B, L0 + steps).
    """
    if strategy not in STRATEGIES:
        raise InputError(f"strategy={strategy!r} must be one of {', '.join(STRATEGIES)}")
    if max_new_tokens < 0 or num_beams < 1 or top_k < 0 or not 0.0 < top_p <= 1.0:
        raise InputError(f"need max_new_tokens >= 0, num_beams >= 1, top_k >= 0 and 0 < top_p <= 1; got "
                         f"{max_new_tokens}, {num_beams}, {top_k}, {top_p}")
    if not 0.0 < temperature < math.inf:  # nan too: it would sample from nan probabilities
        raise InputError(f"temperature={temperature} must be a finite number > 0")
    if not math.isfinite(length_penalty):
        raise InputError(f"length_penalty={length_penalty} must be a finite number")
    if strategy == "beam":
        if vocab_size is not None and num_beams > vocab_size:
            raise InputError(f"num_beams={num_beams} is wider than the vocabulary ({vocab_size} tokens); use at most "
                             f"{vocab_size} (a few, e.g. 4, is usual)")
        return _beam(stepper, tokens, max_new_tokens, eos_id, pad_id, num_beams, length_penalty)
    done = torch.zeros(tokens.shape[0], dtype=torch.bool, device=tokens.device)
    n_new = tokens.shape[1]
    for _ in range(max_new_tokens):
        logits = stepper.step(tokens, n_new).float()  # (B, V)
        if strategy == "greedy":
            nxt = logits.argmax(dim=-1)
        else:
            probs = torch.softmax(filter_logits(logits / temperature, top_k, top_p), dim=-1)
            nxt = torch.multinomial(probs, 1, generator=generator).squeeze(1)
        nxt = nxt.masked_fill(done, pad_id)
        tokens = torch.cat([tokens, nxt[:, None]], dim=1)
        n_new = 1
        done |= nxt == eos_id
        if bool(done.all()):
            break
    return tokens


def _beam(stepper, tokens, max_new_tokens, eos_id, pad_id, k, length_penalty):
    """Beam search; hypotheses are ranked at the end by log-probability / length ** length_penalty."""
    b, l0 = tokens.shape
    index = torch.arange(b, device=tokens.device).repeat_interleave(k)
    stepper.reorder(index)
    tokens = tokens.index_select(0, index)  # (B*K, L0)
    scores = torch.full((b, k), float("-inf"), device=tokens.device)
    scores[:, 0] = 0.0  # all beams start identical: keep one alive
    done = torch.zeros(b * k, dtype=torch.bool, device=tokens.device)
    lengths = torch.zeros(b * k, device=tokens.device)
    n_new = l0
    for _ in range(max_new_tokens):
        logp = torch.log_softmax(stepper.step(tokens, n_new).float(), dim=-1)  # (B*K, V)
        vocab = logp.shape[-1]
        # a finished hypothesis continues only with padding, at no cost
        logp[done] = float("-inf")
        logp[done, pad_id] = 0.0
        cand = (scores.view(b * k, 1) + logp).view(b, k * vocab)
        scores, flat = cand.topk(k, dim=-1)  # (B, K)
        beam = flat // vocab + torch.arange(b, device=tokens.device)[:, None] * k
        beam, nxt = beam.view(-1), (flat % vocab).view(-1)
        stepper.reorder(beam)
        done, lengths = done[beam], lengths[beam]
        lengths = lengths + (~done).float()
        tokens = torch.cat([tokens.index_select(0, beam), nxt[:, None]], dim=1)
        done = done | (nxt == eos_id)
        n_new = 1
        if bool(done.all()):
            break
    ranked = scores.view(-1) / lengths.clamp(min=1) ** length_penalty
    best = ranked.view(b, k).argmax(dim=-1) + torch.arange(b, device=tokens.device) * k
    return tokens.index_select(0, best)
