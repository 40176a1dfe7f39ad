"""Measure the table learning-rate multiplier (docs/recipe.md): Fix vs R at compare's default data
and budget, with the position tables in their own optimizer group.

    .venv/bin/python docs/recipe_sweep.py --mults 1,10,30,100 --variants Fix,R --out /tmp/recipe.jsonl

Each run sets TrainConfig's `table_lr_mult` (and `position_lr_mult`, `table_weight_decay`); the
training loop multiplies each optimizer group's ``lr_mult`` into the scheduled lr. One JSON row per
run: final validation perplexity and, for R/Fix, how much of softmax(R)'s causal mass sits on a
local band (Figure 6).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import time
from pathlib import Path

import torch

from synthformer.training import loop as train_mod
from synthformer.evidence.compare import DEFAULTS


def band_mass(r: torch.Tensor, width: int) -> tuple[float, float]:
    """Mean causal softmax mass on keys i-width..i (rows i >= width) and the same for uniform rows.

    r: (H, N, N) logits. Returns (mass, uniform mass)."""
    h, n, _ = r.shape
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    p = torch.softmax(r.float().masked_fill(~causal, float("-inf")), dim=-1)  # (H, N, N)
    i = torch.arange(n)
    band = (i[:, None] - i[None, :] >= 0) & (i[:, None] - i[None, :] <= width)
    rows = slice(width, n)
    mass = (p * band).sum(-1)[:, rows].mean().item()
    uniform = ((width + 1) / (i[rows] + 1).float()).mean().item()
    return mass, uniform


def tables_of(run: Path) -> list[torch.Tensor]:
    from safetensors.torch import load_file

    state = load_file(str(run / "model" / "model.safetensors"))
    return [v for k, v in sorted(state.items()) if k.endswith("members.0.r")]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mults", default="1,10,30,100")
    ap.add_argument("--variants", default="Fix,R")
    ap.add_argument("--init", default="xavier", choices=["xavier", "mesh"],
                    help="mesh: R bound sqrt(6/(N(H+N))) via random_init_scale = sqrt(2/(H+N))")
    ap.add_argument("--table_wd", type=float, default=0.0)
    ap.add_argument("--pos_mult", type=float, default=1.0, help="lr multiplier of the position embedding")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", type=int, default=DEFAULTS["steps"])
    ap.add_argument("--width", type=int, default=3)
    ap.add_argument("--root", default="/tmp/recipe-runs")
    ap.add_argument("--out", default="/tmp/recipe.jsonl")
    args = ap.parse_args()

    base = train_mod.TrainConfig(**{**DEFAULTS, "steps": args.steps, "seed": args.seed, "progress": False,
                                    "position_lr_mult": args.pos_mult, "table_weight_decay": args.table_wd})
    model_over = {}
    if args.init == "mesh":
        from synthformer.model import PRESETS
        shape = PRESETS[base.preset]
        model_over["random_init_scale"] = math.sqrt(2.0 / (shape["num_heads"] + shape["max_seq_len"]))
    from synthformer.training.plan import prepare
    data = prepare(base, model_over, log=lambda m: None)
    for mult in [float(m) for m in args.mults.split(",")]:
        for variant in args.variants.split(","):
            run = Path(args.root) / f"{args.init}-wd{args.table_wd}-m{mult:g}-p{args.pos_mult:g}-s{args.seed}-st{args.steps}" / variant
            t0 = time.time()
            if not (run / "done.json").exists():
                if run.exists():
                    import shutil
                    shutil.rmtree(run)
                cfg = dataclasses.replace(base, out=str(run), table_lr_mult=mult)
                train_mod.train(cfg, {**model_over, "attention": variant}, data=data, label=variant,
                                log=lambda m: None)
            done = json.loads((run / "done.json").read_text())
            row = {"variant": variant, "mult": mult, "pos_mult": args.pos_mult, "init": args.init, "table_wd": args.table_wd,
                   "seed": args.seed, "steps": args.steps, "ppl": done["valid"]["ppl"],
                   "wall_s": round(time.time() - t0, 1)}
            tabs = tables_of(run)
            if tabs:
                masses = [band_mass(t, args.width) for t in tabs]
                row["band_mass"] = [round(m, 4) for m, _ in masses]
                row["band_uniform"] = round(masses[0][1], 4)
                row["r_absmax"] = [round(t.abs().max().item(), 3) for t in tabs]
            print(json.dumps(row), flush=True)
            with open(args.out, "a") as f:
                f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
