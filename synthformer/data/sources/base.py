"""What every source shares: the `DataSplits` result, the registry entry type, and the split helpers.

Splits are fixed: membership never depends on ``seed``. Unless a source says otherwise, examples
(or whole conversations / chapters) are sorted by a SHA-1 hash of a stable id and cut 90/5/5.
``max_examples`` caps train at that many examples and valid/test at ``max(1, max_examples // 10)``,
keeping a subset drawn with ``seed`` (in the original order).
"""
from __future__ import annotations

import hashlib
import importlib.util
import random
from dataclasses import dataclass, field
from typing import Callable

from ..prepare import DataError, find_package_file

TASKS = ("lm", "seq2seq", "classify")
SPLIT_FRACTIONS = (0.90, 0.05, 0.05)  # train, valid, test


@dataclass
class DataSplits:
    """The three splits of one task's examples."""

    train: list  # training examples (see `synthformer.data.sources` for their type per task)
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


@dataclass
class Source:
    """One registry entry: how to load a corpus, which tasks it serves and how to get it."""

    loader: Callable  # (task, max_examples, seed, **options) -> ((train, valid, test), meta)
    tasks: tuple[str, ...]  # supported tasks, the first is the default
    description: str  # one line for `list_sources`
    packages: tuple[str, ...]  # Debian packages `prepare_source` fetches (empty: nothing to fetch)
    installed: Callable[[], bool]  # whether the files are here
    how_to_get: str  # hint printed when missing
    fetch: Callable | None = None  # other fetcher (cache folder -> path), e.g. a PyPI sdist


def module_installed(name: str) -> Callable[[], bool]:
    """`installed` check: the Python module `name` can be imported."""
    return lambda: importlib.util.find_spec(name) is not None


def packages_installed(*checks: tuple[str, str]) -> Callable[[], bool]:
    """`installed` check: each (Debian package, file below /) is installed or in the cache."""
    return lambda: all(find_package_file(p, rel) is not None for p, rel in checks)


def no_options(name: str, options: dict) -> None:
    """Sources without options reject any they are given."""
    if options:
        raise DataError(f"source {name!r} takes no options, got {sorted(options)}")


# ----------------------------------------------------------------------------- split helpers
def digest(key: str) -> str:
    """SHA-1 hex digest of `key` (the split order)."""
    return hashlib.sha1(key.encode("utf-8")).hexdigest()


def split_by_hash(items: list, keys: list[str], fractions=SPLIT_FRACTIONS) -> tuple[list, list, list]:
    """Sort items by SHA-1 of their key, cut by `fractions`; each split keeps the original order.

    Valid and test get at least one item each when there are 3 or more items.
    """
    n = len(items)
    if n < 3:
        raise DataError(f"need at least 3 examples to make train/valid/test splits, got {n}; "
                        "give a folder with train/valid/test files instead")
    order = sorted(range(n), key=lambda i: (digest(keys[i]), i))
    n_valid = max(1, round(n * fractions[1]))
    n_test = max(1, round(n * fractions[2]))
    n_train = n - n_valid - n_test
    cuts = (sorted(order[:n_train]), sorted(order[n_train:n_train + n_valid]),
            sorted(order[n_train + n_valid:]))
    return tuple([items[i] for i in idx] for idx in cuts)


def split_by_group(items: list, groups: list[str]) -> tuple[list, list, list]:
    """Split 90/5/5 by SHA-1 of each item's group id (e.g. a chapter "John.3"): no group is in
    two splits; items keep their order."""
    ids = list(dict.fromkeys(groups))
    train, valid, _ = (set(s) for s in split_by_hash(ids, ids))
    out: tuple[list, list, list] = ([], [], [])
    for item, g in zip(items, groups):
        out[0 if g in train else 1 if g in valid else 2].append(item)
    return out


def cap(items: list, limit: int | None, seed: int) -> list:
    """At most `limit` items drawn with `seed`, in their original order."""
    if limit is None or len(items) <= limit:
        return items
    keep = sorted(random.Random(seed).sample(range(len(items)), limit))
    return [items[i] for i in keep]


def caps(max_examples: int | None) -> tuple:
    """(train, valid, test) caps for `max_examples`."""
    if max_examples is None:
        return None, None, None
    if max_examples < 1:
        raise ValueError(f"max_examples must be >= 1 or None, got {max_examples}")
    small = max(1, max_examples // 10)
    return max_examples, small, small


def capped(splits: tuple, max_examples: int | None, seed: int) -> tuple:
    """Each split capped by `caps(max_examples)`, split i drawn with seed + i."""
    return tuple(cap(s, c, seed + i) for i, (s, c) in enumerate(zip(splits, caps(max_examples))))
