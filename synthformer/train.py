"""The one training loop, shared by every task (lm, classify, seq2seq, mlm).

    from synthformer.train import TrainConfig, train
    result = train(TrainConfig(task="lm", data="chitchat", steps=500, out="runs/lm"), {"attention": "R+V"})

`train` reads as its steps: open the run (lock, folder checks), build (data, model, optimizer,
batches: all before the first file is written), restore (the latest checkpoint when resuming), then
the loop of train step / log / evaluate / checkpoint, and finish (final model, done.json).

What a run folder holds (rank 0 alone writes it, holding train.lock for the whole run):
    tokenizer.json       the tokenizer the run trained (reused on resume / eval / generate)
    config.json          the resolved model + train config; written once everything was built (marks a run)
    metrics.jsonl        one row per log / evaluation: {"step", "split", "loss", ...}
    checkpoints/         step-XXXXXXXX/ (model.safetensors, config.json, state.pt, manifest.json) + latest.json
    model/               the final weights (model.safetensors + config.json + manifest.json)
    done.json            final metrics; written last, atomically: only a finished run has it
    train.lock           only while a run writes the folder (holds its pid)

Checkpoints are written to a temporary folder, fsynced, renamed into place, and only then named by
``latest.json`` (itself replaced atomically), so a run killed at any moment resumes from the last
complete checkpoint. Every checkpoint folder and ``model/`` carry ``manifest.json`` (SHA-256 of each
file), verified before resuming, evaluating or generating. ``state.pt`` holds plain tensors and dicts
only (optimizer, RNG of every rank, data position, step) and is read with ``weights_only=True``.
The schedule is a pure function of the step, so resuming continues exactly: the final weights equal
those of an uninterrupted run.

Under ``torchrun --nproc_per_node N`` the same code runs DDP (gloo on CPU, nccl on GPU): each rank
reads its own shard of every batch, so ``batch_size`` is per rank (global batch = N x batch_size).
"""
from __future__ import annotations

import dataclasses
import json
import math
import random
import time
import types
import typing
from dataclasses import dataclass
from pathlib import Path

import torch

from .checkpoint import RunError, latest_checkpoint, load_state, rank_state, save_checkpoint
from .data.tokenizer import TOKENIZERS
from .distributed import Dist, barrier, gather, setup_distributed
from .errors import ConfigError
from .evaluation import evaluate
from .memory import check_training_memory
from .model import PRESETS, ModelConfig, build_model, count_parameters, load
from .runs import (RUN_CONFIG, MetricsLogger, check_folder, load_run_tokenizer, open_run, read_run_config,
                   run_model_folder, write_done, write_start)
from .optim import param_groups
from .task_data import TaskData, prepare_data, resolve_model_config, resolve_seq_len
from .tasks import TASKS
from .tasks.base import to_device

SCHEDULES = ("cosine", "linear", "constant")
PRECISIONS = ("fp32", "bf16")
DECODES = ("greedy", "beam")


@dataclass
class TrainConfig:
    """Everything about a run except the model shape (that is ModelConfig); stored in config.json.

    Every field is checked on construction (type, then range); a bad value raises ConfigError naming it."""

    task: str = "lm"  # lm | classify | seq2seq | mlm
    data: str = "chitchat"  # a registry source (`synthformer data list`) or a .txt/.tsv/.jsonl file or folder
    data_options: dict = dataclasses.field(default_factory=dict)  # the source's own options, e.g. {max_words: 300} (manpages-summ), {context_turns: 3} (chitchat seq2seq)
    max_examples: int | None = None  # cap on training examples (valid/test get a tenth); None = all
    preset: str = "tiny"  # model shape preset (tiny | small | base); model fields given override it
    tokenizer: str = "bpe"  # bpe | char | byte
    vocab_size: int = 4000  # BPE vocabulary size, specials and the 256 bytes included
    seq_len: int | None = None  # tokens per sequence: lm/mlm block length, cap for seq2seq/classify; None = model max_seq_len
    strict_length: bool = False  # refuse sequences longer than seq_len instead of truncating with a warning
    batch_size: int = 16  # sequences per step on each rank (global batch = batch_size x world size)
    max_tokens: int | None = None  # seq2seq/classify: also cap padded tokens per batch
    steps: int = 1000  # optimizer steps of the whole run
    lr: float = 1e-3  # peak learning rate (AdamW)
    min_lr_ratio: float = 0.1  # final learning rate as a fraction of lr (cosine / linear decay)
    warmup_steps: int = 100  # linear warm-up from lr/warmup_steps to lr
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
    decode: str = "greedy"  # seq2seq evaluation decoding: greedy | beam
    num_beams: int = 4  # beam width when decode = beam
    decode_examples: int = 100  # seq2seq: validation examples decoded for BLEU / chrF / ROUGE-L; 0 = none
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
    tensorboard: bool = False  # also write TensorBoard logs to out/tensorboard (needs `pip install tensorboard`)
    init_from: str | None = None  # fine-tuning: a run or model folder of an encoder (e.g. an mlm run); its embeddings, position table and encoder layers (not its head) start this model, whose shape and tokenizer are that run's

    def __post_init__(self):
        _check_types(self)
        for name, (ok, rule) in _RULES.items():
            value = getattr(self, name)
            if value is not None and not ok(value):
                raise ConfigError(f"{name}={value!r} is invalid: must be {rule}")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _is_device(name: str) -> bool:
    try:
        return name == "auto" or torch.device(name) is not None
    except (RuntimeError, ValueError):
        return False


