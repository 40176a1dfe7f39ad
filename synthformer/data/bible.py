"""Reading SWORD Bible modules (Debian `sword-text-*` packages) with `pysword`, and aligning them.

Verses are read one slot at a time (so empty verses never shift the alignment) and keyed by
(OSIS book name, chapter, verse) of the module's slot grid. Markup is stripped by our own cleaner:

- footnotes dropped; where markup stood between two words a space is put (the Reina-Valera module
  abuts ``<w>`` and ``<transChange>`` elements: "entrado</w><transChange>Jesús" is "entrado
  Jesús"), except before an enclitic pronoun continuing a verb ("sáca" + "lo" is "sácalo");
- headings, both sides or neither: canonical psalm titles are kept (KJV marks them
  ``<title canonical="true">``, Reina-Valera has them as plain verse text; in Hebrew they are verse
  text); the Psalm 119 acrostic letters ("ALEPH.", "BETH.") and the epistle subscriptions
  ("Written to the Romans from Corinthus...") are dropped from both.

Versification. pysword reads ``Versification=`` from the module's .conf and has the canons'
chapter lengths, but not SWORD's versification mapping tables. Both modules used here declare
``Versification=KJV``, yet the Reina-Valera 1909 text (``spaRV1909eb``) numbers some chapters its
own way (mostly the Hebrew chapter divisions) and was poured into the KJV grid verse by verse: RV
verse n sits in KJV slot n, the verses of an RV chapter longer than KJV's are merged into the
chapter's last slot, and slots past the end of a shorter RV chapter are empty. `VERSIFICATIONS`
lists, for every chapter where RV's numbering differs, what each RV verse is in KJV references
(checked verse by verse against the Strong's numbers both modules carry; see the tests).
`align` then keeps only 1:1 pairs: one RV verse in the slot, the whole of one KJV verse, and no
other RV verse holding part of that KJV verse.
"""
from __future__ import annotations

import functools
import html
import re
from pathlib import Path

# One verse: ((book, chapter, verse), text)
VerseKey = tuple[str, int, int]

_NOTE = re.compile(r"<note\b[^>]*>.*?</note>", re.S)
_HEADING = re.compile(r"<title\b(?![^>]*canonical=\"true\")[^>]*>.*?</title>", re.S)  # non-canonical
_TAG = re.compile(r"<[^>]+>")
# Markup between two word characters (the words around it are looked up for the enclitic check).
_TAGS_BETWEEN_WORDS = re.compile(r"(?<=\w)(?:<[^>]+>)+(?=\w)")
_WORD_BEFORE = re.compile(r"\w+$")
_WORD_AFTER = re.compile(r"\w+")
_ENCLITIC = re.compile(r"(?:me|te|se|nos|os|lo|la|le|los|las|les)+")
_VERB_BEFORE_ENCLITIC = re.compile(r".*(?:[^n]ar|er|ir|ír|ad|ed|id|ndo)|.*[áéíóú].*[^áéíóú]")
_NOT_VERBS = {"ejército", "cuánto"}  # the only non-verbs the rule above matches in RV 1909
ACROSTIC = ("ALEPH BETH GIMEL DALETH HE VAU ZAIN CHETH TETH JOD CAPH LAMED MEM NUN SAMECH AIN PE "
            "TZADDI COPH RESH SIN TAU").split()  # Psalm 119's letter headings, as RV 1909 spells them
_ACROSTIC = re.compile(r"^(?:%s)\.?\s+" % "|".join(ACROSTIC))
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([,.;:!?])")
_WS = re.compile(r"\s+")


def _join_words(m: re.Match) -> str:
    """Markup between two words: a space, unless it is "verb" + enclitic pronoun in Spanish."""
    if "transChange" not in m.group():  # markup inside one word (KJV "give</w>n"): keep it whole
        return ""
    left = _WORD_BEFORE.search(m.string, 0, m.start()).group()
    right = _WORD_AFTER.match(m.string, m.end()).group()
    if (_ENCLITIC.fullmatch(right) and _VERB_BEFORE_ENCLITIC.fullmatch(left)
            and left.lower() not in _NOT_VERBS):
        return ""
    return " "


def clean_osis(raw: str) -> str:
    """Strip OSIS markup from one verse: footnotes and non-canonical headings dropped, a space
    where markup separated two words, canonical psalm titles kept as text."""
    text = _NOTE.sub(" ", raw)
    text = _HEADING.sub(" ", text)
    text = _TAGS_BETWEEN_WORDS.sub(_join_words, text)
    text = _TAG.sub("", text)
    text = html.unescape(text).replace("\u00b6", " ")  # pilcrow paragraph marks
    text = _WS.sub(" ", text)
    return _SPACE_BEFORE_PUNCT.sub(r"\1", text).strip()


