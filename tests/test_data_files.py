"""Bad user files and tokenizer files: one-line DataErrors naming the file (issue 8, items 7 and 9)."""
from __future__ import annotations

import json
import os

import pytest

from synthformer.data import DataError, build_tokenizer, load_source, load_tokenizer
from synthformer.data.files import MAX_BAD_BYTE_FRACTION
from synthformer.errors import SynthformerError


def _one_line(info, path):
    msg = str(info.value)
    assert "\n" not in msg and str(path) in msg and isinstance(info.value, SynthformerError)


@pytest.mark.parametrize("data", [os.urandom(4096), b"hello world\n" * 50 + b"\x00\x01\x02" * 10,
                                  ("café\n" * 200).encode("latin-1")])
def test_binary_or_non_utf8_txt_is_refused(tmp_path, data):
    path = tmp_path / "data.txt"
    path.write_bytes(data)
    with pytest.raises(DataError, match="binary|not UTF-8") as info:
        load_source(path, "lm")
    _one_line(info, path)


def test_few_bad_bytes_are_tolerated(tmp_path):
    lines = [f"sentence number {i} with plain words" for i in range(400)]
    lines[7] = "a stray latin-1 byte: caf\xe9"
    data = "\n".join(lines).encode("latin-1")
    assert 1 <= MAX_BAD_BYTE_FRACTION * len(data)
    path = tmp_path / "mostly.txt"
    path.write_bytes(data)
    s = load_source(path, "lm")
    docs = s.train + s.valid + s.test
    assert len(docs) == 400 and "a stray latin-1 byte: caf\ufffd" in docs


@pytest.fixture
def saved(tmp_path):
    build_tokenizer("char", ["abc"]).save(tmp_path)
    return tmp_path / "tokenizer.json"


@pytest.mark.parametrize("content,match", [
    ("{not json", "not valid JSON"),
    ("", "not valid JSON"),
    ("[1, 2, 3]", "expected a JSON object with a 'kind' key"),
    ('{"chars": ["a"]}', "expected a JSON object with a 'kind' key"),
    ('{"kind": "sentencepiece"}', "kind='sentencepiece'"),
    ('{"kind": "char"}', "broken 'char' tokenizer \\(missing key 'chars'\\)"),
    ('{"kind": "char", "chars": 5}', "broken 'char' tokenizer"),
    ('{"kind": "char", "chars": ["ab"]}', "broken 'char' tokenizer"),
    ('{"kind": "word", "words": [1, 2]}', "broken 'word' tokenizer"),
    ('{"kind": "bpe", "hf": {"model": 3}}', "broken 'bpe' tokenizer"),
])
def test_bad_tokenizer_json(saved, content, match):
    saved.write_text(content)
    with pytest.raises(DataError, match=match) as info:
        load_tokenizer(saved.parent)
    _one_line(info, saved)


def test_binary_tokenizer_json(saved):
    saved.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(DataError, match="not valid JSON") as info:
        load_tokenizer(saved)
    _one_line(info, saved)
    assert json.loads('{"kind": "byte"}')  # a byte tokenizer needs nothing else
    saved.write_text('{"kind": "byte"}')
    assert load_tokenizer(saved).vocab_size == 261


def test_folder_of_split_subfolders_one_file_per_book(tmp_path):
    """train/, validation/, test/ sub-folders of many .txt files (one per book) are the three splits."""
    books = {"train": ["a.txt", "b.txt", "nested/c.txt"], "validation": ["d.txt"], "test": ["e.txt", "f.txt"]}
    for split, names in books.items():
        for name in names:
            path = tmp_path / split / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("\n\n".join(f"{name} paragraph {i}" for i in range(3)))
    (tmp_path / "train" / ".hidden.txt").write_text("not a book")
    (tmp_path / "train" / "notes.md").write_text("not data")
    s = load_source(tmp_path, "lm")
    assert s.train == [f"{n} paragraph {i}" for n in ("a.txt", "b.txt", "nested/c.txt") for i in range(3)]
    assert len(s.valid) == 3 and len(s.test) == 6 and s.test[3] == "f.txt paragraph 0"
    (tmp_path / "test" / "g.jsonl").write_text('{"text": "x"}\n')
    with pytest.raises(DataError, match="mix file types"):
        load_source(tmp_path, "lm")
    for p in (tmp_path / "test").iterdir():
        p.unlink()
    with pytest.raises(DataError, match="holds no data files") as info:
        load_source(tmp_path, "lm")
    _one_line(info, tmp_path / "test")
