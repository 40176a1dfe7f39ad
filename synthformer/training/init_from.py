"""Fine-tuning: a new model started from a pretrained encoder (``TrainConfig.init_from``).

    overrides, tokenizer, source = from_pretrained(cfg, overrides, data)  # before anything is built
    init_encoder(model, source, cfg.init_from)                            # after the model is built

The fine-tuned model takes the pretrained run's shape and tokenizer; its embeddings, position table and
encoder layers start as the pretrained ones (its head is its own). The suite that pretrains and
fine-tunes every variant (the paper's Tables 5-6) is synthformer.evidence.suite.
"""
from __future__ import annotations

import torch

from ..errors import ConfigError, SynthformerError
from .plan import open_trained, tokenizer_identity
from .task_data import TaskData

ENCODER_PREFIXES = ("embed.", "encoder.")  # what init_from copies: token + position embeddings, encoder layers
SHAPE_FIELDS = ("embed_dim", "num_heads", "num_layers", "ffn_dim", "max_seq_len", "attention", "factorized_k",
                "dense_factors", "kernel_size", "linformer_k")  # ModelConfig fields init_from takes over


def pretrained_encoder(path: str):
    """(model, tokenizer) of `path`: a run folder (its final model, else its latest checkpoint) or a
    model / checkpoint folder inside one. ConfigError when it holds no encoder or cannot be opened."""
    try:
        run = open_trained(path, device="cpu", log=lambda m: None)
    except SynthformerError as e:
        raise ConfigError(f"init_from={path!r}: {str(e).splitlines()[0]}") from None
    if not any(k.startswith("encoder.") for k in run.model.state_dict()):
        raise ConfigError(f"init_from={path!r} holds a {run.model.config.kind} model without an encoder; give an "
                          "mlm, classify or seq2seq run")
    return run.model, run.tokenizer


def init_encoder(model: torch.nn.Module, source: torch.nn.Module, name: str) -> int:
    """Copy the embeddings, position table and encoder layers of `source` into `model` (its head is
    left as built); strict: the two must hold the same encoder tensors with the same shapes, else a
    one-line ConfigError naming the first differences. Returns the number of tensors copied."""
    mine = {k: v for k, v in model.state_dict().items() if k.startswith(ENCODER_PREFIXES)}
    theirs = {k: v for k, v in source.state_dict().items() if k.startswith(ENCODER_PREFIXES)}
    missing, extra = sorted(mine.keys() - theirs.keys()), sorted(theirs.keys() - mine.keys())
    shapes = [f"{k} {tuple(theirs[k].shape)} vs {tuple(v.shape)}" for k, v in mine.items()
              if k in theirs and theirs[k].shape != v.shape]
    if missing or extra or shapes:
        raise ConfigError(f"init_from={name}: its encoder does not fit this model (shapes: {shapes[:3]}, only here: "
                          f"{missing[:3]}, only there: {extra[:3]}); use the pretrained run's model shape")
    model.load_state_dict(theirs, strict=False)
    return len(theirs)


def from_pretrained(cfg, overrides: dict, data: TaskData | None) -> tuple[dict, object, torch.nn.Module]:
    """The pretrained run of ``cfg.init_from`` (`cfg` a TrainConfig): (the model overrides over its
    shape and vocabulary, its tokenizer, its model). Refuses data encoded with another tokenizer."""
    source, tok = pretrained_encoder(cfg.init_from)
    if data is not None and tokenizer_identity(data.tokenizer) != tokenizer_identity(tok):
        raise ConfigError(f"init_from={cfg.init_from}: the data were encoded with another tokenizer than the "
                          "pretrained run's; encode them with its tokenizer (prepare_data(cfg, seq_len, tokenizer))")
    shape = {k: getattr(source.config, k) for k in SHAPE_FIELDS}
    return {**shape, "vocab_size": source.config.vocab_size, **overrides}, tok, source
