"""`synthformer data`: list / prepare / show data sources (handed to `synthformer.data.__main__.main`)."""
from __future__ import annotations

from .delegate import add_delegated_parser, cmd_delegate

NAME = "data"
HELP = "list / prepare / show data sources"
PASSTHROUGH = True  # the rest of the command line goes to synthformer.data.__main__ unparsed


def add_parser(sub):
    return add_delegated_parser(sub, NAME, HELP)


def run(args, rest: list[str]) -> int:
    return cmd_delegate("synthformer.data.__main__", NAME, rest)
