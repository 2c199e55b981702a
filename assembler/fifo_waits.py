"""The trailing wait events of TPUSH / TPOP, read as the TSYNCs they stand for.

    tpush %acc, %e0, %e1 {FlagID = 0} : (!pto.tile<...>, !pto.event, !pto.event)
    %v = tpop %e0 {FlagID = 0} : (!pto.event) -> !pto.tile<...>
    %e2 = pto.tpush %acc, %p, %e0 : (!pto.tile<...>, !pto.tpipe<...>, !pto.event) -> !pto.record_event

The public intrinsics take a ``WaitEvents&...`` pack after their operands and begin by waiting
on each token (``TSYNC(events...)``), so a statement with waits is a TSYNC per token, in order,
then the statement without them; the canonical text prints that form (decision "FIFO event
results"). The waits are taken off the statement's tokens (and their types off its signature)
before the FIFO statement is parsed as usual.
"""
from __future__ import annotations

from typing import Any

from ..isa.families.system import WAITING_FIFO
from ..isa.registry import get
from ..isa.spec import Instruction
from ..isa.types import EVENT, EventType
from .ir import TileOp, Value
from .lexer import IDENT, PUNCT, TYPE, VALUE, Token
from .scope import MISSING, Scope

Span = tuple[int, int]     # [start, end) of a token run


def operand_items(toks: list[Token]) -> list[Span]:
    """The statement's leading positional operands: ``%x`` or ``%g[...]``, comma separated."""
    items: list[Span] = []
    k = 0
    while k < len(toks) and toks[k].kind == VALUE:
        start, k = k, k + 1
        if k < len(toks) and toks[k].is_(PUNCT, "["):
            depth = 0
            while k < len(toks):
                depth += {"[": 1, "]": -1}.get(toks[k].text, 0) if toks[k].kind == PUNCT else 0
                k += 1
                if not depth:
                    break
        items.append((start, k))
        if not (k + 1 < len(toks) and toks[k].is_(PUNCT, ",") and toks[k + 1].kind == VALUE):
            break
        k += 1
    return items


def signature_inputs(toks: list[Token], after: int) -> tuple[list[int], Span | None]:
    """The token index of each input type of the signature after ``after`` and the span that
    holds them (inside ``( )``, or the one bare type); ([], None) with no signature, or one
    whose types are not single tokens (the statement's own parse reports it)."""
    depth = 0
    for k in range(after, len(toks)):
        t = toks[k]
        if t.kind == PUNCT and t.text in "{}":
            depth += 1 if t.text == "{" else -1
        if depth or not t.is_(PUNCT, ":"):
            continue
        if k + 1 >= len(toks):
            return [], None
        if toks[k + 1].kind in (TYPE, IDENT):
            return [k + 1], (k + 1, k + 2)
        if not toks[k + 1].is_(PUNCT, "("):
            return [], None
        out, j = [], k + 2
        while j < len(toks) and not toks[j].is_(PUNCT, ")"):
            if (j + 1 >= len(toks) or toks[j].kind not in (TYPE, IDENT)
                    or not (toks[j + 1].is_(PUNCT, ",") or toks[j + 1].is_(PUNCT, ")"))):
                return [], None
            out.append(j)
            j += 2 if toks[j + 1].is_(PUNCT, ",") else 1
        if j >= len(toks):
            return [], None         # an unclosed list: the statement's own parse reports it
        return out, (k + 2, j)
    return [], None


def _joined(toks: list[Token], runs: list[Span], comma: Token) -> list[Token]:
    """The runs' tokens separated by commas."""
    out: list[Token] = []
    for s, e in runs:
        if out:
            out.append(comma)
        out.extend(toks[s:e])
    return out