# Range of every field whose type alone does not say it (None passes where the type allows it).
_RULES: dict[str, tuple] = {
    "task": (lambda v: v in TASKS, f"one of {', '.join(TASKS)}"),
    "data": (lambda v: v.strip() != "", "a source name or a file / folder path"),
    "data_options": (lambda v: isinstance(v, dict) and all(isinstance(k, str) for k in v),
                     "a mapping of option names to values, e.g. {max_words: 300}"),
    "max_examples": (lambda v: v >= 1, ">= 1 (or None for all)"),
    "preset": (lambda v: v in PRESETS, f"one of {', '.join(PRESETS)}"),
    "tokenizer": (lambda v: v in TOKENIZERS, f"one of {', '.join(TOKENIZERS)}"),
    "vocab_size": (lambda v: v >= 1, ">= 1"),
    "seq_len": (lambda v: v >= 2, ">= 2 (or None for the model's max_seq_len)"),
    "batch_size": (lambda v: v >= 1, ">= 1"),
    "max_tokens": (lambda v: v >= 1, ">= 1 (or None for no cap)"),
    "steps": (lambda v: v >= 1, ">= 1"),
    "lr": (lambda v: v > 0, "a finite number > 0"),
    "min_lr_ratio": (lambda v: 0 <= v <= 1, "in [0, 1]"),
    "warmup_steps": (lambda v: v >= 0, ">= 0"),
    "schedule": (lambda v: v in SCHEDULES, f"one of {', '.join(SCHEDULES)}"),
    "weight_decay": (lambda v: v >= 0, ">= 0"),
    "table_lr_mult": (lambda v: v > 0, "> 0"),
    "position_lr_mult": (lambda v: v > 0, "> 0"),
    "table_weight_decay": (lambda v: v >= 0, ">= 0"),
    "beta1": (lambda v: 0 <= v < 1, "in [0, 1)"),
    "beta2": (lambda v: 0 <= v < 1, "in [0, 1)"),
    "grad_clip": (lambda v: v >= 0, ">= 0 (0 = off)"),
    "precision": (lambda v: v in PRECISIONS, f"one of {', '.join(PRECISIONS)}"),
    "eval_every": (lambda v: v >= 0, ">= 0 (0 = only at the end)"),
    "eval_batches": (lambda v: v >= 0, ">= 0 (0 = the whole split)"),
    "final_eval_batches": (lambda v: v >= 0, ">= 0 (0 = the whole split)"),
    "decode": (lambda v: v in DECODES, f"one of {', '.join(DECODES)}"),
    "num_beams": (lambda v: v >= 1, ">= 1"),
    "decode_examples": (lambda v: v >= 0, ">= 0"),
    "mask_prob": (lambda v: 0 < v <= 1, "in (0, 1]"),
    "checkpoint_every": (lambda v: v >= 0, ">= 0 (0 = only at the end)"),
    "keep_checkpoints": (lambda v: v >= 1, ">= 1"),
    "log_every": (lambda v: v >= 1, ">= 1"),
    "seed": (lambda v: 0 <= v < 2**32, "in [0, 2**32)"),
    "device": (_is_device, "auto, cpu, cuda, cuda:N or mps"),
    "threads": (lambda v: v >= 1, ">= 1 (or None for torch's default)"),
    "stop_after": (lambda v: v >= 1, ">= 1 (or None)"),
}


