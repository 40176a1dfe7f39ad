"""`python -m synthformer.data list | prepare NAME... | show NAME` (wired into `synthformer data`)."""
from __future__ import annotations

import argparse
import sys

from ..errors import SynthformerError
from .sources import SOURCES, list_sources, load_source, prepare_source


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """Add the data sub-commands to `parser` (or a new one)."""
    parser = parser or argparse.ArgumentParser(prog="synthformer data",
                                               description="List, fetch and inspect data sources.")
    sub = parser.add_subparsers(dest="data_command", required=True)
    sub.add_parser("list", help="list the registry sources and whether they are installed")
    prep = sub.add_parser("prepare", help="fetch Debian sources into the cache folder")
    prep.add_argument("names", nargs="+", metavar="NAME", help=f"one of {', '.join(SOURCES)}, or 'all'")
    prep.add_argument("--cache-dir", default=None, help="default: $SYNTHFORMER_DATA or ~/.cache/synthformer")
    show = sub.add_parser("show", help="print split sizes and a few examples of a source or file")
    show.add_argument("name")
    show.add_argument("--task", default=None)
    show.add_argument("-n", type=int, default=3, help="examples to print")
    return parser


def run(args: argparse.Namespace) -> int:
    """Execute parsed data sub-command arguments; returns the exit code."""
    if args.data_command == "list":
        for s in list_sources():
            state = "installed" if s.installed else f"missing: run `{s.how_to_get}`"
            print(f"{s.name:14s} {','.join(s.tasks):16s} {state}\n{'':14s} {s.description}")
        return 0
    if args.data_command == "prepare":
        names = list(SOURCES) if args.names == ["all"] else args.names
        for name in names:
            path = prepare_source(name, args.cache_dir)
            print(f"{name}: ready ({path})")
        return 0
    splits = load_source(args.name, args.task, max_examples=max(args.n, 30))
    print(splits)
    labels = splits.meta.get("labels")
    if labels:
        sizes = splits.meta.get("sizes", {})
        print(f"{len(labels)} classes: " + ", ".join(f"{lab} ({sizes[lab]})" if lab in sizes else str(lab)
                                                  for lab in labels))
    for ex in splits.train[:args.n]:
        print("-", repr(ex)[:300])
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point; data errors print one line to stderr and exit with status 2."""
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except SynthformerError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
