"""synthformer.data: sources (real and user files), tokenizers, batching, sharding and resume."""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
import warnings

import pytest
import torch

from synthformer.data import (DataError, DataFileNotFoundError, DataSplits, LMBatches,
                              SequenceBatches, SourceNotInstalledError, build_tokenizer,
                              encode_labelled, encode_lm, encode_pairs, list_sources, load_source,
                              load_tokenizer, prepare_source)
from synthformer.data.__main__ import main as data_main
from synthformer.data.sources import SOURCES


def _prepared(name: str) -> None:
    """Fetch a Debian source (idempotent, cached); skip with the reason only if apt truly fails."""
    try:
        prepare_source(name)
    except SourceNotInstalledError as e:
        pytest.skip(f"source {name} cannot be had here: {e}")


# ----------------------------------------------------------------------------- user files
def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_txt_blocks_and_lines(tmp_path):
    blocks = _write(tmp_path / "b.txt", "\n\n".join(f"doc {i}\nline two of {i}" for i in range(20)))
    s = load_source(blocks, "lm")
    docs = s.train + s.valid + s.test
    assert sorted(docs) == sorted(f"doc {i}\nline two of {i}" for i in range(20))
    assert s.task == "lm" and len(s.valid) == 1 and len(s.test) == 1
    lines = _write(tmp_path / "l.txt", "\n".join(f"sentence {i}" for i in range(40)) + "\n")
    s = load_source(str(lines), "lm")
    assert len(s.train) + len(s.valid) + len(s.test) == 40 and len(s.valid) == 2


def test_split_is_fixed_and_disjoint(tmp_path):
    f = _write(tmp_path / "l.txt", "\n".join(f"sentence {i}" for i in range(200)))
    a, b = load_source(f, "lm", seed=0), load_source(f, "lm", seed=5)
    assert (a.train, a.valid, a.test) == (b.train, b.valid, b.test)  # membership ignores seed
    assert not set(a.train) & set(a.valid) and not set(a.train) & set(a.test)
    capped = load_source(f, "lm", max_examples=30, seed=1)
    assert len(capped.train) == 30 and len(capped.valid) == 3 and set(capped.train) <= set(a.train)


@pytest.mark.parametrize("header,order", [("", "label_first"), ("label\ttext\n", "label_first"),
                                          ("text\tlabel\n", "text_first"), ("Source\tTarget\n", "text_first")])
def test_tsv_classify(tmp_path, header, order):
    rows = [(f"text number {i}", ["neg", "pos", "mid"][i % 3]) for i in range(30)]
    body = "".join(f"{lbl}\t{t}\n" if order == "label_first" else f"{t}\t{lbl}\n" for t, lbl in rows)
    s = load_source(_write(tmp_path / "c.tsv", header + body), "classify")
    assert s.meta["labels"] == ["mid", "neg", "pos"]
    got = {t: s.meta["labels"][y] for t, y in s.train + s.valid + s.test}
    assert got == dict(rows)


def test_tsv_seq2seq_and_numeric_labels(tmp_path):
    f = _write(tmp_path / "p.tsv", "src\ttgt\n" + "".join(f"hello {i}\thola {i}\n" for i in range(10)))
    s = load_source(f, "seq2seq")
    assert sorted(s.train + s.valid + s.test) == sorted((f"hello {i}", f"hola {i}") for i in range(10))
    f = _write(tmp_path / "n.tsv", "".join(f"{i % 11}\tx{i}\n" for i in range(50)))
    s = load_source(f, "classify")
    assert s.meta["labels"] == [str(i) for i in range(11)]  # numeric, not lexicographic, order
    assert all(s.meta["labels"][y] == str(int(t[1:]) % 11) for t, y in s.train)


def test_jsonl_all_tasks(tmp_path):
    f = _write(tmp_path / "d.jsonl", "".join(
        json.dumps({"text": f"t{i}", "label": i % 2, "src": f"s{i}", "tgt": f"g{i}"}) + "\n" for i in range(12)))
    assert sorted(load_source(f, "lm").train + load_source(f, "lm").valid + load_source(f, "lm").test) == \
        sorted(f"t{i}" for i in range(12))
    s = load_source(f, "seq2seq")
    assert all(a[1:] == b[1:] for a, b in s.train)
    s = load_source(f, "classify")
    assert s.meta["labels"] == ["0", "1"] and all(y == int(t[1:]) % 2 for t, y in s.train)


