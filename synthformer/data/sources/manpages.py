"""Two tasks from the Linux manual pages (Debian `manpages` + `manpages-dev`, free licences):

- ``manpages-summ``, summarization: each page's DESCRIPTION section -> the one-line summary of its
  NAME section ("open, openat, creat \\- open and possibly create a file" -> "open and possibly
  create a file").
- ``manpages-section``, byte-level classification (the stand-in for LRA's byte-level IMDB): a window
  of a page's bytes -> the page's manual section (`load_sections`).

Why windows of whole pages, split by page (measured on manpages 6.03, Debian bookworm): the two
packages hold 1,100 pages that are not aliases, so whole pages as items give at most ~1,100 items
(with DESCRIPTION -> section and the 90/5/5 split, 52 test items: one item was 2 points). Their
DESCRIPTIONs hold 3.1 MB (~3,000 windows of 1 KB: 1,000 test items would take a third of the pages);
the whole pages (every section, headings included) 5.5 MB. Cut into 1,023-byte windows (a 1,024-token
model with its CLS slot) with pages split 60/10/30 (LRA's IMDB is 50/50 train/test), that is
3,314 / 500 / 1,711 items from 659 / 110 / 330 pages; the largest section is 37% of the training
items (2, system calls) and 34% of the test items (3, library functions), so no class dominates and
no cap is needed. Windows of one page share its label and style, so the items are not independent: the test
split has 330 pages behind its 1,711 windows. At 4,095-byte windows (the gpu budget's 4K) the pages
give 1,765 windows in all and 537 test items: 1,000 would take over half the pages, so at 4K the
test split stays under 1,000. The other long real text reachable here, the Bible (genre from a
chapter: 1,189 chapters, 4.1 MB per translation), has about as many independent documents and would
be a new task beside the grids' other Bible data; the sentiment sentences and fortunes are under 200
bytes.

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
from collections import Counter
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


PARSER_VERSION = 2  # bump when `roff` or `read_pages` changes what they extract: the cache is keyed on it


@functools.lru_cache(maxsize=1)
def read_pages() -> tuple[tuple[str, str, str, str], ...]:
    """Every page that is not an alias: (page name, NAME line, DESCRIPTION text, whole text), by page name.

    Aliases are skipped: symbolic links and ``.so`` pages. DESCRIPTION is the section of that name
    (or one containing it, as "SYNOPSIS AND DESCRIPTION"); pages without one are skipped. The whole
    text is every section in page order, each as its heading on a line of its own and its text.
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
            whole = "\n".join(f"{head}\n{body}" for head, body in secs.items())
            out.append((page_name(file), secs["NAME"], desc, whole))
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
    for page, name_line, desc, _ in read_pages():
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


# ----------------------------------------------------------------------------- byte-level section task
SECTION_FRACTIONS = (0.6, 0.1, 0.3)  # train, valid, test share of the pages (LRA's IMDB: 50/50 train/test)
SECTION_WINDOW = 1023  # bytes per item by default: a 1,024-token model with room for a CLS token
MIN_SECTION_PAGES = 5  # manual sections with fewer pages are left out (section 6: one page)


def page_section(page: str) -> str:
    """"3" for "printf.3" and "EOF.3const": the manual section (one digit) of a page name."""
    return page.rsplit(".", 1)[-1][:1]


def byte_windows(text: str, window: int) -> list[str]:
    """`text` cut into consecutive pieces of at most `window` UTF-8 bytes (`window` >= 4), from its
    start, each cut moved back to a character's start (no character is split or lost); the last piece
    is kept only when it holds at least half a window or is the only one."""
    data = text.encode("utf-8")
    out, start = [], 0
    while start < len(data):
        end = min(start + window, len(data))
        while end < len(data) and data[end] & 0xC0 == 0x80:  # a UTF-8 continuation byte: not a start
            end -= 1
        if out and end == len(data) and end - start < window // 2:
            break
        out.append(data[start:end].decode("utf-8"))
        start = end
    return out


def load_sections(task, max_examples, seed, window: int = SECTION_WINDOW, **options):
    """Byte-level classification: a window of `window` bytes of a page's whole text (every section,
    headings included) -> the page's manual section (the labels are the sections with at least
    `MIN_SECTION_PAGES` pages, e.g. "2", "3", "7"). Pages are split 60/10/30 by SHA-1 of the page
    name, then cut into windows (`byte_windows`), so no page has windows in two splits.
    ``meta["ids"]`` holds each item's page name, ``meta["counts"]`` the items per split and label.
    Encode with the ``byte`` tokenizer: an item is at most `window` tokens."""
    if options:
        raise DataError(f"unknown manpages-section option(s) {sorted(options)}; valid: ['window']")
    if not isinstance(window, int) or isinstance(window, bool) or window < 16:
        raise DataError(f"manpages-section window must be an integer number of bytes >= 16, got {window!r}")
    pages = [(page, whole) for page, _, _, whole in read_pages() if page_section(page).isdigit()]
    per_section = Counter(page_section(page) for page, _ in pages)
    labels = sorted(sec for sec, n in per_section.items() if n >= MIN_SECTION_PAGES)
    pages = [(page, whole) for page, whole in pages if page_section(page) in labels]
    splits = []
    for split in split_by_hash(pages, [page for page, _ in pages], SECTION_FRACTIONS):
        splits.append([(page, (piece, labels.index(page_section(page))))
                       for page, whole in split for piece in byte_windows(whole, window)])
    splits = capped(tuple(splits), max_examples, seed)
    names = ("train", "valid", "test")
    counts = {name: dict(sorted(Counter(labels[y] for _, (_, y) in s).items())) for name, s in zip(names, splits)}
    meta = {"labels": labels, "window": window, "packages": list(PACKAGES), "counts": counts,
            "split": "60/10/30 by SHA-1 of page name (e.g. 'open.2'), then windows of each page",
            "ids": {name: [page for page, _ in s] for name, s in zip(names, splits)}}
    return tuple([item for _, item in s] for s in splits), meta


MANPAGES_SUMM = Source(load, ("seq2seq",),
                       "Linux man pages: DESCRIPTION -> one-line NAME summary (Debian manpages, manpages-dev)",
                       PACKAGES, installed, "synthformer data prepare manpages-summ")
MANPAGES_SECTION = Source(load_sections, ("classify",),
                          "Linux man pages: a byte window of a page -> its manual section (Debian manpages, manpages-dev)",
                          PACKAGES, installed, "synthformer data prepare manpages-section")
