"""Long Range Arena (the journal version's LRA results; Tay et al. 2020): ListOps at LRA's lengths with
a word-level vocabulary, byte-level text classification of long documents, and an image as a pixel
sequence, for the Transformer (V), LRA's Synthesizer (R+V) and Linformer. Retrieval and Pathfinder
are listed as not available.

Byte-level text: LRA reads IMDB reviews as bytes (up to 4K; its released configs cut at 1,000). The
longest real documents reachable here are the Linux man pages' DESCRIPTION sections (median ~300
words, ~2 KB; some over 30 KB): the task is to tell a page's manual section from its description
bytes (1 user commands, 2 system calls, 3 library functions, 4 devices, 5 file formats, 7 overviews,
8 administration), with the manpages-summ split (by page name). The sentiment sentences (~100 bytes)
and fortunes (~150 bytes) are too short to be a long-range task.
"""
from __future__ import annotations

import json
from pathlib import Path

from .common import Grid, Section, Spec, budget_model, budget_train, fmt, grid_section, markdown_table, per_budget
from ..integrity import atomic_write_text

VARIANTS = ("V", "R+V", "linformer")
TEXT_DATA = "data/manpages-section"  # under the run folder

SPEC = Spec(
    name="lra",
    reproduces="Long Range Arena: ListOps, byte-level Text, Image (Transformer vs Synthesizer R+V vs Linformer)",
    data="listops-lra (generated with LRA's algorithm, 500-2000 tokens, word vocabulary); man page DESCRIPTION "
         "bytes -> manual section (text); Fashion-MNIST as 784-pixel sequences (image)",
    variants=", ".join(VARIANTS),
    minutes={"smoke": "< 1 min", "cpu": "~30 min", "gpu": "~3 h"},
    seeds={"smoke": 1, "cpu": None, "gpu": None},
    sources=("listops-lra", "manpages-summ", "fashion-mnist"),
    tables=("LRA",),
    differences="LRA trains 4-layer models for 5k-35k steps on 96k ListOps trees, 25k IMDB reviews and 50k "
                "CIFAR-10 images (1,024 grey pixels); here tiny encoders for a few hundred steps on a few thousand "
                "ListOps trees (cut to 1,024 tokens at cpu), man page descriptions (1,024 bytes at cpu, 4,096 at "
                "gpu) and Fashion-MNIST (784 pixels). The cpu budget is far from convergence: LRA's own numbers "
                "sit near chance on ListOps (~37%), so gaps here say little.",
    extra_claims=(("lra-text-rv-close-v", "LRA", "Synthesizer close to the Transformer on byte-level Text "
                                                 "(61.68 vs 64.27)"),
                  ("lra-retrieval", "LRA", "Retrieval (AAN, byte-level document matching): not available"),
                  ("lra-pathfinder", "LRA", "Pathfinder (32x32 path images): not available")),
)


def text_claim():
    from ..claims import Claim
    from ..reference_results import LRA

    return Claim("lra-text-rv-close-v", "LRA", ("classify",), "LRA Text acc.", "accuracy", False, "R+V", ("V",),
                 "within", 0.05, {k: LRA[k]["text"] for k in ("R+V", "V")},
                 "Synthesizer close to the Transformer on byte-level Text (61.68 vs 64.27)")


def grids(budget: str, out: Path) -> list[Grid]:
    common = dict(eval_every=per_budget(budget, 0, 100, 500), batch_size=per_budget(budget, 4, 8, 32))
    listops_len = per_budget(budget, 32, 1024, 2048)
    text_len = per_budget(budget, 32, 1024, 4096)
    steps = per_budget(budget, 2, 300, 5000)
    return [
        Grid("listops", "ListOps at LRA lengths (word vocabulary)", "classify", "listops-lra", VARIANTS,
             budget_train(budget, task="classify", data="listops-lra", tokenizer="word", seq_len=listops_len,
                          steps=steps, **common, **per_budget(budget, {}, dict(max_examples=4000), {})),
             budget_model(budget, max_seq_len=listops_len, linformer_k=per_budget(budget, 8, 32, 32)),
             kind="lra-listops",
             note=f"Trees of 500-2000 symbols, one id per symbol; cut to {listops_len} tokens at this budget "
                  "(the answer depends on the whole tree, so cut trees are harder). 10 classes."),
        Grid("text", "Byte-level text: man page section from its DESCRIPTION", "classify", str(out / TEXT_DATA),
             VARIANTS,
             budget_train(budget, task="classify", data=str(out / TEXT_DATA), tokenizer="byte", seq_len=text_len,
                          steps=steps, **common),
             budget_model(budget, max_seq_len=text_len, linformer_k=per_budget(budget, 8, 32, 32)), kind="classify",
             note=f"Bytes of the page's DESCRIPTION (first {text_len}) -> its manual section; stands in for LRA's "
                  "byte-level IMDB."),
        Grid("image", "Image: Fashion-MNIST as a pixel sequence", "classify", "fashion-mnist", VARIANTS,
             budget_train(budget, task="classify", data="fashion-mnist", tokenizer="byte",
                          seq_len=per_budget(budget, 32, 784, 784), steps=steps, **common,
                          **per_budget(budget, {}, dict(max_examples=20000), {})),
             budget_model(budget, max_seq_len=per_budget(budget, 32, 784, 784),
                          linformer_k=per_budget(budget, 8, 32, 32)),
             kind="lra-image",
             note="784 pixel values, one byte token each, row by row; 10 classes (LRA: CIFAR-10 in grey, 1,024)."),
    ]


