"""ListOps generated with the Long Range Arena algorithm (Tay et al. 2021, `listops.py`).

A tree is drawn top-down: below `max_depth`, a node is a value 0..9 with probability 0.75
(LRA's ``r > VALUE_P`` with VALUE_P = 0.25), else an operator MIN, MAX, MED (median, truncated to
int as ``int(np.median)``) or SM (sum mod 10) over 2..max_args children; at `max_depth` it is
always a value. Trees whose length (values + operators + closing brackets) is strictly between
`min_length` and `max_length` are kept, duplicates removed (LRA draws into a set). The label is the
tree's value (10 classes).

Text form: LRA's tokens without its tree-building parentheses, e.g. ``[MAX 2 9 [MIN 4 7 ] 0 ]``;
the number of whitespace-separated tokens equals the tree length. The LRA paper uses lengths
500..2000 and 96k/2k/2k examples (`LRA`; the `listops-lra` source); our defaults are small so
a CPU can train on them. Tokenize with the ``word`` tokenizer to get LRA's vocabulary: one id per
operator, bracket and digit.

The two registry sources: `listops` (small, generated on the fly) and `listops-lra` (LRA's sizes,
generated once and cached).
"""
from __future__ import annotations

import hashlib
import json
import os
import random
from dataclasses import dataclass

from ..prepare import DataError, cache_dir
from .base import Source, caps

OPERATORS = ["[MIN", "[MAX", "[MED", "[SM"]  # LRA's list (FIRST and LAST commented out there too)
END = "]"
VALUE_P = 0.25


@dataclass
class ListOpsConfig:
    """Sizes and shapes of a generated ListOps data set."""

    num_train: int = 4000  # LRA: 96,000
    num_valid: int = 400  # LRA: 2,000
    num_test: int = 400  # LRA: 2,000
    min_length: int = 20  # exclusive lower bound on tree length (LRA: 500)
    max_length: int = 128  # exclusive upper bound on tree length (LRA: 2000)
    max_depth: int = 10  # LRA: 10
    max_args: int = 10  # LRA: 10

    def __post_init__(self):
        if not 0 <= self.min_length < self.max_length - 1:
            raise ValueError(f"ListOps needs 0 <= min_length < max_length - 1, got "
                             f"min_length={self.min_length}, max_length={self.max_length}")
        if self.max_depth < 1 or self.max_args < 2:
            raise ValueError(f"ListOps needs max_depth >= 1 and max_args >= 2, got "
                             f"max_depth={self.max_depth}, max_args={self.max_args}")


LRA = dict(num_train=96_000, num_valid=2_000, num_test=2_000, min_length=500, max_length=2000,
           max_depth=10, max_args=10)  # the LRA paper's ListOps (`ListOpsConfig(**LRA)`)


class _TooLong(Exception):
    pass


def _tree(rng: random.Random, depth: int, max_depth: int, max_args: int, budget: int):
    """Returns (tree, length); a tree is an int or (operator, [children]).

    Raises _TooLong as soon as the tree would reach `budget` tokens: LRA draws the whole tree and
    then rejects it, which keeps exactly the same trees but can take seconds per huge tree.
    """
    r = rng.random() if depth < max_depth else 1.0
    if r > VALUE_P:
        return rng.choice(range(10)), 1
    length = 2  # the operator token and the closing bracket
    children = []
    for _ in range(rng.randint(2, max_args)):
        child, n = _tree(rng, depth + 1, max_depth, max_args, budget - length)
        children.append(child)
        length += n
        if length >= budget:
            raise _TooLong
    return (rng.choice(OPERATORS), children), length


def _value(tree) -> int:
    if isinstance(tree, int):
        return tree
    op, children = tree
    vals = sorted(_value(c) for c in children)
    if op == "[MIN":
        return vals[0]
    if op == "[MAX":
        return vals[-1]
    if op == "[MED":
        mid = len(vals) // 2
        return vals[mid] if len(vals) % 2 else int((vals[mid - 1] + vals[mid]) / 2)
    return sum(vals) % 10  # [SM


def _text(tree) -> str:
    if isinstance(tree, int):
        return str(tree)
    op, children = tree
    return " ".join([op] + [_text(c) for c in children] + [END])


