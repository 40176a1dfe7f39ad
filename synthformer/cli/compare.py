"""`synthformer compare`: the main job: train the paper's variants on the same budget and tabulate (handed to `synthformer.compare.main`)."""
from __future__ import annotations

from .delegate import add_delegated_parser, cmd_delegate

NAME = "compare"
HELP = "the main job: train the paper's variants on the same budget and tabulate"
PASSTHROUGH = True  # the rest of the command line goes to synthformer.compare unparsed


def add_parser(sub):
    return add_delegated_parser(sub, NAME, HELP)


def run(args, rest: list[str]) -> int:
    return cmd_delegate("synthformer.compare", NAME, rest)
