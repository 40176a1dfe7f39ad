"""Hugging Face model classes around synthformer's own modules.

Every class holds the synthformer model as ``self.model`` (``base_model_prefix = "model"``), so a
weight named ``embed.tok.weight`` in a synthformer checkpoint is ``model.embed.tok.weight`` here;
the tied output projection (``model.head.weight``) is declared in ``_tied_weights_keys`` and saved
once. Forward passes call synthformer's modules unchanged, so logits equal synthformer's.

Masks: ``attention_mask`` (1 = token, 0 = padding, Hugging Face's convention) becomes synthformer's
``key_padding_mask`` (True = padding). Left-padded rows are rotated to start at position 0 and back
(``synthformer.hf.stack``), so a left-padded batch gives each row's unpadded logits; ``position_ids``
are not read. ``output_hidden_states`` / ``output_attentions`` return every layer's tensors (a
convolution layer has no attention weights: asking for them is an error naming the layer), and
``gradient_checkpointing_enable()`` recomputes each block in the backward pass.

Caching: ``generate(use_cache=True)`` gets a :class:`~synthformer.hf.cache.SynthformerCache` holding
the layers' own incremental caches (values, dot-product keys, convolution buffers); a left-padded
prompt batch decodes without it (each step runs the whole sequence). A plain ``forward`` builds one
only when asked (``use_cache=True``) or given one (``past_key_values``). Greedy decoding equals
synthformer's ``generate`` (stop at EOS, finished rows padded). Beam search equals it while no
hypothesis ends before the budget; once one does, the two differ by design: transformers sets
finished hypotheses aside and keeps ``num_beams`` open ones (synthformer keeps them among the beams),
normalises by length differently, and fills after EOS with EOS where ``pad_token_id`` is 0 (its
``pad or eos`` fill), synthformer with ``<pad>``. Asking for more tokens than ``max_seq_len`` holds is
refused before decoding starts.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor
from transformers import GenerationConfig, GenerationMixin, PreTrainedModel
from transformers.modeling_outputs import (BaseModelOutput, BaseModelOutputWithPast, CausalLMOutputWithPast,
                                           MaskedLMOutput, Seq2SeqLMOutput, Seq2SeqModelOutput,
                                           SequenceClassifierOutput)

from ..errors import InputError
from ..model import MODELS, ModelConfig, SynthformerModel, build_model
from .cache import SynthformerCache
from .configuration import SynthformerConfig
from .stack import check_cache_padding, left_padding, padding_mask, rotate, rotate_weights, run_stack


def _token_loss(logits: Tensor, labels: Tensor) -> Tensor:
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1), ignore_index=-100)


class SynthformerPreTrainedModel(PreTrainedModel):
    """Common base: builds the synthformer model of ``config.kind`` as ``self.model``."""

    config_class = SynthformerConfig
    config: SynthformerConfig
    base_model_prefix = "model"
    main_input_name = "input_ids"
    supports_gradient_checkpointing = True
    _no_split_modules = ["Block"]
    _skip_keys_device_placement = ["past_key_values"]
    kind: str | None = ""  # the ModelConfig.kind this class wraps (None: any)
    auto_class = "AutoModel"  # the transformers Auto class that loads it

    def __init__(self, config: SynthformerConfig):
        super().__init__(config)
        if self.kind is not None and config.kind != self.kind:
            raise ValueError(f"{type(self).__name__} wraps kind={self.kind!r} models, the config has "
                             f"kind={config.kind!r}; use {HF_CLASSES[config.kind].__name__} (or the Auto class "
                             "of the task)")
        self.model: SynthformerModel = build_model(_model_config(config))
        self.gradient_checkpointing = False  # set by gradient_checkpointing_enable()
        if self.kind is None and config.kind != "classifier" and config.tie_embeddings:  # the base model of any kind
            self._tied_weights_keys = dict(_TiedHeadMixin._tied_weights_keys)
        if getattr(self, "generation_config", None) is not None:  # stop at EOS, pad after it: synthformer's generate
            gc = self.generation_config
            gc.bos_token_id, gc.eos_token_id, gc.pad_token_id = config.bos_id, config.eos_id, config.pad_id
            # no max_length here: saved in generation_config.json it made every call with max_new_tokens warn;
            # `generate` fills the default budget (the position table) itself
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

    def _run(self, stack, ids: Tensor, attention_mask: Tensor | None, cache: SynthformerCache | None = None,
             memory: Tensor | None = None, memory_mask: Tensor | None = None, hidden: bool = False,
             attentions: bool = False):
        """Embed ``ids`` and run ``stack`` over them: (h (B, L, d), key_padding_mask, hidden states,
        attention weights), all in the rows' own positions (left padding rotated away, see
        synthformer.hf.stack); ``memory`` (B, Ls, d) and ``memory_mask`` in the source's given positions."""
        lead = left_padding(attention_mask)
        check_cache_padding(lead, cache is not None)
        offset = cache.get_seq_length() if cache is not None else 0
        limit = self.model.config.max_seq_len
        if offset + ids.shape[1] > limit:
            raise InputError(f"{offset + ids.shape[1]} positions exceed max_seq_len={limit}: truncate the input "
                             f"(tokenizer(..., truncation=True)) or ask for fewer new tokens")
        caches = cache.ensure(stack, ids.shape[0]) if cache is not None else None
        memory_lead = left_padding(memory_mask)
        kpm = padding_mask(rotate(attention_mask, lead))
        checkpoint = self._gradient_checkpointing_func if self.gradient_checkpointing and self.training \
            and caches is None else None
        h, states, weights = run_stack(stack, self.model.embed(rotate(ids, lead), offset), kpm,
                                       rotate(memory, memory_lead), padding_mask(rotate(memory_mask, memory_lead)),
                                       caches, hidden_states=hidden, attentions=attentions, checkpoint=checkpoint)
        return h, kpm, lead, states, weights

    @staticmethod
    def _back(lead, h, states, weights):
        """h, hidden states and attention weights rotated back to the given (left-padded) positions."""
        states = tuple(rotate(s, lead, back=True) for s in states) if states else states
        weights = tuple(rotate_weights(w, lead) for w in weights) if weights else weights
        return rotate(h, lead, back=True), states, weights

    def _cache_for(self, past_key_values, use_cache):
        return self._new_cache() if past_key_values is None and use_cache else past_key_values

    # generate(): synthformer's cache instead of DynamicCache / EncoderDecoderCache
    def _prepare_cache_for_generation(self, generation_config, model_kwargs, *args, **kwargs):
        cache = model_kwargs.get("past_key_values")
        if cache is not None:
            if not isinstance(cache, SynthformerCache):
                raise ValueError(f"synthformer models decode with a SynthformerCache, got {type(cache).__name__}")
            cache._is_user_defined = True
            return
        if not self.config.is_encoder_decoder and left_padding(model_kwargs.get("attention_mask")) is not None:
            generation_config.use_cache = False  # rows at different positions: each step runs the whole sequence
        if generation_config.use_cache is False:
            return
        model_kwargs["past_key_values"] = self._new_cache()

    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        return False