def test_folder_of_splits(tmp_path):
    for name, n in (("train", 8), ("dev", 2), ("test", 3)):
        _write(tmp_path / f"{name}.tsv", "".join(f"{name} {i}\tz {i}\n" for i in range(n)))
    s = load_source(tmp_path, "seq2seq")
    assert (len(s.train), len(s.valid), len(s.test)) == (8, 2, 3) and s.valid[0][0] == "dev 0"
    (tmp_path / "test.tsv").unlink()
    with pytest.raises(DataError, match="missing: test"):
        load_source(tmp_path, "seq2seq")


@pytest.mark.parametrize("fname,text,task,exc,match", [
    ("missing.txt", None, "lm", FileNotFoundError, "not found"),
    ("empty.txt", "", "lm", DataError, "empty"),
    ("blank.tsv", "\n \n", "seq2seq", DataError, "empty"),
    ("bad.tsv", "a\tb\nno tab here\n", "seq2seq", DataError, r"bad.tsv:2: expected 2"),
    ("bad3.tsv", "a\tb\tc\n", "classify", DataError, "found 3"),
    ("bad.jsonl", '{"text": "a"}\n{oops\n', "lm", DataError, r"bad.jsonl:2: not JSON"),
    ("list.jsonl", '{"text": ["a", "b"], "label": "x"}\n', "classify", DataError, r"list.jsonl:1: field 'text' must be a string, got list"),
    ("dict.jsonl", '{"text": "a", "label": {"y": 1}}\n', "classify", DataError, r"dict.jsonl:1: field 'label' must be a string or an integer, got dict"),
    ("num.jsonl", '{"text": "a"}\n{"text": 3}\n', "lm", DataError, r"num.jsonl:2: field 'text' must be a string, got int"),
    ("tgt.jsonl", '{"src": "a", "tgt": null}\n', "seq2seq", DataError, r"tgt.jsonl:1: field 'tgt' must be a string, got NoneType"),
    ("keys.jsonl", '{"text": "a"}\n', "seq2seq", DataError, r"keys \['src', 'tgt'\]"),
    ("x.txt", "a\nb\nc\n", "seq2seq", DataError, "not 'seq2seq'"),
    ("x.csv", "a,b\n", "lm", DataError, "unsupported data file type"),
    ("two.txt", "only\ntwo\n", "lm", DataError, "at least 3"),
])
def test_bad_files(tmp_path, fname, text, task, exc, match):
    if text is not None:
        _write(tmp_path / fname, text)
    with pytest.raises(exc, match=match) as info:
        load_source(tmp_path / fname, task)
    assert "\n" not in str(info.value)


def test_bad_names_and_tasks():
    with pytest.raises(DataError, match="unknown data source 'nope'.*chitchat"):
        load_source("nope", "lm")
    with pytest.raises(DataFileNotFoundError):
        load_source("no/such/file.tsv", "seq2seq")
    with pytest.raises(DataError, match=r"supports tasks \['lm', 'seq2seq'\], not 'classify'"):
        load_source("chitchat", "classify")
    with pytest.raises(DataError, match="unknown task"):
        load_source("chitchat", "translate")
    with pytest.raises(DataError, match="unknown listops option"):
        load_source("listops", "classify", max_examples=5, depth=3)


def test_fetch_debian_package_fresh_cache(tmp_path, capsys):
    """The real apt-get download + dpkg -x path, into an empty cache (fortunes-min is ~60 kB)."""
    from synthformer.data.prepare import MARKER, fetch_debian_package

    try:
        root = fetch_debian_package("fortunes-min", tmp_path)
    except SourceNotInstalledError as e:
        pytest.skip(f"apt cannot fetch here: {e}")
    assert (root / MARKER).exists() and (root / "usr/share/games/fortunes/riddles").is_file()
    assert "apt-get download fortunes-min" in capsys.readouterr().out
    assert fetch_debian_package("fortunes-min", tmp_path) == root  # idempotent, nothing fetched
    assert "already in" in capsys.readouterr().out
    assert [p.name for p in tmp_path.joinpath("debian").iterdir()] == ["fortunes-min"]  # no temp left


