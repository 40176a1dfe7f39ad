"""``synthformer plot``: figures from benchmark rows, run folders and trained models.

``synthformer plot bench runs.jsonl [more.jsonl ...] --out fig.png`` draws, for every (scope, mode) in
the rows, tokens/s against sequence length (left) and peak memory against length (right), one line per
variant. When a file holds several runs of the same case, the last row wins; the same case of a variant
in two files gives two lines, labelled by file.

``synthformer plot runs FOLDER [...] --out curves.png`` draws learning curves (training loss and the
validation metric against training tokens) from run folders or a compare folder's variants.

``synthformer plot attention --run DIR`` draws the attention weights of a trained run per layer and
head (Figures 4-7 of the paper); ``synthformer plot histograms --run DIR [--run DIR ...]`` the
distribution of its weights at several layers, trained and initial (Figures 2-3).

Each variant (run) has one colour in every panel of a figure; two runs with the same name get
distinct labels. The command's options live in synthformer/cli/plot.py; the figures of trained runs
are also functions here (:func:`attention_figure`, :func:`histograms_figure`).
"""
from __future__ import annotations

from pathlib import Path

from ..errors import SynthformerError
from .bench import label_rows, plot_bench, read_rows
from .curves import find_runs, plot_curves, smooth

__all__ = ["attention_figure", "find_runs", "histograms_figure", "label_rows", "plot_bench", "plot_curves",
           "read_rows", "smooth"]


def attention_figure(runs: list[str], out=None, *, layers: str | None = None, text: str | None = None,
                     cross: bool = False, device: str = "cpu", title: str | None = None, example: int = 0,
                     length: int | None = None) -> tuple[Path, list[str]]:
    """Heatmaps of the attention weights of the runs at `runs` (paper Figures 4-7) into `out` (default
    RUN/attention.png for one run, else attention.png); returns (the image, one summary line per run)."""
    from .attention import attention_maps, plot_attention, run_input, run_labels
    from .style import check_out
    from .weights import load_run

    out = check_out(out) if out else None
    opened = [load_run(r, device=device) for r in runs]
    maps = {label: attention_maps(run, run_input(run, text, example + 1), layers, example, length, cross)
            for run, label in zip(opened, run_labels(opened))}
    out = out or (opened[0].folder / "attention.png" if len(opened) == 1 else Path("attention.png"))
    plot_attention(maps, out, title)
    return out, [f"{label}: " + ", ".join(f"{m.site.label} {m.site.spec}"
                                          + (" (learned table)" if m.source == "learned table" else "") for m in ms)
                 for label, ms in maps.items()]


def histograms_figure(runs: list[str], out=None, *, layers: str | None = None, text: str | None = None,
                      cross: bool = False, device: str = "cpu", title: str | None = None, init: bool = True,
                      examples: int = 8, bins: int = 50, log_bins: bool = False) -> tuple[Path, list[str]]:
    """Histograms of the attention weights of the runs at `runs`, trained and (with `init`) initial
    (paper Figures 2-3) into `out`; returns (the image, one summary line per histogram)."""
    from .attention import plot_histograms, run_input, run_labels, weight_histograms
    from .style import check_out
    from .weights import load_run

    out = check_out(out) if out else None
    if examples < 1:
        raise SynthformerError(f"--examples {examples} must be >= 1")
    opened = [load_run(r, device=device) for r in runs]
    hists = []
    for run, label in zip(opened, run_labels(opened)):
        inp = run_input(run, text, examples)
        hists += weight_histograms(run, inp, label, layers, init, bins, cross, log_bins)
    out = out or (opened[0].folder / "histograms.png" if len(opened) == 1 else Path("histograms.png"))
    plot_histograms(hists, out, title)
    return out, [f"{h.label} {h.site.label} {h.state}: {h.values} weights, mean {h.mean:.4f}, std {h.std:.4f}, "
                 f"max {h.max:.4f}" for h in hists]
