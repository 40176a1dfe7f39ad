"""Table 7: encoder-only classification with V, Linformer, Factorized Random and FR+V (k = 32), on a
topic task (AG News in the paper) and a sentiment task (IMDB in the paper)."""
from __future__ import annotations

from .common import Grid, Spec, budget_model, budget_train, grid_section, per_budget

VARIANTS = ("V", "linformer", "FR", "FR+V")

SPEC = Spec(
    name="table7",
    reproduces="Table 7: encoding-only classification, AG News and IMDB accuracy (V, Linformer, FR, FR+V; k=32)",
    data="fortunes (topic: 25 topical fortune-file classes, de-duplicated) for AG News; sentiment (10.6k movie-review sentences) for IMDB",
    variants=", ".join(VARIANTS),
    minutes={"smoke": "< 1 min", "cpu": "~47 min (3 seeds and the sweep)", "gpu": "~1 h"},
    seeds={"smoke": 1, "cpu": None, "gpu": None},
    sources=("fortunes", "sentiment"),
    tables=("Table 7",),
    differences="Fortune-cookie categories (8.6k items, 25 classes) stand in for AG News (120k, 4 classes) and "
                "single movie-review sentences for IMDB's whole reviews (25k, ~230 words): the sentiment inputs are "
                "short, so sequence-level structure matters less than in IMDB. Tiny encoders with mean pooling at "
                "cpu, small at gpu; factorized_k = 32 and linformer_k = 32 as the paper.",
)


def grids(budget: str) -> list[Grid]:
    model = budget_model(budget, factorized_k=per_budget(budget, 8, 32, 32), linformer_k=per_budget(budget, 8, 32, 32))
    extra = per_budget(budget, {}, dict(seq_len=128, eval_every=150), dict(seq_len=256, warmup_steps=500))
    return [
        Grid("topic", "Topic classification: fortunes (stands in for AG News)", "classify", "fortunes", VARIANTS,
             budget_train(budget, task="classify", data="fortunes", steps=per_budget(budget, 2, 2000, 5000), **extra),
             model, kind="classify-topic", note="Encoder + mean pooling over the fortune's tokens, 25 classes."),
        Grid("sentiment", "Sentiment: movie-review sentences (stands in for IMDB)", "classify", "sentiment", VARIANTS,
             budget_train(budget, task="classify", data="sentiment", steps=per_budget(budget, 2, 2000, 5000), **extra),
             model, kind="classify-sentiment", note="Encoder + mean pooling, positive / negative."),
    ]


def run(ctx):
    return [grid_section(g, ctx.run_grid(g), SPEC.tables) for g in grids(ctx.budget)], []
