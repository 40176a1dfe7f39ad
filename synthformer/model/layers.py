"""Transformer blocks with a pluggable token-mixing slot (synthetic attention or a baseline)."""
from __future__ import annotations

from torch import Tensor, nn

from ..mixers import build_token_mixer as build_mixer_for_slot
from .config import ModelConfig


def build_token_mixer(spec: str, cfg: ModelConfig, causal: bool, cross: bool = False) -> nn.Module:
    """The token mixer of one slot (a synthesizer mixture or a baseline), from the mixer registry: the
    spec as ``cfg`` resolved it, with the options ``cfg`` holds (no string is parsed again here)."""
    field = "cross_attention" if cross else "attention"
    return build_mixer_for_slot(cfg.mixer_spec(spec), embed_dim=cfg.embed_dim, num_heads=cfg.num_heads,
                                max_seq_len=cfg.max_seq_len, causal=causal, cross=cross, dropout=cfg.attention_dropout,
                                field=field, synthesizer_options=cfg.synthesizer_options, **cfg.baseline_options())


class FeedForward(nn.Sequential):
    def __init__(self, d: int, hidden: int, dropout: float):
        super().__init__(nn.Linear(d, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, d))


class Block(nn.Module):
    """Pre-norm block: x + mix(LN x) [+ cross(LN x, memory)] + FFN(LN x)."""

    def __init__(self, cfg: ModelConfig, spec: str, causal: bool = False, cross: bool = False):
        super().__init__()
        d = cfg.embed_dim
        self.norm1, self.mixer = nn.LayerNorm(d), build_token_mixer(spec, cfg, causal)
        self.cross = None
        if cross:
            self.norm_c = nn.LayerNorm(d)
            self.cross = build_token_mixer(cfg.cross_attention, cfg, causal=False, cross=True)
        self.norm2, self.ffn = nn.LayerNorm(d), FeedForward(d, cfg.ffn_dim, cfg.dropout)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x: Tensor, key_padding_mask: Tensor | None = None, memory: Tensor | None = None,
                memory_padding_mask: Tensor | None = None, cache: dict | None = None) -> Tensor:
        """x (B, L, d) -> (B, L, d); ``cache`` = {"self": ..., "cross": ...} for incremental decoding."""
        h, _ = self.mixer(self.norm1(x), key_padding_mask=key_padding_mask,
                          cache=cache["self"] if cache else None)
        x = x + self.drop(h)
        if self.cross is not None:
            h, _ = self.cross(self.norm_c(x), memory=memory, key_padding_mask=memory_padding_mask,
                              cache=cache["cross"] if cache else None)
            x = x + self.drop(h)
        return x + self.drop(self.ffn(self.norm2(x)))

    def init_cache(self, batch_size: int) -> dict:
        cache = {"self": self.mixer.init_cache(batch_size)}
        if self.cross is not None:
            cache["cross"] = self.cross.init_cache(batch_size, cross=True)
        return cache
