"""Token cursor for the recursive-descent parser: lookahead, located errors, and the small
sub-grammars every statement shares (types, value names, literals, opaque attributes)."""
from __future__ import annotations

import enum
import functools
import re
from dataclasses import dataclass, field
from typing import Any, NoReturn

from ..isa.diagnostics import Location, ParseError, PTOError, StructError
from ..isa.suggest import did_you_mean
from ..isa.types import Pipe, Type, parse_type
from .ir import MAX_DIGITS, Lit, MemRef, Number, PipeLit, ScalarOp, TileOp, Value
from .lexer import (ATTR, EOF, ERROR, FLOAT, IDENT, INT, NAME_MARK, NEWLINE, PUNCT, SYMBOL, TYPE, VALUE, VALUE_NAME,
                    Token, continued_lines, lex_line, new_token)
from .operands import ENUM_KINDS
from .public import KIND_ALIASES, member_spelling, op_class_pipe
from .scope import MISSING, POISON, Scope

# enum attribute values ``#pto.cmp<GT>`` / ``#pto<cmp GT>``: the key picks the enum class (operands.ENUM_KINDS)
_DOTTED = re.compile(r"^#pto\.([A-Za-z_][A-Za-z0-9_]*)<\s*([A-Za-z0-9_]+)\s*>$")
_GENERIC = re.compile(r"^#pto<\s*([A-Za-z_][A-Za-z0-9_]*)\s+([A-Za-z0-9_]+)\s*>$")
_OP_CLASS = re.compile(r"^#pto(?:\.op<\s*|<\s*op\s+)([A-Za-z_][A-Za-z0-9_]*)\s*>$")
_ENDS = (NEWLINE, EOF)

_parse_type = functools.lru_cache(maxsize=4096)(parse_type)   # types are immutable values


def _shape(line: str, toks: list[Token]) -> list[tuple] | None:
    """``toks`` with each %name and column relative to the line's names, or None when a
    name is part of another token (a type body, an error). Tokens and names are both in
    line order, so one walk pairs them."""
    spans = [m.span() for m in VALUE_NAME.finditer(line)]
    shape = []
    j = shift = 0                        # names wholly before the token; their length less '%'
    for t in toks:
        start = t.col - 1
        end = start + len(t.text)
        while j < len(spans) and spans[j][1] <= start:
            shift += spans[j][1] - spans[j][0] - 1
            j += 1
        overlaps = j < len(spans) and spans[j][0] < end
        if t.kind == VALUE:
            if not (overlaps and spans[j] == (start, end)):
                return None
            shape.append((t.kind, "", j, t.col - shift, j, t.message))
        elif overlaps:
            return None
        else:
            shape.append((t.kind, t.text, -1, t.col - shift, j, t.message))
    return shape


# The parser's line templates make a Location, a statement and often a Value per line. These
# makers fill a frozen dataclass's fields straight into its __dict__, at a third of the cost of
# its constructor (which sets each field through ``object.__setattr__``); the objects are the
# same (equal, hashed alike, still frozen). Each names every field of its class (checked by
# tests/test_benchmarks.py): a field added to the class must be added here too.

def location(file: str | None, line: int, col: int, source_line: str) -> Location:
    """``Location(file, line, col, source_line=source_line)``."""
    loc = _new(Location)
    d = loc.__dict__
    d["file"], d["line"], d["col"], d["kernel"], d["index"], d["source_line"] = file, line, col, None, None, source_line
    return loc


def new_value(name: str, type: Type) -> Value:
    """``Value(name, type)``."""
    v = _new(Value)
    d = v.__dict__
    d["name"], d["type"] = name, type
    return v


def new_tile_op(instr: Any, args: dict[str, Any], attrs: dict[str, Any], loc: Location) -> TileOp:
    """``TileOp(instr, args, attrs, loc=loc)``."""
    op = _new(TileOp)
    d = op.__dict__
    d["instr"], d["args"], d["attrs"], d["loc"] = instr, args, attrs, loc
    return op


def new_scalar_op(op: str, result: Value, operands: tuple[Value, ...], predicate: str | None,
                  loc: Location) -> ScalarOp:
    """``ScalarOp(op, result, operands, predicate, loc=loc)`` (no second result)."""
    s = _new(ScalarOp)
    d = s.__dict__
    d["op"], d["result"], d["operands"], d["predicate"], d["second"], d["loc"] = op, result, operands, predicate, \
        None, loc
    return s


