"""The transformers-dependent part of ``synthformer.hf``; importing it registers the Auto classes."""
from __future__ import annotations

import transformers
from transformers import AutoConfig

from .cache import SynthformerCache, SynthformerCacheLayer
from .configuration import SynthformerConfig
from .export import AUTO_CLASSES, ExportError, export_hf, find_model_folder
from .modeling import (HF_CLASSES, SynthformerBaseModel, SynthformerForCausalLM, SynthformerForMaskedLM,
                       SynthformerForSeq2SeqLM, SynthformerForSequenceClassification, SynthformerPreTrainedModel,
                       from_hf, to_hf)
from .tokenization import to_hf_tokenizer, to_tokenizers


def register() -> None:
    """Map model_type "synthformer" to these classes (idempotent)."""
    try:
        AutoConfig.register(SynthformerConfig.model_type, SynthformerConfig)
    except ValueError:  # already registered
        pass
    for cls in (SynthformerBaseModel, *HF_CLASSES.values()):  # each class names its Auto class
        try:
            getattr(transformers, cls.auto_class).register(SynthformerConfig, cls)
        except ValueError:
            pass


register()

__all__ = ["AUTO_CLASSES", "ExportError", "HF_CLASSES", "SynthformerBaseModel", "SynthformerCache",
           "SynthformerCacheLayer", "SynthformerConfig", "SynthformerForCausalLM", "SynthformerForMaskedLM",
           "SynthformerForSeq2SeqLM", "SynthformerForSequenceClassification", "SynthformerPreTrainedModel",
           "export_hf", "find_model_folder", "from_hf", "register", "to_hf", "to_hf_tokenizer", "to_tokenizers"]
