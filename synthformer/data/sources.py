"""Data sources: a literal registry of real corpora plus the user's own files.

Every source gives a `DataSplits` for one task:
- ``lm``: examples are ``str`` documents;
- ``seq2seq``: ``(src: str, tgt: str)`` pairs;
- ``classify``: ``(x, label: int)`` with ``meta["labels"]`` naming the classes; ``x`` is a ``str``,
  except for ``fashion-mnist`` where it is a ``list[int]`` of 784 pixel values 0..255 (row-major,
  LRA Image style; encode it with the ``byte`` tokenizer).

Splits are fixed: membership never depends on ``seed``. Unless a source says otherwise, examples
(or whole conversations / chapters) are sorted by a SHA-1 hash of a stable id and cut 90/5/5.
``max_examples`` caps train at that many examples and valid/test at ``max(1, max_examples // 10)``,
keeping a subset drawn with ``seed`` (in the original order).

Nothing is downloaded by `load_source`: Debian sources must be fetched first with
`prepare_source(name)` (CLI: ``synthformer data prepare NAME``).
"""
from __future__ import annotations

import functools
import gzip
import hashlib
import importlib.util
import json
import os
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from . import bible, files, listops
from .prepare import (DataError, DataFileNotFoundError, SourceNotInstalledError,
                      fetch_debian_package, fetch_vader_movie_reviews, find_package_file)
from .prepare import cache_dir as data_cache_dir

TASKS = ("lm", "seq2seq", "classify")
SPLIT_FRACTIONS = (0.90, 0.05, 0.05)  # train, valid, test


@dataclass
class DataSplits:
    """The three splits of one task's examples."""

    train: list  # training examples (see the module docstring for their type per task)
    valid: list  # validation examples
    test: list  # test examples
    task: str  # "lm", "seq2seq" or "classify"
    meta: dict = field(default_factory=dict)  # source, description, split rule; "labels" for classify

    def __repr__(self) -> str:
        return (f"DataSplits(task={self.task!r}, source={self.meta.get('source')!r}, "
                f"train={len(self.train)}, valid={len(self.valid)}, test={len(self.test)})")


@dataclass
class SourceInfo:
    """What `list_sources` reports about one registry source."""

    name: str  # registry name, e.g. "chitchat"
    tasks: tuple[str, ...]  # tasks it supports
    description: str  # one line: what the data is
    installed: bool  # whether `load_source` can run now without fetching anything
    how_to_get: str  # what to run when it is not installed


# ----------------------------------------------------------------------------- split helpers
def _digest(key: str) -> str:
    return hashlib.sha1(key.encode("utf-8")).hexdigest()


def split_by_hash(items: list, keys: list[str], fractions=SPLIT_FRACTIONS) -> tuple[list, list, list]:
    """Sort items by SHA-1 of their key, cut by `fractions`; each split keeps the original order.

    Valid and test get at least one item each when there are 3 or more items.
    """
    n = len(items)
    if n < 3:
        raise DataError(f"need at least 3 examples to make train/valid/test splits, got {n}; "
                        "give a folder with train/valid/test files instead")
    order = sorted(range(n), key=lambda i: (_digest(keys[i]), i))
    n_valid = max(1, round(n * fractions[1]))
    n_test = max(1, round(n * fractions[2]))
    n_train = n - n_valid - n_test
    cuts = (sorted(order[:n_train]), sorted(order[n_train:n_train + n_valid]),
            sorted(order[n_train + n_valid:]))
    return tuple([items[i] for i in idx] for idx in cuts)


def _cap(items: list, limit: int | None, seed: int) -> list:
    if limit is None or len(items) <= limit:
        return items
    keep = sorted(random.Random(seed).sample(range(len(items)), limit))
    return [items[i] for i in keep]


