"""Training speed of a comparison's variants, measured under the same conditions for all.

A comparison's runs record their own throughput, but they train one after another over minutes, hours or
sessions, on cores shared with other work: a variant trained beside a test suite looks slow. So the speed
claims (Table 4's "R faster than V", LRA's, ...) are judged on a measurement made when the comparison
ends (`synthformer.evidence.compare`): each variant's model (built as its runs were: `plan.model_config`) takes
training steps on the same real batch of the comparison's data (the task's loss, backward, an AdamW
step), the variants timed round-robin in one process with the runs' thread count
(`bench.measure.run_cases`: the median of `REPEATS` steps after `WARMUP`), once per seed (the model's
initialisation drawn from that seed). Whatever else shares the machine then slows every variant alike,
and the ratios compare. Stored once in the comparison's ``speed.json`` (committed with a grid's cells);
each seed's ``tokens_per_s`` becomes the measured one, the training run's own is kept as
``train_tokens_per_s``.
"""
from __future__ import annotations

import statistics
from pathlib import Path

from ..errors import SynthformerError
from ..utils.integrity import read_recorded_json, write_recorded_json
from ..utils.stats import is_number, stat

SPEED_FILE = "speed.json"
REPEATS, WARMUP = 5, 2  # timed steps (median) and warm-up steps per variant and seed


def measure(rows: list[dict], cfg, model_overrides: dict, data, log=print) -> dict:
    """{"device", "precision", "threads", "batch_tokens", "rows": {variant: [{seed, tokens_per_s, median_s}]}}:
    training steps of every variant of `rows` (a comparison's result rows, trained with TrainConfig `cfg` and
    `model_overrides` on `data`, its TaskData) on one batch of that data, round-robin (module doc)."""
    import torch

    from ..bench.cases import Case
    from ..bench.measure import run_cases
    from ..model import build_model
    from ..training.optim import adamw_speed_options
    from ..training.plan import model_config
    from ..tasks.base import to_device

    batch = next(iter(data.task.batches(data.encoded["train"], data.tokenizer, data.seq_len, cfg.batch_size,
                                        max_tokens=cfg.max_tokens, shuffle=False)))
    tokens = data.task.num_tokens(batch)
    cuda = cfg.device == "cuda" or (cfg.device == "auto" and torch.cuda.is_available())
    device = torch.device("cuda" if cuda else "cpu")  # where the runs trained
    batch = to_device(batch, device)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=cfg.precision == "bf16")
    threads = torch.get_num_threads()
    torch.set_num_threads(cfg.threads or threads)
    found = {r["variant"]: [] for r in rows}
    try:
        for seed in [s["seed"] for s in rows[0]["seeds"]]:
            cases = []
            for r in rows:
                torch.manual_seed(seed)
                model = build_model(model_config(cfg, {**model_overrides, "attention": r["variant"]}, data))
                model = model.to(device).train()
                opt = torch.optim.AdamW(model.parameters(), lr=1e-4, **adamw_speed_options(model.parameters()))
                g = torch.Generator().manual_seed(seed)

                def step(model=model, opt=opt, g=g):
                    opt.zero_grad(set_to_none=True)
                    with autocast:
                        loss = data.task.loss(model, batch, g)[0]
                    loss.backward()
                    opt.step()
                cases.append(Case(r["variant"], "model", "train", data.seq_len, cfg.batch_size, tokens, None, step))
            for m in run_cases(cases, REPEATS, WARMUP, device, measure_memory=False, log=lambda *a: None):
                found[m["case"].variant].append({"seed": seed, "tokens_per_s": tokens / m["median_s"],
                                                 "median_s": m["median_s"]})
            log(f"speed: seed {seed}: " + ", ".join(f"{v} {found[v][-1]['tokens_per_s']:,.0f}" for v in found)
                + " tokens/s")
    finally:
        torch.set_num_threads(threads)
    return {"device": str(device), "precision": cfg.precision, "threads": cfg.threads or threads,
            "batch_tokens": tokens, "repeats": REPEATS, "warmup": WARMUP, "rows": found}


def add_speed(rows: list[dict], cfg, model_overrides: dict, data, folder: Path, log=print) -> dict:
    """Measure (once: ``folder/speed.json``) and put the measurement in place of each seed's and row's
    ``tokens_per_s`` in `rows` (the training run's own kept as ``train_tokens_per_s``). Returns the measurement."""
    file = Path(folder) / SPEED_FILE
    if file.exists():
        speed = read_speed(folder)
    else:
        log(f"{Path(folder).name}: timing every variant's training step round-robin (speed claims)")
        speed = measure(rows, cfg, model_overrides, data, log)
        write_recorded_json(folder, file, speed)  # its digest: folder/digests.json
    for row in rows:
        measured = {m["seed"]: m["tokens_per_s"] for m in speed["rows"].get(row["variant"], [])}
        if not measured:
            continue
        row["train_tokens_per_s"] = row["tokens_per_s"]
        for s in row["seeds"]:
            s["train_tokens_per_s"] = s["tokens_per_s"]
            s["tokens_per_s"] = measured.get(s["seed"], statistics.fmean(measured.values()))
        tps = stat([s["tokens_per_s"] for s in row["seeds"]])
        row["tokens_per_s"], row["tokens_per_s_std"] = tps.mean, tps.std
    return speed


class SpeedError(SynthformerError):
    """A damaged speed.json."""


def read_speed(folder: Path) -> dict:
    """``folder/speed.json``, verified against folder/digests.json and checked to be a measurement (the keys
    `speed_note` shows; every variant's seeds with a number of tokens/s): one line otherwise."""
    file = Path(folder) / SPEED_FILE
    fix = f"delete {file} to time the variants again"
    speed = read_recorded_json(folder, file, fix)
    for key in ("batch_tokens", "repeats", "threads"):
        if not is_number(speed.get(key)):
            raise SpeedError(f"{file}: {key} is {'missing' if key not in speed else repr(speed[key])[:40]}, not a "
                             f"number; {fix}")
    rows = speed.get("rows")
    if not isinstance(rows, dict) or not all(
            isinstance(ms, list) and all(isinstance(m, dict) and is_number(m.get("seed"))
                                         and is_number(m.get("tokens_per_s")) for m in ms) for ms in rows.values()):
        raise SpeedError(f"{file}: rows is not {{variant: [{{seed, tokens_per_s}}, ...]}} with numbers; {fix}")
    return speed


def speed_note(speed: dict) -> str:
    """One line on where the tokens/s of a table come from."""
    return (f"tokens/s: training steps of each variant's model on one batch of the data ({speed['batch_tokens']:,} "
            f"tokens), timed round-robin in one process after the runs ({speed['device']}, "
            f"{speed.get('precision', 'fp32')}, {speed['threads']} thread(s), median of {speed['repeats']} steps per "
            "seed), so the variants share the same conditions (`synthformer.evidence.speed`); the training runs' own "
            "throughput is in results.json as train_tokens_per_s.")