def test_not_installed_message(tmp_path, monkeypatch):
    monkeypatch.setenv("SYNTHFORMER_DATA", str(tmp_path / "empty-cache"))
    if SOURCES["fashion-mnist"].installed():  # installed system-wide: nothing to check
        pytest.skip("fashion-mnist is installed system-wide")
    info = {s.name: s for s in list_sources()}
    assert not info["fashion-mnist"].installed and info["chitchat"].installed
    with pytest.raises(SourceNotInstalledError, match="run `synthformer data prepare fashion-mnist`"):
        load_source("fashion-mnist", "classify")


# ----------------------------------------------------------------------------- real sources
def test_chitchat_real():
    lm = load_source("chitchat", "lm")
    assert 6000 < len(lm.train) + len(lm.valid) + len(lm.test) < 7168  # duplicates dropped
    assert len(lm.valid) > 300 and "\n" in lm.train[0]
    pairs = load_source("chitchat", "seq2seq")
    assert len(pairs.train) > 100_000
    # consecutive turns: a reply is the next line of the same conversation document
    conv = lm.train[0].split("\n")
    assert pairs.train[0] == (conv[0], conv[1])
    # no conversation leaks across splits
    assert not set(lm.train) & set(lm.valid) and not set(lm.valid) & set(lm.test)
    small = load_source("chitchat", "lm", max_examples=50, seed=3)
    assert (len(small.train), len(small.valid), len(small.test)) == (50, 5, 5)


def test_chitchat_dialogue_context():
    """seq2seq with context_turns=N: the source is the last N turns before the response."""
    lm = load_source("chitchat", "lm")
    one = load_source("chitchat", "seq2seq")
    three = load_source("chitchat", "seq2seq", context_turns=3)
    assert len(three.train) == len(one.train) and [r for _, r in three.train] == [r for _, r in one.train]
    turns = lm.train[0].split("\n")
    for i in range(1, len(turns)):  # the first conversation's pairs come first
        assert three.train[i - 1] == ("\n".join(turns[max(0, i - 3):i]), turns[i])
    assert max(c.count("\n") for c, _ in three.train) == 2 and three.meta["context_turns"] == 3
    with pytest.raises(DataError, match="context_turns"):
        load_source("chitchat", "seq2seq", context_turns=0)


@pytest.mark.slow  # 8 s: two whole Bibles
def test_bible_en_es_real():
    _prepared("bible-en-es")
    s = load_source("bible-en-es", "seq2seq")
    assert 30_000 < len(s.train) + len(s.valid) + len(s.test) < 31_200
    by_id = {i: p for split in ("train", "valid", "test")
             for i, p in zip(s.meta["ids"][split], getattr(s, split))}
    en, es = by_id["John.3.16"]
    assert "God so loved the world" in en and "de tal manera amó Dios al mundo" in es
    assert by_id["Gen.1.1"] == ("In the beginning God created the heaven and the earth.",
                                "EN el principio crió Dios los cielos y la tierra.")
    assert "Jesus wept" in by_id["John.11.35"][0] and "Y lloró Jesús" in by_id["John.11.35"][1]
    assert not any("<" in a or "<" in b for a, b in s.test)  # markup stripped
    assert not set(s.meta["ids"]["train"]) & set(s.meta["ids"]["test"])
    rev = load_source("bible-en-es", "seq2seq", direction="es-en", max_examples=20)
    assert len(rev.train) == 20 and rev.train[0][1] in {p[0] for p in s.train}


@pytest.mark.parametrize("name,needle", [("bible-kjv", "In the beginning God created"),  # web: slow (4 s)
                                         pytest.param("bible-web", "In the beginning, God created",
                                                      marks=pytest.mark.slow)])
def test_bible_lm_real(name, needle):
    _prepared(name)
    s = load_source(name, "lm")
    docs = s.train + s.valid + s.test
    assert len(docs) >= 1189 and any(d.startswith(needle) for d in docs)
    assert sum(len(d.split()) for d in docs) > 700_000


