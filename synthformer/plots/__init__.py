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
distinct labels.
"""
from __future__ import annotations

import argparse
import sys

from ..errors import SynthformerError
from .bench import label_rows, plot_bench, read_rows
from .curves import find_runs, plot_curves, smooth

__all__ = ["find_runs", "label_rows", "main", "plot_bench", "plot_curves", "read_rows", "smooth"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="synthformer plot", description="Figures from result files and trained runs.")
    sub = p.add_subparsers(dest="what", required=True)
    b = sub.add_parser("bench", help="speed and memory vs length from `synthformer bench` JSONL")
    b.add_argument("files", nargs="+", help="JSONL files written by synthformer bench --out")
    b.add_argument("--out", default="bench.png", help="image to write (.png, .svg or .pdf; default: %(default)s)")
    b.add_argument("--title", default=None, help="figure title")
    r = sub.add_parser("runs", help="learning curves from run folders or a compare folder")
    r.add_argument("folders", nargs="+", help="run folders (synthformer train --out) or compare folders")
    r.add_argument("--out", default="curves.png", help="image to write (.png, .svg or .pdf; default: %(default)s)")
    r.add_argument("--title", default="", help="figure title")

    def model_options(q, layers_help):
        q.add_argument("--layers", default=None, help=layers_help)
        q.add_argument("--text", default=None, help="your own input text instead of the run's validation data "
                                                    "(seq2seq: the source; the target is the model's own output)")
        q.add_argument("--cross", action="store_true", help="also seq2seq encoder-decoder attention")
        q.add_argument("--device", default="cpu", help="device to run the model on (default: %(default)s)")
        q.add_argument("--title", default=None, help="figure title")

    a = sub.add_parser("attention",
                       help="attention weights per layer and head of a trained run (paper Figures 4-7)",
                       description="Heatmaps per layer (rows) and head (columns): the learned table softmax(R_h) "
                                   "for R, Fix and FR layers; the weights on a real input for every other layer "
                                   "(V, D, FD, mixtures; lightconv/dynamicconv as banded matrices).")
    a.add_argument("--run", required=True, action="append",
                   help="run folder (synthformer train --out) or one of its checkpoints; repeat to stack runs' rows "
                        "(paper Figures 4-5: V, R, FR, D, FD)")
    model_options(a, "layers to draw: all, spread (first, middle, last) or numbers from 1, e.g. 1,3,-1 "
                     "(default: all)")
    a.add_argument("--example", type=int, default=0, help="which validation example to draw, from 0 (default: %(default)s)")
    a.add_argument("--length", type=int, default=None,
                   help="positions of the learned R tables (default: the input's length)")
    a.add_argument("--out", default=None,
                   help="image to write (.png, .svg or .pdf); default RUN/attention.png (one run) or attention.png")
    h = sub.add_parser("histograms",
                       help="histograms of attention weights at several layers, trained and initial (Figures 2-3)",
                       description="The distribution of the attention weights each layer gives a real input "
                                   "(every head, every key a real query may attend to); with --init (default) "
                                   "also of the same model re-initialised with the run's seed. Several --run "
                                   "overlay, one colour per run.")
    h.add_argument("--run", required=True, action="append", help="run folder; repeat to overlay runs (V, R, D)")
    model_options(h, "layers: spread (first, middle, last), all or numbers from 1, e.g. 1,3,5 (default: spread)")
    h.add_argument("--init", action=argparse.BooleanOptionalAction, default=True,
                   help="also the model as initialised (build_model under the run's seed; default: on)")
    h.add_argument("--examples", type=int, default=8, help="validation examples (LM: blocks) to collect weights on (default: %(default)s)")
    h.add_argument("--bins", type=int, default=50, help="bins from 0 to the largest weight (default: %(default)s)")
    h.add_argument("--log-bins", action="store_true",
                   help="logarithmic bins and weight axis (long inputs: most weights are near 1/length)")
    h.add_argument("--out", default=None,
                   help="image to write (.png, .svg or .pdf); default RUN/histograms.png (one run) or histograms.png")
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``synthformer plot``; returns an exit code (2 with one line on stderr for bad input)."""
    args = _parser().parse_args(argv)
    try:
        return HANDLERS[args.what](args)
    except SynthformerError as e:
        print(f"synthformer plot: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # the image cannot be written (no such folder, no permission, disk full)
        print(f"synthformer plot: error: {e.strerror or e}: {e.filename or ''}".rstrip(": "), file=sys.stderr)
        return 2


def _bench(args) -> int:
    rows = read_rows(args.files)
    plot_bench(rows, args.out, args.title)
    print(f"wrote {args.out} from {len(rows)} rows")
    return 0


def _runs(args) -> int:
    runs, task = find_runs(args.folders)
    plot_curves(runs, args.out, task=task, title=args.title)
    print(f"wrote {args.out} from {len(runs)} runs ({', '.join(runs)})")
    return 0


def _attention(args) -> int:
    from pathlib import Path

    from .attention import attention_maps, plot_attention, run_input, run_labels
    from .style import check_out
    from .weights import load_run

    out = check_out(args.out) if args.out else None
    runs = [load_run(r, device=args.device) for r in args.run]
    maps = {label: attention_maps(run, run_input(run, args.text, args.example + 1), args.layers, args.example,
                                  args.length, args.cross)
            for run, label in zip(runs, run_labels(runs))}
    out = out or (runs[0].folder / "attention.png" if len(runs) == 1 else Path("attention.png"))
    plot_attention(maps, out, args.title)
    print(f"wrote {out}")
    for label, ms in maps.items():
        print(f"  {label}: " + ", ".join(f"{m.site.label} {m.site.spec}"
                                        + (" (learned table)" if m.source == "learned table" else "") for m in ms))
    return 0


def _histograms(args) -> int:
    from pathlib import Path

    from .attention import plot_histograms, run_input, run_labels, weight_histograms
    from .style import check_out
    from .weights import load_run

    out = check_out(args.out) if args.out else None
    if args.examples < 1:
        raise SynthformerError(f"--examples {args.examples} must be >= 1")
    runs = [load_run(r, device=args.device) for r in args.run]
    hists = []
    for run, label in zip(runs, run_labels(runs)):
        inp = run_input(run, args.text, args.examples)
        hists += weight_histograms(run, inp, label, args.layers, args.init, args.bins, args.cross, args.log_bins)
    out = out or (runs[0].folder / "histograms.png" if len(runs) == 1 else Path("histograms.png"))
    plot_histograms(hists, out, args.title)
    print(f"wrote {out}")
    for h in hists:
        print(f"  {h.label} {h.site.label} {h.state}: {h.values} weights, mean {h.mean:.4f}, std {h.std:.4f}, "
              f"max {h.max:.4f}")
    return 0


HANDLERS = {"bench": _bench, "runs": _runs, "attention": _attention, "histograms": _histograms}
