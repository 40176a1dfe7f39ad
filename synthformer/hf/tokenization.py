"""A synthformer tokenizer as a Hugging Face fast tokenizer (``AutoTokenizer`` loads what it saves).

synthformer writes ``tokenizer.json`` as its own wrapper ({"kind", "specials", ...}); this module
rebuilds the same mapping as a plain ``tokenizers.Tokenizer``:

* ``bpe``: the inner byte-level BPE, unchanged;
* ``byte`` / ``pixel``: the 256 byte values in GPT-2's byte-to-character alphabet, id = byte + offset, no merges;
* ``char``: one token per training character, id = rank + offset, unseen characters -> ``<unk>``;
* ``word``: one token per whitespace-separated training word, id = rank + offset, unseen -> ``<unk>``,
  decoded joined by single spaces. One difference: a whole word "<pad>" (or another special's text) in
  the input encodes to the special id here (a word-level vocabulary holds one id per string), where
  synthformer gives ``<unk>`` (or the id of that word when it was seen in training: a warning then).

Special tokens keep their ids (``<pad>`` 0, ``<bos>`` 1, ``<eos>`` 2, ``<unk>`` 3, ``<mask>`` 4, ``<sep>`` 5;
offset = the number of specials, 6, or 5 for a tokenizer saved before ``<sep>``) and, as in
synthformer, text that contains "<pad>" etc. is encoded as ordinary text and no special token is added
(``encode`` of the two tokenizers agrees; the models' tasks add BOS/EOS themselves).
"""
from __future__ import annotations

import warnings

from ..data.tokenizer import SPECIALS, BPETokenizer, ByteTokenizer, CharTokenizer, Tokenizer


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character map (the alphabet of ``pre_tokenizers.ByteLevel``)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def to_tokenizers(tokenizer: Tokenizer):
    """The plain ``tokenizers.Tokenizer`` with the same ids as the synthformer ``tokenizer``."""
    from tokenizers import Tokenizer as HFTokenizer, decoders, models, pre_tokenizers

    specials = list(tokenizer.specials)
    base = {s: i for i, s in enumerate(specials)}
    if isinstance(tokenizer, BPETokenizer):
        tk = HFTokenizer.from_str(tokenizer.hf.to_str())
    elif isinstance(tokenizer, ByteTokenizer):
        b2u = _bytes_to_unicode()
        vocab = base | {b2u[b]: b + tokenizer.offset for b in range(256)}
        tk = HFTokenizer(models.BPE(vocab=vocab, merges=[]))
        tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
        tk.decoder = decoders.ByteLevel()
    elif tokenizer.kind == "word":
        clash = sorted(set(tokenizer.words) & set(specials))
        if clash:  # one string cannot have two ids in a Hugging Face vocabulary
            warnings.warn(f"word tokenizer has {clash} as ordinary words; the Hugging Face tokenizer encodes "
                          "them as the special tokens", stacklevel=3)
        vocab = {w: i + len(specials) for i, w in enumerate(tokenizer.words)} | base
        tk = HFTokenizer(models.WordLevel(vocab=vocab, unk_token=SPECIALS[3]))
        tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()  # str.split(); no decoder: words joined by " "
    elif isinstance(tokenizer, CharTokenizer):
        vocab = base | {c: i + len(specials) for i, c in enumerate(tokenizer.chars)}
        tk = HFTokenizer(models.BPE(vocab=vocab, merges=[], unk_token=SPECIALS[3]))
        tk.decoder = decoders.Fuse()  # characters joined as they are (no spaces between tokens)
    else:
        raise TypeError(f"no Hugging Face form for tokenizer {type(tokenizer).__name__}")
    tk.add_special_tokens(specials)  # already ids 0..len-1: marks them special (skipped when decoding)
    tk.encode_special_tokens = True  # "<pad>" inside text stays text, as in synthformer
    return tk


def to_hf_tokenizer(tokenizer: Tokenizer, model_max_length: int | None = None):
    """A ``PreTrainedTokenizerFast`` equal to the synthformer ``tokenizer`` (ids, decoding, specials)."""
    from transformers import PreTrainedTokenizerFast

    pad, bos, eos, unk, mask = SPECIALS[:5]
    kwargs = {"model_max_length": model_max_length} if model_max_length else {}
    if tokenizer.sep_id is not None:
        kwargs["sep_token"] = SPECIALS[tokenizer.sep_id]
    return PreTrainedTokenizerFast(tokenizer_object=to_tokenizers(tokenizer), pad_token=pad, bos_token=bos,
                                   eos_token=eos, unk_token=unk, mask_token=mask, split_special_tokens=True,
                                   **kwargs)
