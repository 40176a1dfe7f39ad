"""The one JSON and JSONL reader: user data files (``data.files``), a run's ``metrics.jsonl`` (``runs``) and
``synthformer bench`` rows (``plots.bench``) all go through `read_rows`, so every bad line is the
same one-line error naming the file, the line and what is wrong; a JSON file (a grid's settings, floor,
results, a tokenizer's state) goes through `read_json`, the same way."""
from __future__ import annotations

import json
from pathlib import Path


def read_rows(text: str, path: Path | str, error: type[Exception], fix: str,
              required: tuple[str, ...] = ()) -> list[tuple[int, dict]]:
    """(line number, object) for every non-blank line of ``text`` (the contents of ``path``).

    A line that is not JSON, not a JSON object, or lacks a key of ``required`` raises ``error``:
    ``"PATH:LINE: what is wrong; FIX"``.
    """
    rows = []
    for n, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise error(f"{path}:{n}: not JSON ({e.msg}); {fix}") from None
        if not isinstance(row, dict):
            raise error(f"{path}:{n}: not a JSON object; {fix}")
        missing = [k for k in required if k not in row]
        if missing:
            raise error(f"{path}:{n}: lacks {missing}; {fix}")
        rows.append((n, row))
    return rows


def read_json(path: Path | str, error: type[Exception], fix: str):
    """The JSON value in file ``path``; a damaged file (not JSON, not UTF-8) is one ``error``:
    ``"PATH is not valid JSON (what); FIX"``."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise error(f"{path} is not valid JSON ({e}); {fix}") from None


def dumps_readable(obj, indent: int = 2) -> str:
    """``json.dumps(obj, indent=indent, default=str)``, except that a list holding no object is written on one
    line: a results file's per-item records (thousands of numbers per run) stay a few lines each instead of one
    line per number (table3's dialogue results.json: 30 MB indented, under 6 MB this way), while its objects keep
    one key per line. ``json.loads`` of the text equals ``json.loads(json.dumps(obj, default=str))``."""
    def enc(o, level: int) -> str:
        if isinstance(o, dict) and o:  # keys as json writes them (1 -> "1", None -> "null")
            parts, brackets = [f"{json.dumps(k if isinstance(k, str) else json.dumps(k))}: {enc(v, level + 1)}"
                               for k, v in o.items()], "{}"
        elif isinstance(o, (list, tuple)) and any(isinstance(x, dict) for x in o):
            parts, brackets = [enc(v, level + 1) for v in o], "[]"
        else:  # a scalar, a list of no object, an empty object, anything json's default=str writes
            return json.dumps(o, default=str)
        pad = " " * (indent * (level + 1))
        return brackets[0] + "\n" + ",\n".join(pad + p for p in parts) + "\n" + " " * (indent * level) + brackets[1]
    return enc(obj, 0)
