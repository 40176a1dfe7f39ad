"""Models built from one ModelConfig: decoder LM, encoder classifier, masked LM, encoder-decoder."""
from .config import KINDS, PRESETS, ModelConfig
from .io import CheckpointError, read_config, save
from .layers import Block, build_token_mixer
from .transformer import (MODELS, Classifier, LanguageModel, MaskedLM, Seq2Seq, SynthformerModel, build_model,
                          count_parameters, load)

__all__ = ["KINDS", "MODELS", "PRESETS", "Block", "CheckpointError", "Classifier", "LanguageModel", "MaskedLM",
           "ModelConfig", "Seq2Seq", "SynthformerModel", "build_model", "build_token_mixer", "count_parameters",
           "load", "read_config", "save"]
