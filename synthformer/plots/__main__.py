"""``python -m synthformer.plots ...`` = ``synthformer plot ...`` (an entry point, like the console script)."""
import sys

from ..cli import main

sys.exit(main(["plot", *sys.argv[1:]]))
