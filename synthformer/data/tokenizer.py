"""Tokenizers: byte-level BPE (Hugging Face `tokenizers`), words, characters, and raw bytes.

Every tokenizer numbers its special tokens the same way: ``<pad>`` 0, ``<bos>`` 1, ``<eos>`` 2,
``<unk>`` 3, ``<mask>`` 4, ``<sep>`` 5 (between the two sentences of a sentence pair); ordinary tokens
follow (``tok.offset`` is the first ordinary id). A tokenizer.json saved before ``<sep>`` existed
holds the first five specials only and loads as it was (ordinary ids from 5, ``sep_id`` None). `encode` never adds specials (the encoding
helpers in `synthformer.data.batching` do), and text that happens to contain "<pad>" etc. is
encoded as ordinary text, so ``decode(encode(s)) == s`` for any string with ``bpe`` and ``byte``
(``char``: for strings made of characters seen in training; ``word``: for strings of words seen
in training, single-spaced, since it splits on whitespace and joins with one space).

A tokenizer saves to two files inside the given folder (beside the checkpoints): ``tokenizer.json``,
the standard file of Hugging Face ``tokenizers`` (``tokenizers.Tokenizer.from_file`` reads it, same
ids), and ``tokenizer_meta.json``, what synthformer adds (kind, special tokens, the character or word
list). `load_tokenizer(folder_or_file)` reads them back, and also reads the single wrapper file
(``{"kind", "specials", ...}`` in ``tokenizer.json``) that runs wrote before.
"""
from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Iterable

from .._optional import require
from ..utils.integrity import atomic_write_text
from ..utils.jsonl import read_json
from .prepare import DataError, cache_dir

SPECIALS = ["<pad>", "<bos>", "<eos>", "<unk>", "<mask>", "<sep>"]
PAD, BOS, EOS, UNK, MASK, SEP = range(len(SPECIALS))
LEGACY_SPECIALS = SPECIALS[:5]  # tokenizer.json files written before <sep>: ordinary ids from 5
FILENAME = "tokenizer.json"  # the standard tokenizers file
META_FILENAME = "tokenizer_meta.json"  # synthformer's own fields


class Tokenizer:
    """Common interface: encode/decode, vocab_size and the special ids."""

    kind = ""
    pad_id, bos_id, eos_id, unk_id, mask_id = PAD, BOS, EOS, UNK, MASK
    specials = SPECIALS  # this tokenizer's special tokens, ids 0..len-1 (LEGACY_SPECIALS for old files)

    @property
    def sep_id(self) -> int | None:
        """Id of ``<sep>`` (sentence pairs), or None for a tokenizer saved before it existed."""
        return SEP if len(self.specials) > SEP else None

    @property
    def vocab_size(self) -> int:
        raise NotImplementedError

    def encode(self, text: str) -> list[int]:
        """Token ids of `text`, without special tokens."""
        raise NotImplementedError

    def decode(self, ids: Iterable[int], skip_special: bool = True) -> str:
        """Text of `ids`; special tokens are dropped (or written as "<eos>" etc.)."""
        raise NotImplementedError

    def _state(self) -> dict:
        raise NotImplementedError

    def save(self, folder: str | os.PathLike) -> Path:
        """Write ``folder/tokenizer.json`` (the standard file) and ``folder/tokenizer_meta.json``, each
        atomically and durably (`synthformer.utils.integrity.atomic_write_text`); returns tokenizer.json's path."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        state = {k: v for k, v in self._state().items() if k != "hf"}  # BPE's model is tokenizer.json itself
        atomic_write_text(folder / FILENAME, to_tokenizers(self).to_str())
        atomic_write_text(folder / META_FILENAME, json.dumps({"kind": self.kind, "specials": list(self.specials),
                                                          **state}, ensure_ascii=False))
        return folder / FILENAME

    def __repr__(self) -> str:
        return f"{type(self).__name__}(vocab_size={self.vocab_size})"


class ByteTokenizer(Tokenizer):
    """256 byte values after the specials: byte b has id b + offset (6; 5 for a legacy file). For
    LRA-style byte/pixel tasks.

    `encode` takes a str (UTF-8 bytes), ``bytes``, or a sequence of ints 0..255 (e.g. pixels).
    """

    kind = "byte"
    offset = len(SPECIALS)  # first ordinary id (the instance's own: len(specials))

    def __init__(self, specials: list[str] = SPECIALS):
        self.specials = list(specials)
        self.offset = len(self.specials)

    @property
    def vocab_size(self) -> int:
        return self.offset + 256

    def encode(self, text) -> list[int]:
        data = text.encode("utf-8") if isinstance(text, str) else text
        ids = [int(b) + self.offset for b in data]
        if any(not self.offset <= i < self.offset + 256 for i in ids):
            bad = next(int(b) for b in data if not 0 <= int(b) < 256)
            raise ValueError(f"byte tokenizer takes values 0..255, got {bad}")
        return ids

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The bytes of the non-special ids."""
        return bytes(i - self.offset for i in ids if i >= self.offset)

    def decode(self, ids: Iterable[int], skip_special: bool = True) -> str:
        if skip_special:
            return self.decode_bytes(ids).decode("utf-8", errors="replace")
        parts, buf = [], []
        for i in ids:
            if i >= self.offset:
                buf.append(i - self.offset)
            else:
                parts.append(bytes(buf).decode("utf-8", errors="replace") + self.specials[i])
                buf = []
        return "".join(parts) + bytes(buf).decode("utf-8", errors="replace")

    def _state(self) -> dict:
        return {}


