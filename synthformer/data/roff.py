"""Plain text from manual pages written with the groff ``man`` macros, without groff.

Enough of roff for the Linux man-pages project (Debian `manpages`, `manpages-dev`):

- comments (``.\\"``, ``\\"``), macro definitions (``.de`` .. ``..``), conditionals (``.if``,
  ``.ie``/``.el``, with ``\\{`` .. ``\\}`` blocks) and tbl tables (``.TS`` .. ``.TE``) are dropped;
- font macros keep their text (``.B``, ``.I``: arguments joined by spaces; ``.BR``, ``.IR``,
  ``.BI``, ...: alternating fonts, arguments concatenated), with the next line as text when they
  have no arguments;
- paragraph macros (``.PP``, ``.TP``, ``.IP``, ``.RS``, ``.sp``, ...) start a new paragraph; the
  tag of ``.IP`` and the tag line after ``.TP`` are paragraphs of their own; no-fill blocks
  (``.nf``/``.EX``) keep their lines;
- escapes: fonts and sizes removed, named glyphs (``\\[em]``, ``\\(bu``, ``\\[aq]``, ...) turned into
  characters, ``\\-`` into "-", ``\\e`` into a backslash; unknown glyphs and numeric escapes dropped.

`sections` returns each section (``.SH``) as text: paragraphs separated by newlines, spaces
collapsed inside a paragraph; ``.SS`` headings are kept as paragraphs.
"""
from __future__ import annotations

import re

GLYPHS = {  # groff glyph names (\(xx, \[xx]) -> text
    "em": "\u2014", "en": "\u2013", "hy": "-", "mi": "-", "bu": "\u2022", "aq": "'", "dq": '"',
    "lq": "\u201c", "rq": "\u201d", "oq": "\u2018", "cq": "\u2019", "ha": "^", "ti": "~", "ga": "`",
    "rs": "\\", "sl": "/", "ba": "|", "co": "\u00a9", "rg": "\u00ae", "tm": "\u2122", "dg": "\u2020",
    "de": "\u00b0", "mu": "\u00d7", "di": "\u00f7", "+-": "\u00b1", "<=": "\u2264", ">=": "\u2265",
    "!=": "\u2260", "->": "\u2192", "<-": "\u2190", "ra": "\u27e9", "la": "\u27e8", "sc": "\u00a7",
    "fm": "\u2032", "sd": "\u2033", "mc": "\u00b5", "Fo": "\u00ab", "Fc": "\u00bb", "lh": "\u261c",
    "rh": "\u261e", "'a": "\u00e1", "`a": "\u00e0", "^a": "\u00e2", ":a": "\u00e4", "'e": "\u00e9",
    "`e": "\u00e8", ":o": "\u00f6", ":u": "\u00fc", "ss": "\u00df", ",c": "\u00e7", "~n": "\u00f1",
}
STRINGS = {"lq": "\u201c", "rq": "\u201d", "R": "\u00ae", "Tm": "\u2122", "dg": "\u2020"}  # \*(xx

_NAME = r"(?:\((..)|\[([^\]]*)\]|(.))"  # the name of an escape: \(xx, \[long], or one character
_ESCAPE = re.compile(
    r"\\(?:"
    r"(?P<glyph>\(..|\[[^\]]*\])"  # \(em, \[em]
    r"|\*(?P<string>" + _NAME + r")"  # \*(lq, \*[lq], \*R
    r"|[fF]" + _NAME +  # font change
    r"|s[-+]?(?:\d\d?|\(\d\d|\[\d+\])"  # size change
    r"|[nmgV]" + _NAME +  # register, colour, format, environment
    r"|[wNhvlLoDbxXHSRZ]'[^']*'"  # width, char number, motions, drawing: dropped whole
    r"|[kzY]" + r"(?:.)"  # marks, zero-width character
    r"|(?P<char>.)"  # one-character escapes
    r")", re.S)
_ONE = {"-": "-", "e": "\\", "\\": "\\", "~": " ", " ": " ", "0": " ", "t": " ", "'": "'", "`": "`",
        ".": ".", "&": "", "|": "", "^": "", ":": "", "%": "", "/": "", ",": "", "c": "", "!": "",
        "p": "", "a": "", "u": "", "d": "", "r": "", "}": "", "{": ""}


def _escape(m: re.Match) -> str:
    if m.group("glyph"):
        name = m.group("glyph")[1:-1] if m.group("glyph").startswith("[") else m.group("glyph")[1:]
        if name.startswith("u") and re.fullmatch(r"u[0-9A-Fa-f]{4,6}", name):
            return chr(int(name[1:], 16))
        return GLYPHS.get(name, "")
    if m.group("string"):
        s = m.group("string")
        name = s[1:] if s.startswith("(") else s[1:-1] if s.startswith("[") else s
        return STRINGS.get(name, "")
    if m.group("char") is not None:
        return _ONE.get(m.group("char"), m.group("char"))
    return ""


def unescape(text: str) -> str:
    """Roff escapes in one line of text turned into plain characters (formatting dropped)."""
    return _ESCAPE.sub(_escape, text)


def _strip_comment(line: str) -> str:
    """`line` without a trailing ``\\"`` or ``\\#`` comment (an escaped backslash is not one)."""
    i = 0
    while True:
        i = line.find("\\", i)
        if i < 0 or i + 1 >= len(line):
            return line
        if line[i + 1] in "\"#":
            return line[:i]
        i += 2


