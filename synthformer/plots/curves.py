"""``synthformer plot runs``: learning curves (training loss, validation metric) from run folders."""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import InputError
from ..training.runs import read_metrics
from .style import check_out, colour_map, distinct_labels, human, log_ticks, ordered, pyplot


def find_runs(paths: list[str]) -> tuple[dict[str, Path], str]:
    """Run folders (holding metrics.jsonl) named by the paths, a compare folder standing for its
    variants; returns ({label: folder}, task read from the first run's config.json).

    Labels are the folder names; two different runs with the same name (``cmp-a/V``, ``cmp-b/V``) get
    their distinguishing parent folder added (``V (cmp-a)``), so neither replaces the other. A run
    named twice (directly and through its compare folder) is drawn once."""
    found: list[Path] = []
    for p in map(Path, paths):
        runs = [p] if (p / "metrics.jsonl").exists() else sorted(q.parent for q in p.glob("*/metrics.jsonl"))
        if not runs:
            raise InputError(f"{p}: no metrics.jsonl in it or in its sub-folders; give a run or compare folder "
                             "(the --out of synthformer train / compare)")
        found += runs
    unique, seen = [], set()
    for q in found:  # each run once, where first named
        if q.resolve() not in seen:
            seen.add(q.resolve())
            unique.append(q)
    labels = distinct_labels([q.name for q in unique], unique)
    runs = dict(zip(labels, unique))
    config = unique[0] / "config.json"
    try:
        task = json.loads(config.read_text()).get("train", {}).get("task", "lm") if config.exists() else "lm"
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
        raise InputError(f"{config}: not a run config (not JSON with a \"train\" object)") from None
    return runs, task


def tokenizer_note(runs: dict[str, Path]) -> str | None:
    """One line when the runs were not trained on the same tokens (data, tokenizer or vocabulary size differ,
    e.g. `train`'s default vocabulary 4000 beside `compare`'s 2000): their perplexities are per different tokens,
    so one axis does not compare them. None when they agree (or a run has no config.json)."""
    seen = {}
    for label, folder in runs.items():
        config = Path(folder) / "config.json"
        try:
            train = json.loads(config.read_text()).get("train", {}) if config.exists() else None
        except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
            train = None
        if isinstance(train, dict):
            seen[label] = (train.get("data"), train.get("tokenizer", "bpe"), train.get("vocab_size"))
    if len(set(seen.values())) <= 1:
        return None
    groups: dict = {}
    for label, key in seen.items():
        groups.setdefault(key, []).append(label)
    parts = "; ".join(f"{', '.join(labels)}: {data}, {tok} {vocab if tok == 'bpe' else ''}".rstrip()
                      for (data, tok, vocab), labels in groups.items())
    return ("note: these runs were not tokenized alike (" + parts + "), so their perplexities count different "
            "tokens and are not comparable on one axis")


def plot_curves(runs: dict[str, str | Path | list | tuple], path: str | Path, task: str = "lm", title: str = "",
                floor: dict | None = None) -> Path:
    """Training loss (smoothed) and the validation main metric against training tokens, one line per
    run in the same colour in both panels; saved by extension (PNG, SVG, PDF). `runs`: name -> a run
    folder, or the rows of its metrics.jsonl (e.g. a kept cell's, `synthformer.evidence.cells`), or a tuple
    of those (a variant's seeds: one colour, the first seed solid, the others thinner). `floor`: a floor row
    (`synthformer.evidence.floors`), drawn as a dashed line on the validation panel."""
    path = check_out(path)
    fig = curves_figure(runs, task, title, floor)
    fig.savefig(path, dpi=120)
    pyplot().close(fig)
    return path


def curves_figure(runs: dict[str, str | Path | list | tuple], task: str = "lm", title: str = "",
                  floor: dict | None = None):
    """The matplotlib Figure of `plot_curves`."""
    from ..tasks.metrics import LOWER_IS_BETTER, METRIC_COLUMNS

    plt = pyplot()
    from matplotlib.ticker import FuncFormatter

    metric_title, key, _ = METRIC_COLUMNS.get(task, [("loss", "loss", "")])[0]
    metric_title = metric_title.replace("valid ", "")
    colour = colour_map(runs)
    fig, (ax_train, ax_valid) = plt.subplots(1, 2, figsize=(12, 4.5))
    points = []  # validation points per run: one each means evaluated at the end only
    for name in ordered(runs):
        sources = runs[name] if isinstance(runs[name], tuple) else (runs[name],)
        for i, source in enumerate(sources):
            rows = source if isinstance(source, list) else read_metrics(source)
            train = [r for r in rows if r["split"] == "train" and r.get("loss") is not None]
            valid = [r for r in rows if r["split"] == "valid" and r.get(key) is not None]
            style = dict(color=colour[name], label=name if i == 0 else None,
                         lw=(2.0 if name == "V" else 1.4) * (1 if i == 0 else 0.6), alpha=1 if i == 0 else 0.6)
            if train:  # a single point gets a marker, or it would not show
                ax_train.plot([r["tokens"] for r in train], smooth([r["loss"] for r in train]),
                              marker="o" if len(train) == 1 else None, ms=3, **style)
            if valid:
                ax_valid.plot([r["tokens"] for r in valid], [r[key] for r in valid], marker="o", ms=3, **style)
                points.append(len(valid))
    floor_value = ((floor or {}).get("metrics") or {}).get(key)
    if floor_value is not None:
        ax_valid.axhline(floor_value, color="0.3", ls="--", lw=1.2,
                         label=f"floor: {floor.get('name', 'trivial baseline')}")
    seeds = max((len(v) for v in runs.values() if isinstance(v, tuple)), default=1)
    ax_train.set(xlabel="training tokens", ylabel="training loss (smoothed)",
                 title="training loss" + (f" ({seeds} seeds each; thin: seeds after the first)" if seeds > 1 else ""))
    valid_title = f"validation {metric_title}"
    if points and max(points) == 1:
        valid_title += " (evaluated at the end only: lower --eval_every for a curve)"
    ax_valid.set(xlabel="training tokens", ylabel=f"validation {metric_title}", title=valid_title)
    if key in LOWER_IS_BETTER:
        ax_valid.set_yscale("log")
        log_ticks(ax_valid.yaxis)
    for ax in (ax_train, ax_valid):
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: human(x)))  # 200k, 1.5M tokens, not 1e6 offsets
        ax.tick_params(which="both", labelsize=8)
        ax.grid(alpha=0.3, which="both")
        if ax.lines:
            ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def smooth(values: list[float], alpha: float = 0.3) -> list[float]:
    """Exponential moving average (the first value as the start)."""
    out, acc = [], None
    for v in values:
        acc = v if acc is None else alpha * v + (1 - alpha) * acc
        out.append(acc)
    return out
