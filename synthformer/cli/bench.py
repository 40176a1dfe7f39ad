"""`synthformer bench`: speed and memory benchmarks (handed to `synthformer.bench.main`)."""
from __future__ import annotations

from .delegate import add_delegated_parser, cmd_delegate

NAME = "bench"
HELP = "speed and memory benchmarks"
PASSTHROUGH = True  # the rest of the command line goes to synthformer.bench unparsed


def add_parser(sub):
    return add_delegated_parser(sub, NAME, HELP)


def run(args, rest: list[str]) -> int:
    return cmd_delegate("synthformer.bench", NAME, rest)
