"""`synthformer plot`: figures from benchmark rows, run folders and trained runs (synthformer.plots)."""
from __future__ import annotations

import argparse

from ..training.overrides import UsageError

NAME = "plot"
HELP = "figures from benchmark / run data"


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=HELP, description="Figures from result files and trained runs.")
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



def run(args, rest: list[str]) -> int:
    """Error policy: bad input is a SynthformerError; an image that cannot be written (no such folder,
    no permission, disk full) is one too. Both: one line, exit 2."""
    if rest:
        raise UsageError(f"unexpected arguments {rest}; see `synthformer plot {args.what} --help`")
    try:
        return HANDLERS[args.what](args)
    except OSError as e:
        raise UsageError(f"{e.strerror or e}: {e.filename or ''}".rstrip(": ")) from None


def _bench(args) -> int:
    from ..plots import plot_bench, read_rows

    rows = read_rows(args.files)
    plot_bench(rows, args.out, args.title)
    print(f"wrote {args.out} from {len(rows)} rows")
    return 0


def _runs(args) -> int:
    from ..plots import find_runs, plot_curves

    from ..plots.curves import tokenizer_note

    runs, task = find_runs(args.folders)
    note = tokenizer_note(runs)
    if note:
        print(note)
    title = args.title or ""
    if note:
        title = (title + "\n" if title else "") + "runs tokenized differently: metrics not comparable across them"
    plot_curves(runs, args.out, task=task, title=title)
    print(f"wrote {args.out} from {len(runs)} runs ({', '.join(runs)})")
    return 0


def _attention(args) -> int:
    from ..plots import attention_figure

    out, lines = attention_figure(args.run, args.out, layers=args.layers, text=args.text, cross=args.cross,
                                  device=args.device, title=args.title, example=args.example, length=args.length)
    print(f"wrote {out}")
    for line in lines:
        print(f"  {line}")
    return 0


def _histograms(args) -> int:
    from ..plots import histograms_figure

    out, lines = histograms_figure(args.run, args.out, layers=args.layers, text=args.text, cross=args.cross,
                                   device=args.device, title=args.title, init=args.init, examples=args.examples,
                                   bins=args.bins, log_bins=args.log_bins)
    print(f"wrote {out}")
    for line in lines:
        print(f"  {line}")
    return 0


HANDLERS = {"bench": _bench, "runs": _runs, "attention": _attention, "histograms": _histograms}
