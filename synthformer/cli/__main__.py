"""`python -m synthformer.cli` (the same as `python -m synthformer` and the `synthformer` script)."""
import sys

from . import main

sys.exit(main())