def _check_types(cfg) -> None:
    """Every field against its annotation: bool, int (not bool), float (finite), str, or None where allowed."""
    hints = typing.get_type_hints(type(cfg))
    for f in dataclasses.fields(cfg):
        value, tp = getattr(cfg, f.name), hints[f.name]
        options = typing.get_args(tp) if typing.get_origin(tp) in (typing.Union, types.UnionType) else (tp,)
        if value is None and type(None) in options:
            continue
        simple = [o for o in options if o in (bool, int, float, str)]
        if len(simple) < len([o for o in options if o is not type(None)]):
            continue  # a container type: left to the range rules
        ok = any(isinstance(value, bool) if o is bool else
                 isinstance(value, int) and not isinstance(value, bool) if o is int else
                 isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
                 if o is float else isinstance(value, o) for o in simple)
        if not ok:
            names = " or ".join(o.__name__ if o is not type(None) else "None" for o in options)
            finite = " (finite)" if float in options else ""
            raise ConfigError(f"{f.name}={value!r} is invalid: must be {names}{finite}")


# ----------------------------------------------------------------------------- small helpers
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


def default_out(task: str) -> str:
    return str(Path("runs") / f"{task}-{time.strftime('%Y%m%d-%H%M%S')}")


# ----------------------------------------------------------------------------- opening the run
RESUME_FREE = ("resume", "stop_after", "progress", "device", "threads", "tensorboard", "out")  # may change on resume


def _run_folder(cfg: TrainConfig, d: Dist) -> Path:
    out_name = [cfg.out or default_out(cfg.task)]
    if d.world_size > 1:  # every rank must use rank 0's folder (the default name holds a timestamp)
        torch.distributed.broadcast_object_list(out_name, src=0)
    out = Path(out_name[0])
    if out.exists() and not out.is_dir():
        raise RunError(f"out={out} is an existing file; give a folder for the run")
    return out


# ----------------------------------------------------------------------------- building
@dataclass
class Parts:
    """What the steps of `train` share once built."""

    data: TaskData
    model_cfg: ModelConfig
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    batcher: object  # the task's resumable batch iterator
    mask_generator: torch.Generator  # mlm masking (its own generator, so it resumes exactly)


def _build(cfg: TrainConfig, model_cfg: ModelConfig, data: TaskData, d: Dist, device: torch.device) -> Parts:
    """Model, optimizer, batches and generators; seeded the same way on every rank."""
    if device.type == "cpu":  # weights, gradients, AdamW state and activations must fit (one line, nothing written)
        check_training_memory(model_cfg, cfg.batch_size, data.seq_len)
    torch.manual_seed(cfg.seed)  # the same initial weights for every variant and every rank
    model = build_model(model_cfg).to(device)
    groups = param_groups(model, cfg.weight_decay, cfg.table_lr_mult, cfg.table_weight_decay, cfg.position_lr_mult)
    optimizer = torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), fused=device.type in ("cpu", "cuda") or None)
    batcher = data.task.batches(data.encoded["train"], data.tokenizer, data.seq_len, cfg.batch_size,
                                max_tokens=cfg.max_tokens, shuffle=True, seed=cfg.seed, rank=d.rank,
                                world_size=d.world_size)
    mask_generator = torch.Generator().manual_seed(cfg.seed * 1_000_003 + d.rank)
    torch.manual_seed(cfg.seed + d.rank)  # dropout differs between ranks, is fixed per rank
    random.seed(cfg.seed + d.rank)
    return Parts(data, model_cfg, model, optimizer, batcher, mask_generator)


# ----------------------------------------------------------------------------- init_from (fine-tuning)
ENCODER_PREFIXES = ("embed.", "encoder.")  # what init_from copies: token + position embeddings, encoder layers
SHAPE_FIELDS = ("embed_dim", "num_heads", "num_layers", "ffn_dim", "max_seq_len", "attention", "factorized_k",
                "dense_factors", "kernel_size", "linformer_k")  # ModelConfig fields init_from takes over


