"""Debian `fortunes` + `fortunes-min` cookie files: topic classification and an lm corpus."""
from __future__ import annotations

import re
from pathlib import Path

from ..prepare import SourceNotInstalledError, find_package_file
from .base import Source, capped, no_options, packages_installed, split_by_hash

PACKAGES = {"fortunes-min": "riddles", "fortunes": "computers"}  # package -> a file it ships


def _dirs() -> list[Path]:
    dirs = []
    for package, probe in PACKAGES.items():
        found = find_package_file(package, f"usr/share/games/fortunes/{probe}")
        if found is None:
            raise SourceNotInstalledError(f"Debian package {package} is not installed")
        dirs.append(found.parent)
    return dirs


def read_fortunes() -> dict[str, list[str]]:
    """category -> items (lines of '%' separate items); .dat indexes and .u8 links skipped."""
    cats: dict[str, list[str]] = {}
    for d in _dirs():
        for path in sorted(d.iterdir()):
            if path.suffix in (".dat", ".u8") or path.is_symlink() or not path.is_file():
                continue
            text = path.read_text(encoding="utf-8", errors="replace").replace("\r\n", "\n")
            items, cur = [], []
            for line in text.split("\n"):
                if line.strip() == "%":
                    items.append("\n".join(cur).strip("\n"))
                    cur = []
                else:
                    cur.append(line.rstrip())
            items.append("\n".join(cur).strip("\n"))
            cats.setdefault(path.name, []).extend(i for i in items if i.strip())
    return cats


# Files that do not name a subject, so they cannot be topic classes (kept for lm).
FORTUNE_NOT_TOPICS = {
    "cookie": "grab-bag", "miscellaneous": "grab-bag", "fortunes": "grab-bag",
    "ascii-art": "pictures, not text", "translate-me": "mostly not English",
    "knghtbrd": "one person's quote collection", "zippy": "one comic character's lines",
    "humorists": "quotes by humorists on anything", "pratchett": "one author's quotes",
    "definitions": "a form (mock dictionary entries) on any subject", "riddles": "a form",
    "platitudes": "a form", "songs-poems": "a form", "paradoxum": "a form",
    "goedel": "a form (self-referential sentences)", "disclaimer": "a form",
}
FORTUNE_MERGE = {"linuxcookie": "linux"}  # the same subject under two file names
FORTUNE_MIN_ITEMS = 50  # topic classes with fewer items (after de-duplication) are dropped
_NON_WORD = re.compile(r"[\W_]+")


def normalise(text: str) -> str:
    """Lower case, letters and digits only, single spaces: near-duplicates compare equal."""
    return _NON_WORD.sub(" ", text.lower()).strip()


def fortune_classes() -> tuple[list[str], list[tuple[str, int]], dict]:
    """The topic classes of `fortunes`: (labels, [(text, label_id)], stats).

    Files in `FORTUNE_NOT_TOPICS` are left out and `FORTUNE_MERGE` folds file names together;
    an item whose normalised text appears under two labels is dropped everywhere, one under a
    single label is kept once; labels with fewer than `FORTUNE_MIN_ITEMS` items are dropped.
    """
    by_label: dict[str, dict[str, str]] = {}
    for name, items in read_fortunes().items():
        if name in FORTUNE_NOT_TOPICS:
            continue
        label = FORTUNE_MERGE.get(name, name)
        for text in items:
            by_label.setdefault(label, {}).setdefault(normalise(text), text)
    owners: dict[str, set] = {}
    for label, items in by_label.items():
        for key in items:
            owners.setdefault(key, set()).add(label)
    shared = {k for k, labs in owners.items() if len(labs) > 1}
    kept = {lab: [t for k, t in items.items() if k not in shared] for lab, items in by_label.items()}
    small = sorted(lab for lab, items in kept.items() if len(items) < FORTUNE_MIN_ITEMS)
    labels = sorted(lab for lab in kept if lab not in small)
    examples = [(t, i) for i, lab in enumerate(labels) for t in kept[lab]]
    stats = {"dropped_files": sorted(FORTUNE_NOT_TOPICS), "merged": FORTUNE_MERGE,
             "dropped_small": small, "dropped_shared_items": len(shared),
             "sizes": {lab: len(kept[lab]) for lab in labels}}
    return labels, examples, stats


def load(task, max_examples, seed, **options):
    """Debian `fortunes` + `fortunes-min` cookie files (items separated by lines holding only '%').

    classify: topic classes only, label = the file (topic) name. Left out: files that name no
    subject (`FORTUNE_NOT_TOPICS`: grab-bags such as cookie and miscellaneous, ascii-art, files
    named after a person, and forms such as definitions or riddles); linuxcookie is merged into
    linux; items whose normalised text (lower case, letters and digits) appears under two topics
    are dropped from both; topics with fewer than 50 items are dropped (magic, 30 items).
    25 topics remain: computers, people, politics, work, science, ... (``meta["labels"]``,
    ``meta["sizes"]``). lm: every file, one document per item, normalised duplicates kept once.
    Split 90/5/5 by SHA-1 of the item text.
    """
    no_options("fortunes", options)
    meta: dict = {"split": "90/5/5 by SHA-1 of item text"}
    if task == "classify":
        labels, items, stats = fortune_classes()
        meta.update(labels=labels, **stats)
        splits = split_by_hash(items, [t for t, _ in items])
    else:
        seen, docs = set(), []
        for items in read_fortunes().values():
            for text in items:
                if normalise(text) not in seen:
                    seen.add(normalise(text))
                    docs.append(text)
        splits = split_by_hash(docs, docs)
    return capped(splits, max_examples, seed), meta


FORTUNES = Source(load, ("classify", "lm"),
                  "fortune cookies, label = category file (Debian fortunes + fortunes-min)", tuple(PACKAGES),
                  packages_installed(*((p, f"usr/share/games/fortunes/{f}") for p, f in PACKAGES.items())),
                  "synthformer data prepare fortunes")
