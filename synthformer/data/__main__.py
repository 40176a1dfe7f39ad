"""``python -m synthformer.data list | prepare NAME... | show NAME`` = ``synthformer data ...`` (an entry
point, like the console script; the options live in synthformer/cli/data.py)."""
from __future__ import annotations

import sys

from ..cli import main as cli_main


def main(argv: list[str] | None = None) -> int:
    """``synthformer data`` with `argv` (default: the command line); returns the exit code."""
    return cli_main(["data", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
