"""TrainConfig: everything about a run except the model shape (that is ModelConfig), and the
learning-rate schedule it defines.

    cfg = TrainConfig(task="lm", data="chitchat", steps=500, lr=2e-3)
    lr = lr_at(step, cfg)                  # warm-up, then cosine / linear / constant decay

Fields are typed and checked by the same machinery as ModelConfig (synthformer.utils.typed): the annotation
gives the type, ``RULES`` the range; the comment after a field is its `synthformer train --help` text.
"""
from __future__ import annotations

import dataclasses
import difflib
import math
from dataclasses import dataclass

import torch

from ..data.tokenizer import TOKENIZERS
from ..errors import ConfigError
from ..model.config import PRESETS
from .trackers import parse_report_to
from ..tasks import TASKS
from ..utils.typed import check_fields

SCHEDULES = ("cosine", "linear", "constant")
PRECISIONS = ("fp32", "bf16")
DECODES = ("greedy", "beam")


@dataclass
class TrainConfig:
    """Everything about a run except the model shape (that is ModelConfig); stored in config.json.

    Every field is checked on construction (type, then range: synthformer.utils.typed); a bad value raises
    ConfigError naming it."""

    task: str = "lm"  # lm | classify | seq2seq | mlm
    data: str = "chitchat"  # a registry source (`synthformer data list`) or a .txt/.tsv/.jsonl file or folder
    data_options: dict = dataclasses.field(default_factory=dict)  # the source's own options, e.g. {max_words: 300} (manpages-summ), {context_turns: 3} (chitchat seq2seq)
    max_examples: int | None = None  # cap on training examples (valid/test get a tenth); None = all
    preset: str = "tiny"  # model shape preset (tiny | small | base); model fields given override it
    tokenizer: str = "bpe"  # bpe | char | word | byte | pixel (byte values as tokens: LRA Image)
    vocab_size: int = 4000  # BPE vocabulary size, specials and the 256 bytes included
    seq_len: int | None = None  # tokens per sequence: lm/mlm block length, cap for seq2seq/classify; None = model max_seq_len
    strict_length: bool = False  # refuse sequences longer than seq_len instead of truncating with a warning
    batch_size: int = 16  # sequences per step on each rank (global batch = batch_size x world size)
    max_tokens: int | None = None  # seq2seq/classify: also cap padded tokens per batch
    steps: int = 1000  # optimizer steps of the whole run
    lr: float = 1e-3  # peak learning rate (AdamW)
    min_lr_ratio: float = 0.1  # final learning rate as a fraction of lr (cosine / linear decay)
    warmup_steps: int = 100  # linear warm-up from lr/warmup_steps to lr (on the command line, when not given: a tenth of --steps, at most 100)
    schedule: str = "cosine"  # decay after warm-up: cosine | linear | constant
    weight_decay: float = 0.01  # AdamW decoupled weight decay (weight matrices only; not biases, norms, mixture weights, position tables)
    table_lr_mult: float = 10.0  # lr multiplier of the synthesizers' position tables (R, R1/R2, Dense F2, FD factors); measured: docs/recipe.md
    position_lr_mult: float = 1.0  # lr multiplier of the absolute position embedding (x10 hurts every variant; docs/recipe.md)
    table_weight_decay: float = 0.0  # AdamW decay of the position tables and the position embedding (decay pulls R toward uniform attention)
    beta1: float = 0.9  # AdamW beta1
    beta2: float = 0.98  # AdamW beta2
    grad_clip: float = 1.0  # clip the global gradient norm to this; 0 = off
    precision: str = "fp32"  # fp32 | bf16 (autocast on the forward pass; for GPUs)
    eval_every: int = 200  # evaluate on the validation split every N steps (and at the end); 0 = only at the end
    eval_batches: int = 50  # validation batches per periodic evaluation; 0 = the whole split
    final_eval_batches: int = 0  # validation batches of the final evaluation; 0 = the whole split
    eval_test: bool = False  # after the final validation, evaluate the test split too (same limit): result["test"]
    decode: str = "greedy"  # seq2seq evaluation decoding: greedy | beam
    num_beams: int = 4  # beam width when decode = beam
    decode_examples: int = 100  # seq2seq: validation examples decoded for BLEU / chrF / ROUGE-L; 0 = none
    test_decode_examples: int | None = None  # seq2seq with eval_test: test examples decoded; None = the whole split
    mask_prob: float = 0.15  # mlm: fraction of tokens selected for prediction (80/10/10 BERT masking)
    checkpoint_every: int = 500  # write a checkpoint every N steps (and at the end); 0 = only at the end
    keep_checkpoints: int = 1  # checkpoints kept on disk (the newest)
    log_every: int = 10  # write a training-metrics row every N steps
    seed: int = 0  # seeds model init, data order, dropout and masking
    device: str = "auto"  # auto (cuda if available, else cpu) | cpu | cuda | cuda:1 | mps
    threads: int | None = None  # torch CPU threads; None = torch's default
    out: str = ""  # run folder; "" = runs/<task>-<timestamp>
    resume: bool = False  # continue the run in `out` from its last checkpoint
    stop_after: int | None = None  # end this invocation after this step (time-boxed jobs); continue with resume
    progress: bool = True  # show a progress bar (rank 0)
    report_to: str = "none"  # also log the train/valid rows (rank 0) to: none | tensorboard (out/tensorboard) | wandb (WANDB_MODE, WANDB_PROJECT apply) | tensorboard,wandb; needs pip install 'synthformer[tensorboard]' / '[wandb]'
    tensorboard: bool = False  # older spelling of report_to=tensorboard (kept so older config.json files load): true adds tensorboard to report_to
    init_from: str | None = None  # fine-tuning: a run or model folder of an encoder (e.g. an mlm run); its embeddings, position table and encoder layers (not its head) start this model, whose shape and tokenizer are that run's

    def __post_init__(self):
        check_fields(self, RULES)
        if self.tensorboard:  # fold the older flag into report_to; to_dict() then holds report_to alone
            names = [n for n in parse_report_to(self.report_to) if n != "tensorboard"]
            self.report_to, self.tensorboard = ",".join(["tensorboard", *names]), False

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "TrainConfig":
        """Build from a plain dict (a stored config.json's "train"); an unknown key is a ConfigError naming it."""
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = [k for k in d if k not in names]
        if unknown:
            close = difflib.get_close_matches(str(unknown[0]), names, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"unknown TrainConfig field {unknown[0]!r}{hint}")
        return cls(**d)