def test_fortunes_real():
    _prepared("fortunes")
    s = load_source("fortunes", "classify")
    labels = s.meta["labels"]
    assert 20 <= len(labels) <= 30 and "computers" in labels and "politics" in labels
    items = s.train + s.valid + s.test
    assert len(items) > 8_000 and all(t.strip() and "\n%\n" not in t for t, _ in items)
    assert {y for _, y in items} == set(range(len(labels)))
    assert not {t for t, _ in s.train} & {t for t, _ in s.test}
    lm = load_source("fortunes", "lm")  # lm keeps every file
    assert len(lm.train) + len(lm.valid) + len(lm.test) > 14_000


def test_fortunes_topics_only_and_deduplicated(capsys):
    _prepared("fortunes")
    from synthformer.data.sources.fortunes import FORTUNE_MIN_ITEMS, normalise as _normalise, read_fortunes

    s = load_source("fortunes", "classify")
    labels, items = s.meta["labels"], s.train + s.valid + s.test
    for grab_bag in ("cookie", "miscellaneous", "ascii-art", "fortunes", "riddles", "definitions"):
        assert grab_bag not in labels
    counts = [sum(1 for _, y in items if y == i) for i in range(len(labels))]
    assert min(counts) >= FORTUNE_MIN_ITEMS and counts == [s.meta["sizes"][lab] for lab in labels]
    assert "pratchett" not in labels and "magic" not in labels  # 2 and 30 items in the package
    label_of: dict[str, set] = {}
    for t, y in items:
        label_of.setdefault(_normalise(t), set()).add(y)
    assert all(len(ys) == 1 for ys in label_of.values())  # no text under two labels
    assert len(label_of) == len(items)  # and none twice under one
    # an item the package files under two topics is in neither
    raw = read_fortunes()
    topic_sets = {lab: {_normalise(t) for t in raw[lab]} for lab in labels if lab in raw}
    both = {k for a in topic_sets for b in topic_sets if a < b for k in topic_sets[a] & topic_sets[b]}
    assert both and not both & set(label_of)
    assert data_main(["show", "fortunes", "-n", "1"]) == 0
    out = capsys.readouterr().out
    assert f"{len(labels)} classes: art (" in out and "computers (" in out


def test_fashion_mnist_real():
    _prepared("fashion-mnist")
    s = load_source("fashion-mnist", "classify", max_examples=40)
    assert (len(s.train), len(s.valid), len(s.test)) == (40, 4, 4)
    x, y = s.train[0]
    assert len(x) == 784 and all(0 <= v <= 255 for v in x) and 0 <= y < 10 and max(x) > 0
    assert s.meta["labels"][9] == "Ankle boot"
    tok = build_tokenizer("pixel")
    enc = encode_labelled(s.train[:4], tok)
    assert enc[0][0] == [v + tok.offset for v in x] and tok.decode_bytes(enc[0][0]) == bytes(x)


@pytest.mark.slow  # 8 s on a fresh cache: the whole corpus
def test_sentiment_real():
    _prepared("sentiment")
    s = load_source("sentiment", "classify")
    items = s.train + s.valid + s.test
    assert 10_500 < len(items) < 10_605 and s.meta["labels"] == ["negative", "positive"]
    texts = {t: y for t, y in items}
    assert texts["Effective but too tepid biopic"] == 0
    assert 0.45 < sum(texts.values()) / len(texts) < 0.55


def _eval_listops(text: str) -> int:
    """Independent stack evaluator of the bracket form."""
    stack = [[]]
    ops = []
    for token in text.split():
        if token.startswith("["):
            ops.append(token)
            stack.append([])
        elif token == "]":
            args, op = stack.pop(), ops.pop()
            val = {"[MIN": min, "[MAX": max, "[SM": lambda a: sum(a) % 10,
                   "[MED": lambda a: int(statistics.median(a))}[op](args)
            stack[-1].append(val)
        else:
            stack[-1].append(int(token))
    assert len(stack) == 1 and len(stack[0]) == 1
    return stack[0][0]


