"""``python -m synthformer.bench``."""
import sys

from .cli import main

sys.exit(main(sys.argv[1:]))