class FifoWaitParser:
    """Mixin of the parser: a TPUSH / TPOP statement's trailing wait events."""

    def fifo_statement(self: Any, instr: Instruction, mt: Token, results: list[Token], scope: Scope) -> list:
        """The TSYNCs of the statement's wait events (none for most statements), then the statement."""
        waits = self._take_waits(instr, results, scope) if instr.mnemonic in WAITING_FIFO else []
        return [*waits, self.fifo_op(instr, mt, results, scope)]

    def _first_wait(self: Any, instr: Instruction, toks: list[Token], items: list[Span],
                    results: list[Token], scope: Scope) -> int:
        """How many of ``items`` are the statement's own operand: a TPUSH's first (its tile or
        slot); a TPOP's first when it is a slot ``%g[...]``, a value other than an event, or (a
        statement without results) a name the statement's own parse must report."""
        if instr.mnemonic == "TPUSH" or not items:
            return min(1, len(items))
        s, e = items[0]
        v = scope.lookup(toks[s].text[1:])
        own = e > s + 1 or (isinstance(v, Value) and v.type is not EVENT) or (v is MISSING and not results)
        return 1 if own else 0

    def _take_waits(self: Any, instr: Instruction, results: list[Token], scope: Scope) -> list[TileOp]:
        """Check the wait events, take them (and their signature types) off the statement's
        tokens and return one TSYNC per token."""
        n = self._statement_tokens()
        toks: list[Token] = self.toks[self.i:self.i + n]
        pipes = self._pipes(scope)
        items = operand_items(toks)
        own = [k for k, (s, e) in enumerate(items) if not (e == s + 1 and toks[s].text[1:] in pipes)]
        waits = own[self._first_wait(instr, toks, [items[k] for k in own], results, scope):]
        if not waits or any(items[k][1] > items[k][0] + 1 for k in waits):
            return []       # none, or a second operand %g[...]: the statement's own checks say what is wrong
        types, span = signature_inputs(toks, items[-1][1])
        if span is not None and len(types) != len(items):
            self.fail("PARSE_SIGNATURE", f"the signature lists {len(types)} operand type(s) for {len(items)} "
                      f"operands ({instr.asm_name}'s wait events included)", toks[types[0] if types else span[0]],
                      expected=len(items), actual=len(types))
        tsync, ops = get("TSYNC"), []
        for k in waits:
            tok = toks[items[k][0]]
            v = self.use(tok, scope)
            if not isinstance(v.type, EventType):
                self.fail("STRUCT_OPERAND_KIND", f"{instr.asm_name} waits on event tokens after its operand; "
                          f"{tok.text} is not one", tok, expected="event (!pto.event)", actual=str(v.type))
            if types:
                written = self.type_at(toks[types[k]])
                if written != v.type:
                    self.fail("STRUCT_TYPE_MISMATCH", f"type of {tok.text}: written {written}, defined as {v.type}",
                              toks[types[k]], expected=str(v.type), actual=str(written))
            ops.append(TileOp(tsync, {"event": v}, {}, loc=self.loc(tok)))
        comma = Token(PUNCT, ",", toks[0].line, toks[0].col)
        kept = [items[k] for k in range(len(items)) if k not in waits]
        new = toks[:items[0][0]] + _joined(toks, kept, comma) + toks[items[-1][1]:span[0] if span else None]
        if span is not None:
            ins = _joined(toks, [(t, t + 1) for k, t in enumerate(types) if k not in waits], comma)
            bare = not toks[span[0] - 1].is_(PUNCT, "(")
            if bare and not ins:                         # ': !pto.event -> T' becomes ': () -> T'
                ins = [Token(PUNCT, "(", toks[span[0]].line, toks[span[0]].col),
                       Token(PUNCT, ")", toks[span[0]].line, toks[span[0]].col)]
            rest = toks[span[1]:]
            if not ins and not bare and len(rest) == 1:  # ': (!pto.event)' and nothing after it
                new = new[:-2]
            else:
                new += ins + rest
        self.toks[self.i:self.i + n] = new
        return ops
