"""``python -m synthformer.plots ...`` = ``synthformer plot ...``."""
import sys

from . import main

sys.exit(main(sys.argv[1:]))
