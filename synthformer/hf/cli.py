"""``synthformer export hf --run RUN --out DIR``: the parser and the handler.

Building the parser needs argparse only; ``run`` imports ``transformers`` (through ``synthformer.hf``).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``hf`` sub-command to ``subparsers`` (the sub-commands of ``synthformer export``)."""
    p = subparsers.add_parser(
        "hf", help="write a Hugging Face model folder (Auto classes with trust_remote_code=True, or after "
                   "`import synthformer.hf`)",
        description="Export a run's final weights (or its latest checkpoint), tokenizer and modeling code as a "
                    "folder that transformers' Auto classes load with trust_remote_code=True in any process "
                    "(synthformer need not be installed), or after `import synthformer.hf` without it.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--run", required=True, help="run folder (from synthformer train) or a model/checkpoint folder")
    p.add_argument("--out", required=True, help="output folder (created; an earlier synthformer export is replaced)")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Export ``args.run`` to ``args.out``; prints the folder and the Auto class that loads it."""
    from .export import AUTO_CLASSES, export_hf

    out = export_hf(args.run, args.out)
    kind = json.loads((Path(out) / "config.json").read_text())["kind"]
    print(f"exported {args.run} -> {out}\nload with: transformers.{AUTO_CLASSES[kind]}.from_pretrained("
          f"{str(out)!r}, trust_remote_code=True)")
    return 0