def pretrained_encoder(path: str):
    """(model, tokenizer) of `path`: a run folder (its final model, else its latest checkpoint) or a
    model / checkpoint folder inside one (the tokenizer.json of the run above it). ConfigError when
    it holds no encoder or no tokenizer."""
    from .data.tokenizer import load_tokenizer

    folder = Path(path)
    if not folder.is_dir():
        raise ConfigError(f"init_from={path!r}: no such folder; give the run folder of a finished mlm run")
    if (folder / "config.json").is_file() and (folder / "tokenizer.json").is_file() and not (folder / "model.safetensors").is_file():
        folder = run_model_folder(folder)[0]  # a run folder: model/ or the latest checkpoint
    model = load(folder)
    if not any(k.startswith("encoder.") for k in model.state_dict()):
        raise ConfigError(f"init_from={path!r} holds a {model.config.kind} model without an encoder; give an mlm, "
                          "classify or seq2seq run")
    tok_file = next((f / "tokenizer.json" for f in (folder, folder.parent, folder.parent.parent)
                     if (f / "tokenizer.json").is_file()), None)
    if tok_file is None:
        raise ConfigError(f"init_from={path!r}: no tokenizer.json in {folder} or the run folder above it")
    return model, load_tokenizer(tok_file)


def _tokenizer_identity(tok) -> str:
    return json.dumps({"kind": tok.kind, "specials": list(tok.specials), **tok._state()}, sort_keys=True)


def init_encoder(model: torch.nn.Module, source: torch.nn.Module, name: str) -> int:
    """Copy the embeddings, position table and encoder layers of `source` into `model` (its head is
    left as built); strict: the two must hold the same encoder tensors with the same shapes, else a
    one-line ConfigError naming the first differences. Returns the number of tensors copied."""
    mine = {k: v for k, v in model.state_dict().items() if k.startswith(ENCODER_PREFIXES)}
    theirs = {k: v for k, v in source.state_dict().items() if k.startswith(ENCODER_PREFIXES)}
    missing, extra = sorted(mine.keys() - theirs.keys()), sorted(theirs.keys() - mine.keys())
    shapes = [f"{k} {tuple(theirs[k].shape)} vs {tuple(v.shape)}" for k, v in mine.items()
              if k in theirs and theirs[k].shape != v.shape]
    if missing or extra or shapes:
        raise ConfigError(f"init_from={name}: its encoder does not fit this model (shapes: {shapes[:3]}, only here: "
                          f"{missing[:3]}, only there: {extra[:3]}); use the pretrained run's model shape")
    model.load_state_dict(theirs, strict=False)
    return len(theirs)


def _init_from(cfg: TrainConfig, overrides: dict, data: TaskData | None) -> tuple[dict, object, torch.nn.Module]:
    """The pretrained (overrides with its shape, tokenizer, model); refuses data of another tokenizer."""
    source, tok = pretrained_encoder(cfg.init_from)
    if data is not None and _tokenizer_identity(data.tokenizer) != _tokenizer_identity(tok):
        raise ConfigError(f"init_from={cfg.init_from}: the data were encoded with another tokenizer than the "
                          "pretrained run's; encode them with its tokenizer (prepare_data(cfg, seq_len, tokenizer))")
    shape = {k: getattr(source.config, k) for k in SHAPE_FIELDS}
    return {**shape, "vocab_size": source.config.vocab_size, **overrides}, tok, source


def _start(cfg: TrainConfig, overrides: dict, data: TaskData | None, out: Path, d: Dist, device: torch.device,
           say) -> Parts:
    """A new run: rank 0 prepares the data and builds everything before it writes the tokenizer and
    config.json (a failed start leaves no file); the other ranks then read both back."""
    tokenizer = source = None
    if cfg.init_from:  # the pretrained run's shape and tokenizer; a misfit fails here, before any file
        overrides, tokenizer, source = _init_from(cfg, overrides, data)
    seq_len = resolve_seq_len(cfg, overrides)
    parts = None
    if d.main:
        pooling = overrides.get("pooling", ModelConfig.preset(cfg.preset).pooling)
        data = data or prepare_data(cfg, seq_len, tokenizer, log=say, pooling=pooling)
        model_cfg = resolve_model_config(cfg, overrides, data.task, data.tokenizer, data.splits)
        parts = _build(cfg, model_cfg, data, d, device)
        if source is not None:
            n = init_encoder(parts.model, source.to(device), cfg.init_from)
            say(f"init_from {cfg.init_from}: {n} encoder tensors ({source.config.kind}, attention={source.config.attention})")
        write_start(out, cfg, model_cfg, data.tokenizer, d.world_size)
    barrier(d)
    if not d.main:
        model_cfg = ModelConfig.from_dict(read_run_config(out)["model"])
        data = data or prepare_data(cfg, seq_len, load_run_tokenizer(out), log=say, pooling=model_cfg.pooling)
        parts = _build(cfg, model_cfg, data, d, device)
        if source is not None:  # DDP would broadcast rank 0's weights anyway; this keeps ranks equal without it
            init_encoder(parts.model, source.to(device), cfg.init_from)
    return parts


