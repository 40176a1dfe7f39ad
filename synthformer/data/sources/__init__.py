"""Data sources: a literal registry of real corpora plus the user's own files.

One module per corpus (``chitchat``, ``bible``, ``fortunes``, ``sentiment``, ``fashion_mnist``,
``listops``, ``manpages``, ``user_files``), each defining its loader(s) and `Source` entries;
`SOURCES` below lists them. Adding a corpus: write one module with a loader
``(task, max_examples, seed, **options) -> ((train, valid, test), meta)`` and a `Source`, and add
one line to `SOURCES`.

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

import os
from pathlib import Path

from ..prepare import DataError, DataFileNotFoundError, SourceNotInstalledError, fetch_debian_package
from ..prepare import cache_dir as data_cache_dir
from . import bible, chitchat, debian_descriptions, fashion_mnist, fortunes, listops, manpages, sentiment
from .base import SPLIT_FRACTIONS, TASKS, DataSplits, Source, SourceInfo, split_by_hash
from .user_files import load_user

SOURCES: dict[str, Source] = {
    "chitchat": chitchat.CHITCHAT,
    "bible-en-es": bible.EN_ES,
    "bible-kjv": bible.KJV,
    "bible-web": bible.WEB,
    "bible-paraphrase": bible.PARAPHRASE,
    "fortunes": fortunes.FORTUNES,
    "fashion-mnist": fashion_mnist.FASHION_MNIST,
    "sentiment": sentiment.SENTIMENT,
    "listops": listops.LISTOPS,
    "listops-lra": listops.LISTOPS_LRA,
    "manpages-summ": manpages.MANPAGES_SUMM,
    "manpages-section": manpages.MANPAGES_SECTION,
    "debian-descriptions": debian_descriptions.DEBIAN_DESCRIPTIONS,
}
DEFAULT_SOURCE = "chitchat"

__all__ = ["DEFAULT_SOURCE", "SOURCES", "SPLIT_FRACTIONS", "TASKS", "DataSplits", "Source", "SourceInfo",
           "list_sources", "load_source", "prepare_source", "split_by_hash"]


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
    return load_user(path, task, max_examples, seed)
