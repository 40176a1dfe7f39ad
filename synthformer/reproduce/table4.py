"""Table 4: masked-LM pretraining of V, R, D, R+V, D+V and the convolution baselines: validation MLM
log perplexity and accuracy on the masked tokens, and training speed as ratios vs V and vs DynamicConv
beside the paper's (R: 1.09x V, 1.61x DynamicConv in steps/s on TPU)."""
from __future__ import annotations

import statistics
from pathlib import Path

from ..utils.integrity import read_recorded_json, write_recorded_json
from ..evidence.tables import markdown_table
from .common import (Grid, Spec, budget_model, budget_train, fmt, grid_section, load_model,
                     open_grid_data, per_budget)

VARIANTS = ("V", "R", "D", "R+V", "D+V", "lightconv", "dynamicconv")

SPEC = Spec(
    name="table4",
    reproduces="Table 4: C4 masked-LM log perplexity and training speed (R 1.09x V, 1.61x DynamicConv)",
    data="chitchat conversations as blocks, BERT masking (15%, 80/10/10)",
    variants=", ".join(VARIANTS),
    minutes={"smoke": "< 1 min", "cpu": "~17 min a seed, ~8 min a sweep candidate (d=128, 4 layers, 1,500 steps)",
             "gpu": "~2 h"},
    seeds={"smoke": 1, "cpu": None, "gpu": None},
    sources=("chitchat",),
    tables=("Table 4",),
    differences="chitchat (~2M words) stands in for C4; at cpu, encoders of d=128 and 4 layers on blocks of 32 "
                "tokens (measured: at 128 tokens no attention encoder leaves the bag-of-words plateau in 6,000 "
                "steps) for 1,500 steps (small encoders at gpu) against the paper's base models on 512 tokens for "
                "524k steps. Speed is training tokens/s of the whole model on this machine's CPU (timed after the "
                "grid, every variant round-robin in one process), the paper's steps/s on TPU v3; only the ratios "
                "compare. Masked-token accuracy is the runs' own final evaluation (the paper reports log perplexity "
                "only).",
)


# The cpu budget's MLM (reproductions/NOTES.md, "Sizing"). On blocks of 128 tokens every attention encoder stays
# near the unigram floor (V: 0.60 nats below it after 6,000 steps; no head attends to its neighbours, so it
# predicts from a bag of words); the same 4,096 tokens a step cut into blocks of 32 give V 2.18 nats below it
# after 1,500 steps, with heads on the tokens at -1 and +1. Blocks of 64: 0.91 nats below after 1,500 steps.
MLM_CPU_MODEL = dict(embed_dim=128, num_heads=4, num_layers=4, ffn_dim=512, max_seq_len=32)
MLM_CPU_TRAIN = dict(seq_len=32, batch_size=128, steps=1500, warmup_steps=200, eval_every=250, checkpoint_every=250,
                     log_every=50)
# Its sweep candidates run half the steps (750), not the usual quarter: at 375 steps every lr is still leaving
# the plateau (V: loss 5.95-6.22), so the sweep chose the lr that left it first (4e-3: 4.871 after 1,500 steps,
# where 2e-3 gave 4.178 in sizing) rather than the one that ends best.
MLM_CPU_TUNE_FRACTION = 0.5


def grids(budget: str) -> list[Grid]:
    return [Grid("mlm", "Masked LM: chitchat (stands in for C4)", "mlm", "chitchat", VARIANTS,
                 budget_train(budget, task="mlm", data="chitchat",
                              **per_budget(budget, dict(steps=2), MLM_CPU_TRAIN,
                                           dict(steps=20000, seq_len=256, warmup_steps=1000))),
                 budget_model(budget, **per_budget(budget, {}, MLM_CPU_MODEL, {})), kind="mlm",
                 tune_fraction=per_budget(budget, None, MLM_CPU_TUNE_FRACTION, None),
                 note="Encoder with an MLM head; log PPL is the mean cross-entropy (nats) on the masked tokens, "
                      "the paper's C4 column is its log perplexity.")]