def _caps(max_examples: int | None) -> tuple:
    if max_examples is None:
        return None, None, None
    if max_examples < 1:
        raise ValueError(f"max_examples must be >= 1 or None, got {max_examples}")
    small = max(1, max_examples // 10)
    return max_examples, small, small


def _capped(splits: tuple, max_examples: int | None, seed: int) -> tuple:
    return tuple(_cap(s, c, seed + i) for i, (s, c) in enumerate(zip(splits, _caps(max_examples))))


# ----------------------------------------------------------------------------- chitchat
TURN_SEPARATOR = "\n"  # between turns of a conversation (lm documents)
MESSAGE_SEPARATOR = " "  # between consecutive messages of one speaker's turn


@functools.lru_cache(maxsize=1)
def _chitchat_conversations() -> tuple[tuple[str, tuple[str, ...]], ...]:
    import chitchat_dataset

    path = Path(chitchat_dataset.__file__).parent / "dataset.json"
    with open(path, encoding="utf-8") as f:
        raw = json.load(f)
    out = []
    for conv_id, conv in raw.items():
        turns = tuple(MESSAGE_SEPARATOR.join(m["text"].strip() for m in turn if m["text"].strip())
                      for turn in conv["messages"])
        turns = tuple(t for t in turns if t)
        if turns:
            out.append((conv_id, turns))
    return tuple(out)


def _load_chitchat(task: str, max_examples, seed, **options) -> tuple[tuple, dict]:
    """Chit Chat Challenge conversations (PyPI `chitchat-dataset`, MIT).

    A conversation is a list of turns (consecutive messages of one speaker, joined by a space).
    lm: one document per conversation, turns joined by a newline. seq2seq: (turn i, turn i+1)
    pairs within each conversation. Verbatim duplicate conversations are kept once (6,233 remain);
    split 90/5/5 by hash of the conversation text, so no conversation is in two splits.
    """
    _no_options("chitchat", options)
    convs, seen = [], set()
    for cid, turns in _chitchat_conversations():
        if turns not in seen:  # 935 of the 7,168 conversations are verbatim copies of another
            seen.add(turns)
            convs.append((cid, turns))
    splits = split_by_hash(convs, [TURN_SEPARATOR.join(t) for _, t in convs])
    if task == "lm":
        out = tuple([TURN_SEPARATOR.join(turns) for _, turns in s] for s in splits)
    else:
        out = tuple([(a, b) for _, turns in s for a, b in zip(turns, turns[1:])] for s in splits)
    return _capped(out, max_examples, seed), {"split": "90/5/5 by SHA-1 of conversation text, duplicates dropped",
                                             "turn_separator": TURN_SEPARATOR}


# ----------------------------------------------------------------------------- Bibles
SWORD = {  # source module -> (Debian package, SWORD module id)
    "kjv": ("sword-text-kjv", "engKJV2006eb"),
    "sparv": ("sword-text-sparv", "spaRV1909eb"),
    "web": ("sword-text-web", "engWEB2015eb"),
}


def _sword_root(module: str) -> Path:
    package, mod_id = SWORD[module]
    conf = find_package_file(package, f"usr/share/sword/mods.d/{mod_id}.conf")
    if conf is None:
        raise SourceNotInstalledError(f"SWORD module {mod_id} (Debian {package}) is not installed")
    return conf.parent.parent


def _slots(module: str):
    return bible.read_slots(str(_sword_root(module)), SWORD[module][1], module)


def _verses(module: str):
    return tuple((k, t) for k, t in _slots(module)[0] if t)


def _ref(key) -> str:
    return f"{key[0]}.{key[1]}.{key[2]}"


def _chapter_split(items: list, keys: list) -> tuple[list, list, list]:
    """Split 90/5/5 by SHA-1 of the chapter id ("John.3"): no chapter is in two splits."""
    chapters = list(dict.fromkeys(f"{k[0]}.{k[1]}" for k in keys))
    train, valid, test = (set(s) for s in split_by_hash(chapters, chapters))
    out: tuple[list, list, list] = ([], [], [])
    for item, k in zip(items, keys):
        ch = f"{k[0]}.{k[1]}"
        out[0 if ch in train else 1 if ch in valid else 2].append(item)
    return out


def _load_bible_en_es(task: str, max_examples, seed, direction: str = "en-es", **options):
    """KJV English <-> Reina-Valera 1909 Spanish verse pairs, aligned through each module's
    versification (`synthformer.data.bible`): RV numbers some chapters its own way (Job 38-41,
    Jonah 1-2, Hosea 11-12, Numbers 13 and 30, 1 Samuel 24, ...), so verses are mapped to KJV
    references and only 1:1 pairs are kept (a verse split or merged on one side is dropped, as are
    verses empty in either module). Canonical psalm titles are kept on both sides; the Psalm 119
    letters and epistle subscriptions on neither. ``direction`` is "en-es" (default) or "es-en".
    Split 90/5/5 by SHA-1 of the chapter id ("John.3"), so no chapter is in two splits;
    ``meta["ids"]`` holds each split's KJV verse ids (e.g. "John.3.16") in example order.
    """
    _no_options("bible-en-es", options)
    if direction not in ("en-es", "es-en"):
        raise DataError(f"bible-en-es direction must be 'en-es' or 'es-en', got {direction!r}")
    aligned = bible.align(_slots("kjv"), "kjv", _slots("sparv"), "sparv")
    keys = [k for k, _, _ in aligned]
    items = [(_ref(k), (en, es) if direction == "en-es" else (es, en)) for k, en, es in aligned]
    splits = _capped(_chapter_split(items, keys), max_examples, seed)
    meta = {"split": "90/5/5 by SHA-1 of chapter id (e.g. 'John.3')", "direction": direction,
            "alignment": "1:1 verses through KJV references (RV 1909 versification mapped)",
            "ids": {name: [i for i, _ in s] for name, s in zip(("train", "valid", "test"), splits)}}
    return tuple([p for _, p in s] for s in splits), meta


def _bible_lm(module: str, max_examples, seed, options):
    _no_options(f"bible-{module}", options)
    chapters: dict[str, list[str]] = {}
    for (book, ch, _), text in _verses(module):
        chapters.setdefault(f"{book}.{ch}", []).append(text)
    ids = list(chapters)
    docs = ["\n".join(chapters[i]) for i in ids]
    return _capped(split_by_hash(docs, ids), max_examples, seed), {
        "split": "90/5/5 by SHA-1 of chapter id (e.g. 'John.3')", "document": "one chapter, one verse per line"}


def _load_bible_kjv(task, max_examples, seed, **options):
    """King James Version (Debian sword-text-kjv) for lm: one document per chapter, verses one per
    line; split 90/5/5 by hash of chapter id."""
    return _bible_lm("kjv", max_examples, seed, options)


def _load_bible_web(task, max_examples, seed, **options):
    """World English Bible (Debian sword-text-web, with deuterocanon) for lm: one document per
    chapter, verses one per line; split 90/5/5 by hash of chapter id."""
    return _bible_lm("web", max_examples, seed, options)


# ----------------------------------------------------------------------------- fortunes
FORTUNE_PACKAGES = {"fortunes-min": "riddles", "fortunes": "computers"}  # package -> a file it ships


def _fortune_dirs() -> list[Path]:
    dirs = []
    for package, probe in FORTUNE_PACKAGES.items():
        found = find_package_file(package, f"usr/share/games/fortunes/{probe}")
        if found is None:
            raise SourceNotInstalledError(f"Debian package {package} is not installed")
        dirs.append(found.parent)
    return dirs


def read_fortunes() -> dict[str, list[str]]:
    """category -> items (lines of '%' separate items); .dat indexes and .u8 links skipped."""
    cats: dict[str, list[str]] = {}
    for d in _fortune_dirs():
        for path in sorted(d.iterdir()):
            if path.suffix in (".dat", ".u8") or path.is_symlink() or not path.is_file():
                continue
            text = path.read_text(encoding="utf-8", errors="replace").replace("\r\n", "\n")
            items, cur = [], []
            for line in text.split("\n"):
                if line.strip() == "%":
                    items.append("\n".join(cur).strip("\n"))
                    cur = []
                else:
                    cur.append(line.rstrip())
            items.append("\n".join(cur).strip("\n"))
            cats.setdefault(path.name, []).extend(i for i in items if i.strip())
    return cats


# Files that do not name a subject, so they cannot be topic classes (kept for lm).
FORTUNE_NOT_TOPICS = {
    "cookie": "grab-bag", "miscellaneous": "grab-bag", "fortunes": "grab-bag",
    "ascii-art": "pictures, not text", "translate-me": "mostly not English",
    "knghtbrd": "one person's quote collection", "zippy": "one comic character's lines",
    "humorists": "quotes by humorists on anything", "pratchett": "one author's quotes",
    "definitions": "a form (mock dictionary entries) on any subject", "riddles": "a form",
    "platitudes": "a form", "songs-poems": "a form", "paradoxum": "a form",
    "goedel": "a form (self-referential sentences)", "disclaimer": "a form",
}
FORTUNE_MERGE = {"linuxcookie": "linux"}  # the same subject under two file names
FORTUNE_MIN_ITEMS = 50  # topic classes with fewer items (after de-duplication) are dropped
_NON_WORD = re.compile(r"[\W_]+")


def _normalise(text: str) -> str:
    """Lower case, letters and digits only, single spaces: near-duplicates compare equal."""
    return _NON_WORD.sub(" ", text.lower()).strip()


def fortune_classes() -> tuple[list[str], list[tuple[str, int]], dict]:
    """The topic classes of `fortunes`: (labels, [(text, label_id)], stats).

    Files in `FORTUNE_NOT_TOPICS` are left out and `FORTUNE_MERGE` folds file names together;
    an item whose normalised text appears under two labels is dropped everywhere, one under a
    single label is kept once; labels with fewer than `FORTUNE_MIN_ITEMS` items are dropped.
    """
    by_label: dict[str, dict[str, str]] = {}
    for name, items in read_fortunes().items():
        if name in FORTUNE_NOT_TOPICS:
            continue
        label = FORTUNE_MERGE.get(name, name)
        for text in items:
            by_label.setdefault(label, {}).setdefault(_normalise(text), text)
    owners: dict[str, set] = {}
    for label, items in by_label.items():
        for key in items:
            owners.setdefault(key, set()).add(label)
    shared = {k for k, labs in owners.items() if len(labs) > 1}
    kept = {lab: [t for k, t in items.items() if k not in shared] for lab, items in by_label.items()}
    small = sorted(lab for lab, items in kept.items() if len(items) < FORTUNE_MIN_ITEMS)
    labels = sorted(lab for lab in kept if lab not in small)
    examples = [(t, i) for i, lab in enumerate(labels) for t in kept[lab]]
    stats = {"dropped_files": sorted(FORTUNE_NOT_TOPICS), "merged": FORTUNE_MERGE,
             "dropped_small": small, "dropped_shared_items": len(shared),
             "sizes": {lab: len(kept[lab]) for lab in labels}}
    return labels, examples, stats


def _load_fortunes(task, max_examples, seed, **options):
    """Debian `fortunes` + `fortunes-min` cookie files (items separated by lines holding only '%').

    classify: topic classes only, label = the file (topic) name. Left out: files that name no
    subject (`FORTUNE_NOT_TOPICS`: grab-bags such as cookie and miscellaneous, ascii-art, files
    named after a person, and forms such as definitions or riddles); linuxcookie is merged into
    linux; items whose normalised text (lower case, letters and digits) appears under two topics
    are dropped from both; topics with fewer than 50 items are dropped (magic, 30 items).
    25 topics remain: computers, people, politics, work, science, ... (``meta["labels"]``,
    ``meta["sizes"]``). lm: every file, one document per item, normalised duplicates kept once.
    Split 90/5/5 by SHA-1 of the item text.
    """
    _no_options("fortunes", options)
    meta: dict = {"split": "90/5/5 by SHA-1 of item text"}
    if task == "classify":
        labels, items, stats = fortune_classes()
        meta.update(labels=labels, **stats)
        splits = split_by_hash(items, [t for t, _ in items])
    else:
        seen, docs = set(), []
        for items in read_fortunes().values():
            for text in items:
                if _normalise(text) not in seen:
                    seen.add(_normalise(text))
                    docs.append(text)
        splits = split_by_hash(docs, docs)
    return _capped(splits, max_examples, seed), meta


# ----------------------------------------------------------------------------- Fashion-MNIST
FASHION_LABELS = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
                  "Sneaker", "Bag", "Ankle boot"]
