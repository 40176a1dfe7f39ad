"""The names of `synthformer reproduce`: a literal registry, name -> module (each has SPEC and run(ctx))."""
from __future__ import annotations

from . import figures, lra, table2, table3, table4, table5, table7

NAMES = {
    "table2": table2,
    "table3": table3,
    "table4": table4,
    "table5": table5,
    "table7": table7,
    "figures": figures,
    "lra": lra,
}
