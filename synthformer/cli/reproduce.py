"""`synthformer reproduce`: one command per table and figure of the paper (handed to `synthformer.reproduce`)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._runs import (add_executor_options, add_passthrough_parser, add_trust_option, device_of, executor_of,
                    one_line_errors)

NAME = "reproduce"
HELP = "reproduce a table or figure of the paper at a budget (smoke | cpu | gpu); --list shows them"
PASSTHROUGH = True  # parses its own options


def add_parser(sub):
    return add_passthrough_parser(sub, NAME, HELP)


def build_parser() -> argparse.ArgumentParser:
    from ..reproduce import BUDGETS, __doc__ as doc

    p = argparse.ArgumentParser(prog="synthformer reproduce", description=doc.split("\n\n")[0],
                                epilog="Names: see --list. Each writes report.md, results.json and PNG figures "
                                       "into --out; rerunning with the same --out continues "
                                       "(a folder run with other settings is refused).")
    p.add_argument("name", nargs="?", help="what to reproduce: table2, table3, table4, table5, table7, figures, lra")
    p.add_argument("--list", action="store_true", help="list the names: what each reproduces, data, variants, time")
    p.add_argument("--budget", default="smoke", help=f"{' | '.join(BUDGETS)} (default: %(default)s)")
    p.add_argument("--seeds", type=int, default=None, help="seeds per variant (default: the name's for the budget)")
    p.add_argument("--device", default=None, help="auto | cpu | cuda | cuda:N | mps (default: the budget's)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: the budget's, 1 below gpu)")
    p.add_argument("--out", default=None, help="run folder (default runs/reproduce/NAME-BUDGET)")
    p.add_argument("--only", metavar="VARIANTS", default=None,
                   help="comma-separated: train only these variants' cells (sweep and seeds) and write no report; "
                        "to split a grid over machines, each running its share on a clone of --out, then merging "
                        "the cells/ folders (the command without --only then writes the report); table5: its "
                        "variants' pretraining and fine-tuning cells")
    p.add_argument("--reuse", metavar="DIR", default=None,
                   help="the --out of the reproduction this name shares runs with, at the same budget: table5 takes "
                        "table4's finished MLM sweep and seed runs as its pretraining (the paper fine-tunes the "
                        "models it pretrains), figures takes table2's LM sweep and seeds (drawn from table2's "
                        "weights); each checked to have the same settings; runs not finished there are trained here")
    p.add_argument("--interim", action="store_true",
                   help="train nothing: in every grid of --out that has started, write interim.md from the variants "
                        "whose sweep and seeds have all finished (claims naming an unfinished one are left out); "
                        "safe beside the run that is filling the folder (table5: its suite, with the same --reuse)")
    add_executor_options(p)
    add_trust_option(p)
    p.add_argument("--publish", metavar="DIR", default=None,
                   help="after the run (reused when finished), copy its reports, results and figures (no weights) "
                        "to DIR/NAME and rewrite DIR/README.md")
    p.add_argument("--index", metavar="DIR", default=None,
                   help="write DIR/README.md: every claim of the paper and its status in the reports under DIR")
    return p


def run(args, rest: list[str]) -> int:
    from ..utils.integrity import trust_unverified

    parser = one_line_errors(build_parser())
    opts = parser.parse_args(rest)
    with trust_unverified(opts.trust_unverified):  # --trust-unverified: folders' files used unverified
        return _run(opts)


def _run(opts) -> int:
    from ..reproduce import ReproduceError, list_text, reproduce
    from ..reproduce.index import publish, write_index

    if opts.list:
        print(list_text())
        return 0
    if opts.index:
        path = write_index(opts.index)
        print(f"wrote {path}")
        return 0
    if not opts.name:
        raise ReproduceError("give a name to reproduce (see `synthformer reproduce --list`)")
    only = [v.strip() for v in opts.only.split(",") if v.strip()] if opts.only is not None else None
    if only is not None and (not only or opts.publish):
        raise ReproduceError("--only takes one or more variants (e.g. --only R,FR) and no --publish: publish the "
                             "report the command without --only writes once every cell is there")
    if opts.interim and (only is not None or opts.publish):
        raise ReproduceError("--interim writes interim.md beside the grids and trains nothing: drop --only and "
                             "--publish")
    if opts.device is not None:
        device_of(opts.device)  # a bad or missing device fails here, before --out is made
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    reproduce(opts.name, budget=opts.budget, seeds=opts.seeds, out=opts.out, device=opts.device,
              threads=opts.threads, log=log, only=only, interim=opts.interim, reuse=opts.reuse,
              executor=executor_of(opts))
    if opts.publish:
        from ..reproduce import default_out

        dest = publish(opts.out or default_out(opts.name, opts.budget), opts.publish)
        log(f"published to {dest} and {Path(opts.publish) / 'README.md'}")
    return 0
