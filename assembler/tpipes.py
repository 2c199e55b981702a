"""The public ``!pto.tpipe`` forms of the FIFO instructions, read onto their attributes.

    %p = pto.initialize_pipe : !pto.tpipe<0, DIR_C2V, 16384, 4>
    %e = pto.tpush %acc, %p : (!pto.tile<...>, !pto.tpipe<...>) -> !pto.record_event
    pto.tpop pipe(%p : !pto.tpipe<...>) outs(%v : !pto.tile_buf<...>)

A pipe is configuration, not data: ``initialize_pipe`` declares one for the whole kernel (it
adds no statement), and a FIFO statement that names it is parsed without the pipe (its
operand, its ``pipe(...)`` group, its type in the signature) and given the FlagID and SlotNum
the pipe stands for; its ``!pto.record_event`` result is kept as the statement's event token
(decision "FIFO event results"). The canonical text is therefore the
attribute form (decision "The !pto.tpipe spelling"). What the pipe says that the attributes
cannot (direction, slot size, IsNoSplit, flags shared with another pipe) is checked here.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..isa.attrs import TileSplitAxis
from ..isa.diagnostics import PTOError
from ..isa.families.system import VECTOR_SIDE, split_whole
from ..isa.spec import Instruction
from ..isa.tpipe import PipeType, Way, parse_tpipe
from ..isa.types import EVENT, Location, TileType
from .ir import TileOp, Value
from .lexer import EOF, IDENT, NEWLINE, PUNCT, TYPE, VALUE, Token
from .scope import MISSING, Scope

PIPE_DECL = ("initialize_pipe", "pto.initialize_pipe")
EVENT_TYPES = ("!pto.record_event", "!pto.record_event<>")

# (instruction, location of its tile) -> the way that tile travels; None: a GlobalData form
_TILE_WAY = {("TPUSH", Location.ACC): Way.C2V, ("TPUSH", Location.VEC): Way.V2C,
             ("TPOP", Location.VEC): Way.C2V, ("TPOP", Location.MAT): Way.V2C}


class TPipeParser:
    """Mixin of the parser: pipe declarations and the FIFO statements that use them."""

    def _pipes(self, scope: Scope) -> dict[str, tuple[PipeType, Token]]:
        """The pipes declared so far in the kernel ``scope`` belongs to."""
        table = self.__dict__.setdefault("_tpipes", {})
        return table.setdefault(id(scope.root), {})

    def _pipe_type(self, tok: Token) -> PipeType:
        try:
            return parse_tpipe(tok.text)
        except PTOError as e:
            self.fail("PARSE_TYPE", e.message, tok, expected=e.expected, actual=tok.text)  # type: ignore[attr-defined]

    def pipe_decl(self, mt: Token, results: list[Token], scope: Scope) -> list:
        """``%p = pto.initialize_pipe : !pto.tpipe<...>``: no statement, a kernel-wide name."""
        if len(results) != 1:
            self.fail("PARSE_ARITY", f"{mt.text} defines one pipe", results[1] if results else mt,  # type: ignore[attr-defined]
                      expected="1 result", actual=len(results))
        self.expect(PUNCT, ":", "':' and the pipe's type")  # type: ignore[attr-defined]
        tt = self.peek()  # type: ignore[attr-defined]
        if tt.kind != TYPE:
            self.unexpected(tt, "a !pto.tpipe<...> type")  # type: ignore[attr-defined]
        self.next()  # type: ignore[attr-defined]
        pipe = self._pipe_type(tt)
        name, pipes = results[0].text[1:], self._pipes(scope)
        if name in pipes or scope.lookup(name) is not MISSING:
            self.fail("STRUCT_REDEFINED", f"%{name} is already defined", results[0],  # type: ignore[attr-defined]
                      actual=f"%{name} : {pipe}")
        for other, (p, _) in pipes.items():
            shared = sorted(set(p.flags) & set(pipe.flags))
            if shared:
                self.fail("STRUCT_PIPE_FLAGS", f"pipe %{name} claims flag(s) {shared} that pipe %{other} "  # type: ignore[attr-defined]
                          f"({p}) already uses", tt, expected=f"flags outside {p.flags.start}..{p.flags.stop - 1}",
                          actual=f"{pipe.flags.start}..{pipe.flags.stop - 1}")
        pipes[name] = (pipe, tt)
        scope.root.ever.add(name)
        return []

    # ------------------------------------------------------------------ FIFO statements
    def _statement_tokens(self) -> int:
        """How many tokens from the cursor make up the rest of the statement."""
        k, depth = 0, 0
        while True:
            t = self.peek(k)  # type: ignore[attr-defined]
            if t.kind in (NEWLINE, EOF) or (t.kind == PUNCT and (t.text == ";" or (t.text == "}" and not depth))):
                return k
            if t.kind == PUNCT and t.text in "{}":
                depth += 1 if t.text == "{" else -1
            k += 1

    def fifo_op(self, instr: Instruction, mt: Token, results: list[Token], scope: Scope) -> TileOp:
        """A TPUSH/TPOP/TALLOC/TFREE statement, with or without a pipe operand."""
        n = self._statement_tokens()
        toks: list[Token] = self.toks[self.i:self.i + n]  # type: ignore[attr-defined]
        pipes = self._pipes(scope)
        used = [t for t in toks if t.kind == VALUE and t.text[1:] in pipes]
        if not used:
            self._no_pipe(toks, scope)
            return self.tile_op(instr, mt, results, scope)  # type: ignore[attr-defined]
        if len({t.text for t in used}) > 1 or len(used) > 1:
            self.fail("STRUCT_PIPE_CONFIG", f"{instr.asm_name} names more than one pipe", used[1],  # type: ignore[attr-defined]
                      expected="one pipe operand", actual=", ".join(t.text for t in used))
        if scope.lookup(used[0].text[1:]) is not MISSING:     # redefined as a value after the pipe
            self.fail("STRUCT_REDEFINED", f"{used[0].text} names both a pipe and a value", used[0],  # type: ignore[attr-defined]
                      expected="one definition",
                      actual=f"a pipe and a value of type {getattr(scope.lookup(used[0].text[1:]), 'type', '?')}")
        pipe, _ = pipes[used[0].text[1:]]
        kept, event = self._strip(toks, used[0], pipe)
        ev_tok = None
        if results and (event or instr.mnemonic != "TPOP"):   # the public RecordEvent result
            ev_tok, results = results[-1], results[:-1]
        self.toks[self.i:self.i + n] = kept  # type: ignore[attr-defined]
        op = self.tile_op(instr, mt, results, scope)  # type: ignore[attr-defined]
        return self._with_event(self._configure(op, pipe, used[0]), ev_tok, scope)

    def _with_event(self, op: TileOp, tok: Token | None, scope: Scope) -> TileOp:
        """The statement with its RecordEvent result ``tok`` bound to the event operand (a new
        ``!pto.event`` value: naming an existing one is STRUCT_REDEFINED)."""
        if tok is None or "event" not in {o.name for o in op.instr.operands}:
            return op
        v = Value(tok.text[1:], EVENT)
        self.define(v, tok, scope)  # type: ignore[attr-defined]
        return replace(op, args={**op.args, "event": v})

    def _no_pipe(self, toks: list[Token], scope: Scope) -> None:
        """A statement naming no declared pipe where it would stand (``pipe(%x)``, or a second
        plain operand, which no FIFO form has): say what %x is rather than miscount operands."""
        plain = [t for k, t in enumerate(toks) if t.kind == VALUE and k > 0 and not (
            k + 1 < len(toks) and toks[k + 1].is_(PUNCT, "[")) and (toks[k - 1].is_(PUNCT, ",")
                                                                    or toks[k - 1].is_(PUNCT, "("))]
        if toks and toks[0].kind == VALUE:
            plain.insert(0, toks[0])
        grouped = [toks[k + 2] for k in range(len(toks) - 2)
                   if toks[k].is_(IDENT, "pipe") and toks[k + 1].is_(PUNCT, "(") and toks[k + 2].kind == VALUE]
        for t in grouped + (plain if len(plain) > 1 else []):
            if scope.lookup(t.text[1:]) is MISSING:
                self.use(t, scope)  # type: ignore[attr-defined]   # STRUCT_UNDEFINED
        for t in grouped:
            self.fail("STRUCT_PIPE_CONFIG", f"{t.text} is not a pipe", t,  # type: ignore[attr-defined]
                      expected="a name declared by pto.initialize_pipe", actual=t.text)

    def _strip(self, toks: list[Token], pt: Token, pipe: PipeType) -> tuple[list[Token], bool]:
        """The statement without the pipe: its operand (and a comma), a ``pipe(...)`` group,
        its type (and a comma), and ``-> !pto.record_event``; whether that arrow was there."""
        out = list(toks)
        event = False

        def drop_with_comma(k: int) -> None:
            if k + 1 < len(out) and out[k + 1].is_(PUNCT, ","):
                del out[k:k + 2]
            elif k > 0 and out[k - 1].is_(PUNCT, ","):
                del out[k - 1:k + 1]
            else:
                del out[k]

        k = 0
        while k < len(out):
            t = out[k]
            if t.is_(IDENT, "pipe") and k + 1 < len(out) and out[k + 1].is_(PUNCT, "("):
                end = k + 2
                while end < len(out) and not out[end].is_(PUNCT, ")"):
                    end += 1
                inner = out[k + 2:end]
                if not inner or inner[0] is not pt and inner[0] != pt:
                    self.fail("STRUCT_PIPE_CONFIG", "pipe(...) must hold the pipe and at most its type", t,  # type: ignore[attr-defined]
                              expected=f"pipe({pt.text} : {pipe})", actual=" ".join(x.text for x in inner))
                self._same_type(inner[2:], pipe, t)
                del out[k:end + 1]
                continue
            if t is pt or t == pt:
                drop_with_comma(k)
                continue
            if t.kind == TYPE and t.text.startswith("!pto.tpipe"):
                self._same_type([t], pipe, t)
                drop_with_comma(k)
                continue
            if t.is_(PUNCT, "->") and k + 1 < len(out):
                j = k + 1
                paren = out[j].is_(PUNCT, "(")
                if paren:
                    j += 1
                if j < len(out) and out[j].kind == TYPE and out[j].text in EVENT_TYPES:
                    end = j + 1 + (1 if paren and j + 1 < len(out) and out[j + 1].is_(PUNCT, ")") else 0)
                    del out[k:end]
                    event = True
                    continue
            k += 1
        # an emptied signature: ':' with nothing after it, or ': ()'
        for k, t in enumerate(out):
            if t.is_(PUNCT, ":"):
                rest = out[k + 1:]
                if not rest or (len(rest) == 2 and rest[0].is_(PUNCT, "(") and rest[1].is_(PUNCT, ")")):
                    del out[k:]
                break
        return out, event

    def _same_type(self, written: list[Token], pipe: PipeType, at: Token) -> None:
        """A pipe's type written at a use must be the declared one (``: T`` or nothing)."""
        if not written:
            return
        if written[0].is_(PUNCT, ":"):
            written = written[1:]
        if len(written) != 1 or written[0].kind != TYPE:
            self.fail("PARSE_TOKEN", "expected the pipe's type", written[0] if written else at,  # type: ignore[attr-defined]
                      expected=str(pipe), actual=" ".join(x.text for x in written))
        got = self._pipe_type(written[0])
        if got != pipe:
            self.fail("STRUCT_TYPE_MISMATCH", "the pipe is used with another type than its declaration",  # type: ignore[attr-defined]
                      written[0], expected=str(pipe), actual=str(got))

    def _configure(self, op: TileOp, pipe: PipeType, pt: Token) -> TileOp:
        """The statement with the pipe's FlagID and SlotNum; direction, split and slot checks."""
        name = op.instr.mnemonic
        tile = op.args.get("tile")
        ttype = tile.type if isinstance(tile, Value) and isinstance(tile.type, TileType) else None
        split = op.attrs.get("Split", TileSplitAxis.TILE_NO_SPLIT)
        if ttype is not None:
            way = _TILE_WAY.get((name, ttype.loc))
            if way is None:           # a location the instruction refuses: the verifier says so
                return replace(op, attrs={**op.attrs, "FlagID": pipe.flag_id, "SlotNum": pipe.slot_num})
            if way not in pipe.ways:
                side = "producer" if name == "TPUSH" else "consumer"
                self.fail("STRUCT_PIPE_DIRECTION", f"{op.instr.asm_name} of a {ttype.loc.value} tile is the "  # type: ignore[attr-defined]
                          f"{side} of {way.value} traffic, which pipe {pt.text} ({pipe.dir.name}) does not carry",
                          pt, expected=" or ".join(w.value for w in pipe.ways), actual=way.value)
            self._slot_fits(ttype, split, pipe, pt)
        elif len(pipe.ways) == 1:
            way = pipe.ways[0]
        else:
            self.fail("STRUCT_PIPE_CONFIG", f"the GlobalData form of {op.instr.asm_name} on a bidirectional "  # type: ignore[attr-defined]
                      "pipe names no direction", pt, expected="a DIR_C2V(_GM) or DIR_V2C(_GM) pipe",
                      actual=pipe.dir.name)
        if pipe.no_split and split is not TileSplitAxis.TILE_NO_SPLIT:
            self.fail("STRUCT_PIPE_CONFIG", f"pipe {pt.text} is declared IsNoSplit, the statement splits the tile",  # type: ignore[attr-defined]
                      pt, expected="Split = TILE_NO_SPLIT", actual=f"Split = {split.name}")
        want: dict[str, Any] = {"FlagID": pipe.fifo(way), "SlotNum": pipe.slot_num}
        for attr, value in want.items():
            if attr in op.attrs and op.attrs[attr] != value:
                self.fail("STRUCT_PIPE_CONFIG", f"{attr} = {op.attrs[attr]} contradicts pipe {pt.text}",  # type: ignore[attr-defined]
                          pt, expected=f"{attr} = {value} ({pipe})", actual=f"{attr} = {op.attrs[attr]}")
        return replace(op, attrs={**op.attrs, **want})

    def _slot_fits(self, t: TileType, split: TileSplitAxis, pipe: PipeType, pt: Token) -> None:
        """One slot holds the whole tile: a vector side with a split moves a part of it."""
        rows, cols = (split_whole(split, t.rows, t.cols) if t.loc in VECTOR_SIDE else (t.rows, t.cols))
        need = t.nbytes * rows * cols // (t.rows * t.cols)
        if need > pipe.slot_size:
            self.fail("STRUCT_PIPE_CONFIG", f"a {rows}x{cols} {t.dtype} tile does not fit a slot of pipe {pt.text}",  # type: ignore[attr-defined]
                      pt, expected=f"at most SlotSize = {pipe.slot_size} bytes", actual=f"{need} bytes")
