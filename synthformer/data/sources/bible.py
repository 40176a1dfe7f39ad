"""Bible sources from the Debian SWORD modules (read and aligned by `synthformer.data.bible`):
KJV <-> Reina-Valera 1909 translation pairs and one-chapter-per-document LM corpora."""
from __future__ import annotations

from pathlib import Path

from .. import bible as sword
from ..prepare import DataError, SourceNotInstalledError, find_package_file
from .base import Source, capped, no_options, packages_installed, split_by_group, split_by_hash

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
