"""Fixed Random (Fix): Random logits drawn once and never trained (a saved buffer)."""
from __future__ import annotations

from .random import Random


class FixedRandom(Random):
    trainable = False
