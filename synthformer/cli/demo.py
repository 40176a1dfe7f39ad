"""`make demo` / `python -m synthformer.cli.demo`: the main job at a size that learns in a few minutes on a
2-core CPU (218-247 s measured), `synthformer compare` on real conversations with settings chosen by
measurement (docs/recipe.md, "The demo"): Table 2's sharpest contrast, training R matters (Fix worse than R),
with every variant past its floor.

Why these settings: at compare's default (BPE tokens, 400 steps of 16 x 128) every variant ends near perplexity
230-270 against a Kneser-Ney bigram floor of about 81, so every finding read "not learned". On characters the
bigram floor is weak (perplexity ~11.6 on chitchat) and 32-character windows let all three variants pass it
within 600 steps of 64 sequences (~1 min a run on one core): V, Fix and R, three seeds each, two runs at a time
(`--jobs 2`). The folder is runs/demo: run it again to print its table without training, or add variants or
seeds to train only the new cells. Extra arguments go to `synthformer compare` and override these, e.g.
``python -m synthformer.cli.demo --seeds 5 --out runs/demo5``.
"""
from __future__ import annotations

import sys

from .compare import main

DEMO_VARIANTS = "V,Fix,R"
DEMO_ARGS = ["--variants", DEMO_VARIANTS, "--seeds", "3", "--tokenizer", "char", "--seq_len", "32",
             "--batch_size", "64", "--steps", "600", "--jobs", "2", "--out", "runs/demo"]


def demo_argv(argv: list[str]) -> list[str]:
    """The demo's defaults, then the user's arguments (argparse keeps the last of a repeated option)."""
    return DEMO_ARGS + list(argv)


def epilogue() -> str:
    """Where the full reproductions are and what each costs (from the reproduce registry, so it holds for an
    installed package too)."""
    from ..reproduce.registry import NAMES

    lines = ["", "This was a few-minute slice. The paper's tables at a size that learns them (cpu budget; "
             "`synthformer reproduce --list` for all budgets):"]
    for name, module in NAMES.items():
        lines.append(f"  synthformer reproduce {name} --budget cpu   # {module.SPEC.minutes['cpu']}")
    lines.append("Published reports of every name, with each claim's status: reproductions/README.md in the source "
                 "repository (e.g. table2's LM: Fix 46.7% worse than R at d=128, 4 layers, 3,000 steps).")
    return "\n".join(lines)


def run(argv: list[str]) -> int:
    code = main(demo_argv(argv))
    if code == 0:
        print(epilogue())
    return code


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
