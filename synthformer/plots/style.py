"""What every figure shares: one colour per variant in every panel, distinct labels, readable ticks."""
from __future__ import annotations

from pathlib import Path

from ..errors import InputError

FORMATS = (".png", ".svg", ".pdf")  # what --out may name (matplotlib picks the format by extension)


def check_out(path: str | Path) -> Path:
    """``path`` as the image to write, its folder created; refuses an unknown extension before any
    work is done."""
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise InputError(f"--out {path}: give a file ending in {', '.join(FORMATS)}")
    if path.is_dir():
        raise InputError(f"--out {path} is a folder; give a file name such as {path / 'figure.png'}")
    blocker = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        raise InputError(f"--out {path}: {blocker} is a file, not a folder; choose another path")
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def pyplot():
    """matplotlib.pyplot on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def ordered(labels) -> list[str]:
    """Labels in plotting order: the vanilla Transformer ("V") first, the rest as given, no repeats."""
    seen = list(dict.fromkeys(labels))
    return sorted(seen, key=lambda v: (v != "V" and not v.startswith("V ("), seen.index(v)))


def colour_map(labels) -> dict[str, tuple]:
    """One colour per label for the whole figure (every panel draws a label in the same colour)."""
    plt = pyplot()
    labels = ordered(labels)
    if len(labels) > 20:  # past tab20: evenly spaced colours of one wide map, still one per label
        wide = plt.get_cmap("turbo")
        return {v: wide(i / (len(labels) - 1)) for i, v in enumerate(labels)}
    palette = plt.get_cmap("tab10" if len(labels) <= 10 else "tab20")
    return {v: palette(i) for i, v in enumerate(labels)}


def short_tails(paths: list[str | Path]) -> list[str]:
    """The shortest trailing parts of each path that tell the paths apart, e.g. ``a/bench.jsonl`` and
    ``b/bench.jsonl`` -> ``a/bench.jsonl``, ``b/bench.jsonl``; ``x.jsonl``, ``y.jsonl`` -> themselves.
    Raises InputError for the same path given twice."""
    parts = [Path(p).resolve().parts for p in paths]
    if len(set(parts)) < len(parts):
        raise InputError(f"the same path is given twice: {', '.join(map(str, paths))}")
    tails = []
    for i, p in enumerate(parts):
        k = 1  # the fewest trailing parts that differ from every other path's as many trailing parts
        while k < len(p) and any(q[-k:] == p[-k:] for j, q in enumerate(parts) if j != i):
            k += 1
        tails.append("/".join(p[-k:]))
    return tails


def distinct_labels(names: list[str], paths: list[str | Path]) -> list[str]:
    """``names`` made unique without losing any: a name shared by several paths becomes
    ``name (tail)``, the tail being the shortest end of the paths that tells them apart (of their
    parent folders where the name is the folder's own), e.g. runs ``cmp-a/V`` and ``cmp-b/V`` ->
    ``V (cmp-a)``, ``V (cmp-b)``; two ``R`` runs in ``runs/r1``, ``runs/r2`` -> ``R (r1)``, ``R (r2)``.
    Raises InputError for the same path given twice under one name."""
    labels = list(names)
    for name in dict.fromkeys(names):
        idx = [i for i, n in enumerate(names) if n == name]
        if len(idx) > 1:
            where = [Path(paths[i]).resolve() for i in idx]
            if all(p.name == name for p in where):
                where = [p.parent for p in where]
            if len(set(where)) < len(where):
                raise InputError(f"{len(idx)} runs are named {name!r} and cannot be told apart: "
                                 f"{', '.join(str(paths[i]) for i in idx)}; give each run once")
            for i, tail in zip(idx, short_tails(where)):
                labels[i] = f"{name} ({tail})"
    return labels


def integer_ticks(axis, values) -> None:
    """Ticks at exactly ``values`` (e.g. the benchmarked lengths on a log axis), written as integers."""
    from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter

    values = sorted(set(values))
    axis.set_major_locator(FixedLocator(values))
    axis.set_minor_locator(NullLocator())
    fmt = ScalarFormatter()
    fmt.set_scientific(False)
    axis.set_major_formatter(fmt)


def human(x: float) -> str:
    """0.02, 3, 250, 12k, 1.5M: short plain numbers for tick labels."""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:g}{suffix}"
    return f"{x:g}"


def log_ticks(axis) -> None:
    """A log axis labelled with plain numbers (`human`), minor ticks labelled too where the axis spans
    less than about a decade (else a short axis would have no label at all)."""
    from matplotlib.ticker import LogFormatter

    class Plain(LogFormatter):
        def _num_to_string(self, x, vmin, vmax):
            return human(x)

    axis.set_major_formatter(Plain(labelOnlyBase=False, minor_thresholds=(1, 0.5)))
    axis.set_minor_formatter(Plain(labelOnlyBase=False, minor_thresholds=(1, 0.5)))