FASHION_VALID = 5000  # the last 5,000 training images form the validation split


def _read_idx(path: Path):
    import numpy as np

    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    arr = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    return arr.reshape(dims[0], -1) if ndim > 1 else arr


def _load_fashion_mnist(task, max_examples, seed, **options):
    """Fashion-MNIST (Debian dataset-fashion-mnist, IDX files), LRA-Image style: each example is
    (list of 784 pixel values 0..255, row-major 28x28, label 0..9). Split: the official 10,000
    test images; the last 5,000 of the 60,000 training images are validation (fixed)."""
    _no_options("fashion-mnist", options)
    probe = find_package_file("dataset-fashion-mnist",
                              "usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")
    if probe is None:
        raise SourceNotInstalledError("Debian package dataset-fashion-mnist is not installed")
    root = probe.parent
    x_tr, y_tr = _read_idx(root / "train-images-idx3-ubyte.gz"), _read_idx(root / "train-labels-idx1-ubyte.gz")
    x_te, y_te = _read_idx(root / "t10k-images-idx3-ubyte.gz"), _read_idx(root / "t10k-labels-idx1-ubyte.gz")
    n_tr = len(y_tr) - FASHION_VALID
    parts = ((x_tr, y_tr, range(n_tr)), (x_tr, y_tr, range(n_tr, len(y_tr))), (x_te, y_te, range(len(y_te))))
    out = []
    for (x, y, idx), cap in zip(parts, _caps(max_examples)):
        idx = _cap(list(idx), cap, seed + len(out))
        out.append([(x[i].tolist(), int(y[i])) for i in idx])
    return tuple(out), {"labels": FASHION_LABELS, "image_shape": (28, 28),
                        "split": "official test; last 5,000 training images as valid"}


