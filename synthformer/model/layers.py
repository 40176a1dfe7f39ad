"""Transformer blocks with a pluggable token-mixing slot (synthetic attention or a baseline)."""
from __future__ import annotations

from torch import Tensor, nn

from ..attention import SyntheticAttention
from ..mixers import MIXERS, build_mixer
from .config import ModelConfig


def build_token_mixer(spec: str, cfg: ModelConfig, causal: bool) -> nn.Module:
    """A baseline by name (lightconv, dynamicconv, linformer) or SyntheticAttention for a synthesizer spec."""
    d, h, n = cfg.embed_dim, cfg.num_heads, cfg.max_seq_len
    name = spec.lower() if isinstance(spec, str) else spec
    if name in ("lightconv", "dynamicconv"):
        return build_mixer(name, d, h, n, causal=causal, dropout=cfg.attention_dropout, kernel_size=cfg.kernel_size)
    if name == "linformer":
        if causal:
            raise ValueError("linformer cannot be used in a decoder (its length projection mixes future "
                             "positions, so it cannot decode); use it in encoders only")
        return build_mixer(name, d, h, n, dropout=cfg.attention_dropout, linformer_k=cfg.linformer_k)
    try:
        return SyntheticAttention(d, h, n, spec, causal=causal, dropout=cfg.attention_dropout,
                                  factorized_k=cfg.factorized_k, dense_factors=cfg.dense_factors,
                                  random_init_scale=cfg.random_init_scale)
    except ValueError as e:
        if "unknown synthesizer" in str(e):
            raise ValueError(f"{e}; or a baseline: {', '.join(MIXERS)}") from None
        raise


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
            if cfg.cross_attention.lower() in MIXERS:
                raise ValueError(f"cross_attention={cfg.cross_attention!r}: baselines cannot attend to an "
                                 "encoder; use a synthesizer spec such as 'vanilla'")
            self.norm_c = nn.LayerNorm(d)
            self.cross = SyntheticAttention(d, cfg.num_heads, cfg.max_seq_len, cfg.cross_attention,
                                            dropout=cfg.attention_dropout, factorized_k=cfg.factorized_k,
                                            dense_factors=cfg.dense_factors, random_init_scale=cfg.random_init_scale)
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