def _reopen(cfg: TrainConfig, stored: dict, data: TaskData | None, out: Path, d: Dist, device: torch.device,
            say) -> Parts:
    """A resumed run: the stored model config and the run's own tokenizer."""
    try:
        model_cfg = ModelConfig.from_dict(stored["model"])
    except (TypeError, ValueError) as e:
        raise RunError(f"{out / RUN_CONFIG}: the stored model config is invalid ({e}); start a new run") from None
    data = data or prepare_data(cfg, cfg.seq_len or model_cfg.max_seq_len, load_run_tokenizer(out), log=say,
                                pooling=model_cfg.pooling)
    parts = _build(cfg, model_cfg, data, d, device)
    if cfg.init_from:  # stopped before its first checkpoint: start from the pretrained encoder again
        init_encoder(parts.model, pretrained_encoder(cfg.init_from)[0].to(device), cfg.init_from)
    return parts


def _restore(parts: Parts, out: Path, d: Dist, device: torch.device, say) -> tuple[int, dict, tuple]:
    """Weights, optimizer, RNGs, data position and the open logging window (loss sum, steps) from the
    latest checkpoint (verified first)."""
    ckpt = latest_checkpoint(out)
    if ckpt is None:
        return 0, _new_counters(), (0.0, 0)
    parts.model.load_state_dict(load(ckpt).state_dict())  # load() checks every file against the manifest
    state = load_state(ckpt, d.world_size)
    parts.optimizer.load_state_dict(state["optimizer"])
    mine = state["ranks"][d.rank]
    parts.batcher.load_state_dict(mine["data"])
    torch.set_rng_state(mine["torch"])
    if mine["cuda"] is not None and device.type == "cuda":
        torch.cuda.set_rng_state(mine["cuda"], device)
    random.setstate(mine["python"])
    parts.mask_generator.set_state(mine["mask_generator"])
    say(f"resumed {out} at step {state['step']} from {ckpt.name}")
    return state["step"], dict(state["counters"]), tuple(mine.get("window", (0.0, 0)))


def _new_counters() -> dict:
    return {"tokens": 0, "train_time": 0.0, "timed_tokens": 0, "timed_time": 0.0}


# ----------------------------------------------------------------------------- the loop
def _forever(batcher):
    while True:  # each pass runs the rest of an epoch; the batcher then moves to the next
        yield from batcher


TIMING_SKIP = 3  # warm-up steps left out of tokens/s


def _throughput(counters: dict) -> float:
    """Training tokens/s over the timed steps (all steps when none was timed yet)."""
    if counters.get("timed_time", 0) > 0:
        return counters["timed_tokens"] / counters["timed_time"]
    return counters["tokens"] / max(counters["train_time"], 1e-9)


def _fmt(metrics: dict) -> str:
    return " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                    for k, v in metrics.items() if not isinstance(v, (list, dict)))


@dataclass
class _Loop:
    """The state of the loop in one invocation: the shared pieces plus step, counters and windows."""

    cfg: TrainConfig
    parts: Parts
    ddp: torch.nn.Module  # the model, DDP-wrapped when world size > 1
    d: Dist
    device: torch.device
    out: Path
    logger: MetricsLogger
    say: object
    label: str
    step: int
    counters: dict
    first_step: int = 0  # throughput skips the first TIMING_SKIP steps of each invocation (warm-up)
    window_loss: float = 0.0
    window_n: int = 0
    last_valid: dict | None = None


