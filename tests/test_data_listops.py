"""ListOps with LRA's vocabulary (the word tokenizer) and LRA's lengths (the listops-lra source)."""
from __future__ import annotations

import json

import pytest

from synthformer.data import DataError, build_tokenizer, encode_labelled, load_source, load_tokenizer
from synthformer.data.sources.listops import LRA, OPERATORS
from synthformer.data.tokenizer import TOKENIZERS, WordTokenizer


def test_word_tokenizer_one_id_per_listops_symbol(tmp_path):
    s = load_source("listops", "classify", max_examples=200, seed=0)
    tok = build_tokenizer("word", [t for t, _ in s.train])
    assert "word" in TOKENIZERS and isinstance(tok, WordTokenizer)
    # LRA's vocabulary: the four operators, the closing bracket and the ten digits, after the specials
    assert tok.vocab_size == len(tok.specials) + len(OPERATORS) + 1 + 10
    assert len(tok.encode("[MIN")) == 1 and tok.encode("[MIN 3 ]") == [tok.encode(w)[0] for w in ("[MIN", "3", "]")]
    for text, _ in s.valid + s.test:
        ids = tok.encode(text)
        assert len(ids) == len(text.split()) and tok.unk_id not in ids
        assert tok.decode(ids) == text
    assert tok.decode([tok.bos_id] + tok.encode("[SM 1 2 ]") + [tok.eos_id]) == "[SM 1 2 ]"
    assert tok.decode(tok.encode("[SM 1 2 ]") + [tok.eos_id], skip_special=False) == "[SM 1 2 ] <eos>"
    assert tok.encode("[FIRST 1 ]")[0] == tok.unk_id  # unseen word
    enc = encode_labelled(s.train[:3], tok)
    assert [len(x) for x, _ in enc] == [len(t.split()) for t, _ in s.train[:3]]
    tok.save(tmp_path)
    back = load_tokenizer(tmp_path)
    assert isinstance(back, WordTokenizer) and back.words == tok.words
    assert all(back.encode(t) == tok.encode(t) for t, _ in s.train[:20])
    assert json.loads((tmp_path / "tokenizer_meta.json").read_text())["kind"] == "word"


def test_word_tokenizer_rejects_bad_words():
    with pytest.raises(ValueError, match="without whitespace"):
        WordTokenizer(["a b"])


def test_listops_lra_lengths():
    s = load_source("listops-lra", "classify", max_examples=20, seed=0)
    assert (len(s.train), len(s.valid), len(s.test)) == (20, 2, 2)
    lengths = [len(t.split()) for t, _ in s.train + s.valid + s.test]
    assert all(LRA["min_length"] < n < LRA["max_length"] for n in lengths)
    assert s.meta["config"]["max_depth"] == 10 and s.meta["config"]["max_args"] == 10
    assert s.meta["config"]["min_length"] == 500
    # options override the LRA defaults; bad ones are one-line DataErrors
    short = load_source("listops-lra", "classify", max_examples=5, min_length=50, max_length=100)
    assert all(50 < len(t.split()) < 100 for t, _ in short.train)
    with pytest.raises(DataError, match="listops-lra.*min_length"):
        load_source("listops-lra", "classify", max_examples=5, min_length=300, max_length=200)
    with pytest.raises(DataError, match="unknown listops-lra option"):
        load_source("listops-lra", "classify", max_examples=5, length=3)


def test_listops_lra_large_sets_are_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("SYNTHFORMER_DATA", str(tmp_path))
    opts = dict(num_train=20_000, num_valid=10, num_test=10, min_length=2, max_length=12, max_depth=3)
    a = load_source("listops-lra", "classify", **opts)
    files = list((tmp_path / "listops").glob("*.json"))
    assert len(files) == 1 and len(a.train) == 20_000
    b = load_source("listops-lra", "classify", **opts)  # read back from the cache
    assert (b.train, b.valid, b.test) == (a.train, a.valid, a.test) and isinstance(b.train[0], tuple)
