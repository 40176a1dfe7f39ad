"""Tasks: what to train on and how to score it; the one loop in `synthformer.training.loop` runs them all.

Each task (one file each) says which model kind it trains, how to encode and batch `DataSplits`,
the loss of a batch and the metrics of an evaluation (the `eval_batch` / `eval_metrics` hooks of the
one evaluation loop, `Task.evaluate`). Adding a task: one file with a `Task` subclass and one line
in `TASKS`.
"""
from __future__ import annotations

from ..errors import ConfigError
from .base import Task, perplexity
from .classify import ClassifyTask, classifier_input
from .lm import LMTask
from .mlm import MLMTask
from .seq2seq import Seq2SeqTask, text_metrics

TASKS: dict[str, type[Task]] = {
    "lm": LMTask,
    "classify": ClassifyTask,
    "seq2seq": Seq2SeqTask,
    "mlm": MLMTask,
}


def build_task(name: str, **options) -> Task:
    """The task registered as `name` (options: ``mask_prob`` for mlm, ``pooling`` for classify)."""
    if name not in TASKS:
        raise ConfigError(f"unknown task {name!r}; valid: {', '.join(TASKS)}")
    return TASKS[name](**options)


__all__ = ["TASKS", "Task", "ClassifyTask", "LMTask", "MLMTask", "Seq2SeqTask", "build_task",
           "classifier_input", "perplexity", "text_metrics"]
