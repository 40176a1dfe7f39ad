"""The `synthformer` command: train, eval, generate, compare, data, bench, plot, export.

    synthformer train --task lm --data chitchat --attention R+V --steps 2000 --out runs/rv
    synthformer train --config configs/seq2seq-bible.yaml --out runs/mt
    synthformer train --resume --out runs/rv             # continue exactly where it stopped
    synthformer eval --run runs/rv --split test
    synthformer generate --run runs/rv "hi, how are you?" --strategy sample --top_p 0.9
    synthformer compare                                  # the main job (also `make demo`)
    synthformer data list | prepare NAME
    synthformer export hf --run runs/rv --out hf/rv      # a folder for transformers' Auto classes

One module per sub-command (this package's `train`, `eval`, ...), each with ``add_parser(sub)`` and
``run(args, rest)``; `COMMANDS` lists them. Options of `train` are typed overrides of the configs
(synthformer.training.overrides). What a user gets wrong raises a `SynthformerError`: printed as one line, exit
status 2 (SYNTHFORMER_DEBUG=1 shows the traceback); so is a missing package of an extra (the line names
the extra to install); any other exception is a bug and keeps its traceback.
"""
from __future__ import annotations

import argparse
import os
import sys

from .. import __version__
from .._optional import PROVIDERS, missing_extra
from ..errors import SynthformerError
from ..utils.integrity import trust_unverified
from ..training.overrides import UsageError, coerce, field_help, make_train_config, parse_overrides
from . import bench, compare, data, eval, export, generate, plot, reproduce, train
from ._runs import OneLineParser

# Sub-command name -> its module (in the order of `synthformer --help`).
COMMANDS = {m.NAME: m for m in (train, eval, generate, compare, data, bench, plot, export, reproduce)}


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="synthformer", description=__doc__.split("\n\n")[0],
                           formatter_class=argparse.RawDescriptionHelpFormatter)  # usage errors: one line
    parser.add_argument("--version", action="version", version=f"synthformer {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS.values():
        module.add_parser(sub)
    return parser


def run(argv: list[str]) -> int:
    """Parse ``argv`` and run its sub-command (errors propagate)."""
    command = COMMANDS.get(argv[0]) if argv else None
    if command is not None and getattr(command, "PASSTHROUGH", False):
        return command.run(None, argv[1:])  # the module parses its own options (and --help)
    args, rest = build_parser().parse_known_args(argv)
    with trust_unverified(getattr(args, "trust_unverified", False)):  # --trust-unverified (cli._runs)
        return COMMANDS[args.command].run(args, rest)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `synthformer` console script and of `python -m synthformer`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return run(argv)
    except KeyboardInterrupt:
        print("synthformer: interrupted", file=sys.stderr)
        return 130
    except SynthformerError as e:  # what users get wrong; anything else is a bug and keeps its traceback
        if os.environ.get("SYNTHFORMER_DEBUG"):
            raise
        print(f"synthformer: error: {str(e).splitlines()[0] if str(e) else type(e).__name__}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as e:  # a package of an extra is not installed: name the extra to install
        top = (e.name or "").split(".")[0]
        if top not in PROVIDERS or os.environ.get("SYNTHFORMER_DEBUG"):
            raise
        print(f"synthformer: error: {missing_extra(top, f'synthformer {argv[0]}')}", file=sys.stderr)
        return 2


__all__ = ["COMMANDS", "UsageError", "build_parser", "coerce", "field_help", "main", "make_train_config",
           "parse_overrides", "run"]