class CharTokenizer(Tokenizer):
    """One id per character seen in training (sorted), after the specials; unseen -> <unk>."""

    kind = "char"

    def __init__(self, chars: Iterable[str], specials: list[str] = SPECIALS):
        self.specials = list(specials)
        self.chars = sorted(set(chars))
        if any(len(c) != 1 for c in self.chars):
            raise ValueError("CharTokenizer needs single characters")
        self._ids = {c: i + len(self.specials) for i, c in enumerate(self.chars)}

    @classmethod
    def train(cls, texts: Iterable[str]) -> "CharTokenizer":
        seen: set[str] = set()
        for t in texts:
            seen.update(t)
        return cls(seen)

    @property
    def vocab_size(self) -> int:
        return len(self.specials) + len(self.chars)

    def encode(self, text: str) -> list[int]:
        return [self._ids.get(c, UNK) for c in text]

    def decode(self, ids: Iterable[int], skip_special: bool = True) -> str:
        n = len(self.specials)
        return "".join(self.chars[i - n] if i >= n else ("" if skip_special else self.specials[i])
                       for i in ids)

    def _state(self) -> dict:
        return {"chars": self.chars}


class WordTokenizer(Tokenizer):
    """One id per whitespace-separated word seen in training (sorted), after the specials; unseen
    words -> <unk>. For symbol vocabularies such as ListOps, where LRA gives "[MIN", "]" and each
    digit one id; decoding joins words with one space."""

    kind = "word"

    def __init__(self, words: Iterable[str], specials: list[str] = SPECIALS):
        self.specials = list(specials)
        self.words = sorted(set(words))
        if any(not w or w.split() != [w] for w in self.words):
            raise ValueError("WordTokenizer needs non-empty words without whitespace")
        self._ids = {w: i + len(self.specials) for i, w in enumerate(self.words)}

    @classmethod
    def train(cls, texts: Iterable[str]) -> "WordTokenizer":
        seen: set[str] = set()
        for t in texts:
            seen.update(t.split())
        return cls(seen)

    @property
    def vocab_size(self) -> int:
        return len(self.specials) + len(self.words)

    def encode(self, text: str) -> list[int]:
        return [self._ids.get(w, UNK) for w in text.split()]

    def decode(self, ids: Iterable[int], skip_special: bool = True) -> str:
        n = len(self.specials)
        words = [self.words[i - n] if i >= n else self.specials[i] for i in ids if i >= n or not skip_special]
        return " ".join(words)

    def _state(self) -> dict:
        return {"words": self.words}


