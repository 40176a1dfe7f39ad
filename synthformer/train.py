"""The one training loop, shared by every task (lm, classify, seq2seq, mlm).

    from synthformer.train import TrainConfig, train
    result = train(TrainConfig(task="lm", data="chitchat", steps=500, out="runs/lm"), {"attention": "R+V"})

What a run folder holds (rank 0 alone writes it):
    config.json          the resolved model + train config, written first
    tokenizer.json       the tokenizer the run trained (reused on resume / eval / generate)
    metrics.jsonl        one row per log / evaluation: {"step", "split", "loss", ...}
    checkpoints/         step-XXXXXXXX/ (model.safetensors, config.json, state.pt) + latest.json
    model/               the final weights (model.safetensors + config.json)
    done.json            final metrics; written last, atomically: only a finished run has it

Checkpoints are written to a temporary folder, renamed into place, and only then named by
``latest.json`` (itself replaced atomically), so a run killed at any moment resumes from the last
complete checkpoint. ``state.pt`` holds plain tensors and dicts only (optimizer, RNG of every rank,
data position, step) and is read with ``weights_only=True``. The schedule is a pure function of the
step, so resuming continues exactly: the final weights equal those of an uninterrupted run.

Under ``torchrun --nproc_per_node N`` the same code runs DDP (gloo on CPU, nccl on GPU): each rank
reads its own shard of every batch, so ``batch_size`` is per rank (global batch = N x batch_size).
"""
from __future__ import annotations

import dataclasses
import json
import math
import random
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch

from .data import build_tokenizer, load_source, load_tokenizer
from .model import ModelConfig, build_model, count_parameters, load
from .tasks import TASKS, Task, build_task
from .tasks.base import to_device
from .checkpoint import (STATE, RunError, atomic_write_json, atomic_write_text, latest_checkpoint, rank_state,
                         save_checkpoint)
from .distributed import barrier, gather, setup_distributed

SCHEDULES = ("cosine", "linear", "constant")
PRECISIONS = ("fp32", "bf16")


@dataclass
class TrainConfig:
    """Everything about a run except the model shape (that is ModelConfig); stored in config.json."""

    task: str = "lm"  # lm | classify | seq2seq | mlm
    data: str = "chitchat"  # a registry source (`synthformer data list`) or a .txt/.tsv/.jsonl file or folder
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
    weight_decay: float = 0.01  # AdamW decoupled weight decay (matrices only; not biases, norms, tables of positions)
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

    def __post_init__(self):
        if self.task not in TASKS:
            raise ValueError(f"task={self.task!r} is not one of {', '.join(TASKS)}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule={self.schedule!r} is not one of {', '.join(SCHEDULES)}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision={self.precision!r} is not one of {', '.join(PRECISIONS)}")
        if self.decode not in ("greedy", "beam"):
            raise ValueError(f"decode={self.decode!r} must be 'greedy' or 'beam'")
        for name in ("steps", "batch_size", "log_every", "keep_checkpoints"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)} must be >= 1")
        for name in ("warmup_steps", "eval_every", "eval_batches", "final_eval_batches", "checkpoint_every",
                     "grad_clip", "lr"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name}={getattr(self, name)} must be >= 0")
        if self.seq_len is not None and self.seq_len < 2:
            raise ValueError(f"seq_len={self.seq_len} must be >= 2")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


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


# ----------------------------------------------------------------------------- data
@dataclass
class TaskData:
    """A task's data, tokenized: shared by every variant of a comparison."""

    task: Task  # the task object (loss, metrics)
    tokenizer: object  # synthformer.data Tokenizer
    splits: object  # the raw DataSplits
    encoded: dict  # split name -> encoded examples (LongTensor for lm/mlm, list of items otherwise)
    seq_len: int  # sequence length the examples were cut to


