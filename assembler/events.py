"""The public IR Level-2 synchronisation forms, mapped onto the flag instructions:

    pto.record_event[TLOAD, TVEC, 0]   ->  set_flag #pto.pipe<MTE2>, #pto.pipe<V>, 0
    pto.wait_event[TLOAD, TVEC, 0]     ->  wait_flag #pto.pipe<MTE2>, #pto.pipe<V>, 0
    pto.barrier(TVEC)                  ->  pipe_barrier #pto.pipe<V>

Events name the *operation classes* on either side; each class runs on one pipe. The IR
keeps the flag form, so these print back canonically as set_flag / wait_flag / pipe_barrier.

The public event-wait form with several tokens, ``tsync %e0, %e1 : !pto.event, !pto.event``,
is one TSYNC per token in order (decision "FIFO event results").
"""
from __future__ import annotations

from typing import Any

from ..isa.families.sync import OP_CLASS_PIPE
from ..isa.registry import get
from ..isa.suggest import did_you_mean
from ..isa.types import INDEX, EventType, Pipe, ScalarType
from .ir import PipeLit, TileOp, make_lit
from .lexer import IDENT, PUNCT, VALUE, Token
from .public import op_class_names, op_class_pipe
from .scope import Scope

EVENT_FORMS = {"pto.record_event": "SET_FLAG", "record_event": "SET_FLAG",
               "pto.wait_event": "WAIT_FLAG", "wait_event": "WAIT_FLAG",
               "pto.barrier": "PIPE_BARRIER", "barrier": "PIPE_BARRIER"}
# ``set_flag[SRC_OP, DST_OP, ID]``: the flag instructions in the event form's bracket spelling.
BRACKET_FLAGS = ("set_flag", "wait_flag", "pto.set_flag", "pto.wait_flag")


class EventParser:
    """Mixed into the parser: ``self`` provides the cursor methods (expect, fail, use, ...)."""

    def several_waits(self: Any) -> bool:
        """Whether a tsync statement lists more than one operand value (``%e0, %e1``)."""
        return self.peek().kind == VALUE and self.peek(1).is_(PUNCT, ",") and self.peek(2).kind == VALUE

    def tsync_events(self: Any, mt: Token, results: list[Token], scope: Scope) -> list[TileOp]:
        """``tsync %e0, %e1, ... [: T0, T1, ...]``: one TSYNC per event token, in order; every
        value must be an event (STRUCT_OPERAND_KIND) typed as written (STRUCT_TYPE_MISMATCH)."""
        if results:
            self.fail("PARSE_ARITY", f"{mt.text} has no results", results[0], expected="no results",
                      actual=len(results))
        toks = [self.expect(VALUE, what="an event value")]
        while self.accept(PUNCT, ","):
            toks.append(self.expect(VALUE, what="an event value"))
        written = []
        if self.accept(PUNCT, ":"):
            paren = self.accept(PUNCT, "(")
            written.append(self.type_())
            while self.accept(PUNCT, ","):
                written.append(self.type_())
            if paren:
                self.expect(PUNCT, ")")
            if len(written) != len(toks):
                self.fail("PARSE_SIGNATURE", f"the signature lists {len(written)} type(s) for {len(toks)} events",
                          written[0][0], expected=len(toks), actual=len(written))
        tsync, ops = get("TSYNC"), []
        for k, tok in enumerate(toks):
            v = self.use(tok, scope)
            if not isinstance(v.type, EventType):
                self.fail("STRUCT_OPERAND_KIND", f"tsync waits on event tokens; {tok.text} is not one", tok,
                          expected="event (!pto.event)", actual=str(v.type))
            if written and written[k][1] != v.type:
                self.fail("STRUCT_TYPE_MISMATCH", f"type of {tok.text}: written {written[k][1]}, defined as {v.type}",
                          written[k][0], expected=str(v.type), actual=str(written[k][1]))
            ops.append(TileOp(tsync, {"event": v}, {}, loc=self.loc(mt)))
        return ops

    def _op_class(self: Any) -> PipeLit:
        t: Token = self.expect(IDENT, what="an operation class (TLOAD, TVEC, TMATMUL, ...) or an instruction")
        return PipeLit(self.op_pipe(t.text, t))

    def op_pipe(self: Any, name: str, t: Token) -> Pipe:
        """The pipe of an operation class or instruction name; PARSE_ATTR when there is none."""
        pipe = op_class_pipe(name)
        if pipe is None:
            self.fail("PARSE_ATTR", f"'{name}' names no operation class with one pipe"
                      f"{did_you_mean(name, op_class_names())}", t,
                      expected=" | ".join(OP_CLASS_PIPE) + ", or an instruction issued on one pipe", actual=name)
        return pipe

    def _event(self: Any, mt: Token, results: list[Token], scope: Scope) -> TileOp:
        if results:
            self.fail("PARSE_ARITY", f"{mt.text} has no results", results[0], expected="no results",
                      actual=len(results))
        low = mt.text.lower()
        mnemonic = EVENT_FORMS.get(low) or low.removeprefix("pto.").upper()   # set_flag[...], wait_flag[...]
        if mnemonic == "PIPE_BARRIER":
            self.expect(PUNCT, "(")
            pipe = self._op_class()
            self.expect(PUNCT, ")")
            return TileOp(get(mnemonic), {"pipe": pipe}, {}, loc=self.loc(mt))
        self.expect(PUNCT, "[")
        src = self._op_class()
        self.expect(PUNCT, ",")
        dst = self._op_class()
        self.expect(PUNCT, ",")
        event: Any
        if self.at(VALUE):
            tok = self.next()
            event = self.use(tok, scope)
            if not (isinstance(event.type, ScalarType) and not event.type.is_float):
                self.fail("STRUCT_INDEX", f"event id {tok.text} must be an index or integer", tok,
                          expected="index", actual=str(event.type))
        else:
            num = self.number()
            if num is None or not isinstance(num[1], int) or isinstance(num[1], bool):
                self.unexpected(self.peek(), "an event id (an integer or an index value)")
            try:
                event = make_lit(num[1], INDEX)
            except ValueError as e:
                self.fail("PARSE_LITERAL", f"bad event id: {e}", num[0], expected="an index", actual=num[1])
        self.expect(PUNCT, "]")
        return TileOp(get(mnemonic), {"src_pipe": src, "dst_pipe": dst, "event_id": event}, {},
                      loc=self.loc(mt))