def test_listops_generated():
    s = load_source("listops", "classify", max_examples=300, seed=1)
    assert (len(s.train), len(s.valid), len(s.test)) == (300, 30, 30)
    items = s.train + s.valid + s.test
    for text, label in items:
        assert _eval_listops(text) == label
        assert 20 < len(text.split()) < 128
    assert len({t for t, _ in items}) == len(items)  # distinct, so splits are disjoint
    assert len({y for _, y in s.train}) == 10
    again = load_source("listops", "classify", max_examples=300, seed=1)
    assert again.train == s.train and load_source("listops", "classify", max_examples=300, seed=2).train != s.train
    long = load_source("listops", "classify", max_examples=5, min_length=200, max_length=400, max_depth=6)
    assert all(200 < len(t.split()) < 400 and _eval_listops(t) == y for t, y in long.train)


def test_cli(capsys):
    assert data_main(["list"]) == 0
    out = capsys.readouterr().out
    assert "chitchat" in out and "bible-en-es" in out and "listops" in out
    assert data_main(["prepare", "listops"]) == 0
    assert data_main(["show", "listops", "-n", "2"]) == 0
    assert data_main(["show", "no-such-source"]) == 2
    assert "error: unknown data source" in capsys.readouterr().err
    res = subprocess.run([sys.executable, "-m", "synthformer.data", "list"], capture_output=True, text=True)
    assert res.returncode == 0 and "fortunes" in res.stdout


# ----------------------------------------------------------------------------- tokenizers
TEXTS = ["Hello there, how are you?", "I'm fine — thanks! ¿Y tú? 日本語 🙂", "  spaces\tand\nnewlines  ",
         "<pad> literal <eos> specials", ""]


@pytest.fixture(scope="module")
def bpe():
    corpus = load_source("chitchat", "lm", max_examples=200).train
    return build_tokenizer("bpe", corpus, vocab_size=600)


@pytest.mark.parametrize("kind", ["bpe", "byte", "char"])
def test_tokenizer_round_trip_and_save(kind, bpe, tmp_path):
    tok = bpe if kind == "bpe" else build_tokenizer(kind, TEXTS)
    assert (tok.pad_id, tok.bos_id, tok.eos_id, tok.unk_id, tok.mask_id) == (0, 1, 2, 3, 4)
    for s in TEXTS:
        ids = tok.encode(s)
        assert all(5 <= i < tok.vocab_size for i in ids)
        assert tok.decode(ids) == s
    tok.save(tmp_path)
    back = load_tokenizer(tmp_path)
    assert type(back) is type(tok) and back.vocab_size == tok.vocab_size
    assert all(back.encode(s) == tok.encode(s) for s in TEXTS)
    assert back.decode([tok.bos_id] + tok.encode("Hello") + [tok.eos_id]) == "Hello"


def test_tokenizer_details(bpe):
    assert bpe.vocab_size == 600
    assert len(bpe.encode("how are you doing today")) < len("how are you doing today") / 2
    char = build_tokenizer("char", ["abc"])
    assert char.vocab_size == 9 and char.encode("abz") == [6, 7, char.unk_id]  # ids 0-5: specials (<sep> 5)
    byte = build_tokenizer("byte")
    assert byte.vocab_size == 262 and byte.encode("é") == [0xC3 + 6, 0xA9 + 6]
    assert byte.decode([1, 0x61 + 6, 5, 2], skip_special=False) == "<bos>a<sep><eos>"
    with pytest.raises(ValueError, match="unknown tokenizer 'wordpiece'"):
        build_tokenizer("wordpiece", TEXTS)
    with pytest.raises(ValueError, match="vocab_size >= 262"):
        build_tokenizer("bpe", TEXTS, vocab_size=100)


# ----------------------------------------------------------------------------- encoding
def test_encode_helpers():
    tok = build_tokenizer("byte")
    stream = encode_lm(["ab", "c"], tok)
    assert stream.tolist() == [0x61 + 6, 0x62 + 6, 2, 0x63 + 6, 2] and stream.dtype == torch.long
    pairs = encode_pairs([("hi", "hola")], tok)
    assert pairs[0][0][-1] == 2 and pairs[0][1][0] == 1 and pairs[0][1][-1] == 2
    assert tok.decode(pairs[0][1]) == "hola"
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = encode_pairs([("abcdef", "x"), ("ab", "y"), ("abcdefgh", "z")], tok, max_len=4)
    assert len(w) == 1 and "2 of 3 sources longer than max_len=4" in str(w[0].message)
    assert [len(s) for s, _ in out] == [4, 3, 4] and out[0][0][-1] == tok.eos_id
    with pytest.raises(ValueError, match="1 of 2 inputs longer than max_len=3"):
        encode_labelled([("abcd", 0), ("ab", 1)], tok, max_len=3, strict=True)
    assert encode_labelled([("ab", 1)], tok, add_bos=True) == [([1, 0x61 + 6, 0x62 + 6], 1)]