def prepare_data(cfg: TrainConfig, seq_len: int, tokenizer=None, log=print) -> TaskData:
    """Load `cfg.data` for `cfg.task`, build (or reuse) the tokenizer and encode every split."""
    task = build_task(cfg.task, **({"mask_prob": cfg.mask_prob} if cfg.task == "mlm" else {}))
    t0 = time.time()
    splits = load_source(cfg.data, task.data_task, max_examples=cfg.max_examples, seed=cfg.seed)
    for name in ("train", "valid"):
        if not getattr(splits, name):
            raise ValueError(f"data {cfg.data!r} has an empty {name} split; give more examples")
    if tokenizer is None:
        texts = _texts(splits.train, task.data_task)
        tokenizer = build_tokenizer(cfg.tokenizer, texts, vocab_size=cfg.vocab_size)
    with warnings.catch_warnings():
        if cfg.task in ("seq2seq", "classify"):
            warnings.simplefilter("default")  # one truncation warning per split, shown
        encoded = {name: task.encode(getattr(splits, name), tokenizer, seq_len, cfg.strict_length)
                   for name in ("train", "valid", "test") if getattr(splits, name)}
    log(f"data: {splits!r}, {cfg.tokenizer} tokenizer with {tokenizer.vocab_size} tokens "
        f"({time.time() - t0:.1f}s)")
    return TaskData(task, tokenizer, splits, encoded, seq_len)


def _texts(examples: list, data_task: str) -> list[str]:
    if data_task == "lm":
        return list(examples)
    if data_task == "seq2seq":
        return [t for pair in examples for t in pair]
    return [x for x, _ in examples if isinstance(x, str)]


def resolve_model_config(cfg: TrainConfig, model_overrides: dict, task: Task, tokenizer, splits) -> ModelConfig:
    """Preset + the data's fields (vocabulary, special ids, classes) + the user's model overrides."""
    fields = {"kind": task.model_kind, **task.model_fields(tokenizer, splits), **model_overrides}
    fields["extra"] = {**fields.get("extra", {}), "tokenizer": cfg.tokenizer}
    if splits.meta.get("labels"):  # class names, so `generate` can print a label
        fields["extra"]["labels"] = list(splits.meta["labels"])
    return ModelConfig.preset(cfg.preset, **fields)


def check_attention_specs(model_cfg: ModelConfig) -> None:
    """Every layer's token mixer names a synthesizer spec or a baseline (fails before any folder is made)."""
    from .attention import parse_synthesizers
    from .mixers import MIXERS

    specs = model_cfg.layer_specs() + (model_cfg.layer_specs(decoder=True) if model_cfg.kind == "seq2seq" else [])
    for spec in specs:
        if not (isinstance(spec, str) and spec.strip().lower() in MIXERS):
            try:
                parse_synthesizers(spec)
            except ValueError as e:
                raise ValueError(f"attention={spec!r}: {e}; or a baseline: {', '.join(MIXERS)}") from None


def resolve_seq_len(cfg: TrainConfig, model_overrides: dict) -> int:
    """cfg.seq_len, else the model's max_seq_len (from the overrides or the preset)."""
    max_len = model_overrides.get("max_seq_len") or ModelConfig.preset(cfg.preset).max_seq_len
    seq_len = cfg.seq_len or max_len
    if seq_len > max_len:
        raise ValueError(f"seq_len={seq_len} is longer than the model's max_seq_len={max_len}; "
                         f"lower seq_len or set max_seq_len={seq_len}")
    return seq_len


# ----------------------------------------------------------------------------- checkpoints
RESUME_FREE = ("resume", "stop_after", "progress", "device", "threads", "tensorboard", "out")  # may change on resume
def _load_resume_config(out: Path, cfg: TrainConfig) -> dict:
    file = out / "config.json"
    if not file.exists():
        raise RunError(f"nothing to resume: {file} not found; start the run without --resume")
    if (out / "done.json").exists():
        raise RunError(f"run {out} is already complete (done.json); choose another --out")
    stored = json.loads(file.read_text())
    fixed = {k: v for k, v in stored["train"].items() if k not in RESUME_FREE}
    mine = {k: v for k, v in cfg.to_dict().items() if k not in RESUME_FREE}
    changed = {k: (fixed.get(k), v) for k, v in mine.items() if fixed.get(k) != v}
    if changed:
        raise RunError(f"cannot resume {out} with a different config (stored, given): {changed}; "
                       f"only {', '.join(RESUME_FREE)} may change")
    return stored


