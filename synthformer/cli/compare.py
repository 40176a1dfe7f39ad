"""`synthformer compare`: the main job: train the paper's variants on the same budget and tabulate (options and
errors: `synthformer.evidence.compare.main`)."""
from __future__ import annotations

from ._runs import add_passthrough_parser

NAME = "compare"
HELP = "the main job: train the paper's variants on the same budget and tabulate"
PASSTHROUGH = True  # the rest of the command line goes to synthformer.evidence.compare.main unparsed


def add_parser(sub):
    return add_passthrough_parser(sub, NAME, HELP)


def run(args, rest: list[str]) -> int:
    from ..evidence.compare import main

    return int(main(rest) or 0)