_DEFAULT_MAX_LENGTH = GenerationConfig().max_length  # transformers' own default (20): no budget was asked


class _BoundedGenerationMixin(GenerationMixin):
    """``generate`` that refuses a budget past ``max_seq_len`` before decoding starts."""

    def generate(self, inputs: Tensor | None = None, generation_config=None, **kwargs):
        ids = inputs if inputs is not None else kwargs.get("input_ids")
        gc = generation_config if generation_config is not None else self.generation_config
        new = kwargs.get("max_new_tokens", gc.max_new_tokens)
        limit = self.config.max_seq_len
        if new is None and "max_length" not in kwargs and gc.max_length == _DEFAULT_MAX_LENGTH:
            kwargs["max_length"] = limit  # no budget asked: decode up to the end of the position table
        start = 1 if self.config.is_encoder_decoder else (ids.shape[1] if ids is not None else 1)
        total = start + new if new is not None else kwargs.get("max_length", gc.max_length)
        if total > limit:
            ask = f"max_new_tokens={new}" if new is not None else f"max_length={total}"
            raise InputError(f"{ask} with {start} {'start' if start == 1 else 'prompt'} token(s) needs {total} "
                             f"positions, past max_seq_len={limit}; ask for at most {max(limit - start, 0)} new tokens")
        return super().generate(inputs, generation_config=generation_config, **kwargs)


