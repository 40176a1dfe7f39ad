"""`make demo` / `python -m synthformer.cli.demo`: the main job, `synthformer compare` on its default data
and budget (tiny LMs on the chitchat conversations, 400 steps x 16 sequences per run), with two seeds
per variant so that every finding is judged against the seed spread, in about 10 minutes on a
2-core CPU.

The variants are the Table 2 core that fits that time twice over: V, Fix, R, R+V, D+V (ten runs of
~1 minute). Extra arguments go to `synthformer compare` and override these, e.g.
``python -m synthformer.cli.demo --seeds 3`` or ``--variants V,Fix,R,FR,D,FD,R+V,D+V,dynamicconv``.
What the demo can and cannot show at this budget, with measurements: docs/recipe.md.
"""
import sys

from .compare import main

DEMO_ARGS = ["--variants", "V,Fix,R,R+V,D+V", "--seeds", "2"]


def demo_argv(argv: list[str]) -> list[str]:
    """The demo's defaults, then the user's arguments (argparse keeps the last of a repeated option)."""
    return DEMO_ARGS + list(argv)


if __name__ == "__main__":
    sys.exit(main(demo_argv(sys.argv[1:])))
