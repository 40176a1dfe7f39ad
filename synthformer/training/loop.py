"""The one training loop, shared by every task (lm, classify, seq2seq, mlm).

    from synthformer.training.loop import TrainConfig, train
    result = train(TrainConfig(task="lm", data="chitchat", steps=500, out="runs/lm"), {"attention": "R+V"})

`train` reads as its steps: open the run (lock, folder checks), build (data and the one ModelConfig as
synthformer.training.plan resolves them, the model, the optimizer of synthformer.training.optim, batches: all before the
first file is written; fine-tuning's pretrained encoder from synthformer.training.init_from), restore (the latest
checkpoint when resuming), then the loop of train step / log / evaluate / checkpoint, and finish (final
model, done.json). TrainConfig and the learning-rate schedule live in synthformer.training.config.

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

import errno
import math
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from .checkpoint import RunError, latest_checkpoint, load_state, rank_state, save_checkpoint
from ..data import DataError
from .distributed import Dist, barrier, gather, hardware, setup_distributed
from .evaluation import evaluate
from .init_from import from_pretrained, init_encoder, pretrained_encoder
from .memory import check_training_memory
from ..model import ModelConfig, build_model, count_parameters
from ..model.io import load_weights
from .optim import build_optimizer, set_lr
from .plan import model_config, prepare, run_data, stored_model_config, tokenizer_identity
from .trackers import check_report_to
from .runs import (MetricsLogger, check_folder, check_source, copy_metrics, load_run_tokenizer, open_run,
                   read_run_config, remove_unstarted, write_done, write_start)
from .task_data import TaskData, prepare_data  # noqa: F401 (re-exported: the names callers import from here)
from ..tasks.base import to_device
from .config import TrainConfig, lr_at

__all__ = ["EVAL_ONLY", "RESULT_FREE", "RESUME_FREE", "TaskData", "TrainConfig", "evaluate", "lr_at", "prepare_data", "train"]


class DivergedError(RunError):
    """The training loss became NaN or infinite (too high a learning rate, or bf16 overflow)."""


DISK_ERRNOS = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EROFS}  # a full disk, a file-size limit (ulimit -f)


def default_out(task: str) -> str:
    return str(Path("runs") / f"{task}-{time.strftime('%Y%m%d-%H%M%S')}")


# ----------------------------------------------------------------------------- opening the run
RESUME_FREE = ("resume", "stop_after", "progress", "device", "threads", "tensorboard", "report_to", "out")  # how a run is executed
# what a run computes depends on none of these, nor on its checkpoint cadence nor on how often it is evaluated on
# the way (only its curve has fewer points): they may change on resume, and a finished run is reused whatever they
# were (RESUME_FREE alone is left out of a comparison's recorded settings)
RESULT_FREE = RESUME_FREE + ("checkpoint_every", "keep_checkpoints", "eval_every")
# what a run evaluates, never what it trains (evaluation draws on no training RNG): a run continued from another
# (`train`'s continue_from) may differ from it in these
EVAL_ONLY = ("eval_every", "eval_batches", "final_eval_batches", "eval_test", "decode", "num_beams", "decode_examples",
             "test_decode_examples")


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
    """Model, optimizer, batches and generators; seeded the same way on every rank. The model must fit
    this machine's memory (checked here, where it is built for training, not where a config is read)."""
    if device.type == "cpu":  # weights, gradients, AdamW state and activations must fit (one line, nothing written)
        check_training_memory(model_cfg, cfg.batch_size, data.seq_len)
    torch.manual_seed(cfg.seed)  # the same initial weights for every variant and every rank
    model = build_model(model_cfg).to(device)
    optimizer = build_optimizer(model, cfg.lr, cfg.weight_decay, cfg.table_lr_mult, cfg.table_weight_decay,
                                cfg.position_lr_mult, betas=(cfg.beta1, cfg.beta2))
    batcher = data.task.batches(data.encoded["train"], data.tokenizer, data.seq_len, cfg.batch_size,
                                max_tokens=cfg.max_tokens, shuffle=True, seed=cfg.seed, rank=d.rank,
                                world_size=d.world_size)
    mask_generator = torch.Generator().manual_seed(cfg.seed * 1_000_003 + d.rank)
    torch.manual_seed(cfg.seed + d.rank)  # dropout differs between ranks, is fixed per rank
    random.seed(cfg.seed + d.rank)
    return Parts(data, model_cfg, model, optimizer, batcher, mask_generator)


