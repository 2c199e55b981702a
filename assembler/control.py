"""Structured control flow: ``scf.for`` (bounds, step, iter_args) and ``scf.if`` (optional
else and results) with their regions, and ``scf.yield``; plain ``for``/``if``/``yield`` too.

A ``for``/``if`` is parsed in two steps: its head (up to the '{'), then its regions and
results. A head line can be a line template (see parser.py): its ``open`` does the head's
checks without reporting, then returns the second step for the parser to run."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..isa.diagnostics import Location
from ..isa.types import INDEX, ScalarType, TileType, Type
from .cursor import Defer
from .ir import Bound, For, If, Lit, Stmt, Value, Yield, make_lit
from .lexer import IDENT, INT, NEWLINE, PUNCT, VALUE, Token
from .scope import Scope
from .statements import KernelBuild, StatementParser, visible

Finish = Callable[[], Stmt]   # the second step of a region statement whose head a template took


@dataclass
class YieldTemplate:
    """``scf.yield %a, ... [: T, ...]`` for ``Parser.fast_lines`` (see statements.py)."""

    loc_tok: Token
    values: list[Token]
    types: list[Type] | None
    ks: tuple[int, ...] = ()

    def number_names(self, ordinal: dict[int, int]) -> None:
        self.ks = tuple(ordinal[id(t)] for t in self.values)

    def apply(self, p: StatementParser, scope: Scope, names: list[str], loc: Location) -> Stmt:
        vals = tuple(visible(scope, names[k]) for k in self.ks)
        if self.types is not None and any(t != v.type for t, v in zip(self.types, vals)):
            raise Defer
        return Yield(vals, loc=loc)


@dataclass
class ForTemplate:
    """An ``scf.for`` head line: ``[%r, ... =] scf.for %i = A to B step C [: T]
    [iter_args(%a = X, ...)] [-> (T, ...)] [: T] {``."""

    loc_tok: Token
    results: list[Token]
    iv: Token
    bounds: list[Token | int]                 # lb, ub, step
    iv_type: Type
    names: list[Token]
    inits: list[Token | Lit]                  # a value's token, or the literal it makes
    types: list[Type] | None
    ks: dict[int, int] = field(default_factory=dict)   # id(token) -> place among the %names

    def number_names(self, ordinal: dict[int, int]) -> None:
        self.ks = ordinal

    def open(self, p: "ControlParser", scope: Scope, names: list[str], loc: Location,
             results: list[Token], depth: int, kb: KernelBuild) -> Finish:
        """``_for``'s head for this line; ``Defer`` wherever it would report."""
        def value(t: Any) -> Any:
            return visible(scope, names[self.ks[id(t)]]) if isinstance(t, Token) else t
        lb, ub, step = (value(b) for b in self.bounds)
        inits = [value(x) for x in self.inits]
        for k, x in enumerate(inits):
            if isinstance(x, Value) and (isinstance(x.type, TileType)
                                         or (self.types is not None and self.types[k] != x.type)):
                raise Defer
        body_scope = scope.child()
        iv = Value(names[self.ks[id(self.iv)]], self.iv_type)
        iters = tuple(Value(names[self.ks[id(n)]], x.type) for n, x in zip(self.names, inits))
        for v in (iv, *iters):
            if body_scope.define(v) is not None:
                raise Defer
        return lambda: p._for_regions(loc, results, scope, depth, kb, iv, lb, ub, step, body_scope, iters,
                                      tuple(inits))


@dataclass
class IfTemplate:
    """An ``scf.if`` head line: ``[%r, ... =] scf.if %c [-> (T, ...)] {``."""

    loc_tok: Token
    results: list[Token]
    cond: Token
    types: list[Type]
    ks: dict[int, int] = field(default_factory=dict)

    def number_names(self, ordinal: dict[int, int]) -> None:
        self.ks = ordinal

    def open(self, p: "ControlParser", scope: Scope, names: list[str], loc: Location,
             results: list[Token], depth: int, kb: KernelBuild) -> Finish:
        cond = visible(scope, names[self.ks[id(self.cond)]])
        return lambda: p._if_regions(loc, results, scope, depth, kb, cond, self.types)


class ControlParser(StatementParser):
    def block(self, scope: Scope, depth: int, kb: KernelBuild) -> list[Stmt]:
        raise NotImplementedError   # the Parser's statement loop

    def _bound(self, scope: Scope) -> Bound:
        if self.at(INT):
            return self.number()[1]  # type: ignore[index,return-value]
        return self.use(self.expect(VALUE, what="a bound (%value or integer)"), scope)

    def _region(self, scope: Scope, depth: int, kb: KernelBuild, keep_empty_yield: bool) -> tuple[Stmt, ...]:
        self.expect(PUNCT, "{", "'{' opening the region")
        return self._region_body(scope, depth, kb, keep_empty_yield)

    def _region_body(self, scope: Scope, depth: int, kb: KernelBuild, keep_empty_yield: bool) -> tuple[Stmt, ...]:
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
        self.expect(PUNCT, "{", "'{' opening the region")
        return self._for_regions(self.loc(mt), results, scope, depth, kb, iv, lb, ub, step, body_scope,
                                 iter_vals, tuple(init_vals))

    def _for_regions(self, loc: Location, results: list[Token], scope: Scope, depth: int, kb: KernelBuild,
                     iv: Value, lb: Bound, ub: Bound, step: Bound, body_scope: Scope,
                     iter_vals: tuple[Value, ...], init_vals: tuple[Value | Lit, ...]) -> For:
        """The rest of a ``for`` after its '{'."""
        body = self._region_body(body_scope, depth, kb, keep_empty_yield=bool(iter_vals))
        res = tuple(Value(r.text[1:], v.type) for r, v in zip(results, iter_vals))
        for r, v in zip(results, res):
            self.define(v, r, scope)
        return For(iv, lb, ub, step, body, iter_vals, init_vals, res, loc=loc)

    def for_template(self, mt: Token, results: list[Token]) -> ForTemplate:
        """``_for``'s head, syntax only."""
        ivt = self.expect(VALUE)
        self.expect(PUNCT, "=")
        bounds: list[Token | int] = []
        for kw in ("to", "step", None):
            bounds.append(self.number()[1] if self.at(INT) else self.expect(VALUE))  # type: ignore[index]
            if kw:
                self.expect(IDENT, kw)
        iv_type = self._iv_type()
        names: list[Token] = []
        inits: list[Token | Lit] = []
        lits: list[tuple[Token, Any] | None] = []
        if self.accept(IDENT, "iter_args"):
            self.expect(PUNCT, "(")
            while not self.accept(PUNCT, ")"):
                if names:
                    self.expect(PUNCT, ",")
                names.append(self.expect(VALUE))
                self.expect(PUNCT, "=")
                lit = self.number()
                lits.append(lit)
                inits.append(self.expect(VALUE) if lit is None else lit[0])
        types = self.type_list() if self.accept(PUNCT, "->") else None
        iv_type = self._iv_type() or iv_type or INDEX
        if (types is not None and len(types) != len(names)) or (results and len(results) != len(names)):
            self.unexpected(mt, "as many types and results as iteration arguments")
        for k, lit in enumerate(lits):
            if lit is not None:
                inits[k] = self._init(lit[0], lit[1], types[k] if types else None)
        self.expect(PUNCT, "{")
        return ForTemplate(mt, results, ivt, bounds, iv_type, names, inits,
                           None if types is None else [t for _, t in types])

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
        self.expect(PUNCT, "{", "'{' opening the region")
        return self._if_regions(self.loc(mt), results, scope, depth, kb, cond, [t for _, t in types])

    def _if_regions(self, loc: Location, results: list[Token], scope: Scope, depth: int, kb: KernelBuild,
                    cond: Value, types: list[Type]) -> If:
        """The rest of an ``if`` after its first '{'."""
        keep = bool(results)
        then = self._region_body(scope.child(), depth, kb, keep)
        orelse: tuple[Stmt, ...] = ()
        k = 0
        while self.peek(k).kind == NEWLINE:
            k += 1
        if self.peek(k).is_(IDENT, "else"):
            self.skip_nl()
            self.next()
            orelse = self._region(scope.child(), depth, kb, keep)
        res = tuple(Value(r.text[1:], t) for r, t in zip(results, types))
        for r, v in zip(results, res):
            self.define(v, r, scope)
        return If(cond, then, orelse, res, loc=loc)

    def if_template(self, mt: Token, results: list[Token]) -> IfTemplate:
        cond = self.expect(VALUE)
        types = self.type_list() if self.accept(PUNCT, "->") else []
        if len(results) != len(types):
            self.unexpected(mt, "one type per result")
        self.expect(PUNCT, "{")
        return IfTemplate(mt, results, cond, [t for _, t in types])

    def yield_template(self, mt: Token, results: list[Token]) -> YieldTemplate:
        if results:
            self.unexpected(results[0], "no results")
        toks: list[Token] = []
        while not self.at_end() and not self.at(PUNCT, ":"):
            if toks:
                self.expect(PUNCT, ",")
            toks.append(self.expect(VALUE))
        types = None
        if self.accept(PUNCT, ":"):
            types = [self.type_()[1]]
            while self.accept(PUNCT, ","):
                types.append(self.type_()[1])
            if len(types) != len(toks):
                self.unexpected(mt, "one type per value")
        return YieldTemplate(mt, toks, types)

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