# ----------------------------------------------------------------------------- sentiment
def _vader_path() -> Path:
    return data_cache_dir() / "pypi" / "vader" / "movie_reviews.tsv"


def _load_sentiment(task, max_examples, seed, **options):
    """Movie-review sentences with mean human sentiment ratings (Hutto & Gilbert 2014, shipped in
    the vaderSentiment sdist): label 1 (positive) when the rating is > 0, 0 (negative) when < 0;
    the 37 sentences rated exactly 0 are dropped. Split 90/5/5 by SHA-1 of the sentence."""
    _no_options("sentiment", options)
    path = _vader_path()
    if not path.exists():
        raise SourceNotInstalledError("vaderSentiment movie reviews are not in the cache")
    items = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        fields = line.split("\t")
        if len(fields) == 3 and fields[2].strip() and float(fields[1]) != 0:
            items.append((fields[2].strip(), int(float(fields[1]) > 0)))
    splits = split_by_hash(items, [t for t, _ in items])
    return _capped(splits, max_examples, seed), {"labels": ["negative", "positive"],
                                                 "split": "90/5/5 by SHA-1 of sentence"}


# ----------------------------------------------------------------------------- ListOps
def _listops(name: str, defaults: dict, max_examples, seed, options: dict):
    cfg_fields = set(listops.ListOpsConfig.__dataclass_fields__)
    bad = sorted(set(options) - cfg_fields)
    if bad:
        raise DataError(f"unknown {name} option(s) {bad}; valid: {sorted(cfg_fields)}")
    merged = dict(defaults)
    if max_examples is not None:  # explicit num_* options still win
        merged.update(zip(("num_train", "num_valid", "num_test"), _caps(max_examples)))
    options = {**merged, **options}
    try:
        cfg = listops.ListOpsConfig(**options)
    except ValueError as e:
        raise DataError(f"{name}: {e}") from None
    return cfg, _listops_cached(cfg, seed)


