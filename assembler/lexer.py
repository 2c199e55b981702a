"""PTO-AS tokens with line:column positions.

Types (``!pto.tile<...>``) and opaque attributes (``#pto.cmp<GT>``) are single tokens whose
text runs to the matching ``>``; the parser hands type text to ``isa.types.parse_type``.
A character that starts no token becomes an ERROR token, so the parser reports it where it
stands and recovers at the next line. Comments: ``//`` and ``#`` (when not followed by a
letter, which starts an attribute) run to the end of the line.

No token spans a line, so text is lexed one line at a time (``lex_line``); a line that
``continues`` the one before it gets no NEWLINE between them: the parser lexes
a line only when it needs its tokens, and skips lexing lines it recognises whole.
"""
from __future__ import annotations

import re
from typing import NamedTuple

VALUE, SYMBOL, ATTR, TYPE, IDENT, DIRECTIVE = "value", "symbol", "attr", "type", "ident", "directive"
INT, FLOAT, PUNCT, NEWLINE, EOF, ERROR = "int", "float", "punct", "newline", "eof", "error"
STRING = "string"          # "lt": attribute values the public pages quote


class Token(NamedTuple):
    """One token: a plain tuple, as a parse makes hundreds of thousands of them."""

    kind: str
    text: str
    line: int
    col: int                # 1-based
    message: str = ""       # ERROR tokens: what is wrong

    def is_(self, kind: str, text: str | None = None) -> bool:
        return self.kind == kind and (text is None or self.text == text)

    def __str__(self) -> str:
        return {NEWLINE: "end of line", EOF: "end of input"}.get(self.kind, repr(self.text))


# ``new_token(Token, (kind, text, line, col, message))``: a Token without the NamedTuple
# constructor's Python-level call, for the loops that make them by the thousand.
new_token = tuple.__new__


WS = " \t\r\f\v"          # what separates tokens (a newline ends the line too)
_NAME = r"[A-Za-z0-9_$.\-]+"
_IDENT = r"[A-Za-z_][A-Za-z0-9_.]*"
_RULES: list[tuple[str, str]] = [
    ("ws", r"[ \t\r\f\v]+"),
    ("comment", r"//[^\n]*|#(?![A-Za-z_])[^\n]*"),
    (VALUE, r"%" + _NAME),
    (SYMBOL, r"@" + _NAME),
    (ATTR, r"#" + _IDENT),
    (TYPE, r"!" + _IDENT),
    (DIRECTIVE, r"\." + _IDENT),
    (FLOAT, r"-?(?:\d+\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|inf\b|nan\b)"),
    (INT, r"-?(?:0x[0-9A-Fa-f]+|\d+)"),
    (IDENT, _IDENT),
    (STRING, r'"[A-Za-z0-9_.]*"'),
    (PUNCT, r"->|[()\[\]{},:=;<>]"),
]
_MASTER = re.compile("|".join(f"(?P<{k}>{p})" for k, p in _RULES))
_BRACKETED = (ATTR, TYPE, IDENT)   # may be followed by a <...> body that belongs to the token
_SKIP = ("ws", "comment")

# The same rules for one pass of ``finditer`` over an ASCII line: leading whitespace is part
# of each match, bodies nested at most one level deep are part of their token (an identifier
# with a body is a type), and any other character is an error. A bracketed token still
# followed by '<' (a body unbalanced or nested deeper) sends the line to the general loop.
_BODY = r"<(?:[^<>]|<[^<>]*>)*>"
_ONE_PASS = re.compile(r"[ \t\r\f\v]*+(?:" + "|".join(
    f"(?P<{k}>{p + '(?:' + _BODY + ')?' if k in (ATTR, TYPE) else p})" if k != IDENT
    else f"(?P<bodied>{p}{_BODY})|(?P<{k}>{p})" for k, p in _RULES if k != "ws")
    + r"|(?P<error>[^ \t\r\f\v]))")

# The ``%name`` spellings of a line, in order (the VALUE rule above, found anywhere).
VALUE_NAME = re.compile("%(" + _NAME + ")")
_WHOLE_NAME = re.compile(_NAME + r"\Z").match