# ----------------------------------------------------------------------------- the loop
def _param_groups(model, weight_decay: float) -> list[dict]:
    decay = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def _forever(batcher):
    while True:  # each pass runs the rest of an epoch; the batcher then moves to the next
        yield from batcher


class _Logger:
    """metrics.jsonl (+ TensorBoard) on rank 0; nothing on other ranks."""

    def __init__(self, out: Path, enabled: bool, tensorboard: bool, resume_step: int | None):
        self.file = out / "metrics.jsonl"
        self.enabled, self.tb = enabled, None
        if not enabled:
            return
        if resume_step is not None and self.file.exists():  # drop rows written after the checkpoint
            rows = [r for r in self.file.read_text().splitlines() if r.strip()]
            kept = [r for r in rows if json.loads(r)["step"] <= resume_step]
            atomic_write_text(self.file, "".join(r + "\n" for r in kept))
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter
                self.tb = SummaryWriter(str(out / "tensorboard"))
            except ImportError:
                warnings.warn("tensorboard=true but tensorboard is not installed (pip install tensorboard); "
                              "writing metrics.jsonl only", stacklevel=2)

    def write(self, row: dict) -> None:
        if not self.enabled:
            return
        with open(self.file, "a") as f:
            f.write(json.dumps(row) + "\n")
        if self.tb is not None:
            for k, v in row.items():
                if isinstance(v, (int, float)) and k != "step":
                    self.tb.add_scalar(f"{row['split']}/{k}", v, row["step"])

    def close(self) -> None:
        if self.tb is not None:
            self.tb.close()


def evaluate(task: Task, model, data: TaskData, cfg: TrainConfig, split: str = "valid",
             max_batches: int | None = None) -> dict:
    """The task's metrics on one split (unshuffled, all of it unless `max_batches`)."""
    model = getattr(model, "module", model)
    was_training = model.training
    model.eval()
    batches = task.batches(data.encoded[split], data.tokenizer, data.seq_len, cfg.batch_size,
                           max_tokens=cfg.max_tokens, shuffle=False)
    limit = cfg.eval_batches if max_batches is None else max_batches
    try:
        return task.evaluate(model, batches, data.tokenizer, max_batches=limit, decode=cfg.decode,
                             num_beams=cfg.num_beams, decode_examples=cfg.decode_examples)
    finally:
        model.train(was_training)


TIMING_SKIP = 3  # warm-up steps left out of tokens/s


def _throughput(counters: dict) -> float:
    """Training tokens/s over the timed steps (all steps when none was timed yet)."""
    if counters.get("timed_time", 0) > 0:
        return counters["timed_tokens"] / counters["timed_time"]
    return counters["tokens"] / max(counters["train_time"], 1e-9)


def _fmt(metrics: dict) -> str:
    return " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                    for k, v in metrics.items() if not isinstance(v, (list, dict)))