def _args(rest: str) -> list[str]:
    """Macro arguments: space-separated, double quotes group ("" inside quotes is a quote)."""
    out, i, n = [], 0, len(rest)
    while i < n:
        while i < n and rest[i] in " \t":
            i += 1
        if i >= n:
            break
        if rest[i] == '"':
            i += 1
            buf = []
            while i < n:
                if rest[i] == '"':
                    if i + 1 < n and rest[i + 1] == '"':
                        buf.append('"')
                        i += 2
                        continue
                    i += 1
                    break
                buf.append(rest[i])
                i += 1
            out.append("".join(buf))
        else:
            j = i
            while j < n and rest[j] not in " \t":
                j += 2 if rest[j] == "\\" else 1
            out.append(rest[i:j])
            i = j
    return out


FONT_JOINED = {"B", "I", "SM", "SB"}  # arguments joined by spaces
FONT_ALTERNATING = {"BR", "RB", "BI", "IB", "IR", "RI"}  # arguments concatenated
BREAKS = {"PP", "P", "LP", "TP", "TQ", "IP", "HP", "RS", "RE", "sp", "br", "nf", "fi", "EX", "EE",
          "SY", "YS", "in", "ti", "UR", "UE", "MT", "ME", "INDENT", "UNINDENT", "QS", "QE", "Vb", "Ve"}
NO_FILL_START, NO_FILL_END = {"nf", "EX", "Vb"}, {"fi", "EE", "Ve"}


class _Writer:
    """Collects the paragraphs of each section."""

    def __init__(self):
        self.sections: dict[str, list[str]] = {}
        self.current: str | None = None
        self.para: list[str] = []
        self.no_fill = False

    def flush(self) -> None:
        if self.current is not None and self.para:
            text = " ".join(" ".join(self.para).split())
            if text:
                self.sections.setdefault(self.current, []).append(text)
        self.para = []

    def section(self, name: str) -> None:
        self.flush()
        self.current = " ".join(name.split()).upper()
        self.sections.setdefault(self.current, [])

    def text(self, line: str) -> None:
        self.para.append(line)
        if self.no_fill:  # one output line per input line
            self.flush()


def _logical_lines(text: str) -> list[str]:
    """Input lines with ``\\``-newline continuations joined."""
    out, buf = [], ""
    for line in text.replace("\r\n", "\n").split("\n"):
        if line.endswith("\\") and not line.endswith("\\\\"):
            buf += line[:-1]
            continue
        out.append(buf + line)
        buf = ""
    if buf:
        out.append(buf)
    return out


def sections(text: str) -> dict[str, str]:
    """Section name (upper case, e.g. "NAME", "DESCRIPTION") -> its plain text, paragraphs
    separated by newlines. A page that is only ``.so OTHER`` (an alias) has no sections."""
    w = _Writer()
    skip_until: str | None = None  # ".." for macro definitions, ".TE" for tables, "\\}" for blocks
    pending = ""  # "heading": the next text is a .SH heading; "tag": a paragraph of its own

    def emit(out: str) -> None:
        nonlocal pending
        if pending == "heading":
            w.section(out)
        elif pending == "tag":
            w.flush()
            w.text(out)
            w.flush()
        else:
            w.text(out)
        pending = ""

    for raw in _logical_lines(text):
        if skip_until is not None:
            if (skip_until == "\\}" and "\\}" in raw) or raw.strip().startswith(skip_until):
                skip_until = None
            continue
        line = _strip_comment(raw)
        if not line.strip():  # a blank line is a paragraph break
            w.flush()
            continue
        if line[:1] not in (".", "'"):
            emit(unescape(line))
            continue
        parts = line[1:].strip().split(None, 1)
        if not parts:
            continue
        name, rest = parts[0], (parts[1] if len(parts) > 1 else "")
        args = _args(rest)
        if name == "de":
            skip_until = ".."
        elif name == "TS":
            skip_until = ".TE"
        elif name in ("if", "ie", "el"):
            if "\\{" in line and "\\}" not in line:
                skip_until = "\\}"
        elif name == "SH":
            w.flush()
            if args:
                w.section(" ".join(unescape(a) for a in args))
            else:
                pending = "heading"
        elif name == "SS":
            pending = "tag"
            if args:
                emit(" ".join(unescape(a) for a in args))
        elif name in FONT_JOINED or name in FONT_ALTERNATING:
            if args:  # without arguments the next text line is set in the font: nothing to do
                emit((" " if name in FONT_JOINED else "").join(unescape(a) for a in args))
        elif name in BREAKS:
            w.flush()
            w.no_fill = (w.no_fill or name in NO_FILL_START) and name not in NO_FILL_END
            if name == "TP":
                pending = "tag"
            elif name == "IP" and args and unescape(args[0]).strip():
                pending = "tag"
                emit(unescape(args[0]))
        # every other request (.TH, .ad, .nh, .PD, .ft, .so, ...) prints nothing
    w.flush()
    return {name: "\n".join(paras) for name, paras in w.sections.items()}


def is_alias(text: str) -> bool:
    """Whether a page is only an alias of another (``.so man2/open.2``)."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith((".\\\"", "'\\\""))]
    return bool(lines) and lines[0].startswith(".so ")
