"""`synthformer data`: list / prepare / show data sources."""
from __future__ import annotations

import argparse

from ..training.overrides import UsageError

NAME = "data"
HELP = "list / prepare / show data sources"


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(NAME, help=HELP, description="List, fetch and inspect data sources.")
    cmds = p.add_subparsers(dest="data_command", required=True)
    cmds.add_parser("list", help="list the registry sources and whether they are installed")
    prep = cmds.add_parser("prepare", help="fetch Debian sources into the cache folder")
    prep.add_argument("names", nargs="+", metavar="NAME", help="a registry source (see `synthformer data list`), or 'all'")
    prep.add_argument("--cache-dir", default=None, help="default: $SYNTHFORMER_DATA or ~/.cache/synthformer")
    show = cmds.add_parser("show", help="print the split sizes (whole splits) and a few examples of a source or file")
    show.add_argument("name")
    show.add_argument("--task", default=None)
    show.add_argument("-n", type=int, default=3, help="examples to print")
    return p


def run(args, rest: list[str]) -> int:
    """Data errors are SynthformerErrors (DataError, SourceNotInstalledError): one line, exit 2."""
    from ..data.sources import SOURCES, list_sources, load_source, prepare_source

    if rest:
        raise UsageError(f"unexpected arguments {rest}; see `synthformer data --help`")
    if args.data_command == "list":
        for s in list_sources():
            state = "installed" if s.installed else f"missing: run `{s.how_to_get}`"
            print(f"{s.name:14s} {','.join(s.tasks):16s} {state}\n{'':14s} {s.description}")
        return 0
    if args.data_command == "prepare":
        for name in list(SOURCES) if args.names == ["all"] else args.names:
            print(f"{name}: ready ({prepare_source(name, args.cache_dir)})")
        return 0
    if args.n < 0:
        raise UsageError(f"-n {args.n}: the number of examples to print must be >= 0")
    splits = load_source(args.name, args.task)  # whole splits: the sizes printed are the real ones
    print(splits)
    labels = splits.meta.get("labels")
    if labels:
        sizes = splits.meta.get("sizes", {})
        print(f"{len(labels)} classes: " + ", ".join(f"{lab} ({sizes[lab]})" if lab in sizes else str(lab)
                                                  for lab in labels))
    for ex in splits.train[:args.n]:
        print("-", repr(ex)[:300])
    return 0