def _check_eval_splits(cfg: TrainConfig, data: TaskData) -> None:
    """The splits the run will evaluate batch at its sizes: a split too small fails now, not after training."""
    for split in ("valid", "test") if cfg.eval_test else ("valid",):
        try:
            data.task.batches(data.encoded[split], data.tokenizer, data.seq_len, cfg.batch_size,
                              max_tokens=cfg.max_tokens, shuffle=False)
        except DataError as e:
            raise DataError(f"the {split} split cannot be evaluated: {e}") from None


# ----------------------------------------------------------------------------- a new run, a resumed run
def _start(cfg: TrainConfig, overrides: dict, data: TaskData | None, out: Path, d: Dist, device: torch.device,
           say) -> Parts:
    """A new run: rank 0 prepares the data and builds everything before it writes the tokenizer and
    config.json (a failed start leaves no file); the other ranks then read both back."""
    tokenizer = source = None
    if cfg.init_from:  # the pretrained run's shape and tokenizer; a misfit fails here, before any file
        overrides, tokenizer, source = from_pretrained(cfg, overrides, data)
    parts = None
    if d.main:
        data = data or prepare(cfg, overrides, tokenizer, log=say)
        parts = _build(cfg, model_config(cfg, overrides, data), data, d, device)
        _check_eval_splits(cfg, data)
        if source is not None:
            n = init_encoder(parts.model, source.to(device), cfg.init_from)
            say(f"init_from {cfg.init_from}: {n} encoder tensors ({source.config.kind}, attention={source.config.attention})")
        write_start(out, cfg, parts.model_cfg, data.tokenizer, d.world_size)
    barrier(d)
    if not d.main:
        model_cfg = stored_model_config(read_run_config(out), out)
        data = data or run_data(cfg, model_cfg, load_run_tokenizer(out), log=say)
        parts = _build(cfg, model_cfg, data, d, device)
        if source is not None:  # DDP would broadcast rank 0's weights anyway; this keeps ranks equal without it
            init_encoder(parts.model, source.to(device), cfg.init_from)
    return parts


def _reopen(cfg: TrainConfig, stored: dict, data: TaskData | None, out: Path, d: Dist, device: torch.device,
            say) -> Parts:
    """A resumed run: the stored model config and the run's own tokenizer (`data`, a grid's, encoded with it)."""
    model_cfg = stored_model_config(stored, out)
    tokenizer = load_run_tokenizer(out)
    if data is not None and tokenizer_identity(data.tokenizer) != tokenizer_identity(tokenizer):
        raise RunError(f"cannot resume {out}: the data given were encoded with another tokenizer than the run's")
    data = data or run_data(cfg, model_cfg, tokenizer, log=say)
    parts = _build(cfg, model_cfg, data, d, device)
    if cfg.init_from:  # stopped before its first checkpoint: start from the pretrained encoder again
        init_encoder(parts.model, pretrained_encoder(cfg.init_from)[0].to(device), cfg.init_from)
    return parts


def _continue(cfg: TrainConfig, overrides: dict, data: TaskData | None, out: Path, d: Dist, device: torch.device,
              source: Path, say) -> Parts:
    """A new run that continues run `source` (`train`'s continue_from): its model config and tokenizer, checked
    against what this run asks for before anything is written."""
    stored = check_source(source, cfg, d, RESULT_FREE + EVAL_ONLY)
    tokenizer = load_run_tokenizer(source)
    if data is not None and tokenizer_identity(data.tokenizer) != tokenizer_identity(tokenizer):
        raise RunError(f"continue_from={source}: the data were encoded with another tokenizer than that run's")
    model_cfg = stored_model_config(stored, source)
    data = data or run_data(cfg, model_cfg, tokenizer, log=say)
    asked, theirs = model_config(cfg, overrides, data).to_dict(), model_cfg.to_dict()
    other = sorted(k for k in {*asked, *theirs} if asked.get(k) != theirs.get(k))
    if other:
        diff = ", ".join(f"{k} {theirs.get(k)!r}, asked {asked.get(k)!r}" for k in other)
        raise RunError(f"continue_from={source} trained another model ({diff}); continue a run of the same model")
    parts = _build(cfg, model_cfg, data, d, device)
    _check_eval_splits(cfg, data)
    if d.main:
        write_start(out, cfg, model_cfg, tokenizer, d.world_size)
    barrier(d)
    return parts


