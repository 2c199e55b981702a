"""``pto fmt``: a module's canonical text with the source's comments kept.

The IR keeps no comments, so they are read from the source: each ``//`` or ``#`` comment is
attached by position to a line of the canonical output. A comment alone on its line goes
before the first canonical line that starts after it (so a comment at the end of a region
prints before the region's ``}``, indented as the region's body, and one at the end of the
file stays at the end); a comment after code goes at the end of the canonical line that
started last before it. Blank lines are kept the same way (a run of them as one, none right
after a ``{`` or right before a ``}``), so a program's paragraphs survive. Canonical lines
are found from statement locations and, for ``}`` and ``} else {``, from the source's
matching braces. Output is idempotent and parses to the same module as the input.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Iterator

from .ir import For, If, Kernel, Module, Stmt
from .lexer import IDENT, PUNCT, lex_line
from .printer import INDENT, print_kernel

Pos = tuple[int, int]          # (line, column), 1-based
END: Pos = (1 << 62, 0)        # after everything: lines with no place in the source


@dataclass(frozen=True)
class Comment:
    pos: Pos
    text: str                  # from the comment marker to the end of the line, right-stripped
    after_code: bool           # code precedes it on its line


@dataclass
class _Line:
    """One canonical output line, where its text starts in the source, and its comments."""

    text: str
    pos: Pos
    comment_indent: str        # indentation for comments placed before this line
    leading: list[str | None] = field(default_factory=list)    # comments; None: a blank line
    trailing: str | None = None


def scan_comments(source: str) -> list[Comment]:
    """Every comment of ``source``: the text after a line's last token, when it is one."""
    out = []
    for no, line in enumerate(source.split("\n"), 1):
        toks = lex_line(line, no)
        start = toks[-1].col - 1 + len(toks[-1].text) if toks else 0
        rest = line[start:].strip()
        if rest.startswith(("//", "#")):
            out.append(Comment((no, line.index(rest, start) + 1), rest, bool(toks)))
    return out


class _Source:
    """Source positions of the canonical lines that statements do not locate: the ``}`` of
    each region (matched brace pairs) and the kernel headers actually written."""

    def __init__(self, source: str) -> None:
        toks = [t for no, line in enumerate(source.split("\n"), 1) for t in lex_line(line, no)]
        self.kernels = {(t.line, t.col) for t in toks if t.kind == IDENT and t.text == "kernel"}
        self.toks = [t for t in toks if (t.kind == PUNCT and t.text in "{}") or t.text == "else"]
        self.pairs: dict[int, int] = {}
        stack: list[int] = []
        for i, t in enumerate(self.toks):
            if t.text == "{":
                stack.append(i)
            elif t.text == "}" and stack:
                self.pairs[stack.pop()] = i

    def _open_after(self, pos: Pos) -> int | None:
        k = bisect.bisect_right([(t.line, t.col) for t in self.toks], pos)
        return next((i for i in range(k, len(self.toks)) if self.toks[i].text == "{"), None)

    def closes(self, pos: Pos | None, regions: int) -> list[Pos]:
        """Positions of the ``}`` closing each of the ``regions`` regions written right
        after ``pos`` (a for's body; an if's then and else), END where unknown."""
        out: list[Pos] = []
        i = None if pos is None else self._open_after(pos)
        for _ in range(regions):
            close = None if i is None else self.pairs.get(i)
            if close is None:
                return out + [END] * (regions - len(out))
            out.append((self.toks[close].line, self.toks[close].col))
            nxt = close + 1
            has_else = nxt + 1 < len(self.toks) and self.toks[nxt].text == "else" and self.toks[nxt + 1].text == "{"
            i = nxt + 1 if has_else else None
        return out


def scan_blank_lines(source: str) -> list[Pos]:
    """The position of every line of ``source`` that holds only white space."""
    return [(no, 1) for no, line in enumerate(source.split("\n"), 1) if not line.strip()]