def _train_step(loop: _Loop, batches, autocast) -> tuple[float, float, object]:
    """One optimizer step; returns (loss, lr, grad norm or None) and updates the token counters."""
    cfg, parts = loop.cfg, loop.parts
    t0 = time.perf_counter()
    lr = lr_at(loop.step, cfg)
    for group in parts.optimizer.param_groups:
        group["lr"] = lr * group.get("lr_mult", 1.0)
    batch = to_device(next(batches), loop.device)
    with autocast:
        loss, _ = parts.data.task.loss(loop.ddp, batch, parts.mask_generator)
    parts.optimizer.zero_grad(set_to_none=True)
    loss.backward()
    params = parts.model.parameters()
    grad_norm = torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip) if cfg.grad_clip > 0 else None
    parts.optimizer.step()
    loop.step += 1
    loss_value = loss.item()  # also waits for the device, so the timing below is honest
    if not math.isfinite(loss_value):
        raise FloatingPointError(f"loss became {loss_value} at step {loop.step}; lower lr or use precision=fp32")
    elapsed, tokens = time.perf_counter() - t0, parts.data.task.num_tokens(batch) * loop.d.world_size
    c = loop.counters
    c["train_time"] += elapsed
    c["tokens"] += tokens
    if loop.step - loop.first_step > TIMING_SKIP or cfg.steps - loop.first_step <= 2 * TIMING_SKIP:
        c["timed_time"] += elapsed
        c["timed_tokens"] += tokens
    loop.window_loss, loop.window_n = loop.window_loss + loss_value, loop.window_n + 1
    return loss_value, lr, grad_norm


def _log_train(loop: _Loop, lr: float, grad_norm, bar) -> None:
    """A training row: the mean loss of the window (over ranks), lr, grad norm, throughput."""
    mean = torch.tensor([loop.window_loss / loop.window_n], device=loop.device)
    if loop.d.world_size > 1:  # the logged loss is the mean over ranks
        torch.distributed.all_reduce(mean)
        mean = mean / loop.d.world_size
    tps = _throughput(loop.counters)
    row = {"step": loop.step, "split": "train", "loss": mean.item(), "lr": lr,
           "grad_norm": float(grad_norm) if grad_norm is not None else None,
           "tokens": loop.counters["tokens"], "tokens_per_s": tps, "train_time_s": loop.counters["train_time"]}
    loop.logger.write(row)
    bar.set_postfix(loss=f"{row['loss']:.3f}", tok_s=f"{tps:,.0f}", refresh=False)
    loop.window_loss, loop.window_n = 0.0, 0


def _evaluate_and_checkpoint(loop: _Loop, stopping: bool) -> None:
    """Validation on rank 0 every eval_every steps and at the end; a checkpoint every
    checkpoint_every steps, at the end and when this invocation stops early."""
    cfg, d, step = loop.cfg, loop.d, loop.step
    if (cfg.eval_every and step % cfg.eval_every == 0) or step == cfg.steps:
        if d.main:
            t1 = time.perf_counter()
            loop.last_valid = evaluate(loop.parts.data.task, loop.parts.model, loop.parts.data, cfg,
                                       max_batches=cfg.final_eval_batches if step == cfg.steps else None)
            loop.logger.write({"step": step, "split": "valid",
                               **{k: v for k, v in loop.last_valid.items() if not isinstance(v, (list, dict))},
                               "tokens": loop.counters["tokens"], "eval_s": time.perf_counter() - t1})
            loop.say(f"[{loop.label}] step {step} valid: {_fmt(loop.last_valid)}")
        barrier(d)
    if (cfg.checkpoint_every and step % cfg.checkpoint_every == 0) or step == cfg.steps or stopping:
        p = loop.parts
        rank_states = gather(d, rank_state(loop.device, p.batcher, p.mask_generator,
                                                  (loop.window_loss, loop.window_n)))
        if d.main:
            save_checkpoint(loop.out, step, p.model, p.optimizer, rank_states, loop.counters, cfg.keep_checkpoints)
        barrier(d)


