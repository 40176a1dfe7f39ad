"""Experiment trackers for a run's logged rows: ``report_to`` = none | tensorboard | wandb (or both,
comma-separated). Every row that goes to ``metrics.jsonl`` (train: loss, lr, grad norm, tokens/s;
valid: the task's metrics) also goes to each tracker, as ``<split>/<metric>`` at the row's step, from
rank 0 only (``MetricsLogger`` in synthformer.training.runs opens them there).

    check_report_to("wandb")                     # before the run starts: a missing package is one line
    reporters = open_reporters("tensorboard,wandb", out, config, run_id)
    for r in reporters: r.log(row)               # row = {"step": 10, "split": "train", "loss": 2.3, ...}

TensorBoard writes ``out/tensorboard``; Weights & Biases follows its own environment (``WANDB_MODE=offline``
logs to ``WANDB_DIR`` without a network, ``WANDB_PROJECT`` names the project, default "synthformer"),
and a resumed run continues the same W&B run (its id comes from the run folder). Neither package is a
dependency: ``pip install 'synthformer[tensorboard]'`` / ``'synthformer[wandb]'``.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

from .._optional import require

BACKENDS = ("tensorboard", "wandb")


def parse_report_to(value: str) -> tuple[str, ...]:
    """"none" -> (); "wandb" -> ("wandb",); "tensorboard,wandb" -> both. ValueError for anything else."""
    names = tuple(dict.fromkeys(n.strip() for n in value.split(",")))  # drops repeats, keeps order
    if names == ("none",):
        return ()
    if not names or any(n not in BACKENDS for n in names):
        raise ValueError(f"report_to must be none, {' or '.join(BACKENDS)}, or both comma-separated; got {value!r}")
    return names


def check_report_to(value: str) -> None:
    """Fail before a run starts when a chosen tracker's package is missing (MissingExtraError: one line
    naming the extra), rather than after the model and data were built."""
    for name in parse_report_to(value):
        require(name, f"report_to={name}")  # the import names are the tracker names


class Reporter(Protocol):
    """One tracker: ``log`` one metrics row, ``close`` at the end of the invocation."""

    def log(self, row: dict) -> None: ...

    def close(self) -> None: ...


def scalars(row: dict) -> dict[str, float]:
    """The numbers of a metrics row as ``{"<split>/<metric>": value}`` (step, split, None and text dropped)."""
    return {f"{row['split']}/{k}": float(v) for k, v in row.items()
            if k not in ("step", "split") and isinstance(v, (int, float)) and not isinstance(v, bool)}


class TensorBoardReporter:
    """Scalars to ``out/tensorboard`` (torch.utils.tensorboard's SummaryWriter)."""

    def __init__(self, out: Path):
        require("tensorboard", "report_to=tensorboard")
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(str(Path(out) / "tensorboard"))

    def log(self, row: dict) -> None:
        for tag, value in scalars(row).items():
            self.writer.add_scalar(tag, value, row["step"])

    def close(self) -> None:
        self.writer.close()


class WandbReporter:
    """A Weights & Biases run (online, or offline under ``WANDB_MODE=offline``); ``run_id`` names it, so a
    resumed training run continues the same W&B run."""

    def __init__(self, out: Path, config: dict, run_id: str):
        wandb = require("wandb", "report_to=wandb")
        self.run = wandb.init(project=os.environ.get("WANDB_PROJECT", "synthformer"), name=Path(out).name,
                              id=run_id, resume="allow", config=config)

    def log(self, row: dict) -> None:
        self.run.log(scalars(row), step=row["step"])

    def close(self) -> None:
        self.run.finish()


def open_reporters(report_to: str, out: Path, config: dict, run_id: str) -> list[Reporter]:
    """The trackers ``report_to`` names, opened (``config``: what W&B records as the run's config)."""
    makers = {"tensorboard": lambda: TensorBoardReporter(out), "wandb": lambda: WandbReporter(out, config, run_id)}
    return [makers[name]() for name in parse_report_to(report_to)]
