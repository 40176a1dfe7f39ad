"""Bible sources from the Debian SWORD modules:
KJV <-> Reina-Valera 1909 translation pairs, KJV/WEB paraphrase pairs and one-chapter-per-document
LM corpora.

Reading SWORD Bible modules (Debian `sword-text-*` packages) with `pysword`, and aligning them.

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

from ..prepare import DataError, SourceNotInstalledError, find_package_file
from .base import Source, capped, digest, no_options, packages_installed, split_by_group, split_by_hash

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


# ----------------------------------------------------------------------------- the sources
SWORD = {  # source module -> (Debian package, SWORD module id)
    "kjv": ("sword-text-kjv", "engKJV2006eb"),
    "sparv": ("sword-text-sparv", "spaRV1909eb"),
    "web": ("sword-text-web", "engWEB2015eb"),
}
_CONF = "usr/share/sword/mods.d/{}.conf"


def sword_root(module: str) -> Path:
    """The folder holding module `module`'s mods.d/ and modules/ (system-wide or in the cache)."""
    package, mod_id = SWORD[module]
    conf = find_package_file(package, _CONF.format(mod_id))
    if conf is None:
        raise SourceNotInstalledError(f"SWORD module {mod_id} (Debian {package}) is not installed")
    return conf.parent.parent


def slots(module: str):
    """`read_slots` of module `module` ("kjv", "sparv", "web")."""
    return read_slots(str(sword_root(module)), SWORD[module][1], module)


def verses(module: str):
    """The non-empty verses of `module` as ((book, chapter, verse), text)."""
    return tuple((k, t) for k, t in slots(module)[0] if t)


def ref(key) -> str:
    """(book, chapter, verse) -> "John.3.16"."""
    return f"{key[0]}.{key[1]}.{key[2]}"


def chapter(key) -> str:
    """(book, chapter, verse) -> "John.3"."""
    return f"{key[0]}.{key[1]}"


def load_en_es(task: str, max_examples, seed, direction: str = "en-es", **options):
    """KJV English <-> Reina-Valera 1909 Spanish verse pairs, aligned through each module's
    versification (above): RV numbers some chapters its own way (Job 38-41,
    Jonah 1-2, Hosea 11-12, Numbers 13 and 30, 1 Samuel 24, ...), so verses are mapped to KJV
    references and only 1:1 pairs are kept (a verse split or merged on one side is dropped, as are
    verses empty in either module). Canonical psalm titles are kept on both sides; the Psalm 119
    letters and epistle subscriptions on neither. ``direction`` is "en-es" (default) or "es-en".
    Split 90/5/5 by SHA-1 of the chapter id ("John.3"), so no chapter is in two splits;
    ``meta["ids"]`` holds each split's KJV verse ids (e.g. "John.3.16") in example order.
    """
    no_options("bible-en-es", options)
    if direction not in ("en-es", "es-en"):
        raise DataError(f"bible-en-es direction must be 'en-es' or 'es-en', got {direction!r}")
    aligned = align(slots("kjv"), "kjv", slots("sparv"), "sparv")
    items = [(ref(k), (en, es) if direction == "en-es" else (es, en)) for k, en, es in aligned]
    splits = capped(split_by_group(items, [chapter(k) for k, _, _ in aligned]), max_examples, seed)
    meta = {"split": "90/5/5 by SHA-1 of chapter id (e.g. 'John.3')", "direction": direction,
            "alignment": "1:1 verses through KJV references (RV 1909 versification mapped)",
            "ids": {name: [i for i, _ in s] for name, s in zip(("train", "valid", "test"), splits)}}
    return tuple([p for _, p in s] for s in splits), meta


def _lm(module: str, max_examples, seed, options):
    no_options(f"bible-{module}", options)
    chapters: dict[str, list[str]] = {}
    for key, text in verses(module):
        chapters.setdefault(chapter(key), []).append(text)
    ids = list(chapters)
    docs = ["\n".join(chapters[i]) for i in ids]
    return capped(split_by_hash(docs, ids), max_examples, seed), {
        "split": "90/5/5 by SHA-1 of chapter id (e.g. 'John.3')", "document": "one chapter, one verse per line"}


def load_kjv(task, max_examples, seed, **options):
    """King James Version (Debian sword-text-kjv) for lm: one document per chapter, verses one per
    line; split 90/5/5 by hash of chapter id."""
    return _lm("kjv", max_examples, seed, options)


def load_web(task, max_examples, seed, **options):
    """World English Bible (Debian sword-text-web, with deuterocanon) for lm: one document per
    chapter, verses one per line; split 90/5/5 by hash of chapter id."""
    return _lm("web", max_examples, seed, options)


# ----------------------------------------------------------------------------- paraphrase pairs
PAIR_SEPARATOR = " ||| "  # joins the two sentences of a pair into the one string `classify` takes
PARAPHRASE_LABELS = ["different", "paraphrase"]
NEGATIVE_MAX_DISTANCE = 3  # a negative's verse is at most this many verses away, in the same chapter
_WORD = re.compile(r"[a-z]+")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _dice(a: set, b: set) -> float:
    return 2 * len(a & b) / (len(a) + len(b)) if a or b else 0.0