class BPETokenizer(Tokenizer):
    """Byte-level BPE from Hugging Face `tokenizers` (GPT-2 style, no prefix space)."""

    kind = "bpe"

    def __init__(self, hf_tokenizer, specials: list[str] = SPECIALS):
        self.specials = list(specials)
        self.hf = hf_tokenizer
        self.hf.encode_special_tokens = True  # "<pad>" inside text stays text
        for i, s in enumerate(self.specials):
            if self.hf.token_to_id(s) != i:
                raise DataError(f"BPE tokenizer has {s} at id {self.hf.token_to_id(s)}, expected {i}")

    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int, min_frequency: int = 2) -> "BPETokenizer":
        from tokenizers import Tokenizer as HFTokenizer, decoders, models, pre_tokenizers, trainers

        floor = len(SPECIALS) + 256
        if vocab_size < floor:
            raise DataError(f"byte-level BPE needs vocab_size >= {floor} (specials + 256 bytes), got vocab_size="
                            f"{vocab_size}; raise vocab_size or use tokenizer=char")
        hf = HFTokenizer(models.BPE())
        hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        hf.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                      special_tokens=SPECIALS, show_progress=False,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        hf.train_from_iterator(texts, trainer=trainer)
        return cls(hf)

    @property
    def vocab_size(self) -> int:
        return self.hf.get_vocab_size()

    def encode(self, text: str) -> list[int]:
        return self.hf.encode(text, add_special_tokens=False).ids

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        """Faster `encode` of many texts (Rust threads)."""
        return [e.ids for e in self.hf.encode_batch(texts, add_special_tokens=False)]

    def decode(self, ids: Iterable[int], skip_special: bool = True) -> str:
        return self.hf.decode(list(ids), skip_special_tokens=skip_special)

    def _state(self) -> dict:
        return {"hf": json.loads(self.hf.to_str())}


TOKENIZERS = {"bpe": BPETokenizer, "char": CharTokenizer, "word": WordTokenizer, "byte": ByteTokenizer,
              "pixel": ByteTokenizer}  # pixel values 0..255 are bytes (LRA Image)


def build_tokenizer(kind: str, texts: Iterable[str] | None = None, *, vocab_size: int = 8000,
                    min_frequency: int = 2) -> Tokenizer:
    """Make a tokenizer: "bpe" (trained on `texts`, `vocab_size` includes specials and the 256
    bytes), "char" (the characters of `texts`), "word" (the whitespace-separated words of `texts`;
    `vocab_size` is ignored) or "byte" / "pixel" (the same; needs no texts)."""
    if kind not in TOKENIZERS:
        raise ValueError(f"unknown tokenizer {kind!r}; valid: {', '.join(TOKENIZERS)}")
    if TOKENIZERS[kind] is ByteTokenizer:
        return ByteTokenizer()
    if texts is None:
        raise ValueError(f"tokenizer {kind!r} needs training texts")
    if kind == "char":
        return CharTokenizer.train(texts)
    if kind == "word":
        return WordTokenizer.train(texts)
    return BPETokenizer.train(texts, vocab_size, min_frequency)


TOKENIZER_CACHE_VERSION = 1  # bump when BPE training changes: older cached tokenizers are then not reused
CACHED_KINDS = ("bpe",)  # the tokenizers worth caching (char, word and byte train in well under a second)


def tokenizer_key(kind: str, texts: list[str], vocab_size: int, min_frequency: int = 2) -> str:
    """SHA-256 over what a trained tokenizer depends on: the training texts (each in full), the kind, the
    vocabulary size, min_frequency, the special tokens, the `tokenizers` version and TOKENIZER_CACHE_VERSION."""
    import hashlib

    try:
        from importlib.metadata import version
        lib = version("tokenizers")
    except Exception:  # noqa: BLE001 - not installed: BPE training fails later with the extra's message
        lib = "?"
    h = hashlib.sha256(json.dumps([TOKENIZER_CACHE_VERSION, kind, vocab_size, min_frequency, SPECIALS, lib]).encode())
    for t in texts:
        data = t.encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "little"))  # length-prefixed: ["ab", "c"] and ["a", "bc"] differ
        h.update(data)
    return h.hexdigest()


