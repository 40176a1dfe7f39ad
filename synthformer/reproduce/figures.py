"""Figures 2-7: distributions of attention weights at several layers (trained and initial; Figures 2-3)
and heatmaps per layer and head of the learned Random tables, of Dense's weights on a real input and of
vanilla's (Figures 4-7), from V, R and D language models trained here. Drawn by `synthformer.plots`
(the same as `synthformer plot histograms|attention --run DIR`)."""
from __future__ import annotations

from pathlib import Path

from ..evidence.paper.claims import CLAIMS
from .common import Grid, ReproduceError, Section, Spec, budget_model, budget_train, grid_section, per_budget
from .table2 import LM_CPU_MODEL, LM_CPU_TRAIN  # the models drawn are table2's LMs, which clear the bigram floor

VARIANTS = ("V", "R", "D")
REUSES = "table2"  # `--reuse`: its LM grid (the same settings) has trained V, R and D: its sweep and seeds stand in

SPEC = Spec(
    name="figures",
    reproduces="Figures 2-7: histograms of attention weights (trained vs initial) and heatmaps of V, R and D",
    data="chitchat conversations (decoder LMs)",
    variants=", ".join(VARIANTS),
    minutes={"smoke": "< 1 min", "cpu": "~28 min a seed, ~8 min a sweep candidate (table2's LM size)",
             "gpu": "~30 min"},
    seeds={"smoke": 1, "cpu": None, "gpu": None},
    sources=("chitchat",),
    tables=("Figures 2-7",),
    differences="The paper draws its WMT and LM1B models (6 layers, 8 heads); here decoder LMs on chitchat "
                "(table2's LM at cpu: d=128, 4 layers, 4 heads, 3,000 steps; small: 4 layers, 4 heads at gpu). "
                "Causal models: the upper triangle of every map is masked (blank).",
    # Figures 2-3 are judged by synthformer.evidence.judge (fig2-3-*: the variance of the trained weights,
    # `weight_var` below); Figures 4-7 are drawn only
    extra_claims=(("fig4-7-heatmaps", "Figures 2-7", "R learns position patterns; D's and V's weights on a real "
                                                     "input (Figures 4-7)"),),
)