def generate_listops(n: int, cfg: ListOpsConfig, seed: int = 0,
                     exclude: set[str] | None = None) -> list[tuple[str, int]]:
    """Draw `n` distinct (expression, label) pairs, none of them in `exclude` (which grows)."""
    rng = random.Random(seed)
    seen = exclude if exclude is not None else set()
    out: list[tuple[str, int]] = []
    tries = 0
    while len(out) < n:
        tries += 1
        if tries > 1000 * n + 100_000:
            raise ValueError(f"ListOps: could not draw {n} trees with {cfg.min_length} < length < "
                             f"{cfg.max_length} (got {len(out)}); widen the length range")
        try:
            tree, length = _tree(rng, 1, cfg.max_depth, cfg.max_args, cfg.max_length)
        except _TooLong:
            continue
        if not cfg.min_length < length < cfg.max_length:
            continue
        text = _text(tree)
        if text in seen:
            continue
        seen.add(text)
        out.append((text, _value(tree)))
    return out


def listops_splits(cfg: ListOpsConfig, seed: int = 0):
    """(train, valid, test) drawn with disjoint expressions; each split has its own derived seed."""
    seen: set[str] = set()
    train = generate_listops(cfg.num_train, cfg, seed * 3 + 0, seen)
    valid = generate_listops(cfg.num_valid, cfg, seed * 3 + 1, seen)
    test = generate_listops(cfg.num_test, cfg, seed * 3 + 2, seen)
    return train, valid, test


# ----------------------------------------------------------------------------- the sources
LABELS = [str(i) for i in range(10)]


def _configured(name: str, defaults: dict, max_examples, seed, options: dict):
    cfg_fields = set(ListOpsConfig.__dataclass_fields__)
    bad = sorted(set(options) - cfg_fields)
    if bad:
        raise DataError(f"unknown {name} option(s) {bad}; valid: {sorted(cfg_fields)}")
    merged = dict(defaults)
    if max_examples is not None:  # explicit num_* options still win
        merged.update(zip(("num_train", "num_valid", "num_test"), caps(max_examples)))
    options = {**merged, **options}
    try:
        cfg = ListOpsConfig(**options)
    except ValueError as e:
        raise DataError(f"{name}: {e}") from None
    return cfg, cached_splits(cfg, seed)


def cached_splits(cfg, seed: int):
    """Generated splits, cached as JSON in the data cache when large (LRA sizes take minutes)."""
    if cfg.num_train + cfg.num_valid + cfg.num_test < 20_000:
        return listops_splits(cfg, seed)
    key = hashlib.sha1(json.dumps([vars(cfg), seed], sort_keys=True).encode()).hexdigest()[:16]
    path = cache_dir() / "listops" / f"{key}.json"
    if path.exists():
        return tuple([(t, y) for t, y in split] for split in json.loads(path.read_text()))
    splits = listops_splits(cfg, seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(splits))
    os.replace(tmp, path)
    return splits


def load(task, max_examples, seed, **options):
    """ListOps generated with the LRA algorithm (above); options are
    `ListOpsConfig` fields (num_train, num_valid, num_test, min_length, max_length, max_depth,
    max_args). Splits are drawn with disjoint expressions from seeds derived from ``seed``;
    ``max_examples`` sets num_train (and valid/test to max(1, max_examples // 10))."""
    cfg, splits = _configured("listops", {}, max_examples, seed, options)
    return splits, {"labels": LABELS, "config": vars(cfg), "split": "generated; disjoint expressions"}


def load_lra(task, max_examples, seed, **options):
    """ListOps at the LRA paper's sizes: lengths 500..2000 tokens, depth 10, up to 10 arguments,
    96k/2k/2k examples (`listops.LRA`; options and ``max_examples`` as for ``listops``). Large sets
    are generated once (minutes) and cached in the data cache folder. Use ``tokenizer: word``. A tree
    of length n is n word tokens; a model shorter than LRA's trees takes them generated to fit, e.g.
    ``max_length=1024`` for 1,024 tokens with a CLS token (`synthformer.reproduce.lra.listops_lengths`),
    rather than cut (the answer depends on the whole tree)."""
    cfg, splits = _configured("listops-lra", LRA, max_examples, seed, options)
    return splits, {"labels": LABELS, "config": vars(cfg), "split": "generated; disjoint expressions"}


LISTOPS = Source(load, ("classify",), "ListOps expressions generated with the LRA algorithm, 10 classes",
                 (), lambda: True, "nothing to get: generated on the fly")
LISTOPS_LRA = Source(load_lra, ("classify",),
                     "ListOps at LRA's sizes: 500-2000 tokens, 96k/2k/2k (generated, then cached)",
                     (), lambda: True, "nothing to get: generated on the fly")