def _listops_cached(cfg, seed: int):
    """Generated splits, cached as JSON in the data cache when large (LRA sizes take minutes)."""
    if cfg.num_train + cfg.num_valid + cfg.num_test < 20_000:
        return listops.listops_splits(cfg, seed)
    key = hashlib.sha1(json.dumps([vars(cfg), seed], sort_keys=True).encode()).hexdigest()[:16]
    path = data_cache_dir() / "listops" / f"{key}.json"
    if path.exists():
        return tuple([(t, y) for t, y in split] for split in json.loads(path.read_text()))
    splits = listops.listops_splits(cfg, seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(splits))
    os.replace(tmp, path)
    return splits


def _load_listops(task, max_examples, seed, **options):
    """ListOps generated with the LRA algorithm (see `synthformer.data.listops`); options are
    `ListOpsConfig` fields (num_train, num_valid, num_test, min_length, max_length, max_depth,
    max_args). Splits are drawn with disjoint expressions from seeds derived from ``seed``;
    ``max_examples`` sets num_train (and valid/test to max(1, max_examples // 10))."""
    cfg, splits = _listops("listops", {}, max_examples, seed, options)
    return splits, {"labels": [str(i) for i in range(10)], "config": vars(cfg),
                    "split": "generated; disjoint expressions"}


def _load_listops_lra(task, max_examples, seed, **options):
    """ListOps at the LRA paper's sizes: lengths 500..2000 tokens, depth 10, up to 10 arguments,
    96k/2k/2k examples (`listops.LRA`; options and ``max_examples`` as for ``listops``). Large sets
    are generated once (minutes) and cached in the data cache folder. Use ``tokenizer: word``."""
    cfg, splits = _listops("listops-lra", listops.LRA, max_examples, seed, options)
    return splits, {"labels": [str(i) for i in range(10)], "config": vars(cfg),
                    "split": "generated; disjoint expressions"}


