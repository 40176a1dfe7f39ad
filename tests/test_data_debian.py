"""debian-descriptions: apt index stanzas -> (long description, synopsis) pairs, and the real index."""
from __future__ import annotations

import gzip
import lzma
import statistics

import pytest

from conftest import ensure_source

from synthformer.data import DataError, SourceNotInstalledError, load_source
from synthformer.data.sources import SOURCES
from synthformer.data.sources import debian_descriptions as dd
from synthformer.data.sources.base import split_by_hash
from synthformer.data.sources.debian_descriptions import Entry

WORDS = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen"

# A Packages file as apt keeps it: continuation lines, " ." breaks, verbatim lines, a Tag field
# continued after Description, a blank separator line holding spaces, one package in two stanzas,
# a synopsis-only stanza whose text is in Translation-en (by Description-md5).
PACKAGES = f"""Package: alpha
Source: alpha-src (1.2-3)
Version: 1.2-3+b1
Description:   Alpha does   things
 Alpha is a tool that does
 {WORDS}.
 .
 Features:
   * first item
   * second item
 .
 Last  paragraph   here.
Tag: role::program,
 use::testing
Homepage: https://example.org

Package: alpha-doc
Source: alpha-src
Description: documentation for alpha
 alpha is a TOOL that does {WORDS}.
 .
 Features:
  * first item
  * second item
 .
 Last paragraph here.
Section: doc
   \t
Package: beta
Description: Beta synopsis only here
Description-md5: 0123456789abcdef0123456789abcdef

Package: gamma
Description: too short
 Just a few words.

Package: delta
Description: a synopsis and nothing else

Package: zeta
Description: Zeta newer synopsis
 Zeta text {WORDS} {WORDS}.

Package: zeta
Description: Zeta older synopsis
 Zeta text {WORDS} {WORDS}.

Package: nodesc
Version: 1
"""
TRANSLATION = f"""Package: beta
Description-md5: 0123456789abcdef0123456789abcdef
Description-en: Beta synopsis only here
 Beta reads its long text from Translation-en:
 {WORDS}
 and more.
"""
ALPHA = Entry("alpha", "alpha-src", "Alpha does things",
              f"Alpha is a tool that does {WORDS}.\nFeatures:\n* first item\n* second item\nLast paragraph here.")
ALPHA_DOC = Entry("alpha-doc", "alpha-src", "documentation for alpha",
                  f"alpha is a TOOL that does {WORDS}.\nFeatures:\n* first item\n* second item\nLast paragraph here.")
BETA = Entry("beta", "beta", "Beta synopsis only here",
             f"Beta reads its long text from Translation-en: {WORDS} and more.")
EXPECTED = [ALPHA, ALPHA_DOC, BETA, Entry("delta", "delta", "a synopsis and nothing else", ""),
            Entry("gamma", "gamma", "too short", "Just a few words."),
            Entry("zeta", "zeta", "Zeta newer synopsis", f"Zeta text {WORDS} {WORDS}.")]


def _lists(folder, compress=None):
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in (("x_dists_demo_main_binary-amd64_Packages", PACKAGES),
                       ("x_dists_demo_main_i18n_Translation-en", TRANSLATION)):
        if compress == "gz":
            (folder / f"{name}.gz").write_bytes(gzip.compress(text.encode()))
        elif compress == "xz":
            (folder / f"{name}.xz").write_bytes(lzma.compress(text.encode()))
        else:
            (folder / name).write_text(text)
    return dd.index_files(folder)


@pytest.mark.parametrize("compress", [None, "gz", "xz"])
@pytest.mark.parametrize("helper", ["apt-helper", "python"])
def test_read_entries_literal(tmp_path, compress, helper):
    if helper == "apt-helper" and not dd.APT_HELPER.exists():
        pytest.skip("apt-helper is not installed here")
    packages, translations = _lists(tmp_path, compress)
    assert len(packages) == len(translations) == 1
    assert dd.read_entries(packages, translations, dd.APT_HELPER if helper == "apt-helper" else None) == EXPECTED


