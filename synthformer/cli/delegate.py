"""Sub-commands that live in another part of the package: the rest of the command line goes to its `main`."""
from __future__ import annotations

import argparse
import importlib
import sys


def add_delegated_parser(sub, name: str, text: str) -> argparse.ArgumentParser:
    """A placeholder in the top-level help; `synthformer NAME ...` is handed on before argparse sees it."""
    p = sub.add_parser(name, help=text, add_help=False)
    p.add_argument("args", nargs=argparse.REMAINDER)
    return p


def cmd_delegate(module: str, what: str, argv: list[str]) -> int:
    """Hand ``argv`` to ``module.main(argv)``; one line when the module is not installed."""
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name != module:
            raise
        print(f"synthformer: error: `synthformer {what}` is not available in this installation "
              f"({module} is missing)", file=sys.stderr)
        return 2
    return int(mod.main(argv) or 0)