def _restore(parts: Parts, out: Path, d: Dist, device: torch.device, say,
             source: Path | None = None) -> tuple[int, dict, tuple]:
    """Weights, optimizer, RNGs, data position and the open logging window (loss sum, steps) from the
    latest checkpoint (verified first) of run `out`, or of run `source` that `out` continues."""
    ckpt = latest_checkpoint(source or out)
    if ckpt is None:
        return 0, _new_counters(), (0.0, 0)
    load_weights(parts.model, ckpt, device=str(device))  # checks every file against the manifest
    state = load_state(ckpt, d.world_size)
    parts.optimizer.load_state_dict(state["optimizer"])
    mine = state["ranks"][d.rank]
    parts.batcher.load_state_dict(mine["data"])
    torch.set_rng_state(mine["torch"])
    if mine["cuda"] is not None and device.type == "cuda":
        torch.cuda.set_rng_state(mine["cuda"], device)
    random.setstate(mine["python"])
    parts.mask_generator.set_state(mine["mask_generator"])
    say(f"continued {source} at step {state['step']} ({ckpt.name}) as {out}" if source else
        f"resumed {out} at step {state['step']} from {ckpt.name}")
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
    set_lr(parts.optimizer, lr)
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
        raise DivergedError(f"loss became {loss_value} at step {loop.step} (lr={cfg.lr}); lower lr or use "
                            "precision=fp32")
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
            if cfg.stop_after is not None and cfg.stop_after <= loop.step:  # resumed at (or past) the stop:
                break  # nothing to train; its checkpoint is the one resumed from (`--stop_after 40` at 40 is 40)
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


def _finish(loop: _Loop, params: int, wall0: float, source: Path | None = None) -> dict:
    """The final weights, then done.json last (a run without it is not complete)."""
    cfg, d, p = loop.cfg, loop.d, loop.parts
    if loop.last_valid is None and d.main:  # resumed after the last checkpoint but before done.json
        loop.last_valid = evaluate(p.data.task, p.model, p.data, cfg, max_batches=cfg.final_eval_batches)
    result = {"step": loop.step, "valid": loop.last_valid, "params": params, "tokens": loop.counters["tokens"],
              "train_time_s": loop.counters["train_time"], "tokens_per_s": _throughput(loop.counters),
              "wall_s_this_invocation": time.time() - wall0, "world_size": d.world_size, "rank": d.rank,
              "hardware": hardware(loop.device), "model": p.model_cfg.to_dict(), "train": cfg.to_dict(), "out": str(loop.out),
              **({"continued_from": str(source)} if source is not None else {})}
    if cfg.eval_test and d.main:
        k = len(p.data.encoded["test"]) if cfg.test_decode_examples is None else cfg.test_decode_examples
        result["test"] = evaluate(p.data.task, p.model, p.data, cfg, split="test", max_batches=cfg.final_eval_batches,
                                  decode_examples=k)
        loop.logger.write({"step": loop.step, "split": "test", **{k: v for k, v in result["test"].items() if not isinstance(v, (list, dict))},
                           "tokens": loop.counters["tokens"]})
        loop.say(f"[{loop.label}] step {loop.step} test: {_fmt(result['test'])}")
    if d.main:
        p.model.save(loop.out / "model")
        write_done(loop.out, result)  # with the run manifest over every file
        main_metric = p.data.task.main_metric
        loop.say(f"done: {loop.out} ({_fmt({'valid_' + main_metric: (loop.last_valid or {}).get(main_metric)})})")
    barrier(d)
    return result