def _no_options(name: str, options: dict) -> None:
    if options:
        raise DataError(f"source {name!r} takes no options, got {sorted(options)}")


# ----------------------------------------------------------------------------- the registry
def _module_installed(name: str) -> Callable[[], bool]:
    return lambda: importlib.util.find_spec(name) is not None


def _packages_installed(*checks: tuple[str, str]) -> Callable[[], bool]:
    return lambda: all(find_package_file(p, rel) is not None for p, rel in checks)


@dataclass
class _Source:
    loader: Callable  # (task, max_examples, seed, **options) -> ((train, valid, test), meta)
    tasks: tuple[str, ...]  # supported tasks, the first is the default
    description: str  # one line for `list_sources`
    packages: tuple[str, ...]  # Debian packages `prepare_source` fetches (empty: nothing to fetch)
    installed: Callable[[], bool]  # whether the files are here
    how_to_get: str  # hint printed when missing
    fetch: Callable | None = None  # other fetcher (cache folder -> path), e.g. a PyPI sdist


_SWORD_CONF = "usr/share/sword/mods.d/{}.conf"
SOURCES: dict[str, _Source] = {
    "chitchat": _Source(_load_chitchat, ("lm", "seq2seq"),
                        "Chit Chat Challenge: 7,168 English conversations (PyPI chitchat-dataset, MIT)",
                        (), _module_installed("chitchat_dataset"), "pip install chitchat-dataset"),
    "bible-en-es": _Source(_load_bible_en_es, ("seq2seq",),
                           "KJV English -> Reina-Valera 1909 Spanish, ~31k verse pairs (Debian SWORD)",
                           ("sword-text-kjv", "sword-text-sparv"),
                           _packages_installed(("sword-text-kjv", _SWORD_CONF.format("engKJV2006eb")),
                                               ("sword-text-sparv", _SWORD_CONF.format("spaRV1909eb"))),
                           "synthformer data prepare bible-en-es"),
    "bible-kjv": _Source(_load_bible_kjv, ("lm",), "King James Version, 1,189 chapters (Debian sword-text-kjv)",
                         ("sword-text-kjv",),
                         _packages_installed(("sword-text-kjv", _SWORD_CONF.format("engKJV2006eb"))),
                         "synthformer data prepare bible-kjv"),
    "bible-web": _Source(_load_bible_web, ("lm",), "World English Bible with deuterocanon (Debian sword-text-web)",
                         ("sword-text-web",),
                         _packages_installed(("sword-text-web", _SWORD_CONF.format("engWEB2015eb"))),
                         "synthformer data prepare bible-web"),
    "fortunes": _Source(_load_fortunes, ("classify", "lm"),
                        "fortune cookies, label = category file (Debian fortunes + fortunes-min)",
                        tuple(FORTUNE_PACKAGES),
                        _packages_installed(*((p, f"usr/share/games/fortunes/{f}")
                                              for p, f in FORTUNE_PACKAGES.items())),
                        "synthformer data prepare fortunes"),
    "fashion-mnist": _Source(_load_fashion_mnist, ("classify",),
                             "Fashion-MNIST 28x28 images as 784-pixel sequences (Debian dataset-fashion-mnist)",
                             ("dataset-fashion-mnist",),
                             _packages_installed(("dataset-fashion-mnist",
                                                  "usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")),
                             "synthformer data prepare fashion-mnist"),
    "sentiment": _Source(_load_sentiment, ("classify",),
                         "10.6k movie-review sentences, positive/negative (vaderSentiment sdist, MIT)",
                         (), lambda: _vader_path().exists(), "synthformer data prepare sentiment",
                         fetch=fetch_vader_movie_reviews),
    "listops": _Source(_load_listops, ("classify",), "ListOps expressions generated with the LRA algorithm, 10 classes",
                       (), lambda: True, "nothing to get: generated on the fly"),
    "listops-lra": _Source(_load_listops_lra, ("classify",),
                           "ListOps at LRA's sizes: 500-2000 tokens, 96k/2k/2k (generated, then cached)",
                           (), lambda: True, "nothing to get: generated on the fly"),
}
DEFAULT_SOURCE = "chitchat"


def list_sources() -> list[SourceInfo]:
    """Every registry source with its tasks and whether it is installed here."""
    return [SourceInfo(name, s.tasks, s.description, bool(s.installed()), s.how_to_get)
            for name, s in SOURCES.items()]