def test_clean_drops_short_empty_and_duplicates():
    kept, dropped = dd.clean(list(reversed(EXPECTED)))  # input order does not matter
    assert kept == [ALPHA, BETA, EXPECTED[-1]]  # alpha-doc: alpha's text up to case; the first name kept
    assert dropped == {"no_long": 1, "short": 1, "duplicate": 1}
    assert dd.clean(EXPECTED, min_words=3)[1] == {"no_long": 1, "short": 0, "duplicate": 1}


def test_long_description_rules():
    assert dd.long_description([" a b", " c", " .", "  verbatim   line", " d", " ."]) == "a b c\nverbatim line\nd"
    assert dd.long_description([]) == ""


def test_siblings_share_a_split():
    entries = [Entry(f"lib{s}-{kind}", f"src{s}", "x", f"text {s} {kind}") for s in range(80)
               for kind in ("dev", "doc", "bin")]
    splits = dd.split_entries(entries)
    where = {}
    for i, split in enumerate(splits):
        for e in split:
            assert where.setdefault(e.source, i) == i, e
    assert sorted(len(s) % 3 for s in splits) == [0, 0, 0] and all(splits)
    by_package = split_by_hash(entries, [e.package for e in entries])  # the split this must not be
    assert any(len({i for i, s in enumerate(by_package) for e in s if e.source == src}) > 1 for src in where)


def test_load_from_a_lists_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(dd, "SYSTEM_LISTS", tmp_path / "none")
    monkeypatch.setenv("SYNTHFORMER_DATA", str(tmp_path / "cache"))
    dd.pairs.cache_clear()
    try:
        assert not SOURCES["debian-descriptions"].installed()
        with pytest.raises(SourceNotInstalledError, match="run `synthformer data prepare debian-descriptions`"):
            load_source("debian-descriptions")
        _lists(tmp_path / "cache" / dd.CACHE_LISTS, "gz")
        assert SOURCES["debian-descriptions"].installed()
        for _ in range(2):  # parsed, then read back from the JSON cache
            dd.pairs.cache_clear()
            s = load_source("debian-descriptions", max_words=5)
            ids = [p for split in ("train", "valid", "test") for p in s.meta["ids"][split]]
            assert sorted(ids) == ["alpha", "beta", "zeta"]
            pairs = dict(zip(ids, s.train + s.valid + s.test))
            assert pairs["alpha"] == ("Alpha is a tool that", "Alpha does things")
            assert pairs["beta"] == ("Beta reads its long text", "Beta synopsis only here")
            assert s.meta["dropped"] == {"no_long": 1, "short": 1, "duplicate": 1}
            assert sum(c["pairs"] for c in s.meta["counts"].values()) == 3
        assert len(list((tmp_path / "cache" / "debian-descriptions").glob("pairs-*.json"))) == 1
        with pytest.raises(DataError, match="unknown debian-descriptions option"):
            load_source("debian-descriptions", lead=3)
        with pytest.raises(DataError, match="max_words must be a positive integer"):
            load_source("debian-descriptions", max_words=0)
    finally:
        dd.pairs.cache_clear()


def _real(**kw):
    ensure_source("debian-descriptions")
    return load_source("debian-descriptions", **kw)


@pytest.mark.slow  # 6 s on a fresh cache: the whole index
def test_real_index():
    s = _real()
    counts = {k: c["pairs"] for k, c in s.meta["counts"].items()}
    assert counts == {"train": len(s.train), "valid": len(s.valid), "test": len(s.test)}
    assert sum(counts.values()) > 20_000 and counts["test"] >= 1_000
    source = {e.package: e.source for e in dd.pairs()[0]}
    seen = {}
    for split, ids in s.meta["ids"].items():
        for p in ids:
            assert seen.setdefault(source[p], split) == split, p
    assert len(set(s.train) & set(s.test)) == 0
    assert all(len(src.split()) >= dd.MIN_WORDS and tgt and "\n" not in tgt for src, tgt in s.test)
    assert 20 <= statistics.median(len(src.split()) for src, _ in s.test) <= 200
    assert 3 <= statistics.median(len(tgt.split()) for _, tgt in s.test) <= 12
    lead = _real(max_words=30, max_examples=200, seed=1)
    assert (len(lead.train), len(lead.test)) == (200, 20)
    assert all(len(src.split()) <= 30 for src, _ in lead.train)