def write_text_data(folder: Path) -> dict:
    """The byte-level text task as train/valid/test JSONL (text = DESCRIPTION, label = manual section),
    split as manpages-summ (by page name). Returns the class counts of the training split."""
    from ..data.sources import load_source
    from ..data.sources.manpages import summary_pairs

    if (folder / "test.jsonl").exists():
        return json.loads((folder / "counts.json").read_text())
    pairs, _ = summary_pairs()
    desc = {page: d for page, d, _ in pairs}
    ids = load_source("manpages-summ", "seq2seq").meta["ids"]
    folder.mkdir(parents=True, exist_ok=True)
    counts = {}
    for split in ("train", "valid", "test"):
        lines = []
        for page in ids[split]:
            section = page.rsplit(".", 1)[-1][:1]
            if section.isdigit():
                lines.append(json.dumps({"text": desc[page], "label": section}, ensure_ascii=False))
                if split == "train":
                    counts[section] = counts.get(section, 0) + 1
        atomic_write_text(folder / f"{split}.jsonl", "\n".join(lines) + "\n")
    atomic_write_text(folder / "counts.json", json.dumps(counts, sort_keys=True))
    return counts


def lra_table(sections_rows: dict) -> str:
    from ..reference_results import LRA

    head = ["model"] + [f"ours: {t}" for t in ("ListOps", "Text", "Image")] + \
           [f"LRA: {t}" for t in ("ListOps", "Text", "Retrieval", "Image", "Pathfinder")]
    rows = []
    for v in VARIANTS:
        ours = [fmt((sections_rows.get(k, {}).get(v) or {}).get("accuracy")) for k in ("listops", "text", "image")]
        paper = [fmt(LRA.get(v, {}).get(k)) for k in ("listops", "text", "retrieval", "image", "pathfinder")]
        rows.append([v] + ours + paper)
    return (markdown_table(head, rows) + "\n\nRetrieval (AAN document pairs) and Pathfinder (path images): not "
            "available here; no real source for either is reachable from the package registries, and a generated "
            "Pathfinder was not built.")


def run(ctx):
    from ..claims import judge
    from .common import short_finding

    counts = write_text_data(ctx.out / TEXT_DATA)
    sections, accuracy = [], {}
    text_found = None
    for grid in grids(ctx.budget, ctx.out):
        results = ctx.run_grid(grid)
        accuracy[grid.key] = {r["variant"]: r["metrics"] for r in results["variants"]}
        extra = ""
        if grid.key == "text":
            extra = "Training pages per section: " + ", ".join(f"{k}: {n}" for k, n in sorted(counts.items()))
            text_found = judge(text_claim(), results["variants"])
        sections.append(grid_section(grid, results, SPEC.tables, extra))
    summary = Section("LRA table", "Our accuracy (%) beside LRA's:\n\n" + lra_table(accuracy))
    extra = []
    if text_found:
        extra.append({"claim": "lra-text-rv-close-v", "table": "LRA", "text": text_found["text"],
                      "status": text_found["status"], "detail": short_finding(text_found)})
    for cid, table, text in SPEC.extra_claims[1:]:
        extra.append({"claim": cid, "table": table, "text": text, "status": "not available",
                      "detail": "no data source for it here"})
    summary.extra = extra
    return sections + [summary], []
