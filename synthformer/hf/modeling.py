"""Hugging Face model classes around synthformer's own modules.

Every class holds the synthformer model as ``self.model`` (``base_model_prefix = "model"``), so a
weight named ``embed.tok.weight`` in a synthformer checkpoint is ``model.embed.tok.weight`` here;
the tied output projection (``model.head.weight``) is declared in ``_tied_weights_keys`` and saved
once. Forward passes call synthformer's modules unchanged, so logits equal synthformer's.

Masks: ``attention_mask`` (1 = token, 0 = padding, Hugging Face's convention) becomes synthformer's
``key_padding_mask`` (True = padding). Positions are absolute from 0 (synthformer's learned table),
so ``position_ids`` are ignored; a left-padded prompt therefore sees other positions than the same
prompt unpadded (as in synthformer itself).

Caching: ``generate(use_cache=True)`` gets a :class:`~synthformer.hf.cache.SynthformerCache` holding
the layers' own incremental caches (values, dot-product keys, convolution buffers). A plain
``forward`` builds one only when asked (``use_cache=True``) or given one (``past_key_values``).
Greedy decoding equals synthformer's ``generate`` (stop at EOS, finished rows padded). Beam search
equals it while no hypothesis ends before the budget; once one does, the two differ by design:
transformers sets finished hypotheses aside and keeps ``num_beams`` open ones (synthformer keeps them
among the beams), normalises by length differently, and fills after EOS with EOS where
``pad_token_id`` is 0 (its ``pad or eos`` fill), synthformer with ``<pad>``.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor
from transformers import GenerationMixin, PreTrainedModel
from transformers.modeling_outputs import (BaseModelOutput, CausalLMOutputWithPast, MaskedLMOutput, Seq2SeqLMOutput,
                                           SequenceClassifierOutput)

from ..model import SynthformerModel, build_model
from .cache import SynthformerCache
from .configuration import SynthformerConfig


def padding_mask(attention_mask: Tensor | None) -> Tensor | None:
    """Hugging Face ``attention_mask`` (B, L), 1 = token -> synthformer ``key_padding_mask`` (True = padding);
    None when nothing is padded (synthformer's unmasked paths)."""
    if attention_mask is None:
        return None
    if attention_mask.dim() != 2:
        raise ValueError(f"attention_mask must have shape (batch, length) with 1 = token, 0 = padding; "
                         f"got shape {tuple(attention_mask.shape)}")
    kpm = attention_mask == 0
    return kpm if bool(kpm.any()) else None


def _token_loss(logits: Tensor, labels: Tensor) -> Tensor:
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1), ignore_index=-100)


class SynthformerPreTrainedModel(PreTrainedModel):
    """Common base: builds the synthformer model of ``config.kind`` as ``self.model``."""

    config_class = SynthformerConfig
    config: SynthformerConfig
    base_model_prefix = "model"
    main_input_name = "input_ids"
    _no_split_modules = ["Block"]
    _skip_keys_device_placement = ["past_key_values"]
    kind = ""  # the ModelConfig.kind this class wraps

    def __init__(self, config: SynthformerConfig):
        super().__init__(config)
        if config.kind != self.kind:
            raise ValueError(f"{type(self).__name__} wraps kind={self.kind!r} models, the config has "
                             f"kind={config.kind!r}; use {HF_CLASSES[config.kind].__name__} (or the Auto class "
                             "of the task)")
        self.model: SynthformerModel = build_model(config.to_model_config())
        if getattr(self, "generation_config", None) is not None:  # decoding stops at EOS and pads after it, as synthformer's generate
            gc = self.generation_config
            gc.bos_token_id, gc.eos_token_id, gc.pad_token_id = config.bos_id, config.eos_id, config.pad_id
            if config.kind == "seq2seq":
                gc.decoder_start_token_id = config.bos_id
        self.post_init()

    @torch.no_grad()
    def _init_weights(self, module):
        """synthformer's constructors initialise every weight (their own schemes); nothing to redo."""

    def get_input_embeddings(self):
        return self.model.embed.tok

    def set_input_embeddings(self, value):
        self.model.embed.tok = value

    def _new_cache(self) -> SynthformerCache:
        cfg = self.model.config
        return SynthformerCache(cfg.decoder_layers if cfg.kind == "seq2seq" else cfg.num_layers, cfg.max_seq_len)

    # generate(): synthformer's cache instead of DynamicCache / EncoderDecoderCache
    def _prepare_cache_for_generation(self, generation_config, model_kwargs, *args, **kwargs):
        cache = model_kwargs.get("past_key_values")
        if cache is not None:
            if not isinstance(cache, SynthformerCache):
                raise ValueError(f"synthformer models decode with a SynthformerCache, got {type(cache).__name__}")
            cache._is_user_defined = True
            return
        if generation_config.use_cache is False:
            return
        model_kwargs["past_key_values"] = self._new_cache()

    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        return False