def grids(budget: str) -> list[Grid]:
    return [Grid("lm", "Decoder LMs drawn in the figures: chitchat", "lm", "chitchat", VARIANTS,
                 budget_train(budget, task="lm", data="chitchat", **per_budget(budget, dict(steps=2), LM_CPU_TRAIN,
                                                                               dict(steps=10000, seq_len=128))),
                 budget_model(budget, **per_budget(budget, {}, LM_CPU_MODEL, dict(max_seq_len=128))),
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


def weight_var(run_dir, examples: int) -> float:
    """The variance of a run's trained attention weights on `examples` validation inputs: the mean over
    the layers the histograms draw (first, middle, last) of each layer's variance, from the same values
    as `synthformer plot histograms` (`plots.attention.weight_histograms`)."""
    from ..plots.attention import weight_histograms
    from ..plots.weights import load_run, validation_input

    run = load_run(run_dir)
    hists = weight_histograms(run, validation_input(run, examples), run.name, init=False)
    return sum(h.std ** 2 for h in hists) / len(hists)


def weights_of(run, shared: Path | None) -> Path | None:
    """The finished run folder holding a seed's weights: its own, else the same run in `shared` (the `--reuse`
    grid, table2's LM grid, whose finished seeds stand in for these); None when neither is on this machine."""
    for folder in (Path(run), None if shared is None else shared / Path(run).name):
        if folder is not None and (folder / "done.json").exists():
            return folder
    return None


def seed_weight_var(grid_out: Path, run: str, examples: int, shared: Path | None = None) -> float:
    """`weight_var` of one seed: measured from its weights when they are on this machine (`weights_of`), and
    kept in its cell (so a clone or machine without the weights, where the grid is finished, still reads it);
    else its cell's."""
    from ..evidence.cells import cell_file, load_cell, save_cell

    key, cell = f"weight_var_{examples}", load_cell(grid_out, Path(run))
    if (weights := weights_of(run, shared)) is not None:
        value = weight_var(weights, examples)
        if cell is not None and cell["result"].get(key) != value:
            save_cell(grid_out, Path(run), {**cell["result"], key: value}, cell["metrics"])
        return value
    if cell is not None and key in cell["result"]:
        return cell["result"][key]
    raise ReproduceError(f"{run}: its weights are not on this machine and its cell keeps no {key}; delete "
                         f"{cell_file(grid_out, Path(run))} and rerun to train it here")


def add_weight_var(results: dict, grid_out: Path, examples: int, shared: Path | None = None) -> None:
    """Put "weight_var" (`seed_weight_var`) into every seed's metrics and every row's mean, std and 95%
    interval, so that the figures claim is judged like any metric."""
    from ..utils.stats import stat
    from ..evidence.rows import intervals

    for row in results["variants"]:
        for s in row["seeds"]:
            s["metrics"]["weight_var"] = seed_weight_var(grid_out, s["run"], examples, shared)
        st = stat([s["metrics"]["weight_var"] for s in row["seeds"]])
        row["metrics"]["weight_var"], row.setdefault("metrics_std", {})["weight_var"] = st.mean, st.std
        found = intervals([{"metrics": {"weight_var": s["metrics"]["weight_var"]}} for s in row["seeds"]])
        row.setdefault("interval", {}).update(found)


def examples(budget: str) -> int:
    """Validation inputs `weight_var` reads (fewer at smoke: the pipeline check only)."""
    return 2 if budget == "smoke" else 8


def after_share(ctx, grid: Grid) -> None:
    """`reproduce figures --only`: the weight variance of every finished seed of the grid, measured now while
    its weights are on this machine and kept in its cell (`seed_weight_var`), for the report written where the
    grid is finished."""
    out = ctx.out / grid.key
    for run in sorted(p for p in out.iterdir() if (p / "done.json").exists()):
        seed_weight_var(out, str(run), examples(ctx.budget))


def run(ctx):
    grid = grids(ctx.budget)[0]
    results = ctx.run_grid(grid)
    shared = None if ctx.reuse is None else ctx.reuse / grid.key  # table2's LM grid: its seeds stand in for these
    runs = [r["run"] for r in results["variants"]]
    names = "V, R, D"
    smoke = ctx.budget == "smoke"  # fewer panels and inputs: the pipeline check only
    ctx.log(f"{ctx.name}: variance of the trained attention weights of every run")
    add_weight_var(results, ctx.out / grid.key, examples(ctx.budget), shared)
    figures = [("histograms", "histograms.png",
                f"Attention weights of {names} LMs at several layers, trained and initial (paper Figures 2-3)",
                dict(examples=2, bins=20) if smoke else None),
               ("attention", "attention.png",
                f"{names}: learned softmax(R) tables and weights on a validation input per layer and head "
                "(paper Figures 4-7)", dict(layers="1") if smoke else None)]
    images, lines = [], []
    for what, file, title, extra in figures:
        if not (ctx.out / file).exists():
            if missing := [r for r in runs if weights_of(r, shared) is None]:
                raise ReproduceError(f"drawing {file} needs the weights of {', '.join(map(str, missing))}, not on "
                                     "this machine (a cell keeps scores, not weights): delete their cells under "
                                     f"{ctx.out / grid.key / 'cells'} and rerun to train them here (or rerun "
                                     "with --reuse naming the table2 folder that holds them)")
            ctx.log(f"{ctx.name}: drawing {file}")
            draw(what, [weights_of(r, shared) for r in runs], ctx.out / file, title, extra)
        images.append(file)
        lines.append(f"- `{file}`: {title}; the same figure for any run: `synthformer plot {what} --run DIR`.")
    lines.append("- Variance of the trained attention weights (`weight_var`, the mean over the histograms' layers; "
                 "the histograms' std squared): " + ", ".join(
                     f"{r['variant']} {r['metrics']['weight_var']:.4g}" for r in results["variants"]) + ".")
    section = grid_section(grid, results, SPEC.tables, "\n".join(lines))
    judged = {c.name for c in CLAIMS}  # a claim of evidence/paper/claims.py: judged on weight_var, not only drawn
    drawn = [{"claim": cid, "table": table, "text": text, "status": "drawn",
              "detail": f"see {images[-1]}; a figure is read, not judged"}
             for cid, table, text in SPEC.extra_claims if cid not in judged]
    section.extra = drawn
    return [section, Section("What the figures show", _reading(), [])], images


def _reading() -> str:
    return ("What to look for, as in the paper: in Figures 2-3 the trained Synthesizer (R, D) weights have the "
            "higher variance, while V's gravitate near 0 with a smaller variance (D with more values in 0.1-0.2 "
            "and larger maxima than R; `weight_var` above puts a number on it); "
            "in Figures 4-7 the learned softmax(R) tables are the same for every input and show position patterns "
            "(e.g. a band near the diagonal: attend to the previous tokens), while D's and V's maps change with "
            "the input. At the smoke budget the models are barely trained and the figures show little more than "
            "the initial state.")
