"""Token cursor for the recursive-descent parser: lookahead, located errors, and the small
sub-grammars every statement shares (types, value names, literals, opaque attributes)."""
from __future__ import annotations

import enum
import functools
import re
from dataclasses import dataclass, field
from typing import Any, NoReturn

from ..isa import attrs as A
from ..isa.diagnostics import Location, ParseError, PTOError, StructError
from ..isa.types import Pipe, Type, parse_type
from .ir import Number, Value
from .lexer import (ATTR, EOF, ERROR, FLOAT, IDENT, INT, NEWLINE, PUNCT, TYPE, VALUE,
                    Token, tokenize)
from .scope import MISSING, POISON, Scope

# ``#pto.cmp<GT>`` / ``#pto<cmp GT>`` keys -> enum class; ``pipe`` names operands, not attributes.
ENUM_KEYS: dict[str, type[enum.Enum]] = {k: cls for cls, k in A.ENUM_SPELLING.items()}
ENUM_KEYS["pipe"] = Pipe
_DOTTED = re.compile(r"^#pto\.([A-Za-z_][A-Za-z0-9_]*)<\s*([A-Za-z0-9_]+)\s*>$")
_GENERIC = re.compile(r"^#pto<\s*([A-Za-z_][A-Za-z0-9_]*)\s+([A-Za-z0-9_]+)\s*>$")


_parse_type = functools.lru_cache(maxsize=4096)(parse_type)   # types are immutable values


class Silent(Exception):
    """A statement uses a value whose own definition already failed: drop it, say nothing."""


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
    def __init__(self, text: str, filename: str | None) -> None:
        self.toks = tokenize(text)
        self.i = 0
        self.file = filename
        self.lines = text.split("\n")

    # ----------------------------------------------------------------- lookahead
    def peek(self, k: int = 0) -> Token:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def next(self) -> Token:
        t = self.peek()
        if t.kind != EOF:
            self.i += 1
        return t

    def at(self, kind: str, text: str | None = None) -> bool:
        return self.peek().is_(kind, text)

    def accept(self, kind: str, text: str | None = None) -> Token | None:
        return self.next() if self.at(kind, text) else None

    def expect(self, kind: str, text: str | None = None, what: str | None = None) -> Token:
        if self.at(kind, text):
            return self.next()
        self.unexpected(self.peek(), what or (repr(text) if text else kind))

    def skip_nl(self) -> None:
        while self.at(NEWLINE):
            self.next()

    def at_end(self) -> bool:
        """End of a statement: newline, ';', a closing '}' or the end of input."""
        t = self.peek()
        return t.kind in (NEWLINE, EOF) or t.is_(PUNCT, ";") or t.is_(PUNCT, "}")

    # ----------------------------------------------------------------- errors
    def loc(self, tok: Token) -> Location:
        line = self.lines[tok.line - 1].rstrip("\r") if 0 < tok.line <= len(self.lines) else ""
        line = line.replace("\t", " ")     # one column per character keeps the caret aligned
        return Location(file=self.file, line=tok.line, col=tok.col, source_line=line)

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
            if len(body) > 64:
                self.fail("PARSE_LITERAL", "integer literal too long", t, expected="at most 64 digits",
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
        cls = ENUM_KEYS.get(key)
        if cls is None:
            self.fail("PARSE_ATTR", f"unknown attribute kind '{key}'", tok,
                      expected=", ".join(sorted(ENUM_KEYS)), actual=key)
        return cls, self.member(cls, value, tok)

    def member(self, cls: type[enum.Enum], value: str, tok: Token) -> enum.Enum:
        v = value.upper()
        if cls is Pipe and v.startswith("PIPE_"):
            v = v[5:]
        for m in cls:
            if m.name.upper() == v or str(m.value).upper() == v:
                return m
        self.fail("PARSE_ATTR", f"'{value}' is not a {cls.__name__}", tok,
                  expected=" | ".join(m.name for m in cls), actual=value)

    def operand(self) -> Item:
        """``%v``, ``%g[i, j]``, ``#pto.pipe<P>`` or a literal."""
        from .ir import Lit, MemRef, PipeLit
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
            cls, member = self.opaque(t)
            if cls is not Pipe:
                self.fail("PARSE_ATTR", f"attribute '{t.text}' cannot be an operand; put it in {{...}}",
                          t, expected="a pipe #pto.pipe<P>", actual=t.text)
            return Item(t, PipeLit, pipe=member)  # type: ignore[arg-type]
        lit = self.number()
        if lit is not None:
            return Item(lit[0], Lit, number=lit[1])
        self.unexpected(t, "an operand (%value, %global[...], #pto.pipe<P> or a literal)")

    def operand_list(self, stop: tuple[str, ...]) -> list[Item]:
        """Comma-separated operands up to (not including) a punctuation in ``stop`` or the
        end of the statement."""
        items: list[Item] = []
        while not self.at_end() and not any(self.at(PUNCT, s) for s in stop):
            if items:
                self.expect(PUNCT, ",", "',' between operands")
            items.append(self.operand())
        return items

