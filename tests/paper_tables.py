"""The paper's tables read off its text cell by cell, the yardstick `numbers.py` and the claims are held to.

The ICML text (``synthesizer-icml2021.txt``, a PDF extraction) prints a table column by column: a group of
row labels as the paper prints them ("Syn (R)", "DyConv", "Synthesizer (Random + Vanilla)"), then that
group's cells one column after another in the header's order, then the next group. `read_table` takes a
table's text (its header lines through its caption "Table N."), finds each group of labels, cuts the
cells between one group and the next into columns of the group's size and names each cell by its row's
label and its column's position. Where the extraction interleaves the groups (Table 3) the table declares
the order its cells are printed in (`Layout.order`), checked against the clean copy in reference-results.md.
LRA's numbers come from reference-results.md (copied from the LRA paper): its Markdown table and the
efficiency sentences. `mismatches` and `claim_mismatches` compare `numbers.py` and the claims with them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from unittest import mock

CELL = re.compile(r"^\d+(?:\.\d+)?(?:M|/\d+(?:\.\d+)?)?$")  # 27.67 | 67M | 92.0/88.7


@dataclass(frozen=True)
class Layout:
    """Where one table sits in the text and how its cells are printed."""

    name: str  # "Table 2"
    start: str  # the first line of the table's text (exact, stripped)
    headers: tuple[str, ...]  # header lines as printed, in order (checked, so a column is its header's)
    groups: tuple[tuple[str, ...], ...]  # row labels as printed, group by group
    columns: tuple[str, ...]  # our key of each column, in the header's order
    partial: tuple[tuple[int, str, tuple[str, ...]], ...] = ()  # (group, column, the only rows of it printing it)
    order: tuple[tuple[int, str], ...] = ()  # (group, column) runs in print order, where not group after group


TRANS = ("Trans.",)
SYN4 = ("Syn (R)", "Syn (D)", "Syn (D+V)", "Syn (R+V)")
T5_ROWS = ("T5 (Base)", "T5 (Base+)", "DyConv")
T3_COLUMNS = ("sum_rl", "dialogue_b4", "dialogue_rl", "dialogue_meteor", "dialogue_cider")
LAYOUTS = (
    Layout("Table 2", "NMT (BLEU)", ("NMT (BLEU)", "EnDe EnFr", "LM (PPL)", "LM"),
           (("Transformer†", "Transformer"),
            ("Synthesizer (Fixed Random)", "Synthesizer (Random)", "Synthesizer (Factorized Random)",
             "Synthesizer (Dense)", "Synthesizer (Factorized Dense)", "Synthesizer (Random + Dense)",
             "Synthesizer (Dense + Vanilla)", "Synthesizer (Random + Vanilla)")),
           ("params_nmt", "ende_bleu", "enfr_bleu", "params_lm", "lm1b_ppl"),
           partial=((0, "params_lm", ("Transformer",)), (0, "lm1b_ppl", ("Transformer",)))),  # † (Vaswani's): MT only
    # Table 3: the extraction prints Trans.'s first two cells, the R..R+V group's Sum. RL, Trans.'s last three
    # cells, then the group's Met., CIDr, B4 and RL, in that order (the header lines interleaved with them)
    Layout("Table 3", "Sum.", ("Sum.", "RL", "B4", "Dialogue", "RL", "Met.", "CIDr"),
           (TRANS, ("R", "D", "D+V", "R+V")), T3_COLUMNS,
           order=((0, "sum_rl"), (0, "dialogue_b4"), (1, "sum_rl"), (0, "dialogue_rl"), (0, "dialogue_meteor"),
                  (0, "dialogue_cider"), (1, "dialogue_meteor"), (1, "dialogue_cider"), (1, "dialogue_b4"),
                  (1, "dialogue_rl"))),
    Layout("Table 4", "Model", ("Log PPL", "Steps/Sec", "Params", "TFLOPS"),
           (("Trans.", "DyConv", "LightConv", "Syn (D)", "Syn (R)", "Syn (R+V)", "Syn (D+V)"),),
           ("log_ppl", "steps_per_s", "params", "tflops")),
    Layout("Table 5", "Glue", ("Glue", "CoLA", "SST", "MRPC", "STSB", "QQP", "MNLI", "QNLI", "RTE"),
           (T5_ROWS, SYN4), ("glue", "cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli", "rte")),
    Layout("Table 6", "SGlue", ("SGlue", "BoolQ", "CB", "CoPA", "MultiRC", "ReCoRD", "RTE", "WiC", "WSC"),
           (T5_ROWS, SYN4), ("superglue", "boolq", "cb", "copa", "multirc", "record", "rte", "wic", "wsc")),
    Layout("Table 7", "News", ("News", "Reviews", "Steps/Sec"),
           (("Transformer", "Linformer"), ("Syn (FR)", "Syn (FR+V)")), ("agnews", "imdb", "steps_per_s")),
)
# Table 4 starts at the "Model" line after Table 2's caption (an earlier "Model" heads Table 3)
AFTER = {"Table 4": "Table 2."}

# Our variant names -> the row labels each table prints
LABELS = {
    "Table 2": {"V": "Transformer", "Fix": "Synthesizer (Fixed Random)", "R": "Synthesizer (Random)",
                "FR": "Synthesizer (Factorized Random)", "D": "Synthesizer (Dense)",
                "FD": "Synthesizer (Factorized Dense)", "R+D": "Synthesizer (Random + Dense)",
                "D+V": "Synthesizer (Dense + Vanilla)", "R+V": "Synthesizer (Random + Vanilla)"},
    "Table 3": {"V": "Trans.", "R": "R", "D": "D", "D+V": "D+V", "R+V": "R+V"},
    "Table 4": {"V": "Trans.", "dynamicconv": "DyConv", "lightconv": "LightConv", "D": "Syn (D)", "R": "Syn (R)",
                "R+V": "Syn (R+V)", "D+V": "Syn (D+V)"},
    "Table 5": {"V": "T5 (Base)", "T5 Base+": "T5 (Base+)", "dynamicconv": "DyConv", "R": "Syn (R)",
                "D": "Syn (D)", "D+V": "Syn (D+V)", "R+V": "Syn (R+V)"},
    "Table 7": {"V": "Transformer", "linformer": "Linformer", "FR": "Syn (FR)", "FR+V": "Syn (FR+V)"},
    "LRA": {"V": "Transformer", "linformer": "Linformer", "R+V": "Synthesizer"},
}
LABELS["Table 6"] = LABELS["Table 5"]


class LayoutError(AssertionError):
    """The text does not hold a table as its `Layout` says."""


def cell_value(token: str):
    """A printed cell as numbers.py keeps it: 27.67 -> 27.67, "67M" -> "67M", "92.0/88.7" -> (92.0, 88.7)."""
    if token.endswith("M"):
        return token
    if "/" in token:
        return tuple(float(x) for x in token.split("/"))
    return float(token)


def _span(lines: list[str], layout: Layout) -> list[str]:
    """The stripped lines of a table: from its start line (after `AFTER`'s caption) through its caption."""
    try:
        after = AFTER.get(layout.name)
        first = next(i for i, x in enumerate(lines) if x.startswith(after)) if after else 0
        start = lines.index(layout.start, first)
        end = next(i for i in range(start, len(lines)) if lines[i].startswith(f"{layout.name}."))
    except (ValueError, StopIteration):
        raise LayoutError(f"{layout.name}: no text from {layout.start!r} to its caption") from None
    return [x for x in lines[start:end] if x]


def _group_at(lines: list[str], labels: tuple[str, ...], after: int) -> int:
    """Index of the first line of `labels`, printed one a line in order, at or after `after`."""
    for i in range(after, len(lines) - len(labels) + 1):
        if tuple(lines[i:i + len(labels)]) == labels:
            return i
    raise LayoutError(f"row labels {labels} not found in order")


def _check_headers(lines: list[str], layout: Layout) -> None:
    """Each header line of the layout is printed, in the layout's order."""
    at = 0
    for h in layout.headers:
        if h not in lines[at:]:
            raise LayoutError(f"{layout.name}: header {h!r} not where the layout says")
        at = lines.index(h, at) + 1


def _rows_of(layout: Layout, group: int, column: str) -> tuple[str, ...]:
    rows = layout.groups[group]
    only = {(g, c): r for g, c, r in layout.partial}.get((group, column))
    return tuple(r for r in rows if only is None or r in only)


def read_table(text: str, layout: Layout) -> dict[str, dict[str, object]]:
    """{row label: {column key: cell}} of one table of the paper's text (module docstring)."""
    lines = _span([x.strip() for x in text.splitlines()], layout)
    _check_headers(lines, layout)
    starts, at = [], 0
    for labels in layout.groups:
        at = _group_at(lines, labels, at)
        starts.append(at)
        at += len(labels)
    bounds = starts[1:] + [len(lines)]
    segments = [[x for x in lines[s + len(g):b] if CELL.match(x)] for s, g, b in zip(starts, layout.groups, bounds)]
    runs = layout.order or tuple((g, c) for g in range(len(layout.groups)) for c in layout.columns)
    tokens = [x for seg in segments for x in seg] if layout.order else None
    table: dict[str, dict[str, object]] = {label: {} for g in layout.groups for label in g}
    for group, column in runs:
        rows = _rows_of(layout, group, column)
        source = tokens if tokens is not None else segments[group]
        if len(source) < len(rows):
            raise LayoutError(f"{layout.name}: too few cells for {column} of {rows}")
        for row, token in zip(rows, source[:len(rows)]):
            table[row][column] = cell_value(token)
        del source[:len(rows)]
    left = tokens if tokens is not None else [x for seg in segments for x in seg]
    if left:
        raise LayoutError(f"{layout.name}: cells the layout does not place: {left}")
    return table


def read_paper(text: str) -> dict[str, dict]:
    """{table name: `read_table`} of every table in `LAYOUTS`."""
    return {layout.name: read_table(text, layout) for layout in LAYOUTS}


def read_lra(text: str) -> dict[str, dict]:
    """LRA's numbers in reference-results.md: {"LRA": {label: {task: accuracy}}, "LRA speed": {label:
    {length: steps/s}}, "LRA memory": {label: {length: GB}}}, columns named by their printed headers."""
    body = text.split("## Long Range Arena", 1)[1]
    table_lines = [x for x in body.splitlines() if x.startswith("|") and not x.startswith("|---")]
    head = [h.strip().lower() for h in table_lines[0].strip("|").split("|")]
    acc = {}
    for line in table_lines[1:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        acc[cells[0]] = {h: float(c) for h, c in zip(head[1:], cells[1:])}
    prose = " ".join(body.splitlines())
    return {"LRA": acc, "LRA speed": _efficiency(prose, "LRA speed"), "LRA memory": _efficiency(prose, "Peak memory")}


def _efficiency(prose: str, lead: str) -> dict[str, dict[int, float]]:
    """One efficiency sentence ("... at 1K / 2K / 4K tokens: Transformer 8.1 / 4.9 / 1.4; ..."): {label:
    {length in tokens: value}}, the lengths read from the sentence's own "at 1K / 4K"."""
    found = re.search(r"at ((?:\d+K(?: / )?)+)[^:]*:(.*?)(?:\.\s|$)", prose[prose.index(lead):])
    if not found:
        raise LayoutError(f"no efficiency sentence starting {lead!r}")
    lengths = [int(k[:-1]) * 1024 for k in found.group(1).split(" / ")]
    out = {}
    for label, values in re.findall(r"([A-Z][a-z]+) (\d+(?:\.\d+)?(?: / \d+(?:\.\d+)?)*)", found.group(2)):
        numbers = [float(x) for x in values.split(" / ")]
        if len(numbers) != len(lengths):
            raise LayoutError(f"{lead}: {label} has {len(numbers)} values for {len(lengths)} lengths")
        out[label] = dict(zip(lengths, numbers))
    return out


# numbers.py's tables -> (the paper's table, the column a one-value-per-variant table fills; None: keyed rows)
SOURCES = {"TABLE2": ("Table 2", None), "TABLE3": ("Table 3", None), "TABLE4": ("Table 4", "log_ppl"),
           "TABLE4_STEPS_PER_S": ("Table 4", "steps_per_s"), "TABLE4_PARAMS": ("Table 4", "params"),
           "TABLE5": ("Table 5", None), "TABLE5_SST2": ("Table 5", "sst2"),
           "TABLE6_SUPERGLUE": ("Table 6", "superglue"),
           "TABLE7": ("Table 7", "agnews"), "TABLE7_IMDB": ("Table 7", "imdb"),
           "TABLE7_STEPS_PER_S": ("Table 7", "steps_per_s"), "LRA": ("LRA", None), "LRA_AVG": ("LRA", "avg")}
LRA_MEMORY_LENGTHS = (1024, 4096)  # numbers.LRA_MEMORY_GB: at 1K and 4K


def published_cells(n) -> list[tuple[str, str, str, object, object]]:
    """Every cell of numbers.py's tables (module `n`, or a stand-in with the same names): (numbers.py name, the
    paper's table, our variant, column key as `read_paper` / `read_lra` name it, value)."""
    cells = []
    for name, (table, column) in SOURCES.items():
        for v, row in getattr(n, name).items():
            items = row.items() if column is None else ((column, row),)
            cells += [(name, table, v, key, value) for key, value in items]
    for v, values in n.LRA_STEPS_PER_S.items():
        cells += [("LRA_STEPS_PER_S", "LRA speed", v, length, x) for length, x in zip(n.LRA_LENGTHS, values)]
    for v, values in n.LRA_MEMORY_GB.items():
        cells += [("LRA_MEMORY_GB", "LRA memory", v, length, x) for length, x in zip(LRA_MEMORY_LENGTHS, values)]
    return cells


def paper_cell(paper: dict, table: str, variant: str, column):
    """The cell `read_paper` / `read_lra` holds for our variant, or KeyError naming what is missing."""
    label = LABELS["LRA" if table.startswith("LRA") else table][variant]
    return paper[table][label][column]


def mismatches(cells: list, paper: dict) -> list[str]:
    """One line per cell of `published_cells` that differs from the paper's cell in its row and column
    (or has no such cell)."""
    out = []
    for name, table, variant, column, ours in cells:
        try:
            printed = paper_cell(paper, table, variant, column)
        except KeyError:
            out.append(f"{name}[{variant!r}] {column}: {ours!r} has no cell in the paper's {table}")
            continue
        if printed != ours:
            out.append(f"{name}[{variant!r}] {column}: {ours!r}, the paper's {table} prints {printed!r}")
    return out


# A claim's benchmark -> the (table, column) its paper numbers are read from; Tables 5-6 go through
# numbers.glue_summary (their paper numbers are the fine-tuning suite's terms), keyed by glue_summary's key
CLAIM_CELLS = {
    ("Table 2", "LM1B PPL"): ("Table 2", "lm1b_ppl"), ("Table 2", "EnDe BLEU"): ("Table 2", "ende_bleu"),
    ("Table 2", "EnFr BLEU"): ("Table 2", "enfr_bleu"), ("Table 3", "CNN/DM RL"): ("Table 3", "sum_rl"),
    ("Table 3", "dialogue RL"): ("Table 3", "dialogue_rl"), ("Table 3", "dialogue B4"): ("Table 3", "dialogue_b4"),
    ("Table 4", "C4 MLM log-PPL"): ("Table 4", "log_ppl"), ("Table 4", "steps/s"): ("Table 4", "steps_per_s"),
    ("Table 7", "AG News acc."): ("Table 7", "agnews"), ("Table 7", "IMDB acc."): ("Table 7", "imdb"),
    ("LRA", "LRA ListOps acc."): ("LRA", "listops"), ("LRA", "LRA Text acc."): ("LRA", "text"),
    ("LRA", "LRA Image acc."): ("LRA", "image"), ("LRA", "LRA avg. acc. (ours: over the tasks run)"): ("LRA", "avg"),
}
GLUE_KEYS = {"GLUE avg.": "accuracy", "SuperGLUE avg. (ours: the sentence-pair tasks' mean)": "superglue",
             "SST-2 acc. (ours: the sentiment task)": "single", "GLUE pairs / SST-2": "pair_vs_single"}
LRA_EFFICIENCY = re.compile(r"^LRA (steps/s|peak memory \(GB\)) at (\d)K$")


def claim_source(claim) -> tuple[str, object]:
    """(table, column) a claim's paper numbers come from: ("glue", key) for Tables 5-6, ("LRA speed" or
    "LRA memory", length) for LRA's efficiency claims. KeyError for a claim no cell is known for."""
    if claim.table in ("Table 5", "Table 6"):
        return "glue", GLUE_KEYS[claim.benchmark]
    if claim.table == "Table 7" and claim.benchmark.startswith("steps/s"):
        return "Table 7", "steps_per_s"
    found = LRA_EFFICIENCY.match(claim.benchmark) if claim.table == "LRA" else None
    if found:
        return ("LRA speed" if found.group(1) == "steps/s" else "LRA memory"), int(found.group(2)) * 1024
    return CLAIM_CELLS[(claim.table, claim.benchmark)]


def glue_from_paper(paper: dict, variant: str, key: str) -> float:
    """numbers.glue_summary's `key` of `variant`, computed from the paper's Table 5 and 6 cells (not numbers.py's)."""
    from synthformer.evidence.paper import numbers

    t5 = {v: paper["Table 5"][label] for v, label in LABELS["Table 5"].items()}
    t6 = {v: paper["Table 6"][label]["superglue"] for v, label in LABELS["Table 6"].items()}
    with mock.patch.object(numbers, "TABLE5", t5), mock.patch.object(numbers, "TABLE6_SUPERGLUE", t6):
        return numbers.glue_summary(variant)[key]


def claim_mismatches(claims, paper: dict) -> list[str]:
    """One line per paper number of a claim (a figure's claim has none) that differs from its cell in the
    paper's table (through `claim_source`), or whose claim names no known cell."""
    out = []
    for claim in claims:
        if not claim.paper:
            continue
        try:
            table, column = claim_source(claim)
        except KeyError:
            out.append(f"{claim.name}: no paper cell known for {claim.table}, {claim.benchmark!r}")
            continue
        for variant, ours in claim.paper.items():
            printed = (glue_from_paper(paper, variant, column) if table == "glue"
                       else paper_cell(paper, table, variant, column))
            if printed != ours:
                out.append(f"{claim.name} {variant}: the claim {ours!r}, the paper's {table} {column} {printed!r}")
    return out
