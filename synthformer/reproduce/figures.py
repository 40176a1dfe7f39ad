"""Figures 2-7: distributions of attention weights at several layers (trained and initial; Figures 2-3)
and heatmaps per layer and head of the learned Random tables, of Dense's weights on a real input and of
vanilla's (Figures 4-7), from V, R and D language models trained here. Drawn by `synthformer.plots`
(the same as `synthformer plot histograms|attention --run DIR`)."""
from __future__ import annotations

from .common import Grid, ReproduceError, Section, Spec, budget_model, budget_train, grid_section, per_budget

VARIANTS = ("V", "R", "D")

SPEC = Spec(
    name="figures",
    reproduces="Figures 2-7: histograms of attention weights (trained vs initial) and heatmaps of V, R and D",
    data="chitchat conversations (decoder LMs)",
    variants=", ".join(VARIANTS),
    minutes={"smoke": "< 1 min", "cpu": "~5 min", "gpu": "~30 min"},
    seeds={"smoke": 1, "cpu": 1, "gpu": 1},
    sources=("chitchat",),
    tables=("Figures 2-7",),
    differences="The paper draws its WMT and LM1B models (6 layers, 8 heads); here decoder LMs on chitchat "
                "(tiny: 2 layers, 2 heads at cpu; small: 4 layers, 4 heads at gpu). Causal models: the upper "
                "triangle of every map is masked (blank).",
    extra_claims=(("fig2-3-histograms", "Figures 2-7", "weights of R and D end up distributed like V's (Figures 2-3)"),
                  ("fig4-7-heatmaps", "Figures 2-7", "R learns position patterns; D's and V's weights on a real "
                                                     "input (Figures 4-7)")),
)


def grids(budget: str) -> list[Grid]:
    return [Grid("lm", "Decoder LMs drawn in the figures: chitchat", "lm", "chitchat", VARIANTS,
                 budget_train(budget, task="lm", data="chitchat", steps=per_budget(budget, 2, 800, 10000),
                              **per_budget(budget, {}, dict(seq_len=64), dict(seq_len=128))),
                 budget_model(budget, **per_budget(budget, {}, dict(max_seq_len=64), dict(max_seq_len=128))),
                 kind="lm", note="The models the figures show (trained with the same data and budget).")]


def draw(what: str, runs: list[str], out, title: str, extra: dict | None = None) -> None:
    """One figure as `synthformer plot` draws it (histograms | attention); a failure is a ReproduceError."""
    from ..errors import SynthformerError
    from ..plots import attention_figure, histograms_figure

    figure = {"histograms": histograms_figure, "attention": attention_figure}[what]
    try:
        figure([str(r) for r in runs], out, title=title, **(extra or {}))
    except (SynthformerError, OSError) as e:
        raise ReproduceError(f"synthformer plot {what} failed: {e}") from None


def run(ctx):
    grid = grids(ctx.budget)[0]
    results = ctx.run_grid(grid)
    runs = [r["run"] for r in results["variants"]]
    names = "V, R, D"
    smoke = ctx.budget == "smoke"  # fewer panels and inputs: the pipeline check only
    figures = [("histograms", "histograms.png",
                f"Attention weights of {names} LMs at several layers, trained and initial (paper Figures 2-3)",
                dict(examples=2, bins=20) if smoke else None),
               ("attention", "attention.png",
                f"{names}: learned softmax(R) tables and weights on a validation input per layer and head "
                "(paper Figures 4-7)", dict(layers="1") if smoke else None)]
    images, lines = [], []
    for what, file, title, extra in figures:
        if not (ctx.out / file).exists():
            ctx.log(f"{ctx.name}: drawing {file}")
            draw(what, runs, ctx.out / file, title, extra)
        images.append(file)
        lines.append(f"- `{file}`: {title}; the same figure for any run: `synthformer plot {what} --run DIR`.")
    section = grid_section(grid, results, SPEC.tables, "\n".join(lines))
    drawn = [{"claim": cid, "table": table, "text": text, "status": "drawn",
              "detail": f"see {images[i]}; a figure is read, not judged"}
             for i, (cid, table, text) in enumerate(SPEC.extra_claims)]
    section.extra = drawn
    return [section, Section("What the figures show", _reading(), [])], images


def _reading() -> str:
    return ("What to look for, as in the paper: in Figures 2-3 the trained R and D weights spread out from their "
            "initial near-uniform distribution toward vanilla's shape (most weights small, a long tail up to 1); "
            "in Figures 4-7 the learned softmax(R) tables are the same for every input and show position patterns "
            "(e.g. a band near the diagonal: attend to the previous tokens), while D's and V's maps change with "
            "the input. At the smoke budget the models are barely trained and the figures show little more than "
            "the initial state.")