ACCURACY_FILE = "accuracy.json"  # <grid>/: the accuracy of runs whose cells predate it, measured from their folders


def masked_accuracy(rows: list[dict], split: str, device: str = "cpu", log=None, folder: Path | None = None) -> dict:
    """{variant: % of the masked tokens predicted exactly, the mean over its seeds} on `split` (the one the grid
    reports): from each run's own final evaluation (masked_accuracy, kept in its cell), or, for a run trained
    before that was recorded, the same evaluation again (the whole split, the evaluation's fixed masks) from its
    run folder where that is on this machine, kept in ``folder/accuracy.json`` (committed with the cells) for a
    later report without the folder; None for a variant with neither."""
    from ..training.evaluation import evaluate

    file = None if folder is None else Path(folder) / ACCURACY_FILE
    kept = (read_recorded_json(folder, file, f"delete {file} to measure it again")  # verified: digests.json
            if file is not None and file.exists() else {})
    opened: list = []  # (TrainConfig, TaskData) of the grid, read once: every run shares its tokenizer
    out = {}
    for r in rows:
        values = []
        for s in r.get("seeds") or []:
            name = Path(s["run"]).name
            value = (s.get("metrics") or {}).get("masked_accuracy", kept.get(name))
            if value is None and (Path(s["run"]) / "done.json").exists():
                if not opened:
                    opened.append(open_grid_data(s["run"], log))
                cfg, data = opened[0]
                value = kept[name] = evaluate(data.task, load_model(s["run"], device), data, cfg, split,
                                              max_batches=cfg.final_eval_batches)["masked_accuracy"]
                if file is not None:
                    write_recorded_json(folder, file, kept)
            if value is not None:
                values.append(value)
        out[r["variant"]] = statistics.fmean(values) if values else None
    return out


def speed_table(rows: list[dict], accuracy: dict) -> str:
    from ..evidence.paper.numbers import TABLE4_STEPS_PER_S as P

    by = {r["variant"]: r for r in rows}
    v, dc = by.get("V"), by.get("dynamicconv")
    head = ["model", "MLM acc. %", "tokens/s", "vs V", "vs DynConv", "paper steps/s", "paper vs V", "paper vs DynConv"]
    table = []
    for r in rows:
        name, tps = r["variant"], r["tokens_per_s"]
        table.append([name, fmt(accuracy.get(name)), f"{tps:,.0f}",
                      fmt(tps / v["tokens_per_s"], "{:.2f}x") if v else "—",
                      fmt(tps / dc["tokens_per_s"], "{:.2f}x") if dc else "—",
                      fmt(P.get(name)), fmt(P[name] / P["V"] if name in P else None, "{:.2f}x"),
                      fmt(P[name] / P["dynamicconv"] if name in P else None, "{:.2f}x")])
    return markdown_table(head, table)


def run(ctx):
    sections = []
    for grid in grids(ctx.budget):
        results = ctx.run_grid(grid)
        rows, split = results["variants"], results.get("split", "valid")
        acc = masked_accuracy(rows, split, ctx.device or "cpu", ctx.log, ctx.out / grid.key)
        missing = [v for v, a in acc.items() if a is None]
        extra = (f"Masked-token accuracy ({split} split, the mean over the seeds; the same masks for every variant) and "
                 "training speed as ratios; the paper's R is 1.09x V and 1.61x DynamicConv:\n\n" + speed_table(rows, acc)
                 + (f"\n\nNo accuracy for {', '.join(missing)}: trained before the runs recorded it, and the run "
                    "folders (weights) are not on the machine that wrote this report." if missing else ""))
        section = grid_section(grid, results, SPEC.tables, extra)
        section.data["mlm_accuracy"] = acc
        sections.append(section)
    return sections, []
