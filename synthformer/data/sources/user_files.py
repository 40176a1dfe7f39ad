"""The user's own data: a .txt/.tsv/.jsonl file (split 90/5/5 here) or a folder of
train/valid/test files or sub-folders (formats in `synthformer.data.files`)."""
from __future__ import annotations

import json
from pathlib import Path

from .. import files
from ..prepare import DataError
from .base import DataSplits, capped, split_by_hash


def load_user(path: Path, task: str | None, max_examples, seed) -> DataSplits:
    """Splits of the user's file or folder `path` for `task` (default: "lm" for .txt files)."""
    if path.is_dir():
        paths = files.find_split_files(path)
        task = task or _default_task(paths["train"][0])
        splits = tuple(files.read_files(paths[s], task) for s in ("train", "valid", "test"))
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
    splits = capped(splits, max_examples, seed)
    return DataSplits(list(splits[0]), list(splits[1]), list(splits[2]), task, meta)


def _default_task(path: Path) -> str:
    if path.suffix.lower() == ".txt":
        return "lm"
    raise DataError(f"say which task {path} is for: task='seq2seq' or 'classify' (or 'lm' for .jsonl)")
