"""ModelConfig: one typed config for every model kind, with named presets."""
from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass, field

KINDS = ("lm", "classifier", "seq2seq", "mlm")

# Named shapes; "base" is the paper's base Transformer (6 layers, d=512, 8 heads, FFN 2048).
PRESETS: dict[str, dict] = {
    "tiny": dict(embed_dim=64, num_heads=2, num_layers=2, ffn_dim=256, max_seq_len=128),
    "small": dict(embed_dim=256, num_heads=4, num_layers=4, ffn_dim=1024, max_seq_len=256),
    "base": dict(embed_dim=512, num_heads=8, num_layers=6, ffn_dim=2048, max_seq_len=512),
}

AttentionSpec = str | list  # one spec for all layers, or a list with one spec per layer


@dataclass
class ModelConfig:
    """Everything needed to rebuild a model; stored with every checkpoint and result row."""

    kind: str = "lm"  # lm | classifier | seq2seq | mlm
    vocab_size: int = 1000  # tokens in the vocabulary (shared by source and target in seq2seq)
    embed_dim: int = 256  # model width d
    num_heads: int = 4  # attention heads H (also the head count of the conv / linformer baselines)
    num_layers: int = 4  # encoder layers (decoder layers for lm)
    num_decoder_layers: int | None = None  # seq2seq decoder layers; None = num_layers
    ffn_dim: int = 1024  # hidden width of the position-wise feed-forward block
    max_seq_len: int = 256  # N: longest sequence; sizes R, D, FR, FD and the position table
    dropout: float = 0.1  # dropout on embeddings, residual branches and the feed-forward block
    attention_dropout: float = 0.0  # dropout on attention weights
    attention: AttentionSpec = "vanilla"  # token mixer: a synthesizer spec ("R", "D+V", ...) or a baseline name
    decoder_attention: AttentionSpec | None = None  # seq2seq decoder self-attention; None = attention
    cross_attention: str = "vanilla"  # seq2seq encoder-decoder attention (the paper keeps it vanilla)
    num_classes: int = 2  # classifier outputs
    pooling: str = "mean"  # classifier pooling: "mean" over real tokens or "cls" (first token)
    tie_embeddings: bool = True  # share input embedding and output projection (lm, mlm, seq2seq)
    pad_id: int = 0  # padding token
    bos_id: int = 1  # begin-of-sequence token (seq2seq decoding starts with it)
    eos_id: int = 2  # end-of-sequence token (generation stops at it)
    factorized_k: int = 8  # rank of Factorized Random (paper: 8; 32 for encoding tasks)
    dense_factors: tuple[int, int] | None = None  # (a, b) of Factorized Dense, a*b = max_seq_len; None = automatic
    random_init_scale: float = 1.0  # multiplier of the Xavier-uniform bound of R / FR tables (1.0 = official code)
    kernel_size: int = 7  # lightconv / dynamicconv kernel width
    linformer_k: int = 32  # linformer projected length
    extra: dict = field(default_factory=dict)  # free-form notes carried along (e.g. tokenizer kind); not used to build

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind={self.kind!r} is not one of {', '.join(KINDS)}")
        if self.embed_dim % self.num_heads:
            raise ValueError(f"num_heads={self.num_heads} must divide embed_dim={self.embed_dim}")
        if self.pooling not in ("mean", "cls"):
            raise ValueError(f"pooling={self.pooling!r} must be 'mean' or 'cls'")
        for name in ("vocab_size", "num_layers", "ffn_dim", "max_seq_len", "num_classes"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name}={getattr(self, name)} must be positive")
        if self.dense_factors is not None:
            self.dense_factors = tuple(self.dense_factors)
        for spec, layers in ((self.attention, self.num_layers), (self.decoder_attention, self.decoder_layers)):
            if isinstance(spec, (list, tuple)) and len(spec) != layers:
                raise ValueError(f"attention list {spec} has {len(spec)} entries for {layers} layers")

    @property
    def decoder_layers(self) -> int:
        return self.num_decoder_layers or self.num_layers

    def layer_specs(self, decoder: bool = False) -> list[str]:
        """The token-mixer spec of every layer of the encoder (or the decoder)."""
        spec = self.decoder_attention if decoder and self.decoder_attention is not None else self.attention
        n = self.decoder_layers if decoder else self.num_layers
        return list(spec) if isinstance(spec, (list, tuple)) else [spec] * n

    @classmethod
    def preset(cls, name: str, **overrides) -> "ModelConfig":
        """A named shape (tiny, small, base) with field overrides, e.g. ``preset("tiny", kind="lm", attention="R")``."""
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; valid: {', '.join(PRESETS)}")
        return cls.from_dict(PRESETS[name] | overrides)

    @classmethod
    def from_dict(cls, d: dict) -> "ModelConfig":
        """Build from a plain dict; an unknown key is an error naming the closest valid one."""
        names = [f.name for f in dataclasses.fields(cls)]
        for key in d:
            if key not in names:
                close = difflib.get_close_matches(key, names, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ValueError(f"unknown ModelConfig field {key!r}{hint}")
        return cls(**d)

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["dense_factors"] = list(self.dense_factors) if self.dense_factors else None
        return d
