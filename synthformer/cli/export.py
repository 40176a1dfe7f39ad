"""`synthformer export hf --run RUN --out DIR`: a run's model in another library's format.

The formats' parsers come from their packages (``synthformer.hf.cli``), imported only when `export`
runs, so other commands never load ``transformers``.
"""
from __future__ import annotations

import argparse

from ..utils.integrity import trust_unverified
from ..training.runs import check_out
from ._runs import add_passthrough_parser, add_trust_option

NAME = "export"
HELP = "write a run's model in another format (hf: a Hugging Face folder for the Auto classes)"
PASSTHROUGH = True  # parsed here, on use: the format parsers import their packages


def add_parser(sub):
    return add_passthrough_parser(sub, NAME, HELP)


def run(args, rest: list[str]) -> int:
    from ..hf.cli import add_parser as add_hf

    parser = argparse.ArgumentParser(prog="synthformer export", description=HELP + ".")
    formats = parser.add_subparsers(dest="format", required=True, metavar="FORMAT")
    add_trust_option(add_hf(formats))
    ns = parser.parse_args(rest)
    check_out(ns.out)  # a parent that is a file, or an unwritable place: one line before any work
    with trust_unverified(ns.trust_unverified):
        return int(ns.func(ns) or 0)