class _TiedHeadMixin:
    _tied_weights_keys = {"model.head.weight": "model.embed.tok.weight"}

    def get_output_embeddings(self):
        return self.model.head

    def set_output_embeddings(self, value):
        self.model.head = value


class SynthformerForCausalLM(_TiedHeadMixin, SynthformerPreTrainedModel, _BoundedGenerationMixin):
    """Decoder-only LM (``kind="lm"``): (B, L) ids -> (B, L, vocab) logits."""

    kind = "lm"
    auto_class = "AutoModelForCausalLM"

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None,
                past_key_values: SynthformerCache | None = None, labels: Tensor | None = None,
                use_cache: bool | None = None, return_dict: bool | None = None, logits_to_keep: int = 0,
                output_hidden_states: bool | None = None, output_attentions: bool | None = None,
                **kwargs) -> CausalLMOutputWithPast:
        past_key_values = self._cache_for(past_key_values, use_cache)
        h, _, lead, states, weights = self._run(self.model.decoder, input_ids, attention_mask, past_key_values,
                                                hidden=bool(output_hidden_states), attentions=bool(output_attentions))
        h, states, weights = self._back(lead, h, states, weights)
        if logits_to_keep:
            h = h[:, -logits_to_keep:]
        logits = self.model.head(h)  # (B, L, vocab)
        loss = None
        if labels is not None:  # labels = input_ids; shifted here, -100 ignored
            loss = _token_loss(logits[:, :-1], labels[:, 1:])
        out = CausalLMOutputWithPast(loss=loss, logits=logits, past_key_values=past_key_values,
                                     hidden_states=states, attentions=weights)
        return out if return_dict is not False else out.to_tuple()


class SynthformerForSequenceClassification(SynthformerPreTrainedModel):
    """Encoder classifier (``kind="classifier"``): (B, L) ids -> (B, num_classes) logits."""

    kind = "classifier"
    auto_class = "AutoModelForSequenceClassification"

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None, labels: Tensor | None = None,
                return_dict: bool | None = None, output_hidden_states: bool | None = None,
                output_attentions: bool | None = None, **kwargs) -> SequenceClassifierOutput:
        h, kpm, lead, states, weights = self._run(self.model.encoder, input_ids, attention_mask,
                                                  hidden=bool(output_hidden_states),
                                                  attentions=bool(output_attentions))
        logits = self.model.head(self.model.pool(h, kpm))  # (B, classes), from the rows' own positions
        _, states, weights = self._back(lead, h, states, weights)
        loss = None
        if labels is not None:
            if labels.dtype.is_floating_point and self.config.num_classes == 1:
                loss = F.mse_loss(logits.squeeze(-1).float(), labels.float())
            else:
                loss = F.cross_entropy(logits.float(), labels.long())
        out = SequenceClassifierOutput(loss=loss, logits=logits, hidden_states=states, attentions=weights)
        return out if return_dict is not False else out.to_tuple()


class SynthformerForMaskedLM(_TiedHeadMixin, SynthformerPreTrainedModel):
    """Encoder masked LM (``kind="mlm"``): (B, L) ids -> (B, L, vocab) logits; labels -100 = not predicted."""

    kind = "mlm"
    auto_class = "AutoModelForMaskedLM"

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None, labels: Tensor | None = None,
                return_dict: bool | None = None, output_hidden_states: bool | None = None,
                output_attentions: bool | None = None, **kwargs) -> MaskedLMOutput:
        h, _, lead, states, weights = self._run(self.model.encoder, input_ids, attention_mask,
                                                hidden=bool(output_hidden_states), attentions=bool(output_attentions))
        h, states, weights = self._back(lead, h, states, weights)
        logits = self.model.head(h)
        loss = _token_loss(logits, labels) if labels is not None else None
        out = MaskedLMOutput(loss=loss, logits=logits, hidden_states=states, attentions=weights)
        return out if return_dict is not False else out.to_tuple()


