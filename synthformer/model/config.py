"""ModelConfig: one typed config for every model kind, with named presets.

The synthesizers' options are declared once, in :class:`~synthformer.attention.synthesizers.base.SynthesizerOptions`
(type, default, help comment, range rule): ModelConfig takes them over as fields of its own
(:func:`with_options`), builds the options object once (``cfg.synthesizer_options``) and the layers
receive that object. Types are checked by synthformer.utils.typed, like TrainConfig's.
"""
from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass, field

import math
import os

from ..attention.synthesizers.base import SynthesizerOptions
from ..errors import ConfigError
from ..mixers import MixerSpec, check_slot, mixer_state_numel, resolve_mixer
from ..utils.typed import check_fields

KINDS = ("lm", "classifier", "seq2seq", "mlm")

# Named shapes; "base" is the paper's base Transformer (6 layers, d=512, 8 heads, FFN 2048).
PRESETS: dict[str, dict] = {
    "tiny": dict(embed_dim=64, num_heads=2, num_layers=2, ffn_dim=256, max_seq_len=128),
    "small": dict(embed_dim=256, num_heads=4, num_layers=4, ffn_dim=1024, max_seq_len=256),
    "base": dict(embed_dim=512, num_heads=8, num_layers=6, ffn_dim=2048, max_seq_len=512),
}

AttentionSpec = str | list  # one spec for all layers, or a list with one spec per layer
NOT_IN_CONFIG = ("bias",)  # SynthesizerOptions a model config does not set (the layer's default)


def with_options(options_cls, skip: tuple[str, ...] = ()):
    """Class decorator (under ``@dataclass``): every field of the dataclass `options_cls` but `skip`
    becomes a field of the decorated class, with its type and default; ``metadata["declared_in"]``
    names the class whose source holds its help comment."""
    def add(cls):
        for f in dataclasses.fields(options_cls):
            if f.name not in skip:
                cls.__annotations__[f.name] = f.type
                setattr(cls, f.name, field(default=f.default, metadata={"declared_in": options_cls}))
        return cls
    return add


