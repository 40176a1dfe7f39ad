"""``debian-descriptions``, summarization: a Debian binary package's long description -> its one-line
synopsis (the first line of the ``Description:`` field), e.g. "GNU Awk is a text processing
language ..." -> "GNU awk, a pattern scanning and processing language".

Like man page DESCRIPTION -> NAME line (``manpages-summ``), a real abstractive pair written by one
author, but with tens of thousands of items instead of ~1,000: the whole archive's index of one
release. Where the text is read (apt's index files, RFC 822 stanzas):

- ``*_Packages`` (one stanza per binary package): Package, Source (the source package, "NAME" or
  "NAME (VERSION)"; absent when it equals Package), Description (the synopsis; in Debian's archive
  since 2012 only the synopsis) and Description-md5 (the md5 of the full English description);
- ``*_i18n_Translation-en``: Description-md5 and Description-en, the full description (synopsis line
  plus the long description), which Debian ships apart from Packages. A long description written
  in the Packages stanza itself (other archives) is used as it is.

Debian docker images set ``Acquire::Languages "none"``, so their ``/var/lib/apt/lists`` has Packages
but no Translation-en: ``synthformer data prepare debian-descriptions`` then runs apt's own
``apt-get update`` with ``Acquire::Languages=en`` into ``<cache>/apt-lists`` (the machine's lists
and apt's cache are left alone). A folder is used when it holds both kinds of file: /var/lib/apt/lists
first, else the cache. Files are decompressed with ``apt-helper cat-file`` (ships with apt, reads
every compression apt writes), else Python's gzip / lzma / bz2.

The long description follows Debian policy 5.6.13: a line " ." is a paragraph break, lines starting
with two spaces are verbatim (kept as their own line, bullet markers included), other lines are
wrapped text (joined with spaces). Paragraphs and verbatim lines are separated by newlines.

Cleaning (counts in ``meta["dropped"]``): one entry per package name (a package in several suites:
the one of the smallest (synopsis, text)); packages without a long description or whose long
description has fewer than `MIN_WORDS` words (transitional and dummy packages, most -dbg) are
dropped; identical long descriptions (lower case, letters and digits) are kept once, for the package
name that sorts first (-dev/-doc siblings often share one). Items are ordered by package name, so
the archive's order is irrelevant. Split 90/5/5 by SHA-1 of the source package (`split_by_group`),
so sibling binaries of one source, which share most of their text, never straddle two splits.
"""
from __future__ import annotations

import bz2
import functools
import gzip
import json
import lzma
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ...utils.integrity import atomic_write_text
from ..prepare import DataError, SourceNotInstalledError, cache_dir
from .base import Source, capped, digest, split_by_group
from .manpages import _lead, _normalise

NAME = "debian-descriptions"
SYSTEM_LISTS = Path("/var/lib/apt/lists")
CACHE_LISTS = "apt-lists"  # below the data cache: where `prepare` has apt-get update write
APT_HELPER = Path("/usr/lib/apt/apt-helper")
MIN_WORDS = 20  # long descriptions with fewer words are dropped (transitional / dummy packages)
PARSER_VERSION = 2  # bump when the parsing or cleaning changes: the parsed cache is keyed on it
_COMPRESSED = r"(?:\.(?:gz|xz|lz4|bz2|zst|lzma))?$"
_PACKAGES = re.compile(r"_Packages" + _COMPRESSED)
_TRANSLATION = re.compile(r"_i18n_Translation-en" + _COMPRESSED)
_PYTHON_OPENERS = {".gz": gzip.open, ".xz": lzma.open, ".lzma": lzma.open, ".bz2": bz2.open}


@dataclass(frozen=True)
class Entry:
    """One binary package's description."""

    package: str  # binary package name, e.g. "gawk"
    source: str  # its source package (the split group), e.g. "gawk"
    synopsis: str  # the Description's first line: the summary
    text: str  # the long description: paragraphs and verbatim lines separated by "\n"


# ----------------------------------------------------------------------------- reading the index
def read_index_file(path: Path, helper: Path | None = APT_HELPER) -> str:
    """The text of an apt index file, plain or compressed: with ``apt-helper cat-file`` when `helper`
    exists, else Python's gzip / lzma / bz2 by suffix (plain when there is none)."""
    path = Path(path)
    if helper is not None and Path(helper).exists():
        res = subprocess.run([str(helper), "cat-file", str(path)], capture_output=True)
        if res.returncode != 0:
            err = res.stderr.decode("utf-8", "replace").strip().splitlines() or ["?"]
            raise DataError(f"cannot read apt index {path}: apt-helper cat-file failed ({err[-1]})")
        return res.stdout.decode("utf-8", "replace")
    if path.suffix in _PYTHON_OPENERS:
        with _PYTHON_OPENERS[path.suffix](path, "rt", encoding="utf-8", errors="replace") as f:
            return f.read()
    if path.suffix in (".lz4", ".zst"):
        raise DataError(f"cannot read {path}: {path.suffix} files need {APT_HELPER} (install apt)")
    return path.read_text(encoding="utf-8", errors="replace")