def train(cfg: TrainConfig, model_overrides: dict | None = None, *, data: TaskData | None = None,
          label: str | None = None, log=None) -> dict:
    """Train (or resume) one run; returns the final metrics (also written to out/done.json).

    `model_overrides` are ModelConfig fields over the preset (e.g. ``{"attention": "R+V"}``);
    `data` reuses an already tokenized `TaskData` (a comparison shares one); `label` names the
    progress bar. Returns ``{"stopped_at": step, ...}`` without done.json when `stop_after` ends it early.
    """
    from tqdm.auto import tqdm

    model_overrides = dict(model_overrides or {})
    d, device = setup_distributed(cfg.device)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    out_name = [cfg.out or default_out(cfg.task)]
    if d.world_size > 1:  # every rank must use rank 0's folder (the default name holds a timestamp)
        torch.distributed.broadcast_object_list(out_name, src=0)
    out = Path(out_name[0])
    say = log or (lambda msg: tqdm.write(msg) if d.main else None)
    wall0 = time.time()

    # --- config, tokenizer and data (rank 0 builds the tokenizer; the others read it back)
    stored = _load_resume_config(out, cfg) if cfg.resume else None
    if not cfg.resume and (out / "config.json").exists():
        raise RunError(f"{out} already holds a run; pass resume=true (--resume) to continue it, "
                       "or choose another out")
    barrier(d)  # every rank has checked the folder before rank 0 writes to it
    if stored is not None:
        model_cfg = ModelConfig.from_dict(stored["model"])
        seq_len = cfg.seq_len or model_cfg.max_seq_len
        if data is None:
            data = prepare_data(cfg, seq_len, load_tokenizer(out), log=say)
    else:
        seq_len = resolve_seq_len(cfg, model_overrides)
        if data is None and d.main:
            data = prepare_data(cfg, seq_len, log=say)
        if d.main:
            model_cfg = resolve_model_config(cfg, model_overrides, data.task, data.tokenizer, data.splits)
            check_attention_specs(model_cfg)
            out.mkdir(parents=True, exist_ok=True)
            atomic_write_json(out / "config.json", {
                "model": model_cfg.to_dict(), "train": cfg.to_dict(), "world_size": d.world_size,
                "torch": torch.__version__, "command": sys.argv, "created": time.strftime("%Y-%m-%d %H:%M:%S")})
            data.tokenizer.save(out)
        barrier(d)
        if not d.main:
            model_cfg = ModelConfig.from_dict(json.loads((out / "config.json").read_text())["model"])
            if data is None:
                data = prepare_data(cfg, seq_len, load_tokenizer(out), log=say)
    task = data.task

    # --- model, optimizer, batches; then the checkpoint when resuming
    torch.manual_seed(cfg.seed)  # the same initial weights for every variant and every rank
    model = build_model(model_cfg).to(device)
    optimizer = torch.optim.AdamW(_param_groups(model, cfg.weight_decay), lr=cfg.lr,
                                  betas=(cfg.beta1, cfg.beta2))
    batcher = task.batches(data.encoded["train"], data.tokenizer, seq_len, cfg.batch_size,
                           max_tokens=cfg.max_tokens, shuffle=True, seed=cfg.seed, rank=d.rank,
                           world_size=d.world_size)
    mask_generator = torch.Generator().manual_seed(cfg.seed * 1_000_003 + d.rank)
    torch.manual_seed(cfg.seed + d.rank)  # dropout differs between ranks, is fixed per rank
    random.seed(cfg.seed + d.rank)
    step, counters = 0, {"tokens": 0, "train_time": 0.0, "timed_tokens": 0, "timed_time": 0.0}
    ckpt = latest_checkpoint(out) if cfg.resume else None
    if ckpt is not None:
        state = torch.load(ckpt / STATE, map_location="cpu", weights_only=True)
        model.load_state_dict(load(ckpt).state_dict())
        optimizer.load_state_dict(state["optimizer"])
        mine = state["ranks"][d.rank]
        batcher.load_state_dict(mine["data"])
        torch.set_rng_state(mine["torch"])
        if mine["cuda"] is not None and device.type == "cuda":
            torch.cuda.set_rng_state(mine["cuda"], device)
        random.setstate(mine["python"])
        mask_generator.set_state(mine["mask_generator"])
        step, counters = state["step"], dict(state["counters"])
        say(f"resumed {out} at step {step} from {ckpt.name}")
    params = count_parameters(model)
    ddp = model
    if d.world_size > 1:
        ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[device] if device.type == "cuda" else None)
    logger = _Logger(out, d.main, cfg.tensorboard, step if cfg.resume else None)
    say(f"run {out}: {cfg.task} on {cfg.data}, {model_cfg.kind} attention={model_cfg.attention}, "
        f"{params:,} parameters, {cfg.steps} steps x {cfg.batch_size * d.world_size} sequences, "
        f"device {device}, world size {d.world_size}")

    # --- the loop
    batches = _forever(batcher)
    bar = tqdm(total=cfg.steps, initial=step, desc=label or cfg.task, disable=not (cfg.progress and d.main),
               dynamic_ncols=True, unit="step", leave=True)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=cfg.precision == "bf16")
    window_loss, window_n, last_valid = 0.0, 0, None
    first_step = step  # throughput skips the first TIMING_SKIP steps of each invocation (warm-up)
    model.train()
    while step < cfg.steps:
        t0 = time.perf_counter()
        lr = lr_at(step, cfg)
        for group in optimizer.param_groups:
            group["lr"] = lr
        batch = to_device(next(batches), device)
        with autocast:
            loss, _ = task.loss(ddp, batch, mask_generator)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip) if cfg.grad_clip > 0 else None
        optimizer.step()
        step += 1
        loss_value = loss.item()  # also waits for the device, so the timing below is honest
        if not math.isfinite(loss_value):
            raise FloatingPointError(f"loss became {loss_value} at step {step}; lower lr or use precision=fp32")
        elapsed, tokens = time.perf_counter() - t0, task.num_tokens(batch) * d.world_size
        counters["train_time"] += elapsed
        counters["tokens"] += tokens
        if step - first_step > TIMING_SKIP or cfg.steps - first_step <= 2 * TIMING_SKIP:
            counters["timed_time"] += elapsed
            counters["timed_tokens"] += tokens
        window_loss, window_n = window_loss + loss_value, window_n + 1
        bar.update(1)
        if step % cfg.log_every == 0 or step == cfg.steps:
            mean = torch.tensor([window_loss / window_n], device=device)
            if d.world_size > 1:  # the logged loss is the mean over ranks
                torch.distributed.all_reduce(mean)
                mean = mean / d.world_size
            tps = _throughput(counters)
            row = {"step": step, "split": "train", "loss": mean.item(), "lr": lr,
                   "grad_norm": float(grad_norm) if grad_norm is not None else None,
                   "tokens": counters["tokens"], "tokens_per_s": tps, "train_time_s": counters["train_time"]}
            logger.write(row)
            bar.set_postfix(loss=f"{row['loss']:.3f}", tok_s=f"{tps:,.0f}", refresh=False)
            window_loss, window_n = 0.0, 0
        if (cfg.eval_every and step % cfg.eval_every == 0) or step == cfg.steps:
            if d.main:
                t1 = time.perf_counter()
                last_valid = evaluate(task, model, data, cfg,
                                      max_batches=cfg.final_eval_batches if step == cfg.steps else None)
                logger.write({"step": step, "split": "valid",
                              **{k: v for k, v in last_valid.items() if not isinstance(v, (list, dict))},
                              "tokens": counters["tokens"], "eval_s": time.perf_counter() - t1})
                say(f"[{label or cfg.task}] step {step} valid: {_fmt(last_valid)}")
            barrier(d)
        stopping = cfg.stop_after is not None and step >= cfg.stop_after and step < cfg.steps
        if (cfg.checkpoint_every and step % cfg.checkpoint_every == 0) or step == cfg.steps or stopping:
            rank_states = gather(d, rank_state(device, batcher, mask_generator))
            if d.main:
                save_checkpoint(out, step, model, optimizer, rank_states, counters, cfg.keep_checkpoints)
            barrier(d)
        if stopping:
            break
    bar.close()
    if step < cfg.steps:
        logger.close()
        say(f"stopped at step {step} of {cfg.steps}; continue with resume=true (--resume --out {out})")
        return {"stopped_at": step, "out": str(out)}

    # --- finish: the final weights, then done.json last (a run without it is not complete)
    if last_valid is None and d.main:  # resumed after the last checkpoint but before done.json
        last_valid = evaluate(task, model, data, cfg, max_batches=cfg.final_eval_batches)
    logger.close()
    result = {"step": step, "valid": last_valid, "params": params, "tokens": counters["tokens"],
              "train_time_s": counters["train_time"],
              "tokens_per_s": _throughput(counters),
              "wall_s_this_invocation": time.time() - wall0, "world_size": d.world_size,
              "model": model_cfg.to_dict(), "train": cfg.to_dict(), "out": str(out)}
    if d.main:
        model.save(out / "model")
        atomic_write_json(out / "done.json", result)
        say(f"done: {out} ({_fmt({'valid_' + task.main_metric: (last_valid or {}).get(task.main_metric)})})")
    barrier(d)
    return result