# The last verse of each epistle carrying a subscription ("Written to the Romans from Corinthus").
# KJV holds it as a <title> (dropped by clean_osis); Reina-Valera as verse text after "Amén.".
_SUBSCRIPTION = re.compile(r"(Amén\.)\s.*$", re.S)
SUBSCRIBED = {("Rom", 16, 27), ("1Cor", 16, 24), ("2Cor", 13, 14), ("Gal", 6, 18), ("Eph", 6, 24),
              ("Phil", 4, 23), ("Col", 4, 18), ("1Thess", 5, 28), ("2Thess", 3, 18),
              ("1Tim", 6, 21), ("2Tim", 4, 22), ("Titus", 3, 15), ("Phlm", 1, 25), ("Heb", 13, 25)}


def _drop_headings(key: VerseKey, text: str, module: str) -> str:
    """Headings a module has as plain verse text (`text` cleaned): dropped, as KJV has them as
    non-canonical <title>s, which `clean_osis` drops."""
    if module != "sparv":
        return text
    if key[:2] == ("Ps", 119) and key[2] % 8 == 1:
        return _ACROSTIC.sub("", text, count=1)
    if key in SUBSCRIBED or key == ("2Cor", 13, 13):
        return _SUBSCRIPTION.sub(r"\1", text)  # 2Cor 13: RV's last verse is 13:13
    return text


# ----------------------------------------------------------------------------- versification
# RV 1909 chapters numbered differently from KJV: (book, chapter) -> the RV verses of that chapter in
# order, each as KJV references. "c:v" is a whole KJV verse, "c:v-w" whole verses v..w (one RV verse
# each), "c:va" / "c:vb" the first / second part of one, "x+y" one RV verse holding both x and y.
# Chapters not listed are numbered as in KJV. Found by comparing the Strong's numbers of every slot
# with the KJV verses around it; most follow the Hebrew chapter divisions (Num 13 and 30, 1 Sam 24,
# Hos 12, Jonah 2; Job 39-40 follow the Vulgate).
SPARV_CHAPTERS: dict[tuple[str, int], str] = {
    ("Num", 12): "12:1-15",
    ("Num", 13): "12:16 13:1-33",
    ("Num", 29): "29:1-39",
    ("Num", 30): "29:40 30:1-16",
    ("Judg", 14): "14:1-17 14:18a 14:18b 14:19+14:20",
    ("1Sam", 23): "23:1-28",
    ("1Sam", 24): "23:29 24:1-22",
    ("2Sam", 20): "20:1-24 20:25+20:26",
    ("1Kgs", 18): "18:1-32 18:33a 18:33b+18:34 18:35-46",
    ("1Kgs", 22): "22:1-42 22:43a 22:43b 22:44-53",
    ("1Chr", 1): "1:1-29 1:30+1:31 1:32a 1:32b 1:33-54",
    ("1Chr", 21): "21:1-14 21:15a 21:15b 21:16-28 21:29+21:30",
    ("2Chr", 33): "33:1-9 33:10+33:11 33:12-25",
    ("Job", 35): "35:1-14 35:15+35:16",
    ("Job", 38): "38:1-38",
    ("Job", 39): "38:39-41 39:1-30 40:1-5",
    ("Job", 40): "40:6-24",
    ("Hos", 11): "11:1-11",
    ("Hos", 12): "11:12 12:1-14",
    ("Jonah", 1): "1:1-16",
    ("Jonah", 2): "1:17 2:1-10",
    ("Acts", 19): "19:1-39 19:40+19:41",
    ("2Cor", 13): "13:1-11 13:12+13:13 13:14",
}
VERSIFICATIONS: dict[str, dict[tuple[str, int], str]] = {"kjv": {}, "sparv": SPARV_CHAPTERS}

# One piece of a KJV verse: (chapter, verse, part) with part "" (whole), "a" or "b".
_Piece = tuple[int, int, str]
_PIECE = re.compile(r"(\d+):(\d+)([ab]?)(?:-(\d+))?")