def cached_tokenizer(kind: str, texts: Iterable[str], *, vocab_size: int = 8000, min_frequency: int = 2,
                     cache: str | os.PathLike | None = None, log=None) -> Tokenizer:
    """`build_tokenizer`, reusing a BPE tokenizer trained before on the same texts with the same settings
    (`tokenizer_key`) from ``<cache>/tokenizers/<key>/`` (cache: `synthformer.data.prepare.cache_dir`,
    $SYNTHFORMER_DATA or ~/.cache/synthformer). BPE training is deterministic, so a cached tokenizer is the
    one training would make; it took 30 s of every run on chitchat. SYNTHFORMER_TOKENIZER_CACHE=0 turns the
    cache off; a damaged entry is trained again and replaced."""
    if kind not in CACHED_KINDS or os.environ.get("SYNTHFORMER_TOKENIZER_CACHE", "1") == "0":
        return build_tokenizer(kind, texts, vocab_size=vocab_size, min_frequency=min_frequency)
    texts = list(texts)
    folder = cache_dir(cache) / "tokenizers" / tokenizer_key(kind, texts, vocab_size, min_frequency)
    if (folder / META_FILENAME).exists():
        try:
            tok = load_tokenizer(folder)
            if log:
                log(f"tokenizer: reused {folder} (the same texts and settings)")
            return tok
        except Exception:  # noqa: BLE001 - a damaged cache entry is only a cache miss
            pass
    tok = build_tokenizer(kind, texts, vocab_size=vocab_size, min_frequency=min_frequency)
    try:
        tok.save(folder)  # tokenizer.json first, then tokenizer_meta.json (the entry's mark of completeness)
    except OSError:  # a read-only or full cache: train every time, as before
        pass
    return tok


class TokenizerFileError(DataError):
    """A tokenizer.json that cannot be read: bad JSON, wrong structure, unknown kind."""


def load_tokenizer(path: str | os.PathLike) -> Tokenizer:
    """Read a tokenizer saved with `Tokenizer.save` (a folder holding tokenizer.json, or the file), or
    the single wrapper file of older runs.

    A file that is not valid JSON or not a saved tokenizer raises `TokenizerFileError` (a
    `DataError`) in one line naming the file; a BPE tokenizer read without the ``tokenizers`` package
    raises `MissingExtraError` naming the package.
    """
    path = Path(path)
    if path.is_dir():
        path = path / FILENAME
    if not path.exists():
        raise FileNotFoundError(f"tokenizer file not found: {path}")
    state = _read_json(path)
    if isinstance(state, dict) and "kind" in state:  # the wrapper file of older runs
        return _checked(path, state, lambda: _from_state(state["kind"], state))
    if not isinstance(state, dict) or "model" not in state:
        raise TokenizerFileError(f"{path} is not a synthformer tokenizer: expected a JSON object with a 'kind' key "
                                 f"(a file from before {META_FILENAME}) or a 'model' key (tokenizers' format), "
                                 f"got {type(state).__name__}")
    meta_path = path.with_name(META_FILENAME)
    if not meta_path.is_file():
        raise TokenizerFileError(f"{path} has no {META_FILENAME} beside it (the kind and special tokens "
                                 "synthformer needs); copy both files, or save the tokenizer again")
    meta = _read_json(meta_path)
    if not isinstance(meta, dict) or "kind" not in meta:
        raise TokenizerFileError(f"{meta_path} is not a synthformer tokenizer: expected a JSON object with a "
                                 f"'kind' key, got {type(meta).__name__}")
    return _checked(meta_path, meta, lambda: _from_state(meta["kind"], meta, path))


def _read_json(path: Path):
    return read_json(path, TokenizerFileError, "save the tokenizer again or delete the file")


def _checked(path: Path, state: dict, build) -> Tokenizer:
    """``build()``, its errors as one TokenizerFileError naming ``path``."""
    kind = state["kind"]
    if kind not in TOKENIZERS:
        raise TokenizerFileError(f"{path} is not a synthformer tokenizer (kind={kind!r}); "
                                 f"valid kinds: {list(TOKENIZERS)}")
    try:
        return build()
    except (KeyError, TypeError, ValueError) as e:
        if isinstance(e, (DataError, ImportError)):  # already says what is wrong (a missing package too)
            raise
        detail = f"missing key {e}" if isinstance(e, KeyError) else (str(e).splitlines() or ["?"])[0][:120]
        raise TokenizerFileError(f"{path} holds a broken {kind!r} tokenizer ({detail}); "
                                 "save the tokenizer again") from None


