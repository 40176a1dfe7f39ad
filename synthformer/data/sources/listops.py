"""ListOps generated with the LRA algorithm (`synthformer.data.listops`), small and at LRA's sizes."""
from __future__ import annotations

import hashlib
import json
import os

from .. import listops as generator
from ..prepare import DataError, cache_dir
from .base import Source, caps

LABELS = [str(i) for i in range(10)]


def _configured(name: str, defaults: dict, max_examples, seed, options: dict):
    cfg_fields = set(generator.ListOpsConfig.__dataclass_fields__)
    bad = sorted(set(options) - cfg_fields)
    if bad:
        raise DataError(f"unknown {name} option(s) {bad}; valid: {sorted(cfg_fields)}")
    merged = dict(defaults)
    if max_examples is not None:  # explicit num_* options still win
        merged.update(zip(("num_train", "num_valid", "num_test"), caps(max_examples)))
    options = {**merged, **options}
    try:
        cfg = generator.ListOpsConfig(**options)
    except ValueError as e:
        raise DataError(f"{name}: {e}") from None
    return cfg, cached_splits(cfg, seed)


def cached_splits(cfg, seed: int):
    """Generated splits, cached as JSON in the data cache when large (LRA sizes take minutes)."""
    if cfg.num_train + cfg.num_valid + cfg.num_test < 20_000:
        return generator.listops_splits(cfg, seed)
    key = hashlib.sha1(json.dumps([vars(cfg), seed], sort_keys=True).encode()).hexdigest()[:16]
    path = cache_dir() / "listops" / f"{key}.json"
    if path.exists():
        return tuple([(t, y) for t, y in split] for split in json.loads(path.read_text()))
    splits = generator.listops_splits(cfg, seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(splits))
    os.replace(tmp, path)
    return splits


def load(task, max_examples, seed, **options):
    """ListOps generated with the LRA algorithm (see `synthformer.data.listops`); options are
    `ListOpsConfig` fields (num_train, num_valid, num_test, min_length, max_length, max_depth,
    max_args). Splits are drawn with disjoint expressions from seeds derived from ``seed``;
    ``max_examples`` sets num_train (and valid/test to max(1, max_examples // 10))."""
    cfg, splits = _configured("listops", {}, max_examples, seed, options)
    return splits, {"labels": LABELS, "config": vars(cfg), "split": "generated; disjoint expressions"}


def load_lra(task, max_examples, seed, **options):
    """ListOps at the LRA paper's sizes: lengths 500..2000 tokens, depth 10, up to 10 arguments,
    96k/2k/2k examples (`listops.LRA`; options and ``max_examples`` as for ``listops``). Large sets
    are generated once (minutes) and cached in the data cache folder. Use ``tokenizer: word``."""
    cfg, splits = _configured("listops-lra", generator.LRA, max_examples, seed, options)
    return splits, {"labels": LABELS, "config": vars(cfg), "split": "generated; disjoint expressions"}


LISTOPS = Source(load, ("classify",), "ListOps expressions generated with the LRA algorithm, 10 classes",
                 (), lambda: True, "nothing to get: generated on the fly")
LISTOPS_LRA = Source(load_lra, ("classify",),
                     "ListOps at LRA's sizes: 500-2000 tokens, 96k/2k/2k (generated, then cached)",
                     (), lambda: True, "nothing to get: generated on the fly")
