"""PTO-AS text -> ``Module``: a hand-written recursive-descent parser.

Statements end at a newline, ``;``, or a closing ``}``. A failing statement is recorded and
parsing resumes on the next line (skipping any region the statement opened), so one pass
reports several errors; names the failed statement would have defined are silenced so one
mistake gives one diagnostic. Tile instructions are in ``tileops.py``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..isa.diagnostics import PTOError, PTOErrorGroup
from ..isa.registry import lookup as lookup_instruction
from ..isa.types import INDEX, ScalarType, TileType, Type
from . import scalar_ops as S
from .cursor import Silent
from .ir import (MAIN, Bound, Const, For, If, Kernel, Lit, Module, ScalarOp, Stmt, TileDecl, Value, Yield,
                 default_literal_type, make_lit)
from .lexer import DIRECTIVE, EOF, IDENT, INT, NEWLINE, PUNCT, SYMBOL, VALUE, Token
from .scope import Scope
from .tileops import TileOpParser

MAX_DEPTH = 64      # nesting of regions
MAX_ERRORS = 100

CONTROL = {"for": "for", "scf.for": "for", "if": "if", "scf.if": "if", "yield": "yield",
           "scf.yield": "yield"}
CONSTANT = ("constant", "arith.constant")
ALLOC = ("alloc_tile", "pto.alloc_tile")


@dataclass
class _KernelBuild:
    name: str
    tok: Token
    params: list[Value] = field(default_factory=list)
    scope: Scope = field(default_factory=Scope)


class Parser(TileOpParser):
    def __init__(self, text: str, filename: str | None = None) -> None:
        super().__init__(text, filename)
        self.errors: list[PTOError] = []
        self._seen: set[tuple[str, int | None, int | None]] = set()
        self.pending: list[str] = []   # names the current statement defines

    # ------------------------------------------------------------------ errors and recovery
    def record(self, e: PTOError) -> None:
        key = (e.code, e.location.line, e.location.col)
        if key not in self._seen:
            self._seen.add(key)
            self.errors.append(e)
        if len(self.errors) >= MAX_ERRORS:
            raise PTOErrorGroup(self.errors)

    def recover(self) -> None:
        """Skip to the next line, together with any region opened on the way; a '}' that
        starts a line closes the enclosing region and is left for it."""
        depth = 0
        while True:
            t = self.peek()
            if t.kind == EOF:
                return
            starts_line = self.i == 0 or self.toks[self.i - 1].kind == NEWLINE
            if t.is_(PUNCT, "{"):
                depth += 1
            elif t.is_(PUNCT, "}"):
                if depth == 0 and starts_line:
                    return
                depth = max(depth - 1, 0)
            elif depth == 0 and (t.kind == NEWLINE or t.is_(PUNCT, ";")):
                self.next()
                return
            self.next()

    def skip_seps(self) -> None:
        while self.at(NEWLINE) or self.at(PUNCT, ";"):
            self.next()

    # ------------------------------------------------------------------ module and kernels
    def module(self) -> Module:
        self.skip_seps()
        kernels: list[Kernel] = []
        if self.at(IDENT, "kernel"):
            while True:
                self.skip_seps()
                if self.at(EOF):
                    break
                try:
                    if not self.at(IDENT, "kernel"):
                        self.fail("PARSE_KERNEL", "a statement outside any kernel", self.peek(),
                                  expected="kernel @name(...) { ... }")
                    k = self.kernel()
                    if any(x.name == k.name for x in kernels):
                        self.fail("PARSE_KERNEL", f"kernel @{k.name} is defined twice", k_tok(self, k))
                    kernels.append(k)
                except PTOError as e:
                    self.record(e)
                    self.recover()
        else:
            kb = _KernelBuild(MAIN, self.peek())
            body: list[Stmt] = []
            while True:
                body += self.block(kb.scope, 0, kb)
                if self.at(EOF):
                    break
                self.record(self.error("PARSE_TOKEN", "'}' closes no region", self.next()))
            kernels.append(Kernel(MAIN, tuple(kb.params), tuple(body), loc=self.loc(kb.tok)))
        if self.errors:
            raise self.errors[0] if len(self.errors) == 1 else PTOErrorGroup(self.errors)
        return Module(tuple(kernels))

    def kernel(self) -> Kernel:
        kt = self.expect(IDENT, "kernel")
        name = self.expect(SYMBOL, what="a kernel name @name")
        kb = _KernelBuild(name.text[1:], kt)
        self.expect(PUNCT, "(")
        self.skip_nl()
        while not self.accept(PUNCT, ")"):
            if kb.params:
                self.expect(PUNCT, ",", "',' or ')'")
                self.skip_nl()
            self._param(kb)
            self.skip_nl()
        self.expect(PUNCT, "{")
        body = self.block(kb.scope, 0, kb)
        self.expect(PUNCT, "}", "'}' closing the kernel")
        return Kernel(kb.name, tuple(kb.params), tuple(body), loc=self.loc(kt))

    def _param(self, kb: _KernelBuild) -> None:
        vt = self.expect(VALUE, what="a parameter %name")
        self.expect(PUNCT, ":")
        _, t = self.type_()
        v = Value(vt.text[1:], t)
        self.define(v, vt, kb.scope)
        kb.params.append(v)

    # ------------------------------------------------------------------ blocks and statements
    def block(self, scope: Scope, depth: int, kb: _KernelBuild) -> list[Stmt]:
        """Statements up to a closing '}' or the end of input (neither consumed)."""
        out: list[Stmt] = []
        while True:
            self.skip_seps()
            if self.at(EOF) or self.at(PUNCT, "}"):
                return out
            start = self.i
            self.pending = []
            try:
                out += self.statement(scope, depth, kb)
                if not self.at_end():
                    self.unexpected(self.peek(), "the end of the statement")
            except (PTOError, Silent) as e:
                if isinstance(e, PTOError):
                    self.record(e)
                for n in self.pending:
                    scope.poison(n)
                self.recover()
            if self.i == start:
                self.next()

    def statement(self, scope: Scope, depth: int, kb: _KernelBuild) -> list[Stmt]:
        if self.at(DIRECTIVE):
            return self.directive(scope, depth, kb)
        results: list[Token] = []
        if self.at(VALUE):
            results.append(self.next())
            while self.accept(PUNCT, ","):
                results.append(self.expect(VALUE, what="a result %name"))
            self.pending = [r.text[1:] for r in results]
            self.expect(PUNCT, "=", "'='")
        mt = self.peek()
        if mt.kind != IDENT:
            self.unexpected(mt, "a mnemonic")
        low = mt.text.lower()
        if low == "kernel":
            self.fail("PARSE_KERNEL", "a kernel cannot be defined here", mt,
                      expected="kernels only at the top level of a file without bare statements")
        self.next()
        if low in CONTROL:
            if depth >= MAX_DEPTH:
                self.fail("PARSE_NESTING", f"regions nested deeper than {MAX_DEPTH}", mt)
            return [getattr(self, "_" + CONTROL[low])(mt, results, scope, depth, kb)]
        if low in CONSTANT:
            return [self._constant(mt, results, scope)]
        if low in ALLOC:
            return [self._tile_decl(mt, self._one_result(mt, results), scope)]
        instr = lookup_instruction(mt.text)
        if instr is not None:
            return [self.tile_op(instr, mt, results, scope)]
        spec = S.lookup(mt.text)
        if spec is not None:
            return [self._scalar(spec, mt, results, scope)]
        self.fail("PARSE_UNKNOWN_MNEMONIC", f"unknown mnemonic '{mt.text}'", mt,
                  expected="an instruction listed by 'pto isa', an arith scalar op, for, if or yield",
                  actual=mt.text)

    def _one_result(self, mt: Token, results: list[Token]) -> Token:
        if len(results) != 1:
            self.fail("PARSE_ARITY", f"{mt.text} defines exactly one result, got {len(results)}",
                      results[1] if len(results) > 1 else mt, expected=1, actual=len(results))
        return results[0]

    # ------------------------------------------------------------------ directives
    def directive(self, scope: Scope, depth: int, kb: _KernelBuild) -> list[Stmt]:
        dt = self.next()
        if dt.text == ".arg":
            if depth:
                self.fail("PARSE_DIRECTIVE", ".arg declares a kernel parameter; it cannot be in a region", dt)
            self._param(kb)
            return []
        if dt.text == ".const":
            vt = self.expect(VALUE, what="%name")
            self.pending = [vt.text[1:]]
            self.expect(PUNCT, "=")
            return [self._const_value(dt, vt, scope)]
        if dt.text == ".tile":
            vt = self.expect(VALUE, what="%name")
            self.pending = [vt.text[1:]]
            return [self._tile_decl(dt, vt, scope)]
        self.fail("PARSE_DIRECTIVE", f"unknown directive '{dt.text}'", dt, expected=".arg, .const, .tile",
                  actual=dt.text)

    def _constant(self, mt: Token, results: list[Token], scope: Scope) -> Const:
        return self._const_value(mt, self._one_result(mt, results), scope)

    def _const_value(self, at: Token, vt: Token, scope: Scope) -> Const:
        lit = self.number()
        if lit is None:
            self.unexpected(self.peek(), "a literal (integer, float, true or false)")
        tok, value = lit
        t: Type = default_literal_type(value)
        if self.accept(PUNCT, ":"):
            tt, t = self.type_()
            if not isinstance(t, ScalarType):
                self.fail("PARSE_TYPE", f"a constant has a scalar type, not {t}", tt, expected="index, i32, f32, ...")
        try:
            lv = make_lit(value, t)  # type: ignore[arg-type]
        except ValueError as e:
            self.fail("PARSE_LITERAL", str(e), tok, expected=str(t), actual=tok.text)
        v = Value(vt.text[1:], t)
        self.define(v, vt, scope)
        return Const(v, lv.value, loc=self.loc(at))

    def _tile_decl(self, at: Token, vt: Token, scope: Scope) -> TileDecl:
        valid: dict[str, Value] = {}
        while self.at(IDENT, "valid_row") or self.at(IDENT, "valid_col"):
            kw = self.next()
            if kw.text in valid:
                self.unexpected(kw, "each of valid_row, valid_col once")
            self.expect(PUNCT, "=")
            valid[kw.text] = self.use(self.expect(VALUE, what="an index value"), scope)
        self.expect(PUNCT, ":", "':' and the tile type")
        tt, t = self.type_()
        if not isinstance(t, TileType):
            self.fail("PARSE_TYPE", f"a tile declaration needs a tile type, not {t}", tt,
                      expected="!pto.tile<...>", actual=str(t))
        v = Value(vt.text[1:], t)
        self.define(v, vt, scope)
        return TileDecl(v, valid.get("valid_row"), valid.get("valid_col"), loc=self.loc(at))

    # ------------------------------------------------------------------ scalar ops
    def _scalar(self, spec: S.ScalarOpSpec, mt: Token, results: list[Token], scope: Scope) -> ScalarOp:
        rt = self._one_result(mt, results)
        pred = None
        if spec.predicates:
            pt = self.expect(IDENT, what="a predicate")
            if pt.text not in spec.predicates:
                self.fail("PARSE_ATTR", f"'{pt.text}' is not a {spec.name} predicate", pt,
                          expected=" ".join(spec.predicates), actual=pt.text)
            pred = pt.text
            self.expect(PUNCT, ",")
        toks: list[Token] = []
        while not self.at_end() and not self.at(PUNCT, ":"):
            if toks:
                self.expect(PUNCT, ",", "',' between operands")
            toks.append(self.expect(VALUE, what="a value %name (write constants with .const)"))
        if len(toks) != spec.arity:
            self.fail("PARSE_ARITY", f"{spec.name} takes {spec.arity} operand(s), got {len(toks)}",
                      toks[spec.arity] if len(toks) > spec.arity else mt, expected=spec.arity,
                      actual=len(toks))
        ops = tuple(self.use(t, scope) for t in toks)
        rtype = self._scalar_type(spec, mt, ops)
        v = Value(rt.text[1:], rtype)
        self.define(v, rt, scope)
        return ScalarOp(spec.name, v, ops, pred, loc=self.loc(mt))

    def _scalar_type(self, spec: S.ScalarOpSpec, mt: Token, ops: tuple[Value, ...]) -> Type:
        """The result type; a written type must agree with the operands."""
        written = self._type_after_colon()
        if spec.cls == "cast":
            if written is None or not self.at(IDENT, "to"):
                self.fail("PARSE_MISSING_TYPE", f"{spec.name} needs ': FROM to TO'", self.peek(),
                          expected=": FROM to TO")
            self.next()
            self._agree(written, ops[0].type)
            return self.type_()[1]
        if spec.cls == "block":
            if written is not None:
                self._agree(written, INDEX)
            return INDEX
        ref = ops[1] if spec.cls == "select" else ops[0]
        if written is not None:
            self._agree(written, ref.type)
        return ScalarType("i1") if spec.cls in ("cmpi", "cmpf") else ref.type

    def _type_after_colon(self) -> tuple[Token, Type] | None:
        return self.type_() if self.accept(PUNCT, ":") else None

    def _agree(self, written: tuple[Token, Type], actual: Type) -> None:
        if written[1] != actual:
            self.fail("STRUCT_TYPE_MISMATCH", f"written type {written[1]} differs from the operand's {actual}",
                      written[0], expected=str(actual), actual=str(written[1]))

    # ------------------------------------------------------------------ control flow
    def _bound(self, scope: Scope) -> Bound:
        if self.at(INT):
            return self.number()[1]  # type: ignore[index,return-value]
        return self.use(self.expect(VALUE, what="a bound (%value or integer)"), scope)

    def _region(self, scope: Scope, depth: int, kb: _KernelBuild, keep_empty_yield: bool) -> tuple[Stmt, ...]:
        self.expect(PUNCT, "{", "'{' opening the region")
        body = self.block(scope, depth + 1, kb)
        self.expect(PUNCT, "}", "'}' closing the region")
        if not keep_empty_yield and body and isinstance(body[-1], Yield) and not body[-1].values:
            body.pop()
        return tuple(body)

    def _for(self, mt: Token, results: list[Token], scope: Scope, depth: int, kb: _KernelBuild) -> For:
        ivt = self.expect(VALUE, what="the induction variable %name")
        self.expect(PUNCT, "=")
        lb = self._bound(scope)
        self.expect(IDENT, "to")
        ub = self._bound(scope)
        self.expect(IDENT, "step")
        step = self._bound(scope)
        iv_type = self._iv_type()
        names: list[Token] = []
        inits: list[tuple[Token, object]] = []
        if self.accept(IDENT, "iter_args"):
            self.expect(PUNCT, "(")
            while not self.accept(PUNCT, ")"):
                if names:
                    self.expect(PUNCT, ",", "',' or ')'")
                names.append(self.expect(VALUE, what="an iteration argument %name"))
                self.expect(PUNCT, "=")
                lit = self.number()
                inits.append(lit if lit else (self.peek(), self.use(self.expect(VALUE, what="an initial value"), scope)))
        types = self.type_list() if self.accept(PUNCT, "->") else None
        iv_type = self._iv_type() or iv_type or INDEX
        if types is not None and len(types) != len(names):
            self.fail("PARSE_SIGNATURE", f"{len(types)} result type(s) for {len(names)} iteration argument(s)",
                      types[0][0] if types else mt, expected=len(names), actual=len(types))
        if results and len(results) != len(names):
            self.fail("PARSE_ARITY", f"the loop has {len(names)} result(s), {len(results)} named",
                      results[0], expected=len(names), actual=len(results))
        init_vals = [self._init(tok, x, types[k] if types else None) for k, (tok, x) in enumerate(inits)]
        body_scope = scope.child()
        iv = Value(ivt.text[1:], iv_type)
        self.define(iv, ivt, body_scope)
        iter_vals = tuple(Value(n.text[1:], arg_type(x)) for n, x in zip(names, init_vals))
        for n, v in zip(names, iter_vals):
            self.define(v, n, body_scope)
        body = self._region(body_scope, depth, kb, keep_empty_yield=bool(names))
        res = tuple(Value(r.text[1:], v.type) for r, v in zip(results, iter_vals))
        for r, v in zip(results, res):
            self.define(v, r, scope)
        return For(iv, lb, ub, step, body, iter_vals, tuple(init_vals), res, loc=self.loc(mt))

    def _iv_type(self) -> Type | None:
        if not self.accept(PUNCT, ":"):
            return None
        tt, t = self.type_()
        if not (isinstance(t, ScalarType) and not t.is_float):
            self.fail("STRUCT_INDEX", f"a loop counter is index or an integer, not {t}", tt,
                      expected="index or iN", actual=str(t))
        return t

    def _init(self, tok: Token, x: object, slot: tuple[Token, Type] | None) -> Value | Lit:
        if isinstance(x, Value):
            if slot is not None:
                self._agree(slot, x.type)
            return x
        if slot is None or not isinstance(slot[1], ScalarType):
            self.fail("PARSE_MISSING_TYPE", "a literal initial value needs the loop's '-> (T)' types", tok,
                      expected="-> (T, ...)")
        try:
            return make_lit(x, slot[1])  # type: ignore[arg-type]
        except ValueError as e:
            self.fail("PARSE_LITERAL", str(e), tok, expected=str(slot[1]), actual=tok.text)

    def _if(self, mt: Token, results: list[Token], scope: Scope, depth: int, kb: _KernelBuild) -> If:
        cond = self.use(self.expect(VALUE, what="a condition %value"), scope)
        types = self.type_list() if self.accept(PUNCT, "->") else []
        if len(results) != len(types):
            self.fail("PARSE_ARITY" if types else "PARSE_MISSING_TYPE",
                      f"scf.if with {len(types)} result type(s) names {len(results)} result(s)",
                      results[0] if results else mt, expected=len(types), actual=len(results))
        keep = bool(results)
        then = self._region(scope.child(), depth, kb, keep)
        orelse: tuple[Stmt, ...] = ()
        k = 0
        while self.peek(k).kind == NEWLINE:
            k += 1
        if self.peek(k).is_(IDENT, "else"):
            self.skip_nl()
            self.next()
            orelse = self._region(scope.child(), depth, kb, keep)
        res = tuple(Value(r.text[1:], t) for r, (_, t) in zip(results, types))
        for r, v in zip(results, res):
            self.define(v, r, scope)
        return If(cond, then, orelse, res, loc=self.loc(mt))

    def _yield(self, mt: Token, results: list[Token], scope: Scope, depth: int, kb: _KernelBuild) -> Yield:
        if results:
            self.fail("PARSE_ARITY", "yield has no results", results[0])
        toks: list[Token] = []
        while not self.at_end() and not self.at(PUNCT, ":"):
            if toks:
                self.expect(PUNCT, ",", "',' between values")
            toks.append(self.expect(VALUE, what="a value to yield"))
        vals = tuple(self.use(t, scope) for t in toks)
        if self.accept(PUNCT, ":"):
            types = [self.type_()]
            while self.accept(PUNCT, ","):
                types.append(self.type_())
            if len(types) != len(vals):
                self.fail("PARSE_SIGNATURE", f"{len(types)} type(s) for {len(vals)} yielded value(s)",
                          types[0][0], expected=len(vals), actual=len(types))
            for slot, v in zip(types, vals):
                self._agree(slot, v.type)
        return Yield(vals, loc=self.loc(mt))


def arg_type(x: Value | Lit) -> Type:
    return x.type


def k_tok(p: Parser, k: Kernel) -> Token:
    loc = k.loc
    return Token(IDENT, "kernel", loc.line or 1, loc.col or 1) if loc else p.peek()


def parse(text: str, filename: str | None = None) -> Module:
    """Parse PTO-AS text; raises ``PTOError`` (``PTOErrorGroup`` for several) on bad input."""
    return Parser(text, filename).module()