def _from_state(kind: str, state: dict, standard: Path | None = None) -> Tokenizer:
    """The tokenizer of saved fields; a BPE model comes from ``state["hf"]`` (wrapper file) or the
    standard file ``standard``."""
    specials = _specials(state.get("specials", LEGACY_SPECIALS))
    if TOKENIZERS[kind] is ByteTokenizer:
        return ByteTokenizer(specials)
    if kind == "char":
        return CharTokenizer(_strings(state["chars"]), specials)
    if kind == "word":
        return WordTokenizer(_strings(state["words"]), specials)
    text = standard.read_text(encoding="utf-8") if standard is not None else json.dumps(state["hf"])
    hf_tokenizer = require("tokenizers", "reading a BPE tokenizer").Tokenizer
    try:
        hf = hf_tokenizer.from_str(text)
    except Exception as e:  # the Rust binding raises a plain Exception for a malformed model
        raise ValueError(str(e)) from None
    return BPETokenizer(hf, specials)


def _specials(value) -> list[str]:
    """The saved special tokens: the current SPECIALS or the five written before <sep> existed."""
    if value not in (SPECIALS, LEGACY_SPECIALS):
        raise ValueError(f"unknown special tokens {str(value)[:80]}; expected {SPECIALS} (or its first five)")
    return list(value)


def _strings(value) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("expected a list of strings")
    return value


# ----------------------------------------------------------------------------- the standard tokenizers form
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
    """The plain ``tokenizers.Tokenizer`` with the same ids as the synthformer ``tokenizer``:

    * ``bpe``: the inner byte-level BPE, unchanged;
    * ``byte`` / ``pixel``: the 256 byte values in GPT-2's byte-to-character alphabet, id = byte + offset;
    * ``char``: one token per training character, unseen characters -> ``<unk>``;
    * ``word``: one token per whitespace-separated training word, unseen -> ``<unk>``, decoded joined by
      single spaces. A whole word "<pad>" (or another special's text) encodes to the special id here (a
      word-level vocabulary holds one id per string), where synthformer gives ``<unk>`` (or the id of
      that word when it was seen in training: a warning then).

    Special tokens keep their ids and are marked special; text holding "<pad>" etc. is encoded as
    ordinary text and no special token is added (``encode`` of the two tokenizers agrees).
    """
    tk_mod = require("tokenizers", "writing a tokenizer")
    decoders, models, pre_tokenizers = tk_mod.decoders, tk_mod.models, tk_mod.pre_tokenizers
    specials = list(tokenizer.specials)
    base = {s: i for i, s in enumerate(specials)}
    if isinstance(tokenizer, BPETokenizer):
        tk = tk_mod.Tokenizer.from_str(tokenizer.hf.to_str())
    elif isinstance(tokenizer, ByteTokenizer):
        b2u = _bytes_to_unicode()
        vocab = base | {b2u[b]: b + tokenizer.offset for b in range(256)}
        tk = tk_mod.Tokenizer(models.BPE(vocab=vocab, merges=[]))
        tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
        tk.decoder = decoders.ByteLevel()
    elif isinstance(tokenizer, WordTokenizer):
        clash = sorted(set(tokenizer.words) & set(specials))
        if clash:  # one string cannot have two ids in a Hugging Face vocabulary
            warnings.warn(f"word tokenizer has {clash} as ordinary words; the Hugging Face tokenizer encodes "
                          "them as the special tokens", stacklevel=3)
        vocab = {w: i + len(specials) for i, w in enumerate(tokenizer.words)} | base
        tk = tk_mod.Tokenizer(models.WordLevel(vocab=vocab, unk_token=SPECIALS[UNK]))
        tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()  # str.split(); no decoder: words joined by " "
    elif isinstance(tokenizer, CharTokenizer):
        vocab = base | {c: i + len(specials) for i, c in enumerate(tokenizer.chars)}
        tk = tk_mod.Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token=SPECIALS[UNK]))
        tk.decoder = decoders.Fuse()  # characters joined as they are (no spaces between tokens)
    else:
        raise TypeError(f"no Hugging Face form for tokenizer {type(tokenizer).__name__}")
    tk.add_special_tokens(specials)  # already ids 0..len-1: marks them special (skipped when decoding)
    tk.encode_special_tokens = True  # "<pad>" inside text stays text, as in synthformer
    return tk
