"""manpages-summ: the roff reader and the real DESCRIPTION -> NAME-summary pairs."""
from __future__ import annotations

import re

import pytest

from synthformer.data import DataError, SourceNotInstalledError, load_source, prepare_source
from synthformer.data import roff
from synthformer.data.sources import SOURCES
from synthformer.data.sources import manpages


def _summ(**kw):
    if not SOURCES["manpages-summ"].installed():
        try:
            prepare_source("manpages-summ")
        except SourceNotInstalledError as e:
            pytest.skip(f"manpages cannot be had here: {e}")
    return load_source("manpages-summ", **kw)


PAGE = r""".\" SPDX-License-Identifier: Linux-man-pages-copyleft
'\" t
.TH demo 3 2023-01-01 "Linux man-pages 6.03"
.SH NAME
demo, demo2 \- show the \fIroff\fP reader
.SH SYNOPSIS
.BI "int demo(int " x );
.SH DESCRIPTION
The
.BR demo ()
function reads \fBx\fR \[em] a value\(emand returns
it.  \" an inline comment
.PP
.TP
.B DEMO_FLAG
Set the flag.
.IP \[bu] 3
First item, with a line \
continued.
.TS
l l.
cell1	cell2
.TE
.nf
    code line 1
    code line 2
.fi
.de XX
.B never printed
..
.if n \{\
dropped
.\}
Path \e and \-1 and \[aq]q\[aq] and \*(lqquote\*(rq.
.SH "SEE ALSO"
.BR other (2)
"""


def test_roff_sections_text():
    secs = roff.sections(PAGE)
    assert list(secs) == ["NAME", "SYNOPSIS", "DESCRIPTION", "SEE ALSO"]
    assert secs["NAME"] == "demo, demo2 - show the roff reader"
    assert secs["SYNOPSIS"] == "int demo(int x);"  # alternating fonts concatenate
    paras = secs["DESCRIPTION"].split("\n")
    assert paras[0] == "The demo() function reads x \u2014 a value\u2014and returns it."
    assert paras[1:5] == ["DEMO_FLAG", "Set the flag.", "\u2022", "First item, with a line continued."]
    assert paras[5:7] == ["code line 1", "code line 2"]  # no-fill lines kept apart
    assert paras[7] == "Path \\ and -1 and 'q' and \u201cquote\u201d."
    text = secs["DESCRIPTION"]
    for gone in ("cell1", "never printed", "dropped", "comment", "\\", "\\f"):
        assert gone not in text.replace("Path \\ and", "")
    assert secs["SEE ALSO"] == "other(2)"
    assert roff.is_alias('.\\" comment\n.so man2/open.2\n') and not roff.is_alias(PAGE)


def test_manpages_summ_real():
    d = _summ()
    pairs = d.train + d.valid + d.test
    assert d.task == "seq2seq" and len(pairs) > 900 and len(d.valid) > 40 and len(d.test) > 40
    ids = d.meta["ids"]
    flat = ids["train"] + ids["valid"] + ids["test"]  # page names, in the order of `pairs`
    assert len(flat) == len(set(flat)) == len(pairs)  # one page, one split
    assert "creat.2" not in flat and "open.2" in flat  # creat.2 is an alias of open.2
    where = {p: s for s in ids for p in ids[s]}
    split_pairs = dict(zip(ids[where["open.2"]], getattr(d, where["open.2"])))
    doc, summary = split_pairs["open.2"]
    assert summary == "open and possibly create a file"
    assert doc.startswith("The open() system call opens the file specified by pathname.")
    norm = [" ".join(re.sub(r"[\W_]+", " ", s.lower()).split()) for _, s in pairs]
    assert len(set(norm)) == len(norm)  # each summary once
    escape = re.compile(r"\\f[BIRP]\w|\\s[-+]?\d|\\\(\w\w|\\\[\w+\]|\\&")  # roff left in the text
    macro = re.compile(r"^\.(?:SH|SS|PP|TP|IP|BR|BI|IR|RS|RE|nf|fi|TS|in|sp)\b", re.M)
    for page, (doc, summary) in zip(flat, pairs):
        assert summary.strip() and "\n" not in summary and len(summary.split()) < 30
        assert len(doc.split()) >= manpages.MIN_WORDS
        if page not in ("man.7", "man-pages.7"):  # these two document roff, showing it as text
            assert not escape.search(doc) and not macro.search(doc), (page, doc[:200])
    assert sum(d.meta["dropped"].values()) > 0


def test_manpages_summ_split_and_lead():
    full = _summ()
    lead = _summ(max_words=50, max_examples=200, seed=1)
    assert len(lead.train) == 200 and len(lead.valid) == len(lead.test) == 20
    by_page = {p: pair for s in ("train", "valid", "test")
               for p, pair in zip(full.meta["ids"][s], getattr(full, s))}
    for split in ("train", "valid", "test"):
        assert set(lead.meta["ids"][split]) <= set(full.meta["ids"][split])  # membership fixed
        for page, (doc, summary) in zip(lead.meta["ids"][split], getattr(lead, split)):
            assert summary == by_page[page][1]
            assert len(doc.split()) <= 50 and by_page[page][0].split()[:len(doc.split())] == doc.split()
    with pytest.raises(DataError, match="max_words"):
        _summ(max_words=0)
    with pytest.raises(DataError, match="unknown manpages-summ option"):
        _summ(lead=3)


