"""``synthformer plot attention`` and ``synthformer plot histograms``: the paper's Figures 2-7 for any run.

* attention maps (Figures 4-7): one row per layer, one column per head. R, Fix and FR layers show their
  learned table (softmax of R_h over the first L positions, from the parameters); every other layer
  (V, D, FD, mixtures, lightconv/dynamicconv as banded matrices) its weights for one real input.
* histograms (Figures 2-3): the distribution of attention weights at chosen layers (default first,
  middle and last of each stack) on real inputs, trained (solid) and at initialisation (dashed, the
  same model re-drawn with the run's seed); several runs overlay, one colour per run in every panel.

The data come from :mod:`synthformer.plots.weights`; the functions here return it beside drawing it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from ..errors import InputError
from .style import check_out, colour_map, distinct_labels, log_ticks, pyplot
from .weights import (ModelInput, Run, Site, capture, histogram, initial_model, learned_table, select_layers, sites,
                      text_input, token_labels, validation_input, weight_values)

MAX_TOKEN_TICKS = 40  # longer inputs get position ticks instead of one label per token


@dataclass
class Heatmap:
    """One layer's weights for the attention figure."""

    site: Site
    weights: Tensor  # (H, Lq, Lk)
    source: str  # "learned table" (from the parameters) | "input" (weights on the real input)
    query_tokens: list[str] | None  # tick labels (None: positions)
    key_tokens: list[str] | None


def no_weights_message(run: Run, chosen: list[Site]) -> str:
    specs = ", ".join(dict.fromkeys(s.spec for s in chosen))
    return (f"{run.folder}: its token mixers ({specs}) have no attention weights to plot; synthetic attention, "
            "lightconv and dynamicconv layers have them")


def run_input(run: Run, text: str | None, examples: int) -> ModelInput:
    """The user's ``text``, else the first ``examples`` validation examples of the run."""
    return text_input(run, text) if text is not None else validation_input(run, examples)


def attention_maps(run: Run, inp: ModelInput, layers: str | None = None, example: int = 0,
                   length: int | None = None, cross: bool = False) -> list[Heatmap]:
    """Heatmaps of the chosen layers (default all) for example ``example`` of ``inp``; input-independent
    layers give their learned table over ``length`` positions (default: the example's length)."""
    chosen = select_layers(sites(run.model, cross), layers, default="all")
    usable = [s for s in chosen if s.has_weights]
    if not usable:
        raise InputError(no_weights_message(run, chosen))
    batch = next(iter(inp.tokens.values())).shape[0]
    if not 0 <= example < batch:
        raise InputError(f"--example {example}: the input has examples 0..{batch - 1}")
    captured = capture(run.model, inp, [s for s in usable if not _table(s)])
    maps = []
    for s in usable:
        q_real = _real(inp, s.stack, example)
        k_real = q_real if s.part == "self" else _real(inp, "encoder", example)
        q_ids = inp.tokens[s.stack][example][q_real]
        k_ids = q_ids if s.part == "self" else inp.tokens["encoder"][example][k_real]
        if _table(s):
            n = length or int(q_real.sum())
            w, source = learned_table(s.module, n).cpu(), "learned table"
            maps.append(Heatmap(s, w, source, None, None))  # a table of positions: position ticks, not tokens
            continue
        w = captured[s.key][example][:, q_real.cpu()][:, :, k_real.cpu()]  # (H, Lq real, Lk real)
        maps.append(Heatmap(s, w, "input", token_labels(run, q_ids), token_labels(run, k_ids)))
    return maps


def _table(site: Site) -> bool:
    """R, Fix, FR and their mixtures: weights from the parameters alone."""
    return not site.input_dependent and hasattr(site.module, "members")


def _real(inp: ModelInput, stack: str, example: int) -> Tensor:
    ids = inp.tokens[stack][example]
    pad = inp.padding.get(stack)
    return torch.ones_like(ids, dtype=torch.bool) if pad is None else ~pad[example]


def plot_attention(maps: dict[str, list[Heatmap]], out: str | Path, title: str | None = None) -> Path:
    """One row per layer (of each run in ``maps``, {run label: heatmaps}), one column per head; one
    colour scale (and bar) per row; entries a causal layer masks are blank."""
    plt = pyplot()
    out = check_out(out)
    rows = [(label, m) for label, ms in maps.items() for m in ms]
    heads = max(m.weights.shape[0] for _, m in rows)
    size = 2.6 if heads > 2 else 3.4
    fig, axes = plt.subplots(len(rows), heads, figsize=(size * heads + 1.0, size * len(rows) + 0.6),
                             squeeze=False, layout="constrained")
    cmap = plt.get_cmap("viridis").with_extremes(bad="white")  # masked (future) entries blank, not 0
    for (label, m), row in zip(rows, axes):
        w = m.weights.clone()
        if m.site.causal:
            w.masked_fill_(~torch.ones(w.shape[-2:], dtype=torch.bool).tril(), float("nan"))
        seen = w[~w.isnan()]
        # the 99th percentile: a causal first row (weight 1) would otherwise darken everything else
        vmax = float(torch.quantile(seen, 0.99)) if seen.numel() else 1.0
        im = None
        for h, ax in enumerate(row):
            if h >= w.shape[0]:
                ax.axis("off")
                continue
            im = ax.imshow(w[h].numpy(), cmap=cmap, vmin=0.0, vmax=vmax or 1.0, interpolation="nearest",
                           aspect="auto")
            what = "learned" if m.source == "learned table" else "on input"
            name = m.site.spec if len(maps) == 1 else label  # several runs: the run's label names the row
            ax.set_title(f"{name} {m.site.label} ({what}) · head {h + 1}", fontsize=8)
            _ticks(ax, m.query_tokens, m.key_tokens, m.weights.shape[1:])
        fig.colorbar(im, ax=list(row), shrink=0.8, pad=0.01, extend="max").ax.tick_params(labelsize=7)
    fig.suptitle(title or f"attention weights · {', '.join(maps)}", fontsize=10)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def _ticks(ax, q_tokens, k_tokens, shape) -> None:
    from matplotlib.ticker import MaxNLocator

    lq, lk = shape
    if q_tokens is not None and lq <= MAX_TOKEN_TICKS and lk <= MAX_TOKEN_TICKS:
        ax.set_yticks(range(lq), q_tokens, fontsize=6)
        ax.set_xticks(range(lk), k_tokens, fontsize=6, rotation=90)
    else:
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_locator(MaxNLocator(5, integer=True))
        ax.tick_params(labelsize=7)
    what = "" if q_tokens is not None else " position"
    ax.set_xlabel(f"key{what}", fontsize=7)
    ax.set_ylabel(f"query{what}", fontsize=7)