def _pos(s: Stmt | Kernel) -> Pos | None:
    loc = s.loc
    return None if loc is None or loc.line is None else (loc.line, loc.col or 1)


def _layout(body: tuple[Stmt, ...], depth: int, src: _Source) -> Iterator[tuple[Pos | None, int, int]]:
    """(source position, indent depth, comment depth) per canonical line of ``body``, in
    the printer's order: one line per statement, ``{``/``} else {``/``}`` for regions."""
    for s in body:
        at = _pos(s)
        yield at, depth, depth
        if isinstance(s, For):
            (close,) = src.closes(at, 1)
            yield from _layout(s.body, depth + 1, src)
            yield close, depth, depth + 1
        elif isinstance(s, If):
            then_close, else_close = src.closes(at, 2)
            yield from _layout(s.then_body, depth + 1, src)
            if s.else_body:
                yield then_close, depth, depth + 1
                yield from _layout(s.else_body, depth + 1, src)
            yield (else_close if else_close != END else then_close), depth, depth + 1


def _kernel_lines(k: Kernel, src: _Source) -> list[_Line]:
    texts = print_kernel(k).rstrip("\n").split("\n")
    body = list(_layout(k.body, 1, src))
    head = _pos(k)
    written = head in src.kernels          # else a bare statement list, printed with a header
    if head is None:
        head = next((p for p, _, _ in body if p is not None), END)
    close = src.closes(head, 1)[0] if written else END
    places = [(head, 0, 0)] + body + [(close, 0, 1)]
    if len(places) != len(texts):
        raise AssertionError(f"format: {len(texts)} printed lines for {len(places)} places in @{k.name}")
    lines, last = [], (0, 0)
    for text, (at, _, cdepth) in zip(texts, places):
        last = max(last, at or last)       # unlocated lines (built in Python) stay in order
        lines.append(_Line(text, last, INDENT * cdepth))
    return lines


def format_source(module: Module, source: str) -> str:
    """``module``'s canonical text (``module`` parsed from ``source``) with ``source``'s
    comments in place."""
    src = _Source(source)
    kernels = [_kernel_lines(k, src) for k in module.kernels]
    flat = [line for ks in kernels for line in ks]
    starts = [line.pos for line in flat]
    tail: list[str | None] = []
    events: list[Comment | Pos] = [*scan_comments(source), *scan_blank_lines(source)]
    for c in sorted(events, key=lambda e: e.pos if isinstance(e, Comment) else e):
        if not isinstance(c, Comment):                    # a blank line: before the next line
            before = bisect.bisect_left(starts, c)
            (flat[before].leading if before < len(flat) else tail).append(None)
            continue
        before = bisect.bisect_left(starts, c.pos)        # lines starting before the comment
        free = not any(t is not None for t in (flat[before].leading if before < len(flat) else tail))
        if c.after_code and before and flat[before - 1].trailing is None and free:
            flat[before - 1].trailing = c.text
            continue
        # on its own line, or a second comment for one line: before the next line
        if before < len(flat):
            flat[before].leading.append(c.text)
        else:
            tail.append(c.text)
    out: list[str] = []
    for n, ks in enumerate(kernels):
        if n:
            out.append("")
        for line in ks:
            _emit(out, line.comment_indent, line.leading, closing=line.text.lstrip().startswith("}"))
            out.append(line.text + (f"  {line.trailing}" if line.trailing else ""))
    _emit(out, "", tail, closing=True)
    return "\n".join(out) + "\n" if out else ""


def _emit(out: list[str], indent: str, leading: list[str | None], closing: bool) -> None:
    """Append comments and blank lines (``None``) before a line: one blank for a run, none at
    the start of the output or of a region, none before a closing brace or the end."""
    for k, t in enumerate(leading):
        if t is not None:
            out.append(indent + t)
        elif (out and out[-1] and not out[-1].endswith("{")
              and not (closing and all(u is None for u in leading[k:]))):
            out.append("")