def train(cfg: TrainConfig, model_overrides: dict | None = None, *, data: TaskData | None = None,
          label: str | None = None, log=None, continue_from: str | Path | None = None) -> dict:
    """Train (or resume) one run; returns the final metrics (also written to out/done.json).

    `model_overrides` are ModelConfig fields over the preset (e.g. ``{"attention": "R+V"}``);
    `data` reuses an already tokenized `TaskData` (a comparison shares one); `label` names the
    progress bar. Returns ``{"stopped_at": step, ...}`` without done.json when `stop_after` ends it early.
    Under DDP every rank returns the result; ``result["rank"]`` says which (print it on rank 0 only).

    `continue_from`: a new run that starts where run `continue_from` stands (its latest checkpoint: weights,
    optimizer, RNGs, data position, step, and its metrics rows), trained with `cfg` but for what it evaluates
    (EVAL_ONLY) and its checkpoint cadence. It trains on exactly as `continue_from` would, evaluates that step
    with its own settings (a finished one: its final evaluation alone) and keeps its own checkpoints;
    ``result["continued_from"]`` names the source. A comparison's first seed continues its winning
    whole-run sweep candidate this way (`synthformer.evidence.compare`).
    """
    from tqdm.auto import tqdm

    wall0 = time.time()
    check_report_to(cfg.report_to)  # a tracker's missing package: one line, before anything is written
    d, device = setup_distributed(cfg.device)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    say = log or (lambda msg: tqdm.write(msg) if d.main else None)
    out = _run_folder(cfg, d)
    source = None if continue_from is None else Path(continue_from)
    if source is not None and cfg.resume:
        raise RunError(f"continue_from={source} starts a new run; resume=true continues {out} itself: give one of them")
    try:
        with open_run(out, d):
            stored = check_folder(out, cfg, d, RESULT_FREE)
            barrier(d)  # every rank has checked the folder before rank 0 writes to it
            try:
                return _train_in(cfg, model_overrides, data, label, out, d, device, say, wall0, source, stored)
            except Exception:
                if stored is None and d.main:  # a new run that failed before its first checkpoint leaves nothing
                    remove_unstarted(out)
                raise
    except Exception as e:
        why = _disk_full(e)
        if why is None:
            raise
        raise RunError(f"{out}: cannot write ({why}); free some space (or raise ulimit -f) and run the command "
                       "again") from None


def _disk_full(e: BaseException) -> str | None:
    """What a failed write says when the disk is full or a file-size limit (ulimit -f) was hit, else None: an
    OSError with such an errno, or a library's error (safetensors, torch.save) whose message or cause names one."""
    texts = [os.strerror(n) for n in DISK_ERRNOS] + ["file write failed"]  # torch.save's PytorchStreamWriter
    while e is not None:
        if isinstance(e, OSError) and e.errno in DISK_ERRNOS:
            return f"{e.strerror or e}{': ' + str(e.filename) if e.filename else ''}"
        hit = next((t for t in texts if t in str(e)), None)
        if hit is not None:
            return hit
        e = e.__cause__ or e.__context__
    return None


def _train_in(cfg: TrainConfig, model_overrides: dict | None, data: TaskData | None, label: str | None, out: Path,
              d: Dist, device: torch.device, say, wall0: float, source: Path | None, stored: dict | None) -> dict:
    """`train` inside the open run folder: build or reopen, restore, loop, finish."""
    if source is not None:
        parts = _continue(cfg, dict(model_overrides or {}), data, out, d, device, source, say)
    elif stored is None:
        parts = _start(cfg, dict(model_overrides or {}), data, out, d, device, say)
    else:
        parts = _reopen(cfg, stored, data, out, d, device, say)
    step, counters, window = (_restore(parts, out, d, device, say, source) if cfg.resume or source
                              else (0, _new_counters(), (0.0, 0)))
    if source is not None and d.main:
        copy_metrics(source, out, step)
    params = count_parameters(parts.model)
    ddp = parts.model
    if d.world_size > 1:
        ddp = torch.nn.parallel.DistributedDataParallel(
            parts.model, device_ids=[device] if device.type == "cuda" else None)
    logger = MetricsLogger(out, d.main, cfg.report_to, step if cfg.resume else None)
    mc = parts.model_cfg
    say(f"run {out}: {cfg.task} on {cfg.data}, {mc.kind} attention={mc.attention}, {params:,} parameters, "
        f"{cfg.steps} steps x {cfg.batch_size * d.world_size} sequences, device {device}, world size {d.world_size}")
    loop = _Loop(cfg, parts, ddp, d, device, out, logger, say, label or cfg.task, step, counters, first_step=step,
                 window_loss=float(window[0]), window_n=int(window[1]))
    try:
        if source is not None:  # this step's evaluation, with this run's settings, and its own checkpoint
            _evaluate_and_checkpoint(loop, stopping=True)
        _run_loop(loop)
        if loop.step < cfg.steps:
            say(f"stopped at step {loop.step} of {cfg.steps}; continue with resume=true (--resume --out {out})")
            return {"stopped_at": loop.step, "out": str(out), "rank": d.rank}
        return _finish(loop, params, wall0, source)
    finally:
        logger.close()
