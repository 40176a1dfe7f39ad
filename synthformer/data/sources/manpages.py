"""Summarization from the Linux manual pages (Debian `manpages` + `manpages-dev`, free licences):
each page's DESCRIPTION section -> the one-line summary of its NAME section ("open, openat, creat
\\- open and possibly create a file" -> "open and possibly create a file").

The roff source is read with `synthformer.data.roff` (no groff needed). Pages are taken from the
package's own file list: system-wide when dpkg lists them and every listed file is there (Docker
images often exclude /usr/share/man), else from ``<cache>/debian/PACKAGE`` after
``synthformer data prepare manpages-summ``.
"""
from __future__ import annotations

import functools
import gzip
import json
import os
import re
from pathlib import Path

from .. import roff
from ..prepare import MARKER, DataError, SourceNotInstalledError, cache_dir, package_root
from .base import Source, capped, digest, split_by_hash

PACKAGES = ("manpages", "manpages-dev")
DPKG_INFO = Path("/var/lib/dpkg/info")  # dpkg's per-package file lists (PACKAGE.list)
MIN_WORDS = 8  # shorter DESCRIPTIONs are dropped as too small to summarize
_PAGE = re.compile(r"usr/share/man/man[1-9]/[^/]+$")  # English pages only (not usr/share/man/de/...)
_NAME_SPLIT = re.compile(r"\s+-+\s+")  # "names \- summary" (\- already turned into "-")
_POINTER = re.compile(r"^(?:see|this page|these functions are (?:described|documented) in)\b", re.I)
_POINTER_MAX_WORDS = 20  # a description that only points elsewhere ("See X") is at most this long


def _page_files(package: str) -> list[Path] | None:
    """The English man page files of `package` (system-wide, else the cache); None if absent."""
    listing = DPKG_INFO / f"{package}.list"
    if listing.exists():
        paths = [Path(p) for p in listing.read_text().split("\n") if _PAGE.search(p)]
        if paths and all(p.exists() or p.is_symlink() for p in paths):
            return sorted(paths)
    root = package_root(package)
    if (root / MARKER).exists():
        return sorted(p for p in (root / "usr/share/man").glob("man[1-9]/*") if _PAGE.search(p.as_posix()))
    return None


def installed() -> bool:
    """Whether every package's pages are here."""
    return all(_page_files(p) is not None for p in PACKAGES)


def _read(path: Path) -> str:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        return f.read()


def page_name(path: Path) -> str:
    """"open.2" for .../man2/open.2.gz."""
    return path.name[:-3] if path.name.endswith(".gz") else path.name


PARSER_VERSION = 1  # bump when `roff` or `read_pages` changes what they extract: the cache is keyed on it


