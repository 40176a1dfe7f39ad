"""``python -m synthformer.bench`` = ``synthformer bench`` (an entry point, like the console script)."""
import sys

from ..cli import main

sys.exit(main(["bench", *sys.argv[1:]]))