class _Encoder:
    """What ``generate`` calls as the encoder of a seq2seq model (not a module: no second weight path)."""

    def __init__(self, owner: SynthformerPreTrainedModel):
        self.owner = owner

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None, return_dict: bool = True,
                output_hidden_states: bool | None = None, output_attentions: bool | None = None,
                **kwargs) -> BaseModelOutput:
        h, _, lead, states, weights = self.owner._run(self.owner.model.encoder, input_ids, attention_mask,
                                                      hidden=bool(output_hidden_states),
                                                      attentions=bool(output_attentions))
        h, states, weights = self.owner._back(lead, h, states, weights)
        return BaseModelOutput(last_hidden_state=h, hidden_states=states, attentions=weights)  # (B, Ls, d)

    __call__ = forward


class _Seq2SeqMixin:
    """The encoder-decoder pass shared by the seq2seq LM and the base model of a seq2seq export."""

    def get_encoder(self, modality: str | None = None):
        return _Encoder(self)

    def _seq2seq(self, input_ids, attention_mask, decoder_input_ids, decoder_attention_mask, encoder_outputs,
                 past_key_values, labels, use_cache, hidden: bool, attentions: bool):
        """(decoder output h (B, Lt, d), encoder outputs, cache, decoder states, decoder attention weights)."""
        cfg = self.model.config
        if encoder_outputs is None:
            if input_ids is None:
                raise ValueError("pass input_ids (the source) or encoder_outputs")
            encoder_outputs = _Encoder(self)(input_ids, attention_mask, output_hidden_states=hidden,
                                             output_attentions=attentions)
        if decoder_input_ids is None:
            if labels is None:
                raise ValueError("pass decoder_input_ids (BOS + target[:-1]) or labels")
            start = labels.new_full((labels.shape[0], 1), cfg.bos_id)
            shifted = torch.cat([start, labels[:, :-1]], dim=1)  # (B, Lt): BOS + target[:-1]
            decoder_input_ids = shifted.masked_fill(shifted == -100, cfg.pad_id)
        past_key_values = self._cache_for(past_key_values, use_cache)
        h, _, lead, states, weights = self._run(self.model.decoder, decoder_input_ids, decoder_attention_mask,
                                                past_key_values, encoder_outputs[0], attention_mask,
                                                hidden=hidden, attentions=attentions)
        h, states, weights = self._back(lead, h, states, weights)
        return h, encoder_outputs, past_key_values, states, weights


class SynthformerForSeq2SeqLM(_Seq2SeqMixin, _TiedHeadMixin, SynthformerPreTrainedModel, _BoundedGenerationMixin):
    """Encoder-decoder (``kind="seq2seq"``): source ids and decoder ids (BOS + target[:-1]) -> logits."""

    kind = "seq2seq"
    auto_class = "AutoModelForSeq2SeqLM"

    def forward(self, input_ids: Tensor | None = None, attention_mask: Tensor | None = None,
                decoder_input_ids: Tensor | None = None, decoder_attention_mask: Tensor | None = None,
                encoder_outputs=None, past_key_values: SynthformerCache | None = None,
                labels: Tensor | None = None, use_cache: bool | None = None, return_dict: bool | None = None,
                output_hidden_states: bool | None = None, output_attentions: bool | None = None,
                **kwargs) -> Seq2SeqLMOutput:
        h, enc, cache, states, weights = self._seq2seq(
            input_ids, attention_mask, decoder_input_ids, decoder_attention_mask, encoder_outputs, past_key_values,
            labels, use_cache, bool(output_hidden_states), bool(output_attentions))
        logits = self.model.head(h)  # (B, Lt, vocab)
        loss = _token_loss(logits, labels) if labels is not None else None
        out = Seq2SeqLMOutput(loss=loss, logits=logits, past_key_values=cache, encoder_last_hidden_state=enc[0],
                              decoder_hidden_states=states, decoder_attentions=weights,
                              encoder_hidden_states=enc.hidden_states, encoder_attentions=enc.attentions)
        return out if return_dict is not False else out.to_tuple()