def test_manpages_not_installed(tmp_path, monkeypatch):
    monkeypatch.setattr(manpages, "DPKG_INFO", tmp_path / "no-dpkg")
    monkeypatch.setenv("SYNTHFORMER_DATA", str(tmp_path / "empty-cache"))
    assert not SOURCES["manpages-summ"].installed()
    with pytest.raises(SourceNotInstalledError, match="run `synthformer data prepare manpages-summ`"):
        load_source("manpages-summ")


@pytest.mark.slow  # 2-8 s: fetches and indexes the pages again
def test_manpages_from_a_fresh_cache(tmp_path, monkeypatch):
    """Without dpkg's listing, `prepare` fetches both packages into the cache; same pairs."""
    system = _summ()
    monkeypatch.setattr(manpages, "DPKG_INFO", tmp_path / "no-dpkg")
    monkeypatch.setenv("SYNTHFORMER_DATA", str(tmp_path / "cache"))
    manpages.read_pages.cache_clear()  # the system-wide pages, parsed above
    manpages.summary_pairs.cache_clear()
    try:
        prepare_source("manpages-summ")
    except SourceNotInstalledError as e:
        pytest.skip(f"apt cannot fetch here: {e}")
    try:
        cached = load_source("manpages-summ")
        assert list((tmp_path / "cache" / "manpages").glob("pages-*.json"))  # parsed pages kept
        assert (cached.train, cached.valid, cached.test) == (system.train, system.valid, system.test)
    finally:
        manpages.read_pages.cache_clear()
        manpages.summary_pairs.cache_clear()


def _windows_reference(text: str, window: int) -> list[str]:
    """A slow literal `byte_windows`: whole characters added one by one until the next would pass the window."""
    pieces, piece, size = [], "", 0
    for ch in text:
        n = len(ch.encode("utf-8"))
        if size + n > window:
            pieces.append((piece, size))
            piece, size = "", 0
        piece, size = piece + ch, size + n
    pieces.append((piece, size))
    if len(pieces) > 1 and pieces[-1][1] < window // 2:  # the last piece: only when at least half a window
        pieces.pop()
    return [p for p, _ in pieces]


def test_byte_windows_match_a_literal_reference():
    text = "ab\u00e9c\u20acd\U0001f600" * 7 + "xyz"  # 1- to 4-byte characters: many cuts fall inside one
    for window in (4, 5, 7, 16, 1000):
        got = manpages.byte_windows(text, window)
        assert got == _windows_reference(text, window) and all(len(p.encode()) <= window for p in got)
    assert manpages.byte_windows(text, 1000) == [text]
    assert manpages.byte_windows("abcdefgh" + "ij", 8) == ["abcdefgh"]  # a tail under half a window is left out
    assert manpages.byte_windows("abcdefgh" + "ijkl", 8) == ["abcdefgh", "ijkl"]
    assert manpages.byte_windows("\u20ac\u20ac", 4) == ["\u20ac", "\u20ac"]  # the cut moved back to a sign's start


def _sections(**kw):
    _summ()  # fetched into the cache where not installed (or skipped)
    return load_source("manpages-section", "classify", **kw)


def test_manpages_section_windows_of_pages_split_by_page():
    d = _sections()
    assert d.meta["window"] == manpages.SECTION_WINDOW == 1023 and {"2", "3", "7"} <= set(d.meta["labels"])
    assert "6" not in d.meta["labels"]  # one page: under MIN_SECTION_PAGES
    assert len(d.test) >= 1000 and len(d.valid) >= 200  # LRA text's claims need >= 1,000 test items
    ids = d.meta["ids"]
    pages = {s: set(ids[s]) for s in ids}
    assert not pages["train"] & pages["valid"] and not pages["train"] & pages["test"] and not pages["valid"] & pages["test"]
    whole = {page: text for page, _, _, text in manpages.read_pages()}
    for split in ("train", "valid", "test"):
        items = getattr(d, split)
        counts = {}
        for page, (text, label) in zip(ids[split], items):
            assert d.meta["labels"][label] == page.rsplit(".", 1)[-1][:1]  # the page's manual section
            assert len(text.encode()) <= 1023 and text in whole[page]
            counts[d.meta["labels"][label]] = counts.get(d.meta["labels"][label], 0) + 1
        assert counts == d.meta["counts"][split]
        assert max(counts.values()) / len(items) < 0.6  # no class is most of a split
    # a page's windows are its whole text (every section, headings included) in order
    where = next(s for s in ids if "open.2" in ids[s])
    texts = [t for page, (t, _) in zip(ids[where], getattr(d, where)) if page == "open.2"]
    assert texts[0].startswith("NAME\nopen, openat, creat - open and possibly create a file\nLIBRARY")
    assert "".join(texts) == whole["open.2"][:len("".join(texts))] and len(texts) > 10
    small = _sections(window=4095, max_examples=100, seed=1)
    assert len(small.train) == 100 and len(small.test) == 10
    assert max(len(t.encode()) for t, _ in small.train) > 4000
    with pytest.raises(DataError, match="window must be an integer"):
        _sections(window=0)
    with pytest.raises(DataError, match="unknown manpages-section option"):
        _sections(windows=3)
