"""A synthformer tokenizer as a Hugging Face fast tokenizer (``AutoTokenizer`` loads what it saves).

The mapping itself (ids, decoding, special tokens) is ``synthformer.data.tokenizer.to_tokenizers``;
this module adds what a model's inputs need, so that ``tok(text)`` and ``tok(a, b)`` give the ids
synthformer's tasks feed the model (`INPUT_TEMPLATES`):

* ``lm``: a leading ``<eos>`` (documents follow one in training; ``synthformer generate`` starts
  prompts with it); padding on the left (``generate`` of a batch);
* ``classifier``: ``<bos>`` first with ``pooling="cls"`` (the CLS slot the head reads); sentence
  pairs joined as ``[<bos>] a <sep> b`` (the classify task's pair encoding);
* ``seq2seq``: the source followed by ``<eos>``;
* ``mlm``: the text as it is.
"""
from __future__ import annotations

from ..data.tokenizer import SPECIALS, Tokenizer, to_tokenizers
from ..model.config import ModelConfig

# (kind, pooling) -> (single-text template, pair template or None), in tokenizers' TemplateProcessing terms
INPUT_TEMPLATES: dict[tuple[str, str | None], tuple[str, str | None]] = {
    ("lm", None): ("<eos> $A", None),
    ("classifier", "mean"): ("$A", "$A <sep> $B"),
    ("classifier", "cls"): ("<bos> $A", "<bos> $A <sep> $B"),
    ("seq2seq", None): ("$A <eos>", None),
    ("mlm", None): ("$A", None),
}


def input_template(cfg: ModelConfig) -> tuple[str, str | None]:
    """The (single, pair) templates of the inputs a model of ``cfg`` was trained on."""
    return INPUT_TEMPLATES[(cfg.kind, cfg.pooling if cfg.kind == "classifier" else None)]


def to_hf_tokenizer(tokenizer: Tokenizer, model_max_length: int | None = None, cfg: ModelConfig | None = None):
    """A ``PreTrainedTokenizerFast`` equal to the synthformer ``tokenizer`` (ids, decoding, specials);
    with the model's ``cfg`` it also adds the special tokens and padding side of that model's inputs
    (`INPUT_TEMPLATES`). ``model_max_length`` defaults to ``cfg.max_seq_len``."""
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    tk = to_tokenizers(tokenizer)
    kwargs: dict = {}
    if cfg is not None:
        single, pair = input_template(cfg)
        if pair is not None and tokenizer.sep_id is None:
            pair = None  # a tokenizer saved before <sep>: pairs cannot be encoded as training did
        used = {t for t in f"{single} {pair or ''}".split() if t in SPECIALS}
        tk.post_processor = processors.TemplateProcessing(
            single=single, pair=pair, special_tokens=[(t, SPECIALS.index(t)) for t in sorted(used)])
        kwargs["padding_side"] = "left" if cfg.kind == "lm" else "right"
        model_max_length = model_max_length or cfg.max_seq_len
    if model_max_length:
        kwargs["model_max_length"] = model_max_length
    if tokenizer.sep_id is not None:
        kwargs["sep_token"] = SPECIALS[tokenizer.sep_id]
    pad, bos, eos, unk, mask = SPECIALS[:5]
    return PreTrainedTokenizerFast(tokenizer_object=tk, pad_token=pad, bos_token=bos, eos_token=eos,
                                   unk_token=unk, mask_token=mask, split_special_tokens=True,
                                   model_input_names=["input_ids", "attention_mask"], **kwargs)


__all__ = ["INPUT_TEMPLATES", "input_template", "to_hf_tokenizer", "to_tokenizers"]