@functools.lru_cache(maxsize=1)
def read_pages() -> tuple[tuple[str, str, str], ...]:
    """Every page that is not an alias: (page name, NAME line, DESCRIPTION text), by page name.

    Aliases are skipped: symbolic links and ``.so`` pages. DESCRIPTION is the section of that name
    (or one containing it, as "SYNOPSIS AND DESCRIPTION"); pages without one are skipped.
    Parsed once (seconds) and kept as JSON in ``<cache>/manpages/``, keyed by the files' names,
    sizes and times and `PARSER_VERSION`.
    """
    files = []
    for package in PACKAGES:
        found = _page_files(package)
        if found is None:
            raise SourceNotInstalledError(f"Debian package {package} is not installed; "
                                          "run `synthformer data prepare manpages-summ`")
        files.extend(p for p in found if not p.is_symlink())
    stamp = [PARSER_VERSION] + [(p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in files]
    path = cache_dir() / "manpages" / f"pages-{digest(json.dumps(stamp))[:16]}.json"
    if path.exists():
        return tuple(tuple(row) for row in json.loads(path.read_text(encoding="utf-8")))
    out = []
    for file in files:
        text = _read(file)
        if roff.is_alias(text):
            continue
        secs = roff.sections(text)
        desc = secs.get("DESCRIPTION") or next((v for k, v in secs.items() if "DESCRIPTION" in k), "")
        if secs.get("NAME") and desc:
            out.append((page_name(file), secs["NAME"], desc))
    out.sort()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(out, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)
    return tuple(out)


def _normalise(text: str) -> str:
    return " ".join(re.sub(r"[\W_]+", " ", text.lower()).split())


@functools.lru_cache(maxsize=1)
def summary_pairs() -> tuple[tuple[tuple[str, str, str], ...], dict]:
    """(page, description, summary) for every usable page, and counts of what was dropped.

    Dropped: NAME lines without "names - summary"; descriptions under `MIN_WORDS` words or ones
    that only point elsewhere ("See ..."); a summary or description equal (lower case, letters
    and digits) to one of an earlier page (by name), so each summary and document appears once.
    """
    kept, seen_summ, seen_desc = [], set(), set()
    dropped = {"no_summary": 0, "tiny": 0, "pointer": 0, "duplicate_summary": 0, "duplicate_description": 0}
    for page, name_line, desc in read_pages():
        parts = _NAME_SPLIT.split(name_line, maxsplit=1)
        summary = parts[1].strip() if len(parts) == 2 else ""
        n_words = len(desc.split())
        reason = ("no_summary" if not summary else "tiny" if n_words < MIN_WORDS
                  else "pointer" if _POINTER.match(desc) and n_words <= _POINTER_MAX_WORDS
                  else "duplicate_summary" if _normalise(summary) in seen_summ
                  else "duplicate_description" if _normalise(desc) in seen_desc else None)
        if reason:
            dropped[reason] += 1
            continue
        seen_summ.add(_normalise(summary))
        seen_desc.add(_normalise(desc))
        kept.append((page, desc, summary))
    return tuple(kept), dropped


def load(task, max_examples, seed, max_words: int | None = None, **options):
    """Manual pages as (DESCRIPTION, one-line summary) seq2seq pairs.

    Paragraphs of the description are separated by newlines; ``max_words`` keeps only the first
    that many words of each description (a lead, as news summarization truncates articles; the
    default keeps them whole: a median of about 300 words, some over 5,000). Split 90/5/5 by SHA-1
    of the page name ("open.2"); ``meta["ids"]`` holds each split's page names in example order,
    ``meta["dropped"]`` what the filters removed.
    """
    if options:
        raise DataError(f"unknown manpages-summ option(s) {sorted(options)}; valid: ['max_words']")
    if max_words is not None and (not isinstance(max_words, int) or max_words < 1):
        raise DataError(f"manpages-summ max_words must be a positive integer or None, got {max_words!r}")
    pairs, dropped = summary_pairs()
    items = [(page, (_lead(desc, max_words), summ)) for page, desc, summ in pairs]
    splits = capped(split_by_hash(items, [p for p, _ in items]), max_examples, seed)
    meta = {"split": "90/5/5 by SHA-1 of page name (e.g. 'open.2')", "dropped": dict(dropped),
            "max_words": max_words, "packages": list(PACKAGES),
            "ids": {name: [p for p, _ in s] for name, s in zip(("train", "valid", "test"), splits)}}
    return tuple([pair for _, pair in s] for s in splits), meta


def _lead(text: str, max_words: int | None) -> str:
    if max_words is None:
        return text
    out, n = [], 0
    for para in text.split("\n"):
        words = para.split()
        if n + len(words) >= max_words:
            out.append(" ".join(words[:max_words - n]))
            break
        out.append(para)
        n += len(words)
    return "\n".join(p for p in out if p)


MANPAGES_SUMM = Source(load, ("seq2seq",),
                       "Linux man pages: DESCRIPTION -> one-line NAME summary (Debian manpages, manpages-dev)",
                       PACKAGES, installed, "synthformer data prepare manpages-summ")