_new = object.__new__


class Silent(Exception):
    """A statement uses a value whose own definition already failed: drop it, say nothing."""


class Defer(Exception):
    """A statement template cannot vouch for this line: parse it token by token instead."""


@dataclass
class Item:
    """One operand as written: a value, a memory reference, a pipe or a literal."""

    tok: Token
    form: type                        # ir.Value, ir.MemRef, ir.PipeLit or ir.Lit
    name: str = ""
    indices: list[tuple[Token, Any]] = field(default_factory=list)  # (tok, name or int)
    pipe: Pipe | None = None
    number: Number | None = None


class Cursor:
    """Tokens come from ``lex_line`` as lookahead reaches each line; ``toks`` holds the lines
    lexed so far, each followed by its NEWLINE (the last by EOF). Lines the parser takes
    whole (see ``Parser.fast_lines``) are never lexed."""

    def __init__(self, text: str, filename: str | None) -> None:
        self.file = filename
        self.lines = text.split("\n")
        self.continued = continued_lines(text)     # lines that ``continues``, by index
        self.next_line = 0              # index in ``lines`` of the first line not lexed
        self.toks: list[Token] = []
        self.i = 0
        self.shapes: dict[str, list[tuple] | bool | None] = {}   # see ``lex_next_line``

    def lex_next_line(self) -> None:
        """Lex the next line. Lines that differ only in their %names lex alike, so once a
        shape recurs its tokens are kept (kind, text or which name, column less the names
        before it) and its later lines are lexed by filling their names in."""
        k = self.next_line
        if k >= len(self.lines):
            return
        line = self.lines[k]
        self.next_line = k + 1
        parts = VALUE_NAME.split(line)          # text, name, text, name, ..., text
        key = NAME_MARK.join(parts[::2])
        shape = self.shapes.get(key, False)
        if shape is False or shape is True:     # new, or seen once
            toks = lex_line(line, k + 1)
            self.shapes[key] = True if shape is False else _shape(line, toks)
            self.toks += toks
        elif shape is None:
            self.toks += lex_line(line, k + 1)
        else:
            names = parts[1::2]
            shift = [0]
            for n in names:
                shift.append(shift[-1] + len(n))
            self.toks += [new_token(Token, (kind, text if which < 0 else "%" + names[which], k + 1,
                                         col + shift[before], message))
                          for kind, text, which, col, before, message in shape]
        if self.next_line < len(self.lines):
            if self.next_line not in self.continued:
                self.toks.append(Token(NEWLINE, "\n", k + 1, len(line) + 1))
        else:
            self.toks.append(Token(EOF, "", k + 1, len(line) + 1))

    # ----------------------------------------------------------------- lookahead
    def peek(self, k: int = 0) -> Token:
        j = self.i + k
        toks = self.toks
        if j < len(toks):
            return toks[j]
        while j >= len(toks) and self.next_line < len(self.lines):
            self.lex_next_line()
        return toks[j] if j < len(toks) else toks[-1]

    def next(self) -> Token:
        t = self.toks[self.i] if self.i < len(self.toks) else self.peek()
        if t.kind != EOF:
            self.i += 1
        return t

    def at(self, kind: str, text: str | None = None) -> bool:
        t = self.toks[self.i] if self.i < len(self.toks) else self.peek()
        return t.kind == kind and (text is None or t.text == text)

    def accept(self, kind: str, text: str | None = None) -> Token | None:
        t = self.toks[self.i] if self.i < len(self.toks) else self.peek()
        if t.kind == kind and (text is None or t.text == text):
            if kind != EOF:
                self.i += 1
            return t
        return None

    def expect(self, kind: str, text: str | None = None, what: str | None = None) -> Token:
        t = self.accept(kind, text)
        if t is None:
            self.unexpected(self.peek(), what or (repr(text) if text else kind))
        return t

    def skip_nl(self) -> None:
        while self.accept(NEWLINE):
            pass

    def at_end(self) -> bool:
        """End of a statement: newline, ';', a closing '}' or the end of input."""
        t = self.toks[self.i] if self.i < len(self.toks) else self.peek()
        return t.kind in _ENDS or (t.kind == PUNCT and t.text in (";", "}"))

    # ----------------------------------------------------------------- errors
    def source_line(self, line: int) -> str:
        """Line ``line`` (1-based) as a caret snippet shows it."""
        text = self.lines[line - 1].rstrip("\r") if 0 < line <= len(self.lines) else ""
        return text.replace("\t", " ")     # one column per character keeps the caret aligned

    def loc(self, tok: Token) -> Location:
        return self.loc_at(tok.line, tok.col)

    def loc_at(self, line: int, col: int) -> Location:
        return location(self.file, line, col, self.source_line(line))

    def error(self, code: str, message: str, tok: Token, expected: object = None,
              actual: object = None) -> PTOError:
        cls = StructError if code.startswith("STRUCT") else ParseError
        return cls(code, message, location=self.loc(tok), expected=expected, actual=actual)

    def fail(self, code: str, message: str, tok: Token, expected: object = None,
             actual: object = None) -> NoReturn:
        raise self.error(code, message, tok, expected, actual)

    def unexpected(self, tok: Token, expected: str) -> NoReturn:
        if tok.kind == ERROR:
            code = "PARSE_CHAR" if len(tok.text) == 1 else "PARSE_TOKEN"
            self.fail(code, tok.message, tok, expected=expected, actual=tok.text)
        self.fail("PARSE_TOKEN", f"expected {expected}, found {tok}", tok, expected=expected, actual=str(tok))

    # ----------------------------------------------------------------- shared sub-grammars
    def type_at(self, tok: Token) -> Type:
        """Parse a type token with ``isa.types.parse_type``; errors point at the token."""
        try:
            return _parse_type(tok.text)
        except PTOError as e:
            self.fail("PARSE_TYPE", e.message, tok, expected=e.expected, actual=tok.text)
        except Exception as e:  # noqa: BLE001 - malformed text must never escape as a traceback
            self.fail("PARSE_TYPE", f"malformed type '{tok.text}' ({e})", tok, actual=tok.text)

    def type_(self) -> tuple[Token, Type]:
        t = self.peek()
        if t.kind not in (TYPE, IDENT):
            self.unexpected(t, "a type")
        self.next()
        return t, self.type_at(t)

    def type_list(self) -> list[tuple[Token, Type]]:
        """``(T, ...)`` (possibly empty), or one bare type."""
        if not self.accept(PUNCT, "("):
            return [self.type_()]
        out: list[tuple[Token, Type]] = []
        self.skip_nl()
        while not self.accept(PUNCT, ")"):
            if out:
                self.expect(PUNCT, ",", "',' or ')'")
                self.skip_nl()
            out.append(self.type_())
            self.skip_nl()
        return out

    def use(self, tok: Token, scope: Scope) -> Value:
        """The visible value a ``%name`` token refers to."""
        v = scope.lookup(tok.text[1:])
        if v is POISON:
            raise Silent
        if v is MISSING:
            scope.poison(tok.text[1:])      # report each undefined name once
            self.fail("STRUCT_UNDEFINED", f"use of undefined value {tok.text}", tok,
                      expected="a value defined earlier in a visible scope", actual=tok.text)
        assert isinstance(v, Value)
        return v

    def define(self, value: Value, tok: Token, scope: Scope) -> None:
        why = scope.define(value)
        if why:
            self.fail("STRUCT_REDEFINED", why, tok, actual=f"{tok.text} : {value.type}")

    def number(self) -> tuple[Token, Number] | None:
        """An integer, float or boolean literal, if one is next."""
        t = self.peek()
        if t.kind == INT:
            self.next()
            neg, body = t.text.startswith("-"), t.text.lstrip("-")
            if len(body) > MAX_DIGITS:
                self.fail("PARSE_LITERAL", "integer literal too long", t, expected=f"at most {MAX_DIGITS} digits",
                          actual=f"{len(body)} digits")
            v = int(body, 16) if body.lower().startswith("0x") else int(body, 10)
            return t, -v if neg else v
        if t.kind == FLOAT:
            self.next()
            return t, float(t.text)
        if t.kind == IDENT and t.text in ("true", "false"):
            self.next()
            return t, t.text == "true"
        return None

    def opaque(self, tok: Token) -> tuple[type[enum.Enum], enum.Enum]:
        """``#pto.key<VALUE>`` or ``#pto<key VALUE>`` -> (enum class, member)."""
        m = _DOTTED.match(tok.text) or _GENERIC.match(tok.text)
        if not m:
            self.fail("PARSE_ATTR", f"malformed attribute '{tok.text}'", tok,
                      expected="#pto.KIND<VALUE> or #pto<KIND VALUE>", actual=tok.text)
        key, value = m.groups()
        cls = ENUM_KINDS.get(KIND_ALIASES.get(key, key))
        if cls is None:
            self.fail("PARSE_ATTR", f"unknown attribute kind '{key}'{did_you_mean(key, ENUM_KINDS)}", tok,
                      expected=", ".join(sorted(ENUM_KINDS)), actual=key)
        return cls, self.member(cls, value, tok)

    def member(self, cls: type[enum.Enum], value: str, tok: Token) -> enum.Enum:
        v = member_spelling(cls, value)
        if cls is Pipe and v.startswith("PIPE_"):
            v = v[5:]
        for m in cls:
            if m.name.upper() == v or str(m.value).upper() == v:
                return m
        self.fail("PARSE_ATTR", f"'{value}' is not a {cls.__name__}{did_you_mean(value, (m.name for m in cls))}", tok,
                  expected=" | ".join(m.name for m in cls), actual=value)

    def operand(self) -> Item:
        """``%v``, ``%g[i, j]``, ``#pto.pipe<P>`` or a literal."""
        t = self.peek()
        if t.kind == VALUE:
            self.next()
            if not self.accept(PUNCT, "["):
                return Item(t, Value, name=t.text[1:])
            idx: list[tuple[Token, Any]] = []
            while True:
                self.skip_nl()
                it = self.peek()
                if it.kind == VALUE:
                    idx.append((self.next(), it.text[1:]))
                elif it.kind == INT:
                    tok, n = self.number()  # type: ignore[misc]
                    idx.append((tok, n))
                else:
                    self.unexpected(it, "an index (%value or integer)")
                self.skip_nl()
                if self.accept(PUNCT, "]"):
                    return Item(t, MemRef, name=t.text[1:], indices=idx)
                self.expect(PUNCT, ",", "',' or ']'")
        if t.kind == ATTR:
            self.next()
            op = _OP_CLASS.match(t.text)
            if op:                          # tsync #pto.op<TADD>: the pipe that op class issues on
                pipe = op_class_pipe(op.group(1))
                if pipe is None:
                    self.fail("PARSE_ATTR", f"'{op.group(1)}' names no operation class with one pipe", t,
                              expected="TLOAD, TVEC, ... or an instruction issued on one pipe", actual=op.group(1))
                return Item(t, PipeLit, pipe=pipe)
            cls, member = self.opaque(t)
            if cls is not Pipe:
                self.fail("PARSE_ATTR", f"attribute '{t.text}' cannot be an operand; put it in {{...}}",
                          t, expected="a pipe #pto.pipe<P>", actual=t.text)
            return Item(t, PipeLit, pipe=member)  # type: ignore[arg-type]
        if t.kind == SYMBOL and t.text == "@tile" and self.peek(1).is_(PUNCT, "("):
            return self._tile_address()
        lit = self.number()
        if lit is not None:
            return Item(lit[0], Lit, number=lit[1])
        self.unexpected(t, "an operand (%value, %global[...], #pto.pipe<P> or a literal)")

    def _tile_address(self) -> Item:
        """``@tile(0x1000)`` (TASSIGN's address on the public pages): the integer address."""
        self.next()
        self.expect(PUNCT, "(")
        lit = self.number()
        if lit is None or not isinstance(lit[1], int) or isinstance(lit[1], bool):
            self.unexpected(self.peek(), "an integer address")
        self.expect(PUNCT, ")", "')' closing @tile(...)")
        return Item(lit[0], Lit, number=lit[1])

    def operand_list(self, stop: tuple[str, ...]) -> list[Item]:
        """Comma-separated operands up to (not including) a punctuation in ``stop`` or the
        end of the statement."""
        items: list[Item] = []
        while not self.at_end() and not any(self.at(PUNCT, s) for s in stop) and not (
                self.at(ATTR) and self.peek(1).is_(PUNCT, "=")):
            if items:
                self.expect(PUNCT, ",", "',' between operands")
                if "{" in stop and self.at(PUNCT, "{"):   # ins(%a, {attrs} : T): the dict after a comma
                    break
            items.append(self.operand())
        return items