def test_real_pipeline_chitchat(bpe):
    """chitchat -> BPE -> eos-joined stream -> LM batches; and seq2seq pairs -> padded batches."""
    s = load_source("chitchat", "lm", max_examples=40)
    stream = encode_lm(s.train, bpe)
    assert (stream == bpe.eos_id).sum() == 40
    first = bpe.decode(stream[: int((stream == bpe.eos_id).nonzero()[0]) + 1].tolist())
    assert first == s.train[0]
    batch = next(iter(LMBatches(stream, seq_len=32, batch_size=4)))
    assert batch["tokens"].shape == (4, 33) and int(batch["tokens"].max()) < bpe.vocab_size
    with pytest.warns(UserWarning, match="sources longer than max_len=64.*; .*targets") as rec:
        pairs = encode_pairs(load_source("chitchat", "seq2seq", max_examples=30).train, bpe, max_len=64)
    assert len(rec) == 1  # one warning per call, with the counts
    b = next(iter(SequenceBatches(pairs, bpe.pad_id, batch_size=8)))
    assert b["src"].shape[0] == 8 and b["src"].shape[1] <= 64 and b["tgt"][:, 0].eq(bpe.bos_id).all()


# ----------------------------------------------------------------------------- batching
def _drain(batcher, n=None):
    out = []
    for b in batcher:
        out.append(b)
        if n is not None and len(out) == n:
            break
    return out


def test_lm_batches_shapes_and_blocks():
    tokens = torch.arange(1001)
    b = LMBatches(tokens, seq_len=10, batch_size=4, shuffle=False)
    assert b.num_blocks == 100 and len(b) == 25
    first = next(iter(b))["tokens"]
    assert first.shape == (4, 11) and first[0].tolist() == list(range(11)) and first[1, 0] == 10
    blocks = torch.cat([x["tokens"] for x in _drain(LMBatches(tokens, 10, 4, seed=1))])
    assert sorted(blocks[:, 0].tolist()) == list(range(0, 1000, 10))  # a permutation of all blocks
    assert (blocks[:, 1:] - blocks[:, :-1] == 1).all()  # contiguous
    with pytest.raises(ValueError, match="too few"):
        LMBatches(torch.arange(20), 10, 4)


def test_lm_batches_epochs_deterministic():
    tokens = torch.arange(501)
    a, b = LMBatches(tokens, 10, 5, seed=7), LMBatches(tokens, 10, 5, seed=7)
    e0 = [x["tokens"] for x in _drain(a)]
    assert a.epoch == 1 and a.position == 0
    e1 = [x["tokens"] for x in _drain(a)]
    assert all(torch.equal(x, y) for x, y in zip(e0, [x["tokens"] for x in _drain(b)]))
    assert not all(torch.equal(x, y) for x, y in zip(e0, e1))  # reshuffled each epoch
    b.set_epoch(1)
    assert all(torch.equal(x, y["tokens"]) for x, y in zip(e1, _drain(b)))


@pytest.mark.parametrize("world_size", [2, 3])
def test_lm_sharding_disjoint_equal(world_size):
    tokens = torch.arange(1001)
    shards = [LMBatches(tokens, 10, 3, seed=2, rank=r, world_size=world_size) for r in range(world_size)]
    assert len({len(s) for s in shards}) == 1
    starts = [set(torch.cat([x["tokens"][:, 0] for x in _drain(s)]).tolist()) for s in shards]
    assert all(len(st) == len(shards[0]) * 3 for st in starts)
    assert not any(starts[i] & starts[j] for i in range(world_size) for j in range(i + 1, world_size))