def prepare_source(name: str, cache_dir: str | os.PathLike | None = None) -> Path:
    """Fetch what source `name` needs into the cache folder (idempotent) and return that folder.

    Debian sources: `apt-get download` + `dpkg -x` into ``<cache>/debian/PACKAGE`` (with one
    `apt-get update` when the package lists are missing). `sentiment`: `pip download` of the
    vaderSentiment sdist. Installed PyPI packages and generated sources have nothing to fetch.
    Prints each step.
    """
    if name not in SOURCES:
        raise DataError(f"unknown data source {name!r}; valid: {', '.join(SOURCES)}")
    src = SOURCES[name]
    folder = data_cache_dir(cache_dir)
    if src.fetch is not None:
        src.fetch(folder)
    elif not src.packages:
        if not src.installed():
            raise SourceNotInstalledError(f"source {name!r} is not installed: {src.how_to_get}")
        print(f"{name}: nothing to fetch ({src.how_to_get if name.startswith('listops') else 'installed with pip'})")
        return folder
    for package in src.packages:
        fetch_debian_package(package, folder)
    if folder != data_cache_dir():
        print(f"note: load_source looks in {data_cache_dir()}; set SYNTHFORMER_DATA={folder} to use this cache")
    return folder


def load_source(name_or_path: str | os.PathLike, task: str | None = None, *,
                max_examples: int | None = None, seed: int = 0, **options) -> DataSplits:
    """Load a registry source or a user file/folder as train/valid/test examples for `task`.

    `name_or_path`: a name from `list_sources()` or a .txt/.tsv/.jsonl file, or a folder of
    train/valid/test files (formats in `synthformer.data.files`). `task` defaults to the source's
    first task ("lm" for files .txt, else required). `options` go to the source (e.g. listops
    lengths, bible-en-es ``direction``). Never downloads: a missing Debian source raises
    `SourceNotInstalledError` saying which command fetches it.
    """
    name = str(name_or_path)
    if task is not None and task not in TASKS:
        raise DataError(f"unknown task {task!r}; valid: {', '.join(TASKS)}")
    if name in SOURCES:
        src = SOURCES[name]
        task = task or src.tasks[0]
        if task not in src.tasks:
            raise DataError(f"source {name!r} supports tasks {list(src.tasks)}, not {task!r}")
        if not src.installed():
            raise SourceNotInstalledError(f"data source {name!r} is not installed; run `{src.how_to_get}`")
        (train, valid, test), meta = src.loader(task, max_examples, seed, **options)
        meta = {"source": name, "description": src.description, **meta}
        return DataSplits(list(train), list(valid), list(test), task, meta)
    path = Path(name).expanduser()
    if not path.exists():
        if path.suffix or os.sep in name:
            raise DataFileNotFoundError(f"data file not found: {path}")
        raise DataError(f"unknown data source {name!r}; valid: {', '.join(SOURCES)}, "
                        "or a path to a .txt/.tsv/.jsonl file")
    if options:
        raise DataError(f"data files take no options, got {sorted(options)}")
    return _load_user(path, task, max_examples, seed)


def _load_user(path: Path, task: str | None, max_examples, seed) -> DataSplits:
    if path.is_dir():
        paths = files.find_split_files(path)
        task = task or _default_task(paths["train"])
        splits = tuple(files.read_file(paths[s], task) for s in ("train", "valid", "test"))
        rule = "given by the files"
    else:
        task = task or _default_task(path)
        items = files.read_file(path, task)
        splits = split_by_hash(items, [json.dumps(x, ensure_ascii=False) for x in items])
        rule = "90/5/5 by SHA-1 of example content"
    meta = {"source": str(path), "split": rule}
    if task == "classify":
        labels = files.label_names(lbl for s in splits for _, lbl in s)
        ids = {n: i for i, n in enumerate(labels)}
        splits = tuple([(x, ids[str(lbl).strip()]) for x, lbl in s] for s in splits)
        meta["labels"] = labels
    splits = _capped(splits, max_examples, seed)
    return DataSplits(list(splits[0]), list(splits[1]), list(splits[2]), task, meta)


def _default_task(path: Path) -> str:
    if path.suffix.lower() == ".txt":
        return "lm"
    raise DataError(f"say which task {path} is for: task='seq2seq' or 'classify' (or 'lm' for .jsonl)")
