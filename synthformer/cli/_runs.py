"""What the sub-commands share: the device, the placeholder of a command that parses
its own options. (A trained run is opened by synthformer.training.plan.open_trained.)"""
from __future__ import annotations

import argparse

from ..utils.integrity import TRUST_FLAG
from ..training.overrides import UsageError


def add_trust_option(parser) -> None:
    """``--trust-unverified`` (the one definition; `synthformer.cli.run` applies it around the command)."""
    parser.add_argument(TRUST_FLAG, action="store_true",
                        help="use a run or model folder whose manifest.json is missing or empty (saved by an "
                             "older synthformer), or a grid / reproduction file its digests.json does not vouch "
                             "for: used without an integrity check, with a warning")


def add_passthrough_parser(sub, name: str, text: str) -> argparse.ArgumentParser:
    """A placeholder in the top-level help for a command with ``PASSTHROUGH = True``: `synthformer NAME ...`
    hands the rest of the command line to the module's ``run`` before argparse sees it."""
    p = sub.add_parser(name, help=text, add_help=False)
    p.add_argument("args", nargs=argparse.REMAINDER)
    return p


def one_line_errors(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """`parser` (and the sub-parsers it makes later) reporting a usage error as one UsageError line, exit
    status 2 through the CLI's error policy, instead of argparse's usage block."""
    def error(message: str):
        raise UsageError(f"{parser.prog}: {message} (see `{parser.prog} --help`)")

    parser.error = error
    return parser


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one UsageError line (its sub-parsers are of this class too)."""

    def error(self, message: str):
        raise UsageError(f"{self.prog}: {message} (see `{self.prog} --help`)")


def device_of(name: str) -> str:
    """A device name checked as a user option."""
    from ..training.distributed import resolve_device

    try:
        return str(resolve_device(name))
    except ValueError as e:  # a bad or missing device
        raise UsageError(str(e)) from None


def add_executor_options(parser) -> None:
    """How a grid's cells run (`compare`, `reproduce`): the same flags on both; they change no result."""
    parser.add_argument("--jobs", type=int, default=1,
                        help="train this many cells at once, each in a worker process (default 1: one after "
                             "another in this process); each uses the run's --threads (1 by default)")
    parser.add_argument("--executor", default="local", choices=("local", "ray"),
                        help="local: worker processes on this machine (--jobs); ray: each cell a Ray task, on a "
                             "local Ray instance or the cluster of --address (pip install 'synthformer[ray]')")
    parser.add_argument("--address", default=None,
                        help="with --executor ray: the cluster to join (auto, or HOST:PORT of `ray start --head`); "
                             "default: start a local Ray instance")
    parser.add_argument("--gpus-per-cell", dest="gpus_per_cell", type=float, default=None,
                        help="with --executor ray: the fraction of a GPU each cell asks for (e.g. 0.25 packs four "
                             "small cells on one GPU)")


def executor_of(args):
    """The executor the options of `add_executor_options` name (one line for a bad combination)."""
    from ..evidence.executors import make_executor

    return make_executor(args.executor, args.jobs, args.address, args.gpus_per_cell)