class _TiedHeadMixin:
    _tied_weights_keys = {"model.head.weight": "model.embed.tok.weight"}

    def get_output_embeddings(self):
        return self.model.head

    def set_output_embeddings(self, value):
        self.model.head = value


class SynthformerForCausalLM(_TiedHeadMixin, SynthformerPreTrainedModel, GenerationMixin):
    """Decoder-only LM (``kind="lm"``): (B, L) ids -> (B, L, vocab) logits."""

    kind = "lm"

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None,
                past_key_values: SynthformerCache | None = None, labels: Tensor | None = None,
                use_cache: bool | None = None, return_dict: bool | None = None, logits_to_keep: int = 0,
                **kwargs) -> CausalLMOutputWithPast:
        m = self.model
        kpm = padding_mask(attention_mask)
        if past_key_values is None and use_cache:
            past_key_values = self._new_cache()
        if past_key_values is not None:
            caches = past_key_values.ensure(m.decoder, input_ids.shape[0])
            h = m.decoder(m.embed(input_ids, past_key_values.get_seq_length()), kpm, caches=caches)
        else:
            h = m.decoder(m.embed(input_ids), kpm)
        if logits_to_keep:
            h = h[:, -logits_to_keep:]
        logits = m.head(h)  # (B, L, vocab)
        loss = None
        if labels is not None:  # labels = input_ids; shifted here, -100 ignored
            loss = _token_loss(logits[:, :-1], labels[:, 1:])
        out = CausalLMOutputWithPast(loss=loss, logits=logits, past_key_values=past_key_values)
        return out if return_dict is not False else out.to_tuple()


class SynthformerForSequenceClassification(SynthformerPreTrainedModel):
    """Encoder classifier (``kind="classifier"``): (B, L) ids -> (B, num_classes) logits."""

    kind = "classifier"

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None, labels: Tensor | None = None,
                return_dict: bool | None = None, **kwargs) -> SequenceClassifierOutput:
        logits = self.model(input_ids, padding_mask(attention_mask))  # (B, classes)
        loss = None
        if labels is not None:
            if labels.dtype.is_floating_point and self.config.num_classes == 1:
                loss = F.mse_loss(logits.squeeze(-1).float(), labels.float())
            else:
                loss = F.cross_entropy(logits.float(), labels.long())
        out = SequenceClassifierOutput(loss=loss, logits=logits)
        return out if return_dict is not False else out.to_tuple()


class SynthformerForMaskedLM(_TiedHeadMixin, SynthformerPreTrainedModel):
    """Encoder masked LM (``kind="mlm"``): (B, L) ids -> (B, L, vocab) logits; labels -100 = not predicted."""

    kind = "mlm"

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None, labels: Tensor | None = None,
                return_dict: bool | None = None, **kwargs) -> MaskedLMOutput:
        logits = self.model(input_ids, padding_mask(attention_mask))
        loss = _token_loss(logits, labels) if labels is not None else None
        out = MaskedLMOutput(loss=loss, logits=logits)
        return out if return_dict is not False else out.to_tuple()