def _seq_examples(n=57, kind="classify", seed=0):
    g = torch.Generator().manual_seed(seed)
    lens = torch.randint(1, 30, (n, 2), generator=g).tolist()
    if kind == "classify":
        return [([5 + i] * a, i % 4) for i, (a, _) in enumerate(lens)]
    return [([5 + i] * a, [6 + i] * b) for i, (a, b) in enumerate(lens)]


@pytest.mark.parametrize("bucket", [True, False])
def test_sequence_batches_classify(bucket):
    ex = _seq_examples()
    b = SequenceBatches(ex, pad_id=0, batch_size=8, bucket=bucket, seed=3)
    batches = _drain(b)
    assert len(batches) == len(b) == 8
    seen = []
    for x in batches:
        tokens, mask, labels = x["tokens"], x["padding_mask"], x["labels"]
        assert tokens.dtype == torch.long and mask.dtype == torch.bool and tokens.shape == mask.shape
        for row, m, y in zip(tokens, mask, labels):
            i = int(row[0]) - 5
            seen.append(i)
            n = len(ex[i][0])
            assert row[:n].tolist() == ex[i][0] and (row[n:] == 0).all()
            assert not m[:n].any() and m[n:].all() and int(y) == ex[i][1]
    assert sorted(seen) == list(range(len(ex)))
    if bucket:  # buckets hold similar lengths: less padding than random batching
        pad_frac = sum(x["padding_mask"].sum() for x in batches) / sum(x["padding_mask"].numel() for x in batches)
        assert pad_frac < 0.15


def test_sequence_batches_seq2seq_max_tokens():
    ex = _seq_examples(kind="seq2seq")
    b = SequenceBatches(ex, pad_id=0, max_tokens=64, seed=1)
    total = 0
    for x in _drain(b):
        assert x["src"].shape[0] * max(x["src"].shape[1], x["tgt"].shape[1]) <= 64
        for row, m in ((x["src"], x["src_padding_mask"]), (x["tgt"], x["tgt_padding_mask"])):
            assert torch.equal(m, row == 0)
        total += x["src"].shape[0]
    assert total == len(ex)
    with pytest.raises(ValueError, match="> max_tokens=10"):
        SequenceBatches(ex, pad_id=0, max_tokens=10)
    with pytest.raises(ValueError, match="empty sequence"):
        SequenceBatches([([], 1)], pad_id=0, batch_size=2)
    with pytest.raises(ValueError, match="batch_size or max_tokens"):
        SequenceBatches(ex, pad_id=0)


def test_sequence_sharding_disjoint():
    ex = _seq_examples(n=101)
    shards = [SequenceBatches(ex, 0, batch_size=4, seed=5, rank=r, world_size=2) for r in range(2)]
    assert len(shards[0]) == len(shards[1]) > 0
    ids = [[int(row[0]) for x in _drain(s) for row in x["tokens"]] for s in shards]
    assert not set(ids[0]) & set(ids[1]) and len(ids[0]) + len(ids[1]) >= len(ex) - 2 * 4


def _flat(batch):
    return torch.cat([v.flatten().long() for _, v in sorted(batch.items())])


@pytest.mark.parametrize("make", [
    lambda: LMBatches(torch.arange(2001), 10, 7, seed=11),
    lambda: LMBatches(torch.arange(2001), 10, 7, seed=11, rank=1, world_size=2),
    lambda: SequenceBatches(_seq_examples(80), 0, batch_size=6, seed=4),
    lambda: SequenceBatches(_seq_examples(80, "seq2seq"), 0, max_tokens=80, seed=4, rank=1, world_size=2),
])
@pytest.mark.parametrize("k", [0, 3, 13])
def test_resume_exact(make, k):
    ref = make()
    want = [_flat(x) for _ in range(3) for x in _drain(ref)]  # three full epochs
    run = make()
    got = [_flat(x) for x in _drain(run, k)] if k else []
    state = json.loads(json.dumps(run.state_dict()))  # survives a JSON checkpoint
    assert set(state) >= {"epoch", "position"}
    resumed = make()
    resumed.load_state_dict(state)
    while len(got) < len(want):
        got += [_flat(x) for x in _drain(resumed)]
    assert len(got) == len(want) and all(torch.equal(a, b) for a, b in zip(got, want))


