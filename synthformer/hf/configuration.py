"""SynthformerConfig: a Hugging Face config holding every ModelConfig field under its own name.

The synthformer names stay the source of truth; the usual Hugging Face names are aliases
(``attribute_map``), so ``config.hidden_size`` reads ``config.embed_dim`` and
``config.pad_token_id`` reads ``config.pad_id``.
"""
from __future__ import annotations

import dataclasses
from dataclasses import field

from transformers import PreTrainedConfig

from ..model.config import ModelConfig


class SynthformerConfig(PreTrainedConfig):
    """Hugging Face view of :class:`synthformer.model.ModelConfig` (same fields, same defaults)."""

    model_type = "synthformer"
    keys_to_ignore_at_inference = ["past_key_values"]
    attribute_map = {
        "hidden_size": "embed_dim",
        "num_attention_heads": "num_heads",
        "num_hidden_layers": "num_layers",
        "intermediate_size": "ffn_dim",
        "max_position_embeddings": "max_seq_len",
        "pad_token_id": "pad_id",
        "bos_token_id": "bos_id",
        "eos_token_id": "eos_id",
        "decoder_start_token_id": "bos_id",  # seq2seq decoding starts with BOS, as synthformer's generate
        "tie_word_embeddings": "tie_embeddings",
    }

    # --- the ModelConfig fields (tests/test_hf.py checks that the two lists agree)
    kind: str = "lm"  # lm | classifier | seq2seq | mlm
    vocab_size: int = 1000
    embed_dim: int = 256
    num_heads: int = 4
    num_layers: int = 4
    num_decoder_layers: int | None = None
    ffn_dim: int = 1024
    max_seq_len: int = 256
    dropout: float = 0.1
    attention_dropout: float = 0.0
    attention: str | list = "vanilla"
    decoder_attention: str | list | None = None
    cross_attention: str = "vanilla"
    num_classes: int = 2
    pooling: str = "mean"
    tie_embeddings: bool = True
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    factorized_k: int = 8
    dense_factors: list | tuple | None = None
    random_init_scale: float = 1.0
    random_init: str = "xavier"
    kernel_size: int = 7
    linformer_k: int = 32
    extra: dict = field(default_factory=dict)
    # --- Hugging Face only
    use_cache: bool = True  # generate() keeps synthformer's incremental caches

    def __post_init__(self, **kwargs):
        kwargs.pop("num_labels", None)  # num_classes is the source of truth
        super().__post_init__(**kwargs)
        if self.dense_factors is not None:
            self.dense_factors = list(self.dense_factors)
        self.is_encoder_decoder = self.kind == "seq2seq"
        if self.id2label is None or len(self.id2label) != self.num_classes:
            self.num_labels = self.num_classes
        names = (self.extra or {}).get("labels")
        if self.kind == "classifier" and isinstance(names, list) and len(names) == self.num_classes \
                and all(self.id2label[i] == f"LABEL_{i}" for i in range(self.num_classes)):
            self.id2label = {i: str(n) for i, n in enumerate(names)}  # the pipeline answers with the class names
            self.label2id = {str(n): i for i, n in enumerate(names)}
        self.to_model_config()  # validate now: a bad field fails here, with ModelConfig's message

    @classmethod
    def from_model_config(cls, cfg: ModelConfig, **kwargs) -> "SynthformerConfig":
        """The Hugging Face config of a synthformer ModelConfig."""
        return cls(**cfg.to_dict(), **kwargs)

    def to_model_config(self) -> ModelConfig:
        """The synthformer ModelConfig these fields describe."""
        names = [f.name for f in dataclasses.fields(ModelConfig)]
        values = {n: getattr(self, n) for n in names}
        values["extra"] = dict(values["extra"] or {})
        return ModelConfig.from_dict(values)