# A line that opens with one of these continues the statement of the line before it (the
# newline between them separates nothing): the public pages break a long statement before
# its signature (``: ...``), its result types (``-> ...``), its ``outs(...)`` or ``pipe(...)`` list.
_OPENS_CONTINUATION = r"[ \t\r\f\v]*+(?::|->|(?:ins|outs|pipe)[ \t]*+\()"
_CONTINUATION = re.compile(_OPENS_CONTINUATION).match


def continues(line: str) -> bool:
    """Whether ``line`` continues the statement of the line before it."""
    return _CONTINUATION(line) is not None


_CONTINUED = re.compile("\n" + _OPENS_CONTINUATION)


def continued_lines(text: str) -> frozenset[int]:
    """The index (in ``text.split("\\n")``) of every line after the first that ``continues``:
    one scan of the whole text, so the parser's per-line test is a set lookup."""
    out, line, at = set(), 0, 0
    for m in _CONTINUED.finditer(text):
        start = m.start()
        line += text.count("\n", at, start) + 1
        at = start + 1
        out.add(line)
    return frozenset(out)


def is_name(name: str) -> bool:
    """Whether ``%name`` / ``@name`` lexes as one token of that name: the only names the text
    form (and so bytecode, whose modules print as text) can hold."""
    return isinstance(name, str) and _WHOLE_NAME(name) is not None
# What ``VALUE_NAME.sub`` puts in a name's place to key a line by its shape: no line holds a
# newline, so two lines share a key exactly when they differ only in their names.
NAME_MARK = "\n"


def _angle_end(text: str, start: int) -> int:
    """Index just past the '>' matching text[start] == '<', or -1 (unbalanced)."""
    depth = 0
    for i in range(start, len(text)):
        ch = text[i]
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
            if depth == 0:
                return i + 1
    return -1


def lex_line(text: str, line: int) -> list[Token]:
    """The tokens of one line (``text`` holds no newline), without the NEWLINE token."""
    # Trailing blanks first: ``finditer`` would try (and fail) a match at each of them,
    # scanning the rest of the run every time (quadratic in the run's length).
    text = text.rstrip(WS)
    if not text.isascii():
        return _lex_general(text, line)
    toks: list[Token] = []
    add = toks.append
    n = len(text)
    for m in _ONE_PASS.finditer(text):
        kind = m.lastgroup
        if kind == "comment":
            continue
        start, end = m.span(m.lastindex)  # type: ignore[arg-type]
        if end < n and text[end] == "<" and kind in _BRACKETED:
            return _lex_general(text, line)
        if kind == "error":
            add(new_token(Token, (ERROR, text[start], line, start + 1, f"unexpected character {text[start]!r}")))
        else:
            add(new_token(Token, (TYPE if kind == "bodied" else kind, text[start:end], line, start + 1, "")))
    return toks


def _lex_general(text: str, line: int) -> list[Token]:
    toks: list[Token] = []
    pos, n = 0, len(text)
    match = _MASTER.match
    ascii_line = text.isascii()
    while pos < n:
        m = match(text, pos)
        if m is None or not (ascii_line or ord(text[pos]) < 128):
            toks.append(Token(ERROR, text[pos], line, pos + 1, f"unexpected character {text[pos]!r}"))
            pos += 1
            continue
        kind = m.lastgroup
        end = m.end()
        if kind in _SKIP:
            pos = end
            continue
        if kind in _BRACKETED and end < n and text[end] == "<":
            close = _angle_end(text, end)
            if close < 0:
                toks.append(Token(ERROR, text[pos:end], line, pos + 1, "unterminated '<' in type or attribute"))
                return toks
            if not (ascii_line or text[end:close].isascii()):
                toks.append(Token(ERROR, text[pos:close], line, pos + 1,
                                  "non-ASCII character in type or attribute"))
                pos = close
                continue
            end = close
            if kind == IDENT:
                kind = TYPE
        toks.append(Token(kind, text[pos:end], line, pos + 1))  # type: ignore[arg-type]
        pos = end
    return toks


def tokenize(text: str) -> list[Token]:
    """Every token of ``text``: each line's, a NEWLINE after each but the last, then EOF."""
    lines = text.split("\n")
    toks: list[Token] = []
    for k, line in enumerate(lines, 1):
        toks += lex_line(line, k)
        if k < len(lines) and not continues(lines[k]):
            toks.append(Token(NEWLINE, "\n", k, len(line) + 1))
    toks.append(Token(EOF, "", len(lines), len(lines[-1]) + 1))
    return toks