def stanzas(text: str) -> Iterator[dict[str, str]]:
    """RFC 822 stanzas (blank lines between them) as {field: value}: a value is the text after
    "Field:" on its line (stripped), then each continuation line (one starting with a space or a
    tab) on a line of its own, as written (leading space kept)."""
    for block in re.split(r"\n[ \t]*\n", text.replace("\r\n", "\n")):
        fields: dict[str, str] = {}
        key = None
        for line in block.split("\n"):
            if not line.strip() or line.startswith("#"):
                continue
            if line[0] in " \t":
                if key is not None:
                    fields[key] += "\n" + line
            elif ":" in line:
                key, value = line.split(":", 1)
                fields[key] = value.strip()
        if fields:
            yield fields


def long_description(continuation: list[str]) -> str:
    """The long description of a Description field's continuation lines (each with its leading
    space): " ." breaks paragraphs, lines starting with two spaces stay verbatim (own line),
    others are wrapped text joined with spaces (runs of spaces collapsed). Paragraphs and verbatim lines joined by newlines."""
    out: list[str] = []
    para: list[str] = []
    for line in continuation:
        body = line[1:] if line[:1] in " \t" else line
        if body.strip() == ".":
            out.append(" ".join(para))
            para = []
        elif body[:1] in " \t":  # verbatim
            out.append(" ".join(para))
            out.append(" ".join(body.split()))
            para = []
        else:
            para.append(" ".join(body.split()))
    out.append(" ".join(para))
    return "\n".join(p for p in out if p)


def _split_description(value: str) -> tuple[str, str]:
    """(synopsis, long description) of a Description field value (the synopsis's spaces collapsed)."""
    first, *rest = value.split("\n")
    return " ".join(first.split()), long_description(rest)


def read_entries(packages: list[Path], translations: list[Path], helper: Path | None = APT_HELPER) -> list[Entry]:
    """Every binary package of the Packages files with a synopsis, its long description from its own
    stanza or else from the Translation-en files (by Description-md5), one per package name (the
    smallest (synopsis, text) when several files list it), sorted by package name."""
    english: dict[str, str] = {}
    for path in translations:
        for st in stanzas(read_index_file(path, helper)):
            if "Description-md5" in st and "Description-en" in st:
                english.setdefault(st["Description-md5"], st["Description-en"])
    best: dict[str, Entry] = {}
    for path in packages:
        for st in stanzas(read_index_file(path, helper)):
            name, value = st.get("Package"), st.get("Description")
            if not name or value is None:
                continue
            synopsis, text = _split_description(value)
            if not text and st.get("Description-md5") in english:
                text = _split_description(english[st["Description-md5"]])[1]
            if not synopsis:
                continue
            source = (st.get("Source") or name).split()[0]
            entry = Entry(name, source, synopsis, text)
            old = best.get(name)
            if old is None or (synopsis, text) < (old.synopsis, old.text):
                best[name] = entry
    return [best[n] for n in sorted(best)]


def clean(entries: list[Entry], min_words: int = MIN_WORDS) -> tuple[list[Entry], dict]:
    """The entries worth a pair, in package-name order, and counts of what was dropped: "no_long"
    (no long description), "short" (under `min_words` words), "duplicate" (the same long description,
    lower case letters and digits, as a package whose name sorts earlier)."""
    kept, seen = [], set()
    dropped = {"no_long": 0, "short": 0, "duplicate": 0}
    for e in sorted(entries, key=lambda e: e.package):
        key = _normalise(e.text)
        reason = ("no_long" if not e.text else "short" if len(e.text.split()) < min_words
                  else "duplicate" if key in seen else None)
        if reason:
            dropped[reason] += 1
            continue
        seen.add(key)
        kept.append(e)
    return kept, dropped


def split_entries(entries: list[Entry]) -> tuple[list[Entry], list[Entry], list[Entry]]:
    """90/5/5 by SHA-1 of the source package: every binary of one source lands in one split."""
    return split_by_group(entries, [e.source for e in entries])


# ----------------------------------------------------------------------------- where the index is
def index_files(folder: Path) -> tuple[list[Path], list[Path]]:
    """(Packages files, Translation-en files) in an apt lists folder, sorted by name."""
    if not folder.is_dir():
        return [], []
    names = sorted(p for p in folder.iterdir() if p.is_file())
    return [p for p in names if _PACKAGES.search(p.name)], [p for p in names if _TRANSLATION.search(p.name)]


def lists_folders() -> list[Path]:
    """Where the index is looked for, in order: apt's own lists, then the cache `prepare` fills."""
    return [SYSTEM_LISTS, cache_dir() / CACHE_LISTS]


def find_index() -> tuple[list[Path], list[Path]] | None:
    """The Packages and Translation-en files of the first folder holding both, else None."""
    for folder in lists_folders():
        packages, translations = index_files(folder)
        if packages and translations:
            return packages, translations
    return None


def installed() -> bool:
    """Whether an apt lists folder holds Packages and Translation-en files."""
    return find_index() is not None