# ----------------------------------------------------------------------------- histograms
@dataclass
class Histogram:
    """The weight distribution of one layer of one run (its model as trained, or as initialised)."""

    label: str  # the run's label
    site: Site
    state: str  # "trained" | "initial"
    counts: Tensor  # (bins,)
    edges: Tensor  # (bins + 1,)
    values: int  # weights counted (= counts.sum())
    mean: float
    std: float
    max: float


def weight_histograms(run: Run, inp: ModelInput, label: str, layers: str | None = None, init: bool = True,
                      bins: int = 50, cross: bool = False, log: bool = False) -> list[Histogram]:
    """Histograms of the chosen layers (default first, middle, last of each stack) on ``inp``: the
    weights every head gives every key a real query may attend to; with ``init`` the same for the
    run's model as initialised. ``log``: logarithmic bins (see `weights.histogram`)."""
    if bins < 1:
        raise InputError(f"--bins {bins} must be >= 1")
    chosen = select_layers(sites(run.model, cross), layers, default="spread")
    usable = [s for s in chosen if s.has_weights]
    if not usable:
        raise InputError(no_weights_message(run, chosen))
    models = [("trained", run.model)] + ([("initial", initial_model(run))] if init else [])
    out = []
    for state, model in models:  # trained first, then initial; sorted per layer below
        by_key = {s.key: s for s in select_layers(sites(model, cross), layers, default="spread")}
        captured = capture(model, inp, [by_key[s.key] for s in usable])
        for s in usable:
            v = weight_values(s, inp, captured[s.key])
            counts, edges = histogram(v, bins, log)
            out.append(Histogram(label, s, state, counts, edges, v.numel(), float(v.mean()),
                                 float(v.std()) if v.numel() > 1 else 0.0, float(v.max())))
    order = {s.key: i for i, s in enumerate(usable)}
    return sorted(out, key=lambda h: order[h.site.key])  # per layer: trained, initial


def plot_histograms(hists: list[Histogram], out: str | Path, title: str | None = None) -> Path:
    """Figure 2-3 style: one panel per layer (rows: encoder, decoder, cross; columns: layers); one colour
    per run in every panel, solid trained, dashed initial. Linear bins show the density (fraction of
    weights per unit of weight), logarithmic bins the fraction per decade, so runs with different
    bins compare; the y axis is logarithmic (the tails are where variants differ)."""
    plt = pyplot()
    out = check_out(out)
    groups = list(dict.fromkeys((h.site.stack, h.site.part) for h in hists))
    columns = {g: sorted({h.site.index for h in hists if (h.site.stack, h.site.part) == g}) for g in groups}
    ncols = max(len(c) for c in columns.values())
    colour = colour_map(h.label for h in hists)
    fig, axes = plt.subplots(len(groups), ncols, figsize=(4.2 * ncols, 3.3 * len(groups)), squeeze=False,
                             layout="constrained")
    for g, row in zip(groups, axes):
        for ax in row[len(columns[g]):]:
            ax.axis("off")
        for index, ax in zip(columns[g], row):
            here = [h for h in hists if (h.site.stack, h.site.part, h.site.index) == (*g, index)]
            log = _log_bins(here[0].edges)
            for h in here:
                e = h.edges
                width = (e[1:].log10() - e[:-1].log10()) if log else (e[1:] - e[:-1])
                y = (h.counts.double() / max(h.values, 1) / width).numpy()
                ax.stairs(y, e.numpy(), color=colour[h.label], lw=1.6 if h.state == "trained" else 1.1,
                          ls="-" if h.state == "trained" else "--", alpha=1.0 if h.state == "trained" else 0.8,
                          label=f"{h.label} {h.state}")
            ax.set_title(here[0].site.label, fontsize=9)
            ax.set_yscale("log")
            if log:
                ax.set_xscale("log")
            else:
                ax.set_xlim(0.0, None)
            _plain_log_ticks(ax, log)
            ax.set_xlabel("attention weight", fontsize=8)
            ax.set_ylabel("fraction per decade" if log else "density", fontsize=8)
            ax.grid(alpha=0.3, which="major")
    axes[0][0].legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def _log_bins(edges: Tensor) -> bool:
    return bool(edges[0] > 0)


def _plain_log_ticks(ax, log_x: bool) -> None:
    for axis in [ax.yaxis] + ([ax.xaxis] if log_x else []):
        log_ticks(axis)
    ax.tick_params(which="both", labelsize=7)


def run_labels(runs: list[Run]) -> list[str]:
    """Each run's mixers (``R+V``), made distinct by folder when two runs share them."""
    return distinct_labels([r.name for r in runs], [r.folder for r in runs])
