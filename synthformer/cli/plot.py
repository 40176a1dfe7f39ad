"""`synthformer plot`: figures from benchmark / run data (handed to `synthformer.plots.main`)."""
from __future__ import annotations

from .delegate import add_delegated_parser, cmd_delegate

NAME = "plot"
HELP = "figures from benchmark / run data"
PASSTHROUGH = True  # the rest of the command line goes to synthformer.plots unparsed


def add_parser(sub):
    return add_delegated_parser(sub, NAME, HELP)


def run(args, rest: list[str]) -> int:
    return cmd_delegate("synthformer.plots", NAME, rest)