@dataclass
@with_options(SynthesizerOptions, skip=NOT_IN_CONFIG)
class ModelConfig:
    """Everything needed to rebuild a model; stored with every checkpoint and result row.

    Also the synthesizers' options (factorized_k, dense_factors, random_init_scale, random_init: see
    SynthesizerOptions). Derived once on construction, not fields: ``synthesizer_options`` (what every
    synthetic attention layer receives) and the resolved token mixer of every slot (``mixer_spec``).
    Treat a ModelConfig as immutable: use ``dataclasses.replace`` for another one."""

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
    pooling: str = "mean"  # classifier pooling: "mean" over real tokens or "cls" (the first position: the <bos> the classify task prepends as CLS token)
    tie_embeddings: bool = True  # share input embedding and output projection (lm, mlm, seq2seq)
    pad_id: int = 0  # padding token
    bos_id: int = 1  # begin-of-sequence token (seq2seq decoding starts with it)
    eos_id: int = 2  # end-of-sequence token (generation stops at it)
    kernel_size: int = 7  # lightconv / dynamicconv kernel width
    linformer_k: int = 32  # linformer projected length
    extra: dict = field(default_factory=dict)  # free-form notes carried along (e.g. tokenizer kind); not used to build

    def __post_init__(self):
        """Fail fast: every field is checked here, so a config that exists can be built (the memory it
        needs is checked where a model is built for training: :func:`check_memory`)."""
        check_fields(self, RULES)
        self.synthesizer_options = SynthesizerOptions(**{name: getattr(self, name) for name in OPTION_FIELDS})
        self._mixers = validate(self)

    def mixer_spec(self, spec) -> MixerSpec:
        """The resolved token mixer of a slot spec of this config (resolved once, on construction; a
        spec the config does not hold is resolved now, and its slot checked where it is built)."""
        return self._mixers.get(repr(spec)) or resolve_mixer(spec)

    def baseline_options(self) -> dict:
        """The options the baseline mixers take (each takes its own)."""
        return {name: getattr(self, name) for name in BASELINE_OPTIONS}

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
            raise ConfigError(f"unknown preset {name!r}; valid: {', '.join(PRESETS)}")
        return cls.from_dict(PRESETS[name] | overrides)

    @classmethod
    def from_dict(cls, d: dict) -> "ModelConfig":
        """Build from a plain dict; an unknown key is an error naming the closest valid one."""
        names = [f.name for f in dataclasses.fields(cls)]
        for key in d:
            if key not in names:
                close = difflib.get_close_matches(key, names, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ConfigError(f"unknown ModelConfig field {key!r}{hint}")
        return cls(**d)

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["dense_factors"] = list(self.dense_factors) if self.dense_factors else None
        return d


# ----------------------------------------------------------------------------- validation
POOLINGS = ("mean", "cls")
BYTES_PER_VALUE = 4  # float32 parameters and buffers
POSITIVE_INTS = ("vocab_size", "embed_dim", "num_heads", "num_layers", "ffn_dim", "max_seq_len", "num_classes",
                 "kernel_size", "linformer_k")
TOKEN_IDS = ("pad_id", "bos_id", "eos_id")
OPTION_FIELDS = tuple(f.name for f in dataclasses.fields(SynthesizerOptions) if f.name not in NOT_IN_CONFIG)
BASELINE_OPTIONS = ("kernel_size", "linformer_k")

# Range of every field whose type alone does not say it (the synthesizer options: SynthesizerOptions's rules).
RULES: dict[str, tuple] = {
    "kind": (lambda v: v in KINDS, f"one of {', '.join(KINDS)}"),
    "pooling": (lambda v: v in POOLINGS, f"one of {', '.join(POOLINGS)}"),
    **{name: (lambda v: v >= 1, "a positive integer") for name in POSITIVE_INTS},
    "num_decoder_layers": (lambda v: v >= 1, "positive (or None = num_layers)"),
    "dropout": (lambda v: 0.0 <= v < 1.0, "in [0, 1), e.g. 0.1"),
    "attention_dropout": (lambda v: 0.0 <= v < 1.0, "in [0, 1), e.g. 0.1"),
}


def validate(cfg: ModelConfig) -> dict[str, MixerSpec]:
    """Raise ConfigError (one line: field, value, fix) unless the fields of ``cfg`` (each already of
    its type and range) fit together; returns the resolved mixer of every slot spec (by ``repr``)."""
    _check_combinations(cfg)
    mixers = {}
    for field_name, spec, causal, cross in slots(cfg):
        mixers[repr(spec)] = check_slot(spec, causal=causal, cross=cross, field=field_name)
    _check_mixer_options(cfg, mixers.values())
    return mixers


def _check_combinations(cfg: ModelConfig) -> None:
    if cfg.embed_dim % cfg.num_heads:
        divisors = [h for h in range(1, min(cfg.embed_dim, 64) + 1) if cfg.embed_dim % h == 0]
        raise ConfigError(f"num_heads={cfg.num_heads} must divide embed_dim={cfg.embed_dim}; "
                          f"e.g. one of {', '.join(map(str, divisors[-6:]))}")
    for name in TOKEN_IDS:
        if not 0 <= getattr(cfg, name) < cfg.vocab_size:
            raise ConfigError(f"{name}={getattr(cfg, name)} must be a token id in [0, vocab_size={cfg.vocab_size})")
    for name in ("attention", "decoder_attention"):
        spec = getattr(cfg, name)
        if isinstance(spec, list):
            layers = cfg.num_layers if name == "attention" else cfg.decoder_layers
            if len(spec) != layers:
                raise ConfigError(f"{name}: attention list {spec} has {len(spec)} entries for {layers} layers; "
                                  f"give one spec per layer or a single spec for all")
            for i, s in enumerate(spec):
                resolve_mixer(s, f"{name}[{i}]")
        elif spec is not None:
            resolve_mixer(spec, name)  # a typo in a field the model kind does not use is still an error
    resolve_mixer(cfg.cross_attention, "cross_attention")


def slots(cfg: ModelConfig) -> list[tuple[str, object, bool, bool]]:
    """(field label, spec, causal, cross) of every token-mixing slot the model of ``cfg`` has."""
    def layer_slots(name: str, spec, n: int, causal: bool) -> list:
        if isinstance(spec, (list, tuple)):
            return [(f"{name}[{i}]", s, causal, False) for i, s in enumerate(spec)]
        return [(name, spec, causal, False)] * n

    if cfg.kind == "lm":
        return layer_slots("attention", cfg.attention, cfg.num_layers, True)
    if cfg.kind in ("classifier", "mlm"):
        return layer_slots("attention", cfg.attention, cfg.num_layers, False)
    # seq2seq: the decoder's self-attention is `decoder_attention`, or `attention` when that is None
    dec_name = "decoder_attention" if cfg.decoder_attention is not None else "decoder_attention=None, so attention"
    dec_spec = cfg.decoder_attention if cfg.decoder_attention is not None else cfg.attention
    return (layer_slots("attention", cfg.attention, cfg.num_layers, False)
            + layer_slots(dec_name, dec_spec, cfg.decoder_layers, True)
            + [("cross_attention", cfg.cross_attention, False, True)] * cfg.decoder_layers)


def _check_mixer_options(cfg: ModelConfig, mixers) -> None:
    """The options against max_seq_len (their own ranges: SynthesizerOptions)."""
    members = {m for mixer in mixers for m in mixer.members}
    n = cfg.max_seq_len
    if "factorized_random" in members and cfg.factorized_k > n:
        raise ConfigError(f"factorized_k={cfg.factorized_k} must be between 1 and max_seq_len={n} "
                          "(paper: 8; 32 for encoding tasks)")
    if cfg.dense_factors is not None:
        pair = cfg.dense_factors
        if pair[0] * pair[1] != n:
            a = max(d for d in range(1, math.isqrt(n) + 1) if n % d == 0)
            raise ConfigError(f"dense_factors={pair} multiply to {pair[0] * pair[1]}, not max_seq_len={n}; "
                              f"e.g. use ({a}, {n // a}) or None")


def estimate_parameter_bytes(cfg: ModelConfig) -> int:
    """float32 bytes of the parameters and buffers the model of ``cfg`` holds, computed without building it
    (the token mixers are counted on the meta device; the rest from the shapes in transformer.py)."""
    d, f, v, n = cfg.embed_dim, cfg.ffn_dim, cfg.vocab_size, cfg.max_seq_len
    numel = v * d + n * d  # token embedding and position table
    numel += {"lm": 0 if cfg.tie_embeddings else v * d, "mlm": 0 if cfg.tie_embeddings else v * d,
              "seq2seq": 0 if cfg.tie_embeddings else v * d, "classifier": d * cfg.num_classes + cfg.num_classes}[cfg.kind]
    block = 2 * 2 * d + (d * f + f + f * d + d)  # two LayerNorms and the feed-forward block
    counted: dict[tuple, int] = {}
    for _, spec, causal, cross in slots(cfg):
        key = (str(spec), causal, cross)
        if key not in counted:
            counted[key] = mixer_state_numel(spec, embed_dim=d, num_heads=cfg.num_heads, max_seq_len=n,
                                             causal=causal, cross=cross, synthesizer_options=cfg.synthesizer_options,
                                             **cfg.baseline_options())
        numel += counted[key] + (2 * d if cross else block)  # a cross slot adds its own LayerNorm
    stacks = 2 if cfg.kind == "seq2seq" else 1
    return (numel + stacks * 2 * d) * BYTES_PER_VALUE  # final LayerNorm of each stack


def physical_memory_bytes() -> int | None:
    """The machine's physical memory (None where the OS does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def check_memory(cfg: ModelConfig) -> None:
    """ConfigError when the parameters of the model of ``cfg`` alone exceed this machine's physical memory
    (checked where a model is built for training, not when a stored config is read)."""
    need, have = estimate_parameter_bytes(cfg), physical_memory_bytes()
    if have is not None and need > have:
        sizes = ", ".join(f"{k}={getattr(cfg, k)}" for k in ("embed_dim", "num_layers", "max_seq_len", "vocab_size"))
        raise ConfigError(f"the model is too large for this machine: its parameters alone need about "
                          f"{need / 2**30:,.1f} GiB (estimated from {sizes}), more than the {have / 2**30:,.1f} GiB "
                          "of physical memory; lower one of them")