class _Encoder:
    """What ``generate`` calls as the encoder of a seq2seq model (not a module: no second weight path)."""

    def __init__(self, model):
        self.model = model

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None, return_dict: bool = True,
                **kwargs) -> BaseModelOutput:
        return BaseModelOutput(last_hidden_state=self.model.encode(input_ids, padding_mask(attention_mask)))

    __call__ = forward


class SynthformerForSeq2SeqLM(_TiedHeadMixin, SynthformerPreTrainedModel, GenerationMixin):
    """Encoder-decoder (``kind="seq2seq"``): source ids and decoder ids (BOS + target[:-1]) -> logits."""

    kind = "seq2seq"

    def get_encoder(self, modality: str | None = None):
        return _Encoder(self.model)

    def forward(self, input_ids: Tensor | None = None, attention_mask: Tensor | None = None,
                decoder_input_ids: Tensor | None = None, decoder_attention_mask: Tensor | None = None,
                encoder_outputs=None, past_key_values: SynthformerCache | None = None,
                labels: Tensor | None = None, use_cache: bool | None = None, return_dict: bool | None = None,
                **kwargs) -> Seq2SeqLMOutput:
        m, cfg = self.model, self.model.config
        src_kpm = padding_mask(attention_mask)
        if encoder_outputs is None:
            if input_ids is None:
                raise ValueError("pass input_ids (the source) or encoder_outputs")
            encoder_outputs = BaseModelOutput(last_hidden_state=m.encode(input_ids, src_kpm))
        memory = encoder_outputs[0]  # (B, Ls, d)
        if decoder_input_ids is None:
            if labels is None:
                raise ValueError("pass decoder_input_ids (BOS + target[:-1]) or labels")
            start = labels.new_full((labels.shape[0], 1), cfg.bos_id)
            shifted = torch.cat([start, labels[:, :-1]], dim=1)  # (B, Lt): BOS + target[:-1]
            decoder_input_ids = shifted.masked_fill(shifted == -100, cfg.pad_id)
        tgt_kpm = padding_mask(decoder_attention_mask)
        if past_key_values is None and use_cache:
            past_key_values = self._new_cache()
        if past_key_values is not None:
            caches = past_key_values.ensure(m.decoder, decoder_input_ids.shape[0])
            x = m.embed(decoder_input_ids, past_key_values.get_seq_length())
            h = m.decoder(x, tgt_kpm, memory, src_kpm, caches=caches)
        else:
            h = m.decoder(m.embed(decoder_input_ids), tgt_kpm, memory, src_kpm)
        logits = m.head(h)  # (B, Lt, vocab)
        loss = _token_loss(logits, labels) if labels is not None else None
        out = Seq2SeqLMOutput(loss=loss, logits=logits, past_key_values=past_key_values,
                              encoder_last_hidden_state=memory)
        return out if return_dict is not False else out.to_tuple()


HF_CLASSES: dict[str, type[SynthformerPreTrainedModel]] = {
    "lm": SynthformerForCausalLM,
    "classifier": SynthformerForSequenceClassification,
    "mlm": SynthformerForMaskedLM,
    "seq2seq": SynthformerForSeq2SeqLM,
}


def to_hf(model: SynthformerModel) -> SynthformerPreTrainedModel:
    """The Hugging Face model of a synthformer model: same config, a copy of the same weights,
    same train/eval mode."""
    hf = HF_CLASSES[model.config.kind](SynthformerConfig.from_model_config(model.config))
    hf.model.load_state_dict(model.state_dict())
    p = next(model.parameters())
    return hf.to(device=p.device, dtype=p.dtype).train(model.training)


def from_hf(hf_model: SynthformerPreTrainedModel) -> SynthformerModel:
    """The synthformer model inside a Hugging Face one, as a separate copy (same weights, same mode)."""
    if not isinstance(hf_model, SynthformerPreTrainedModel):
        raise TypeError(f"from_hf takes a synthformer.hf model, got {type(hf_model).__name__}")
    model = build_model(hf_model.config.to_model_config())
    model.load_state_dict(hf_model.model.state_dict())
    p = next(hf_model.parameters())
    return model.to(device=p.device, dtype=p.dtype).train(hf_model.training)