def _is_device(name: str) -> bool:
    try:
        return name == "auto" or torch.device(name) is not None
    except (RuntimeError, ValueError):
        return False


def _is_report_to(value: str) -> bool:
    try:
        parse_report_to(value)
    except ValueError:
        return False
    return True


MAX_STEPS = 10**9  # a billion optimizer steps (11 days at 1 ms a step): more is a typo, not a run
MAX_VOCAB = 2**24  # BPE vocabulary: beyond this the tokenizer's own tables outgrow memory (1e9 asked for 70 GB)
_STEPS = f"in [1, {MAX_STEPS:,}]"

# Range of every field whose type alone does not say it (None passes where the type allows it).
RULES: dict[str, tuple] = {
    "task": (lambda v: v in TASKS, f"one of {', '.join(TASKS)}"),
    "data": (lambda v: v.strip() != "", "a source name or a file / folder path"),
    "data_options": (lambda v: isinstance(v, dict) and all(isinstance(k, str) for k in v),
                     "a mapping of option names to values, e.g. {max_words: 300}"),
    "max_examples": (lambda v: v >= 1, ">= 1 (or None for all)"),
    "preset": (lambda v: v in PRESETS, f"one of {', '.join(PRESETS)}"),
    "tokenizer": (lambda v: v in TOKENIZERS, f"one of {', '.join(TOKENIZERS)}"),
    "vocab_size": (lambda v: 1 <= v <= MAX_VOCAB, f"in [1, {MAX_VOCAB:,}]"),
    "seq_len": (lambda v: v >= 2, ">= 2 (or None for the model's max_seq_len)"),
    "batch_size": (lambda v: v >= 1, ">= 1"),
    "max_tokens": (lambda v: v >= 1, ">= 1 (or None for no cap)"),
    "steps": (lambda v: 1 <= v <= MAX_STEPS, _STEPS),
    "lr": (lambda v: 0 < v <= 10, "a number in (0, 10] (AdamW diverges far below 10)"),
    "min_lr_ratio": (lambda v: 0 <= v <= 1, "in [0, 1]"),
    "warmup_steps": (lambda v: 0 <= v <= MAX_STEPS, f"in [0, {MAX_STEPS:,}]"),
    "schedule": (lambda v: v in SCHEDULES, f"one of {', '.join(SCHEDULES)}"),
    "weight_decay": (lambda v: v >= 0, ">= 0"),
    "table_lr_mult": (lambda v: v > 0, "> 0"),
    "position_lr_mult": (lambda v: v > 0, "> 0"),
    "table_weight_decay": (lambda v: v >= 0, ">= 0"),
    "beta1": (lambda v: 0 <= v < 1, "in [0, 1)"),
    "beta2": (lambda v: 0 <= v < 1, "in [0, 1)"),
    "grad_clip": (lambda v: v >= 0, ">= 0 (0 = off)"),
    "precision": (lambda v: v in PRECISIONS, f"one of {', '.join(PRECISIONS)}"),
    "eval_every": (lambda v: 0 <= v <= MAX_STEPS, f"in [0, {MAX_STEPS:,}] (0 = only at the end)"),
    "eval_batches": (lambda v: v >= 0, ">= 0 (0 = the whole split)"),
    "final_eval_batches": (lambda v: v >= 0, ">= 0 (0 = the whole split)"),
    "decode": (lambda v: v in DECODES, f"one of {', '.join(DECODES)}"),
    "num_beams": (lambda v: v >= 1, ">= 1"),
    "decode_examples": (lambda v: v >= 0, ">= 0"),
    "test_decode_examples": (lambda v: v is None or v >= 0, ">= 0, or none for the whole split"),
    "mask_prob": (lambda v: 0 < v <= 1, "in (0, 1]"),
    "checkpoint_every": (lambda v: 0 <= v <= MAX_STEPS, f"in [0, {MAX_STEPS:,}] (0 = only at the end)"),
    "keep_checkpoints": (lambda v: v >= 1, ">= 1"),
    "log_every": (lambda v: 1 <= v <= MAX_STEPS, _STEPS),
    "seed": (lambda v: 0 <= v < 2**32, "in [0, 2**32)"),
    "device": (_is_device, "auto, cpu, cuda, cuda:N or mps"),
    "threads": (lambda v: v >= 1, ">= 1 (or None for torch's default)"),
    "stop_after": (lambda v: 1 <= v <= MAX_STEPS, f"{_STEPS} (or None)"),
    "report_to": (_is_report_to, "none, tensorboard, wandb, or tensorboard,wandb"),
}


# ----------------------------------------------------------------------------- the schedule
WARMUP_FRACTION = 0.1  # the warm-up a budget gets when none is given: this share of its steps ...


def budget_warmup(steps: int, cap: int) -> int:
    """Warm-up steps for a run of `steps` when none is given (`train` and `compare` on the command line): a
    tenth of the steps, at most `cap` (the command's default warm-up) and at least 1. `--steps 20` used to
    keep 100 warm-up steps, so its lr peaked at a fifth of `lr`; at the default steps the value is unchanged."""
    return max(1, min(cap, int(steps * WARMUP_FRACTION)))


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Learning rate for optimizer step `step` (0-based): linear warm-up, then the decay schedule."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    if cfg.schedule == "constant":
        return cfg.lr
    progress = min(1.0, (step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps))
    floor = cfg.lr * cfg.min_lr_ratio
    shape = 0.5 * (1 + math.cos(math.pi * progress)) if cfg.schedule == "cosine" else 1 - progress
    return floor + (cfg.lr - floor) * shape
