"""Bible sources from the Debian SWORD modules (read and aligned by `synthformer.data.bible`):
KJV <-> Reina-Valera 1909 translation pairs, KJV/WEB paraphrase pairs and one-chapter-per-document
LM corpora."""
from __future__ import annotations

import re
from pathlib import Path

from .. import bible as sword
from ..prepare import DataError, SourceNotInstalledError, find_package_file
from .base import Source, capped, digest, no_options, packages_installed, split_by_group, split_by_hash

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
    """`sword.read_slots` of module `module` ("kjv", "sparv", "web")."""
    return sword.read_slots(str(sword_root(module)), SWORD[module][1], module)


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
    versification (`synthformer.data.bible`): RV numbers some chapters its own way (Job 38-41,
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
    aligned = sword.align(slots("kjv"), "kjv", slots("sparv"), "sparv")
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