class SynthformerBaseModel(_Seq2SeqMixin, SynthformerPreTrainedModel):
    """The base model of any kind (``AutoModel``): the last hidden states (B, L, d) of the stack that
    feeds the head (the decoder of ``lm`` and ``seq2seq``, the encoder of ``classifier`` and ``mlm``),
    before the head (and before the classifier's pooling)."""

    kind = None

    def forward(self, input_ids: Tensor | None = None, attention_mask: Tensor | None = None,
                decoder_input_ids: Tensor | None = None, decoder_attention_mask: Tensor | None = None,
                encoder_outputs=None, past_key_values: SynthformerCache | None = None, use_cache: bool | None = None,
                return_dict: bool | None = None, output_hidden_states: bool | None = None,
                output_attentions: bool | None = None, **kwargs):
        hidden, attentions = bool(output_hidden_states), bool(output_attentions)
        if self.config.kind == "seq2seq":
            h, enc, cache, states, weights = self._seq2seq(
                input_ids, attention_mask, decoder_input_ids, decoder_attention_mask, encoder_outputs,
                past_key_values, None, use_cache, hidden, attentions)
            out = Seq2SeqModelOutput(last_hidden_state=h, past_key_values=cache, decoder_hidden_states=states,
                                     decoder_attentions=weights, encoder_last_hidden_state=enc[0],
                                     encoder_hidden_states=enc.hidden_states, encoder_attentions=enc.attentions)
        elif self.config.kind == "lm":
            cache = self._cache_for(past_key_values, use_cache)
            h, _, lead, states, weights = self._run(self.model.decoder, input_ids, attention_mask, cache,
                                                    hidden=hidden, attentions=attentions)
            h, states, weights = self._back(lead, h, states, weights)
            out = BaseModelOutputWithPast(last_hidden_state=h, past_key_values=cache, hidden_states=states,
                                          attentions=weights)
        else:
            h, _, lead, states, weights = self._run(self.model.encoder, input_ids, attention_mask,
                                                    hidden=hidden, attentions=attentions)
            h, states, weights = self._back(lead, h, states, weights)
            out = BaseModelOutput(last_hidden_state=h, hidden_states=states, attentions=weights)
        return out if return_dict is not False else out.to_tuple()


def _hf_classes(*classes: type[SynthformerPreTrainedModel]) -> dict[str, type[SynthformerPreTrainedModel]]:
    """ModelConfig.kind -> the class wrapping that kind's model: the kinds are model/transformer.py's ``MODELS``
    (listed there once, in its order), each class names its own ``kind``; a kind without a class fails here."""
    by_kind = {cls.kind: cls for cls in classes}
    if set(by_kind) != set(MODELS):
        raise ImportError(f"Hugging Face classes for kinds {sorted(by_kind)}, the models' kinds are {list(MODELS)}")
    return {kind: by_kind[kind] for kind in MODELS}


HF_CLASSES = _hf_classes(SynthformerForCausalLM, SynthformerForSequenceClassification, SynthformerForMaskedLM,
                         SynthformerForSeq2SeqLM)


def to_hf(model: SynthformerModel) -> SynthformerPreTrainedModel:
    """The Hugging Face model of a synthformer model: same config, a copy of the same weights,
    same train/eval mode."""
    hf = HF_CLASSES[model.config.kind](SynthformerConfig.from_model_config(model.config))
    hf.model.load_state_dict(model.state_dict())
    p = next(model.parameters())
    return hf.to(device=p.device, dtype=p.dtype).train(model.training)


def _model_config(config: SynthformerConfig) -> ModelConfig:
    """The ModelConfig of `config`, rebuilt from plain fields by this module's own copy of the classes: as remote
    code, transformers may load the configuration file and this one as separate module copies, and a parsed
    mixer spec of the other copy would fail this copy's isinstance checks."""
    return ModelConfig.from_dict(config.to_model_config().to_dict())


def from_hf(hf_model: SynthformerPreTrainedModel) -> SynthformerModel:
    """The synthformer model inside a Hugging Face one, as a separate copy (same weights, same mode)."""
    if not isinstance(hf_model, SynthformerPreTrainedModel):
        raise TypeError(f"from_hf takes a synthformer.hf model, got {type(hf_model).__name__}")
    model = build_model(_model_config(hf_model.config))
    model.load_state_dict(hf_model.model.state_dict())
    p = next(hf_model.parameters())
    return model.to(device=p.device, dtype=p.dtype).train(hf_model.training)
