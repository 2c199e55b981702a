"""Structured control flow: ``scf.for`` (bounds, step, iter_args) and ``scf.if`` (optional
else and results) with their regions, and ``scf.yield``; plain ``for``/``if``/``yield`` too."""
from __future__ import annotations

from ..isa.types import INDEX, ScalarType, Type
from .ir import Bound, For, If, Lit, Stmt, Value, Yield, make_lit
from .lexer import IDENT, INT, NEWLINE, PUNCT, VALUE, Token
from .scope import Scope
from .statements import KernelBuild, StatementParser


class ControlParser(StatementParser):
    def block(self, scope: Scope, depth: int, kb: KernelBuild) -> list[Stmt]:
        raise NotImplementedError   # the Parser's statement loop

    def _bound(self, scope: Scope) -> Bound:
        if self.at(INT):
            return self.number()[1]  # type: ignore[index,return-value]
        return self.use(self.expect(VALUE, what="a bound (%value or integer)"), scope)

    def _region(self, scope: Scope, depth: int, kb: KernelBuild, keep_empty_yield: bool) -> tuple[Stmt, ...]:
        self.expect(PUNCT, "{", "'{' opening the region")
        body = self.block(scope, depth + 1, kb)
        self.expect(PUNCT, "}", "'}' closing the region")
        if not keep_empty_yield and body and isinstance(body[-1], Yield) and not body[-1].values:
            body.pop()
        return tuple(body)

    def _for(self, mt: Token, results: list[Token], scope: Scope, depth: int, kb: KernelBuild) -> For:
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
        iter_vals = tuple(Value(n.text[1:], x.type) for n, x in zip(names, init_vals))
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

    def _if(self, mt: Token, results: list[Token], scope: Scope, depth: int, kb: KernelBuild) -> If:
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

    def _yield(self, mt: Token, results: list[Token], scope: Scope, depth: int, kb: KernelBuild) -> Yield:
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
