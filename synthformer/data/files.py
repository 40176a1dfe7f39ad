"""Plain data files a user brings: .txt (lm), .tsv (seq2seq / classify), .jsonl (all three).

Formats (one example per line unless said otherwise; blank lines are skipped):
- ``.txt``, task ``lm``: one document per blank-line-separated block when the file has blank
  lines, else one document per line.
- ``.tsv``, task ``seq2seq``: ``src<TAB>tgt``. Task ``classify``: ``label<TAB>text`` by default; a
  header row decides the order when present: ``label<TAB>text``, ``text<TAB>label`` or
  ``Source<TAB>Target`` (LRA's TSVs: text, then label). A seq2seq header ``src<TAB>tgt`` /
  ``source<TAB>target`` is skipped. A line without exactly two fields is an error.
- ``.jsonl``: ``{"text": ...}`` (lm), ``{"src": ..., "tgt": ...}`` (seq2seq),
  ``{"text": ..., "label": ...}`` (classify; label a string or an int).

Text must be UTF-8. A file holding a NUL byte, or more than `MAX_BAD_BYTE_FRACTION` (0.1%) of
bytes that are not UTF-8, is refused as binary or in another encoding (convert it with `iconv`);
below that, the few bad bytes (a stray Latin-1 character in a large file) become U+FFFD.

Classification labels become ids by their position in ``meta["labels"]``: the distinct labels
sorted (numerically when every label is an integer).

A folder holding ``train.EXT``, ``valid.EXT`` (or ``dev.EXT`` / ``validation.EXT``) and
``test.EXT``, or sub-folders ``train/``, ``valid/`` (``dev/``, ``validation/``) and ``test/`` of many
files each (one per book, say), gives the three splits as they are; a single file is split 90/5/5 by a hash of each
example's content (fixed: it never depends on the seed; duplicates land in the same split).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from ..utils.jsonl import read_rows
from .prepare import DataError, DataFileNotFoundError

SUPPORTED = {".txt": ("lm",), ".tsv": ("seq2seq", "classify"), ".jsonl": ("lm", "seq2seq", "classify")}
_BLANK_LINE = re.compile(r"\n[ \t\r]*\n")
_CLASSIFY_HEADERS = {("label", "text"): 0, ("text", "label"): 1, ("source", "target"): 1}
_SEQ2SEQ_HEADERS = {("src", "tgt"), ("source", "target")}


MAX_BAD_BYTE_FRACTION = 0.001  # invalid UTF-8 bytes tolerated (replaced by U+FFFD) per byte
_BAD_BYTE = re.compile("[\udc80-\udcff]")  # what surrogateescape makes of an invalid byte


def _decode(path: Path, data: bytes) -> str:
    """UTF-8 text of a data file; refuses binary files and files in another encoding."""
    if b"\0" in data:
        at = data.index(b"\0")
        raise DataError(f"{path} looks binary (NUL byte at offset {at}); give a UTF-8 text file")
    text = data.decode("utf-8", errors="surrogateescape")
    bad = len(_BAD_BYTE.findall(text))
    if bad > MAX_BAD_BYTE_FRACTION * len(data):
        raise DataError(f"{path} is not UTF-8 text ({bad} of {len(data)} bytes are not UTF-8); "
                        f"convert it, e.g. `iconv -f latin1 -t utf-8`")
    return _BAD_BYTE.sub("\ufffd", text) if bad else text


def _read_text(path: Path) -> str:
    if not path.exists():
        raise DataFileNotFoundError(f"data file not found: {path}")
    if path.is_dir():
        raise DataError(f"{path} is a folder; expected a .txt/.tsv/.jsonl file")
    text = _decode(path, path.read_bytes())
    if not text.strip():
        raise DataError(f"data file is empty: {path}")
    return text


def read_lm_txt(path: Path) -> list[str]:
    """Documents of a .txt file (blank-line-separated blocks, or lines)."""
    text = _read_text(path).replace("\r\n", "\n")
    parts = _BLANK_LINE.split(text) if _BLANK_LINE.search(text.strip()) else text.split("\n")
    return [p.strip() for p in parts if p.strip()]


def read_tsv(path: Path, task: str) -> list[tuple]:
    """seq2seq: [(src, tgt)]; classify: [(text, label_str)] (labels mapped later)."""
    lines = _read_text(path).replace("\r\n", "\n").split("\n")
    label_col = 0
    start = 0
    first = next((i for i, line in enumerate(lines) if line.strip()), 0)
    head = tuple(f.strip().lower() for f in lines[first].split("\t"))
    if task == "classify" and head in _CLASSIFY_HEADERS:
        label_col, start = _CLASSIFY_HEADERS[head], first + 1
    elif task == "seq2seq" and head in _SEQ2SEQ_HEADERS:
        start = first + 1
    out = []
    for n, line in enumerate(lines[start:], start=start + 1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 2:
            raise DataError(f"{path}:{n}: expected 2 tab-separated fields, found {len(fields)}: "
                            f"{line[:60]!r}")
        a, b = (f.strip() for f in fields)
        if task == "seq2seq":
            out.append((a, b))
        else:
            label, text = (a, b) if label_col == 0 else (b, a)
            out.append((text, label))
    if not out:
        raise DataError(f"no examples in {path}")
    return out


_JSONL_KEYS = {"lm": ("text",), "seq2seq": ("src", "tgt"), "classify": ("text", "label")}


def read_jsonl(path: Path, task: str) -> list:
    """lm: [text]; seq2seq: [(src, tgt)]; classify: [(text, label)] with label as found (a string or
    an int); any other type of a field is an error naming the file, line and field."""
    keys = _JSONL_KEYS[task]
    out = []
    for n, obj in read_rows(_read_text(path), path, DataError, f"task {task!r} needs objects with keys {list(keys)}",
                            keys):
        for k in keys:
            v = obj[k]
            if not (isinstance(v, str) or k == "label" and isinstance(v, int) and not isinstance(v, bool)):
                want = "a string or an integer" if k == "label" else "a string"
                raise DataError(f"{path}:{n}: field {k!r} must be {want}, got {type(v).__name__} {json.dumps(v)[:40]}")
        vals = tuple(obj[k] for k in keys)
        out.append(vals[0] if task == "lm" else vals)
    if not out:
        raise DataError(f"no examples in {path}")
    return out


def label_names(labels) -> list[str]:
    """Distinct labels as strings, sorted numerically when all are integers."""
    names = sorted({str(x).strip() for x in labels})
    if all(re.fullmatch(r"-?\d+", s) for s in names):
        names.sort(key=int)
    return names


def read_file(path: Path, task: str) -> list:
    """Raw examples of one user file for `task` (classify labels still as strings)."""
    ext = path.suffix.lower()
    if ext not in SUPPORTED:
        if not path.exists():
            raise DataFileNotFoundError(f"data file not found: {path}")
        raise DataError(f"unsupported data file type {ext!r} ({path}); use one of {sorted(SUPPORTED)}")
    if task not in SUPPORTED[ext]:
        raise DataError(f"a {ext} file holds tasks {list(SUPPORTED[ext])}, not {task!r} ({path})")
    if ext == ".txt":
        return read_lm_txt(path)
    if ext == ".tsv":
        return read_tsv(path, task)
    out = read_jsonl(path, task)
    if task == "lm":
        return [str(t) for t in out]
    return [(str(a), b if task == "classify" else str(b)) for a, b in out]


SPLIT_NAMES = {"train": ("train",), "valid": ("valid", "dev", "validation"), "test": ("test",)}


def find_split_files(folder: Path) -> dict[str, list[Path]]:
    """The files of each split ("train", "valid", "test") inside `folder`, in one of two layouts:

    - ``train.EXT``, ``valid.EXT`` (or ``dev`` / ``validation``), ``test.EXT``: one file per split;
    - sub-folders ``train/``, ``valid/`` (or ``dev/`` / ``validation/``), ``test/``, each holding
      any number of files of one supported extension (e.g. one .txt per book), read in name order
      (sub-folders included; hidden files and files of other extensions are skipped).
    """
    found = _split_subfolders(folder) or _split_single_files(folder)
    missing = [s for s in SPLIT_NAMES if s not in found]
    if missing:
        raise DataError(f"folder {folder} needs train/valid/test files with one of the extensions "
                        f"{sorted(SUPPORTED)} (or train/, valid/, test/ sub-folders of such files); "
                        f"missing: {', '.join(missing)}")
    return found


def _split_single_files(folder: Path) -> dict[str, list[Path]]:
    for ext in SUPPORTED:
        hits = {}
        for split, stems in SPLIT_NAMES.items():
            path = next((folder / f"{s}{ext}" for s in stems if (folder / f"{s}{ext}").is_file()), None)
            if path is not None:
                hits[split] = [path]
        if hits:
            return hits
    return {}


def _split_subfolders(folder: Path) -> dict[str, list[Path]]:
    hits: dict[str, list[Path]] = {}
    for split, stems in SPLIT_NAMES.items():
        sub = next((folder / s for s in stems if (folder / s).is_dir()), None)
        if sub is None:
            continue
        paths = sorted(p for p in sub.rglob("*") if p.is_file() and p.suffix.lower() in SUPPORTED
                       and not any(part.startswith(".") for part in p.relative_to(sub).parts))
        if not paths:
            raise DataError(f"{sub} holds no data files; put the {split} split there as files ending in "
                            f"{', '.join(sorted(SUPPORTED))}")
        hits[split] = paths
    exts = {p.suffix.lower() for paths in hits.values() for p in paths}
    if len(exts) > 1:
        raise DataError(f"the split folders of {folder} mix file types {sorted(exts)}; use one format")
    return hits


def read_files(paths: list[Path], task: str) -> list:
    """Raw examples of several user files of one split, in order (see `read_file`)."""
    return [x for path in paths for x in read_file(path, task)]
