"""Reading SWORD Bible modules (Debian `sword-text-*` packages) with `pysword`.

Verses are read one reference at a time (so empty verses never shift the alignment), the OSIS
markup is stripped with our own cleaner (footnotes, titles and Strong's tags removed; pysword's
cleaner glues words around footnotes, e.g. "Godcreated"), and each verse is keyed by
(OSIS book name, chapter, verse). Modules sharing a versification (KJV and RV1909 both use
"kjv") therefore align verse by verse.
"""
from __future__ import annotations

import functools
import html
import re
from pathlib import Path

# One verse: ((book, chapter, verse), text)
VerseKey = tuple[str, int, int]

_NOTE = re.compile(r"<note\b[^>]*>.*?</note>", re.S)
_TITLE = re.compile(r"<title\b[^>]*>.*?</title>", re.S)
_TAG = re.compile(r"<[^>]+>")
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([,.;:!?])")
_WS = re.compile(r"\s+")


def clean_osis(raw: str) -> str:
    """Strip OSIS markup from one verse: footnotes and headings dropped, tags removed, text kept."""
    text = _NOTE.sub(" ", raw)
    text = _TITLE.sub(" ", text)
    text = _TAG.sub("", text)
    text = html.unescape(text).replace("\u00b6", " ")  # pilcrow paragraph marks
    text = _WS.sub(" ", text)
    return _SPACE_BEFORE_PUNCT.sub(r"\1", text).strip()


def _open_module(sword_root: Path, module: str):
    from pysword.modules import SwordModules  # imported lazily: only Bible sources need it

    mods = SwordModules(str(sword_root))
    found = mods.parse_modules()
    if module not in found:
        raise KeyError(f"SWORD module {module!r} not found in {sword_root} (have: {sorted(found)})")
    bible = mods.get_bible_from_module(module)
    # pysword decompresses a whole block (a book) for every verse; keep the last few blocks.
    if hasattr(bible, "_decompressed_text"):
        bible._decompressed_text = functools.lru_cache(maxsize=8)(bible._decompressed_text)
    return bible


@functools.lru_cache(maxsize=4)
def read_verses(sword_root: str, module: str) -> tuple[tuple[VerseKey, str], ...]:
    """All non-empty verses of a module in canonical order, markup stripped. Cached per process."""
    bible = _open_module(Path(sword_root), module)
    structure = bible.get_structure()
    out = []
    for testament, books in structure.get_books().items():
        for book in books:
            for chapter in range(1, book.num_chapters + 1):
                idx = structure.ref_to_indicies(books=[book.name], chapters=[chapter])
                indices = idx.get(testament, [])
                for verse, index in enumerate(indices, start=1):
                    raw = bible._text_for_index(testament, index)
                    text = clean_osis(raw or "")
                    if text:
                        out.append(((book.osis_name, chapter, verse), text))
    return tuple(out)