def test_resume_ddp_from_rank0_state():
    """DDP: rank 0 alone checkpoints; every rank resumes from that state."""
    make = [lambda r: LMBatches(torch.arange(2001), 10, 7, seed=3, rank=r, world_size=2),
            lambda r: SequenceBatches(_seq_examples(80), 0, batch_size=5, seed=3, rank=r, world_size=2)]
    for mk in make:
        full = [[_flat(x) for x in _drain(mk(r))] for r in range(2)]
        rank0 = mk(0)
        _drain(rank0, 4)
        for r in range(2):
            resumed = mk(r)
            resumed.load_state_dict(rank0.state_dict())
            rest = [_flat(x) for x in _drain(resumed)]
            assert all(torch.equal(a, b) for a, b in zip(rest, full[r][4:])) and len(rest) == len(full[r]) - 4


def test_resume_refuses_other_arguments():
    a = LMBatches(torch.arange(501), 10, 4, seed=1)
    with pytest.raises(ValueError, match="seed"):
        LMBatches(torch.arange(501), 10, 4, seed=2).load_state_dict(a.state_dict())


def test_datasplits_repr():
    s = DataSplits([1, 2], [3], [4], "lm", {"source": "x"})
    assert repr(s) == "DataSplits(task='lm', source='x', train=2, valid=1, test=1)"


def test_show_reports_the_real_split_sizes(tmp_path, capsys):
    """Issue 50: `data show DATA -n 2` printed DataSplits(train=30, valid=3, test=3) for a 533/67/81 split (it
    loaded max(n, 30) examples)."""
    folder = tmp_path / "flat"
    folder.mkdir()
    for split, n in (("train", 533), ("valid", 67), ("test", 81)):
        (folder / f"{split}.txt").write_text("".join(f"line {i} of {split}\n" for i in range(n)))
    full = load_source(folder)
    assert data_main(["show", str(folder), "-n", "2"]) == 0
    out = capsys.readouterr().out
    assert f"train={len(full.train)}, valid={len(full.valid)}, test={len(full.test)}" in out
    assert len(full.train) > 30 and out.count("\n- ") + out.startswith("- ") == 2


def test_bpe_tokenizer_is_cached_by_the_texts_and_settings(tmp_path, monkeypatch):
    """Issue 50: the BPE tokenizer was trained again on every run of the same data (30.8 s of a 5-step run)."""
    from synthformer.data import tokenizer as tk

    monkeypatch.setenv("SYNTHFORMER_DATA", str(tmp_path))
    texts = [f"the quick brown fox {i} jumps over the lazy dog {i % 7}" for i in range(300)]
    calls = []
    real = tk.build_tokenizer
    monkeypatch.setattr(tk, "build_tokenizer", lambda *a, **k: calls.append(a) or real(*a, **k))
    first = tk.cached_tokenizer("bpe", texts, vocab_size=300)
    again = tk.cached_tokenizer("bpe", texts, vocab_size=300)
    assert len(calls) == 1 and again.hf.to_str() == first.hf.to_str()  # trained once, reused as it was
    assert len(list((tmp_path / "tokenizers").iterdir())) == 1
    tk.cached_tokenizer("bpe", texts, vocab_size=320)  # other settings: another entry
    tk.cached_tokenizer("bpe", texts[:-1], vocab_size=300)  # other texts: another entry
    assert len(calls) == 3 and len(list((tmp_path / "tokenizers").iterdir())) == 3
    for entry in (tmp_path / "tokenizers").iterdir():  # a damaged entry is a miss, trained again
        (entry / "tokenizer.json").write_text("{not json")
    tk.cached_tokenizer("bpe", texts, vocab_size=300)
    assert len(calls) == 4
    monkeypatch.setenv("SYNTHFORMER_TOKENIZER_CACHE", "0")
    tk.cached_tokenizer("bpe", texts, vocab_size=300)
    assert len(calls) == 5
    tk.cached_tokenizer("char", texts)  # char tokenizers are not cached (they train at once)
    assert len(list((tmp_path / "tokenizers").iterdir())) == 3
