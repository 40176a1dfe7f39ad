"""A task's data for a run: load the source, build (or reuse) the tokenizer, encode every split.

`cfg` below is a TrainConfig (synthformer.training.config); the sequence length and pooling come from
the plan of the run (synthformer.training.plan), which also builds the model config that follows from the data.
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

from ..data import DataError, load_source
from ..data.tokenizer import cached_tokenizer
from ..tasks import Task, build_task
from ..tasks.classify import pair_splits


@dataclass
class TaskData:
    """A task's data, tokenized: shared by every variant of a comparison."""

    task: Task  # the task object (loss, metrics)
    tokenizer: object  # synthformer.data Tokenizer
    splits: object  # the raw DataSplits
    encoded: dict  # split name -> encoded examples (LongTensor for lm/mlm, list of items otherwise)
    seq_len: int  # sequence length the examples were cut to


def prepare_data(cfg, seq_len: int, tokenizer=None, log=print, pooling: str = "mean") -> TaskData:
    """Load `cfg.data` for `cfg.task` (`cfg` a TrainConfig), build (or reuse) the tokenizer and encode every split.

    `pooling` is the classifier's (ModelConfig.pooling): with "cls" the classify task prepends a CLS token."""
    options = {"mlm": {"mask_prob": cfg.mask_prob}, "classify": {"pooling": pooling}}.get(cfg.task, {})
    task = build_task(cfg.task, **options)
    t0 = time.time()
    splits = load_source(cfg.data, task.data_task, max_examples=cfg.max_examples, seed=cfg.seed,
                         **cfg.data_options)
    if cfg.task == "classify":
        splits = pair_splits(splits)  # sentence pairs joined by meta["pair_separator"] -> (a, b) tuples
    for name in ("train", "valid"):
        if not getattr(splits, name):
            raise DataError(f"data {cfg.data!r} has an empty {name} split; give more examples "
                            "(raise max_examples or add data)")
    if tokenizer is None:
        texts = _texts(splits.train, task.data_task)
        tokenizer = cached_tokenizer(cfg.tokenizer, texts, vocab_size=cfg.vocab_size, log=log)
    if cfg.task == "mlm":  # mask with the tokenizer's own specials (a run's tokenizer may predate <sep>)
        task = build_task("mlm", mask_prob=cfg.mask_prob, num_specials=len(tokenizer.specials),
                          mask_id=tokenizer.mask_id)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # the encoders' truncation notes: logged below as lines, not raw warnings
        encoded = {name: task.encode(getattr(splits, name), tokenizer, seq_len, cfg.strict_length)
                   for name in ("train", "valid", "test") if getattr(splits, name)}
    for message in dict.fromkeys(str(w.message) for w in caught):  # each once, without a source line
        log(f"note: {message}")
    log(f"data: {splits!r}, {cfg.tokenizer} tokenizer with {tokenizer.vocab_size} tokens "
        f"({time.time() - t0:.1f}s)")
    return TaskData(task, tokenizer, splits, encoded, seq_len)


def _texts(examples: list, data_task: str) -> list[str]:
    if data_task == "lm":
        return list(examples)
    if data_task == "seq2seq":
        return [t for pair in examples for t in pair]
    return [t for x, _ in examples for t in (x if isinstance(x, tuple) else (x,)) if isinstance(t, str)]
