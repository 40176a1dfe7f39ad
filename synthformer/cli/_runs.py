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
                             "older synthformer): loaded without an integrity check, with a warning")


def add_passthrough_parser(sub, name: str, text: str) -> argparse.ArgumentParser:
    """A placeholder in the top-level help for a command with ``PASSTHROUGH = True``: `synthformer NAME ...`
    hands the rest of the command line to the module's ``run`` before argparse sees it."""
    p = sub.add_parser(name, help=text, add_help=False)
    p.add_argument("args", nargs=argparse.REMAINDER)
    return p


def device_of(name: str) -> str:
    """A device name checked as a user option."""
    from ..training.distributed import resolve_device

    try:
        return str(resolve_device(name))
    except ValueError as e:  # a bad or missing device
        raise UsageError(str(e)) from None
