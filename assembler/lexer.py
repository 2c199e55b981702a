"""PTO-AS tokens with line:column positions.

Types (``!pto.tile<...>``) and opaque attributes (``#pto.cmp<GT>``) are single tokens whose
text runs to the matching ``>``; the parser hands type text to ``isa.types.parse_type``.
A character that starts no token becomes an ERROR token, so the parser reports it where it
stands and recovers at the next line. Comments: ``//`` and ``#`` (when not followed by a
letter, which starts an attribute) run to the end of the line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

VALUE, SYMBOL, ATTR, TYPE, IDENT, DIRECTIVE = "value", "symbol", "attr", "type", "ident", "directive"
INT, FLOAT, PUNCT, NEWLINE, EOF, ERROR = "int", "float", "punct", "newline", "eof", "error"


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    line: int
    col: int      # 1-based
    message: str = ""  # ERROR tokens: what is wrong

    def is_(self, kind: str, text: str | None = None) -> bool:
        return self.kind == kind and (text is None or self.text == text)

    def __str__(self) -> str:
        return {NEWLINE: "end of line", EOF: "end of input"}.get(self.kind, repr(self.text))


_NAME = r"[A-Za-z0-9_$.\-]+"
_IDENT = r"[A-Za-z_][A-Za-z0-9_.]*"
_NUMBER = r"-?(?:0x[0-9A-Fa-f]+|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|inf\b|nan\b)"
_RULES: list[tuple[str, str]] = [
    ("ws", r"[ \t\r\f\v]+"),
    ("comment", r"//[^\n]*|#(?![A-Za-z_])[^\n]*"),
    (NEWLINE, r"\n"),
    (VALUE, r"%" + _NAME),
    (SYMBOL, r"@" + _NAME),
    (ATTR, r"#" + _IDENT),
    (TYPE, r"!" + _IDENT),
    (DIRECTIVE, r"\." + _IDENT),
    (FLOAT, r"-?(?:\d+\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|inf\b|nan\b)"),
    (INT, r"-?(?:0x[0-9A-Fa-f]+|\d+)"),
    (IDENT, _IDENT),
    (PUNCT, r"->|[()\[\]{},:=;<>]"),
]
_MASTER = re.compile("|".join(f"(?P<{k}>{p})" if k not in (NEWLINE,) else f"(?P<nl>{p})"
                              for k, p in _RULES))
_BRACKETED = (ATTR, TYPE, IDENT)   # may be followed by a <...> body that belongs to the token


def _angle_end(text: str, start: int) -> int:
    """Index just past the '>' matching text[start] == '<', or -1 (unbalanced on this line)."""
    depth = 0
    for i in range(start, len(text)):
        ch = text[i]
        if ch == "\n":
            return -1
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
            if depth == 0:
                return i + 1
    return -1


def tokenize(text: str) -> list[Token]:
    toks: list[Token] = []
    pos, line, line_start = 0, 1, 0
    n = len(text)
    while pos < n:
        col = pos - line_start + 1
        m = _MASTER.match(text, pos)
        if m is None or not (ord(text[pos]) < 128):
            toks.append(Token(ERROR, text[pos], line, col, f"unexpected character {text[pos]!r}"))
            pos += 1
            continue
        kind = m.lastgroup or ""
        end = m.end()
        if kind == "nl":
            toks.append(Token(NEWLINE, "\n", line, col))
            pos, line, line_start = end, line + 1, end
            continue
        if kind in ("ws", "comment"):
            pos = end
            continue
        if kind in _BRACKETED and end < n and text[end] == "<":
            close = _angle_end(text, end)
            if close < 0:
                toks.append(Token(ERROR, text[pos:end], line, col, "unterminated '<' in type or attribute"))
                nl = text.find("\n", end)
                pos = n if nl < 0 else nl
                continue
            body = text[end:close]
            if not body.isascii():
                toks.append(Token(ERROR, text[pos:close], line, col, "non-ASCII character in type or attribute"))
                pos = close
                continue
            end = close
            kind = TYPE if kind == IDENT else kind
        toks.append(Token(kind, text[pos:end], line, col))
        pos = end
    toks.append(Token(EOF, "", line, pos - line_start + 1))
    return toks