def fetch(folder: Path) -> Path:
    """`apt-get update` with English descriptions into ``folder/apt-lists`` (idempotent): apt's
    lists and package caches elsewhere are untouched. Returns that folder."""
    lists = Path(folder) / CACHE_LISTS
    if all(index_files(lists)):
        print(f"{NAME}: index already in {lists}")
        return lists
    if shutil.which("apt-get") is None:
        raise SourceNotInstalledError(f"{NAME} needs apt's package index and apt-get is not here; copy "
                                      f"a Debian *_Packages and *_i18n_Translation-en file into {lists}")
    (lists / "partial").mkdir(parents=True, exist_ok=True)
    cmd = ["apt-get", "update", "-o", f"Dir::State::Lists={lists}", "-o", "Acquire::Languages=en",
           "-o", "Dir::Cache::pkgcache=", "-o", "Dir::Cache::srcpkgcache="]
    print("+ " + " ".join(cmd), flush=True)
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0 or not all(index_files(lists)):
        err = (res.stderr.strip().splitlines() or ["no Translation-en file was fetched"])[-1]
        raise SourceNotInstalledError(f"`apt-get update` into {lists} failed ({err}); run it as root, then retry")
    print(f"{NAME}: index written to {lists}")
    return lists


def _release_dates(files: list[Path]) -> dict[str, str]:
    """{suite (the file name up to "_dists_SUITE"): the Date of its InRelease or Release file}."""
    out = {}
    for suite in sorted({m.group(1) for p in files if (m := re.match(r"(.*?_dists_[^_]+)_", p.name))}):
        for release in (files[0].parent / f"{suite}_InRelease", files[0].parent / f"{suite}_Release"):
            if release.exists():
                date = re.search(r"^Date: (.*)$", release.read_text(encoding="utf-8", errors="replace"), re.M)
                out[suite] = date.group(1).strip() if date else "?"
                break
    return out


@functools.lru_cache(maxsize=1)
def pairs() -> tuple[tuple[Entry, ...], dict, dict]:
    """(kept entries, dropped counts, index info) of the index `find_index` picks; parsed once
    (seconds) and kept as JSON in ``<cache>/debian-descriptions/``, keyed by the files' paths, sizes
    and times and `PARSER_VERSION`."""
    found = find_index()
    if found is None:
        raise SourceNotInstalledError(f"data source {NAME!r} is not installed: no apt Packages + Translation-en "
                                      f"files; run `synthformer data prepare {NAME}`")
    packages, translations = found
    files = packages + translations
    stamp = [PARSER_VERSION, MIN_WORDS] + [(str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files]
    path = cache_dir() / NAME / f"pairs-{digest(json.dumps(stamp))[:16]}.json"
    if path.exists():
        rows, dropped, info = json.loads(path.read_text(encoding="utf-8"))
        return tuple(Entry(*r) for r in rows), dropped, info
    kept, dropped = clean(read_entries(packages, translations))
    info = {"folder": str(files[0].parent), "files": [p.name for p in files], "release_dates": _release_dates(files)}
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [[e.package, e.source, e.synopsis, e.text] for e in kept]
    atomic_write_text(path, json.dumps([rows, dropped, info], ensure_ascii=False))
    for stale in path.parent.glob("pairs-*.json"):  # parses of an older index
        if stale != path:
            stale.unlink(missing_ok=True)
    return tuple(kept), dropped, info


def load(task, max_examples, seed, max_words: int | None = None, **options):
    """(long description, synopsis) seq2seq pairs; ``max_words`` keeps the lead of each long
    description (its first that many words, paragraphs kept; default: whole). ``meta["counts"]``
    holds the pairs and source packages per split before any ``max_examples`` cap, ``meta["ids"]``
    each split's package names in example order, ``meta["dropped"]`` what the cleaning removed,
    ``meta["index"]`` the files read and their release dates."""
    if options:
        raise DataError(f"unknown {NAME} option(s) {sorted(options)}; valid: ['max_words']")
    if max_words is not None and (not isinstance(max_words, int) or isinstance(max_words, bool) or max_words < 1):
        raise DataError(f"{NAME} max_words must be a positive integer or None, got {max_words!r}")
    kept, dropped, info = pairs()
    whole = split_entries(list(kept))
    names = ("train", "valid", "test")
    counts = {n: {"pairs": len(s), "sources": len({e.source for e in s})} for n, s in zip(names, whole)}
    splits = capped(whole, max_examples, seed)
    meta = {"split": "90/5/5 by SHA-1 of the source package (Source: field, else the package name)",
            "counts": counts, "dropped": dict(dropped), "min_words": MIN_WORDS, "max_words": max_words,
            "index": info, "ids": {n: [e.package for e in s] for n, s in zip(names, splits)}}
    return tuple([(_lead(e.text, max_words), e.synopsis) for e in s] for s in splits), meta


DEBIAN_DESCRIPTIONS = Source(load, ("seq2seq",),
                             "Debian package descriptions: long description -> one-line synopsis (apt's index)",
                             (), installed, f"synthformer data prepare {NAME}", fetch=fetch)