def paraphrase_verses() -> tuple[list[tuple], dict]:
    """KJV/WEB verses that are the same verse: [(key, kjv_text, web_text, web_chapter)], stats.

    WEB declares the NRSVA versification, KJV its own, so references are not trusted blindly:
    a chapter is used only when both modules have the same verse numbers in it (the 5 where WEB
    omits verses, as Luke 17:36, are skipped), and a verse only when its WEB text shares more
    words with the KJV verse than either neighbouring WEB verse does (content matches).
    ``web_chapter`` is {verse: web_text} of the chapter's aligned verses, for drawing negatives.
    """
    def chapters(module):
        out: dict[tuple, dict[int, str]] = {}
        for (book, ch, v), text in verses(module):
            out.setdefault((book, ch), {})[v] = text
        return out

    kjv, web = chapters("kjv"), chapters("web")
    kept, stats = [], {"chapters_skipped": [], "verses_mismatched": 0}
    for ch, k_verses in kjv.items():
        w_verses = web.get(ch, {})
        if set(k_verses) != set(w_verses):
            stats["chapters_skipped"].append(f"{ch[0]}.{ch[1]}")
            continue
        w_words = {v: _words(t) for v, t in w_verses.items()}
        matched: dict[int, str] = {}  # this chapter's aligned WEB verses, shared by its entries
        for v, k_text in k_verses.items():
            kw = _words(k_text)
            same = _dice(kw, w_words[v])
            if any(_dice(kw, w_words[n]) >= same for n in (v - 1, v + 1) if n in w_words):
                stats["verses_mismatched"] += 1  # e.g. WEB Rev 22:21 also holds a glossary
                continue
            matched[v] = w_verses[v]
            kept.append(((ch[0], ch[1], v), k_text, w_verses[v], matched))
    return kept, stats


def _negative(key, kjv_text: str, web_text: str, web_chapter: dict[int, str]) -> str | None:
    """A nearby different WEB verse of the same chapter for `key`, picked by hash of the reference;
    None when every candidate repeats the verse (refrains such as Psalm 136)."""
    v, kw = key[2], _words(kjv_text)
    same = _dice(kw, _words(web_text))
    near = [n for d in range(1, NEGATIVE_MAX_DISTANCE + 1) for n in (v - d, v + d) if n in web_chapter]
    near = [n for n in near if web_chapter[n] != web_text and _dice(kw, _words(web_chapter[n])) < same]
    if not near:
        return None
    return web_chapter[near[int(digest(ref(key)), 16) % len(near)]]


def load_paraphrase(task: str, max_examples, seed, **options):
    """Sentence-pair paraphrase detection from the KJV and the World English Bible (Debian
    sword-text-kjv, sword-text-web): ``x`` is ``kjv_verse + PAIR_SEPARATOR + web_verse``
    (" ||| ", kept by every tokenizer), label 1 ("paraphrase") when the WEB verse is the same verse,
    0 ("different") when it is a nearby other verse of the same chapter (at most 3 verses away,
    never a repeat of the verse and never closer in words than the true one). Every aligned verse
    gives one example of each label, so the classes are balanced exactly. Alignment: see
    `paraphrase_verses`. Split 90/5/5 by SHA-1 of the chapter id ("John.3");
    ``meta["ids"]`` holds each split's verse ids ("John.3.16") in example order.
    """
    no_options("bible-paraphrase", options)
    aligned, stats = paraphrase_verses()
    items, groups = [], []
    stats["verses_without_negative"] = 0
    for key, kjv_text, web_text, web_chapter in aligned:
        other = _negative(key, kjv_text, web_text, web_chapter)
        if other is None:
            stats["verses_without_negative"] += 1
            continue
        for text, label in ((web_text, 1), (other, 0)):
            items.append((ref(key), (kjv_text + PAIR_SEPARATOR + text, label)))
            groups.append(chapter(key))
    splits = capped(split_by_group(items, groups), max_examples, seed)
    meta = {"labels": PARAPHRASE_LABELS, "pair_separator": PAIR_SEPARATOR,
            "split": "90/5/5 by SHA-1 of chapter id (e.g. 'John.3')", **stats,
            "ids": {name: [i for i, _ in s] for name, s in zip(("train", "valid", "test"), splits)}}
    return tuple([x for _, x in s] for s in splits), meta


def installed(*modules: str):
    """`installed` check for the SWORD modules `modules`."""
    return packages_installed(*((SWORD[m][0], _CONF.format(SWORD[m][1])) for m in modules))


EN_ES = Source(load_en_es, ("seq2seq",), "KJV English -> Reina-Valera 1909 Spanish, ~31k verse pairs (Debian SWORD)",
               ("sword-text-kjv", "sword-text-sparv"), installed("kjv", "sparv"),
               "synthformer data prepare bible-en-es")
KJV = Source(load_kjv, ("lm",), "King James Version, 1,189 chapters (Debian sword-text-kjv)",
             ("sword-text-kjv",), installed("kjv"), "synthformer data prepare bible-kjv")
WEB = Source(load_web, ("lm",), "World English Bible with deuterocanon (Debian sword-text-web)",
             ("sword-text-web",), installed("web"), "synthformer data prepare bible-web")
PARAPHRASE = Source(load_paraphrase, ("classify",),
                    "KJV/WEB verse pairs: same verse (paraphrase) or a nearby other verse (Debian SWORD)",
                    ("sword-text-kjv", "sword-text-web"), installed("kjv", "web"),
                    "synthformer data prepare bible-paraphrase")