def _run_loop(loop: _Loop) -> None:
    """Train step by step until cfg.steps or stop_after."""
    from tqdm.auto import tqdm

    cfg = loop.cfg
    batches = _forever(loop.parts.batcher)
    bar = tqdm(total=cfg.steps, initial=loop.step, desc=loop.label, disable=not (cfg.progress and loop.d.main),
               dynamic_ncols=True, unit="step", leave=True)
    autocast = torch.autocast(loop.device.type, dtype=torch.bfloat16, enabled=cfg.precision == "bf16")
    loop.parts.model.train()
    try:
        while loop.step < cfg.steps:
            _, lr, grad_norm = _train_step(loop, batches, autocast)
            bar.update(1)
            if loop.step % cfg.log_every == 0 or loop.step == cfg.steps:
                _log_train(loop, lr, grad_norm, bar)
            stopping = cfg.stop_after is not None and cfg.stop_after <= loop.step < cfg.steps
            _evaluate_and_checkpoint(loop, stopping)
            if stopping:
                break
    finally:
        bar.close()


def _finish(loop: _Loop, params: int, wall0: float) -> dict:
    """The final weights, then done.json last (a run without it is not complete)."""
    cfg, d, p = loop.cfg, loop.d, loop.parts
    if loop.last_valid is None and d.main:  # resumed after the last checkpoint but before done.json
        loop.last_valid = evaluate(p.data.task, p.model, p.data, cfg, max_batches=cfg.final_eval_batches)
    result = {"step": loop.step, "valid": loop.last_valid, "params": params, "tokens": loop.counters["tokens"],
              "train_time_s": loop.counters["train_time"], "tokens_per_s": _throughput(loop.counters),
              "wall_s_this_invocation": time.time() - wall0, "world_size": d.world_size, "rank": d.rank,
              "model": p.model_cfg.to_dict(), "train": cfg.to_dict(), "out": str(loop.out)}
    if d.main:
        p.model.save(loop.out / "model")
        write_done(loop.out, result)  # with the run manifest over every file
        main_metric = p.data.task.main_metric
        loop.say(f"done: {loop.out} ({_fmt({'valid_' + main_metric: (loop.last_valid or {}).get(main_metric)})})")
    barrier(d)
    return result


def train(cfg: TrainConfig, model_overrides: dict | None = None, *, data: TaskData | None = None,
          label: str | None = None, log=None) -> dict:
    """Train (or resume) one run; returns the final metrics (also written to out/done.json).

    `model_overrides` are ModelConfig fields over the preset (e.g. ``{"attention": "R+V"}``);
    `data` reuses an already tokenized `TaskData` (a comparison shares one); `label` names the
    progress bar. Returns ``{"stopped_at": step, ...}`` without done.json when `stop_after` ends it early.
    Under DDP every rank returns the result; ``result["rank"]`` says which (print it on rank 0 only).
    """
    from tqdm.auto import tqdm

    wall0 = time.time()
    d, device = setup_distributed(cfg.device)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    say = log or (lambda msg: tqdm.write(msg) if d.main else None)
    out = _run_folder(cfg, d)
    with open_run(out, d):
        stored = check_folder(out, cfg, d, RESUME_FREE)
        barrier(d)  # every rank has checked the folder before rank 0 writes to it
        if stored is None:
            parts = _start(cfg, dict(model_overrides or {}), data, out, d, device, say)
        else:
            parts = _reopen(cfg, stored, data, out, d, device, say)
        step, counters, window = _restore(parts, out, d, device, say) if cfg.resume else (0, _new_counters(), (0.0, 0))
        params = count_parameters(parts.model)
        ddp = parts.model
        if d.world_size > 1:
            ddp = torch.nn.parallel.DistributedDataParallel(
                parts.model, device_ids=[device] if device.type == "cuda" else None)
        logger = MetricsLogger(out, d.main, cfg.tensorboard, step if cfg.resume else None)
        mc = parts.model_cfg
        say(f"run {out}: {cfg.task} on {cfg.data}, {mc.kind} attention={mc.attention}, {params:,} parameters, "
            f"{cfg.steps} steps x {cfg.batch_size * d.world_size} sequences, device {device}, world size {d.world_size}")
        loop = _Loop(cfg, parts, ddp, d, device, out, logger, say, label or cfg.task, step, counters, first_step=step,
                     window_loss=float(window[0]), window_n=int(window[1]))
        try:
            _run_loop(loop)
            if loop.step < cfg.steps:
                say(f"stopped at step {loop.step} of {cfg.steps}; continue with resume=true (--resume --out {out})")
                return {"stopped_at": loop.step, "out": str(out), "rank": d.rank}
            return _finish(loop, params, wall0)
        finally:
            logger.close()