def parse_chapter(spec: str) -> list[tuple[_Piece, ...]]:
    """The RV verses of one `SPARV_CHAPTERS` entry, each a tuple of KJV pieces."""
    verses = []
    for item in spec.split():
        pieces: list[_Piece] = []
        for part in item.split("+"):
            m = _PIECE.fullmatch(part)
            if m is None:
                raise ValueError(f"bad versification item {part!r} in {spec!r}")
            ch, v, half, last = int(m.group(1)), int(m.group(2)), m.group(3), m.group(4)
            if last is not None:  # a range: one RV verse per KJV verse
                if "+" in item or half:
                    raise ValueError(f"a range cannot be merged or split: {item!r}")
                verses.extend(((ch, w, ""),) for w in range(v, int(last) + 1))
                break
            pieces.append((ch, v, half))
        else:
            verses.append(tuple(pieces))
    return verses


def slot_contents(book: str, chapter: int, slots: int, mapping: dict) -> dict[int, list[tuple[_Piece, ...]]]:
    """What each of a chapter's `slots` KJV-grid slots holds: a list of the module's own verses,
    each as KJV pieces. Identity where `mapping` does not list the chapter."""
    if (book, chapter) not in mapping:
        return {v: [((chapter, v, ""),)] for v in range(1, slots + 1)}
    own = parse_chapter(mapping[(book, chapter)])
    out: dict[int, list] = {v: [] for v in range(1, slots + 1)}
    for n, verse in enumerate(own, start=1):
        out[min(n, slots)].append(verse)  # verses past the grid are merged into the last slot
    return out


def kjv_map(book: str, chapter_lengths: list[int], mapping: dict) -> dict[VerseKey, VerseKey]:
    """Slot -> the KJV verse it translates, for the slots of one book that hold exactly one whole
    KJV verse and nothing else, where no other slot holds any part of that KJV verse (1:1 only)."""
    held: dict[VerseKey, list] = {}
    for ch, n in enumerate(chapter_lengths, start=1):
        for v, verses in slot_contents(book, ch, n, mapping).items():
            for verse in verses:
                for kc, kv, half in verse:
                    held.setdefault((book, kc, kv), []).append(((book, ch, v), verses, half))
    out = {}
    for kjv, holders in held.items():
        if len(holders) != 1:
            continue
        slot, verses, half = holders[0]
        if half == "" and len(verses) == 1 and len(verses[0]) == 1:
            out[slot] = kjv
    return out


# ----------------------------------------------------------------------------- reading
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
def read_slots(sword_root: str, module: str, name: str = "") -> tuple:
    """Every slot of a module's verse grid in canonical order: ((book, chapter, verse), text),
    markup stripped (text may be empty), plus {book: chapter lengths}. `name` is the module's
    short name ("kjv", "sparv", "web"), which picks its heading rules. Cached per process."""
    bible = _open_module(Path(sword_root), module)
    structure = bible.get_structure()
    out, lengths = [], {}
    for testament, books in structure.get_books().items():
        for book in books:
            lengths[book.osis_name] = list(book.chapter_lengths)
            for chapter in range(1, book.num_chapters + 1):
                idx = structure.ref_to_indicies(books=[book.name], chapters=[chapter])
                for verse, index in enumerate(idx.get(testament, []), start=1):
                    key = (book.osis_name, chapter, verse)
                    text = clean_osis(bible._text_for_index(testament, index) or "")
                    out.append((key, _drop_headings(key, text, name)))
    return tuple(out), lengths


def read_verses(sword_root: str, module: str, name: str = "") -> tuple[tuple[VerseKey, str], ...]:
    """All non-empty verses of a module in canonical order (slot keys), markup stripped."""
    return tuple((k, t) for k, t in read_slots(sword_root, module, name)[0] if t)


def align(src: tuple, src_name: str, tgt: tuple, tgt_name: str) -> list[tuple[VerseKey, str, str]]:
    """1:1 verse pairs of two modules as (KJV reference, source text, target text), in KJV order.

    `src` / `tgt` are `read_slots` results; `*_name` pick the `VERSIFICATIONS` entry of each.
    Slots holding several verses or part of one, and verses empty on either side, are dropped.
    """
    def by_kjv(slots, name):
        verses, lengths = slots
        text = dict(verses)
        out = {}
        for book, chapter_lengths in lengths.items():
            for slot, kjv in kjv_map(book, chapter_lengths, VERSIFICATIONS[name]).items():
                if text.get(slot):
                    out[kjv] = text[slot]
        return out

    a, b = by_kjv(src, src_name), by_kjv(tgt, tgt_name)
    order = [k for k, _ in src[0]]  # the KJV grid's canonical order
    return [(k, a[k], b[k]) for k in order if k in a and k in b]
