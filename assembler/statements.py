"""Directives (``.arg``, ``.const``, ``.tile``), ``arith.constant``, ``pto.alloc_tile`` and
the ``arith`` scalar ops: statements that define exactly the values they name."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..isa.diagnostics import Location
from ..isa.suggest import did_you_mean
from ..isa.types import INDEX, ScalarType, TileType, Type
from . import scalar_ops as S
from .cursor import Defer, new_scalar_op, new_value
from .ir import Const, ScalarOp, Stmt, TileDecl, Value, default_literal_type, token_lit
from .lexer import IDENT, PUNCT, VALUE, Token
from .scope import Scope
from .tileops import TileOpParser

I1 = ScalarType("i1")

DIRECTIVES = (".arg", ".const", ".tile")


@dataclass
class KernelBuild:
    """A kernel being parsed: ``.arg`` directives append to its parameters."""

    name: str
    tok: Token
    params: list[Value] = field(default_factory=list)
    scope: Scope = field(default_factory=Scope)


# --------------------------------------------------------------------------- line templates
# What the token path below would build for a well-formed line, minus the %names: the
# parser reuses one for every line that differs only in its names (``Parser.fast_lines``).
# ``apply`` raises ``Defer`` wherever the token path would report something or change
# nothing, so every diagnostic still comes from the token path.

def visible(scope: Scope, name: str) -> Value:
    """The value ``Cursor.use`` would give, deferring where it would report."""
    v = scope.lookup(name)
    if v.__class__ is not Value:
        raise Defer
    return v  # type: ignore[return-value]


def _fresh(scope: Scope, value: Value) -> Value:
    """Define a value the way ``Cursor.define`` does, deferring where it would report."""
    if scope.define(value) is not None:
        raise Defer
    return value


@dataclass
class ConstTemplate:
    """``.const %c = 0 : index`` / ``%c = arith.constant 0 : index``: fully typed by its text."""

    loc_tok: Token
    name: Token
    type: ScalarType
    value: object
    k: int = -1

    def number_names(self, ordinal: dict[int, int]) -> None:
        self.k = ordinal[id(self.name)]

    def apply(self, p: "StatementParser", scope: Scope, names: list[str], loc: Location) -> Stmt:
        return Const(_fresh(scope, Value(names[self.k], self.type)), self.value, loc=loc)  # type: ignore[arg-type]


@dataclass
class DeclTemplate:
    """``.tile %t [valid_row = %r] [valid_col = %c] : T`` / ``%t = pto.alloc_tile ... : T``."""

    loc_tok: Token
    name: Token
    valid: dict[str, Token]
    type: TileType
    k: int = -1
    valid_ks: dict[str, int] = field(default_factory=dict)

    def number_names(self, ordinal: dict[int, int]) -> None:
        self.k = ordinal[id(self.name)]
        self.valid_ks = {kw: ordinal[id(t)] for kw, t in self.valid.items()}

    def apply(self, p: "StatementParser", scope: Scope, names: list[str], loc: Location) -> Stmt:
        valid = {kw: visible(scope, names[k]) for kw, k in self.valid_ks.items()}
        v = _fresh(scope, Value(names[self.k], self.type))
        return TileDecl(v, valid.get("valid_row"), valid.get("valid_col"), loc=loc)


@dataclass
class ScalarTemplate:
    """``%r = arith.OP [pred,] %a, ... [: T [to U]]``."""

    loc_tok: Token
    spec: S.ScalarOpSpec
    result: Token
    operands: list[Token]
    predicate: str | None
    written: Type | None
    to: Type | None
    k: int = -1
    operand_ks: tuple[int, ...] = ()

    def number_names(self, ordinal: dict[int, int]) -> None:
        self.k = ordinal[id(self.result)]
        self.operand_ks = tuple(ordinal[id(t)] for t in self.operands)

    def apply(self, p: "StatementParser", scope: Scope, names: list[str], loc: Location) -> Stmt:
        ops = tuple(map(scope.lookup, map(names.__getitem__, self.operand_ks)))
        for v in ops:
            if v.__class__ is not Value:
                raise Defer
        cls, written = self.spec.cls, self.written
        if cls == "cast":
            ref, rtype = ops[0].type, self.to  # type: ignore[attr-defined]
        elif cls == "block":
            ref = rtype = INDEX
        else:
            ref = ops[1 if cls == "select" else 0].type  # type: ignore[attr-defined]
            rtype = I1 if cls in ("cmpi", "cmpf") else ref
        if written is not None and written is not ref and written != ref:
            raise Defer
        v = _fresh(scope, new_value(names[self.k], rtype))  # type: ignore[arg-type]
        return new_scalar_op(self.spec.name, v, ops, self.predicate, loc)  # type: ignore[arg-type]


class StatementParser(TileOpParser):
    pending: list[str]

    def _param(self, kb: KernelBuild) -> None:
        vt = self.expect(VALUE, what="a parameter %name")
        self.pending = [vt.text[1:]]
        self.expect(PUNCT, ":")
        _, t = self.type_()
        v = Value(vt.text[1:], t)
        why = kb.scope.define_param(v)
        if why:
            self.fail("STRUCT_REDEFINED", why, vt, actual=f"{vt.text} : {t}")
        kb.params.append(v)

    def _one_result(self, mt: Token, results: list[Token]) -> Token:
        if len(results) != 1:
            self.fail("PARSE_ARITY", f"{mt.text} defines exactly one result, got {len(results)}",
                      results[1] if len(results) > 1 else mt, expected=1, actual=len(results))
        return results[0]

    # ------------------------------------------------------------------ directives
    def directive(self, scope: Scope, depth: int, kb: KernelBuild) -> list[Stmt]:
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
        self.fail("PARSE_DIRECTIVE", f"unknown directive '{dt.text}'{did_you_mean(dt.text, DIRECTIVES)}", dt, expected=".arg, .const, .tile",
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
            lv = token_lit(tok.text, value, t)  # type: ignore[arg-type]
        except ValueError as e:
            self.fail("PARSE_LITERAL", str(e), tok, expected=str(t), actual=tok.text)
        v = Value(vt.text[1:], t)
        self.define(v, vt, scope)
        return Const(v, lv.value, loc=self.loc(at))

    def _tile_decl(self, at: Token, vt: Token, scope: Scope) -> TileDecl:
        valid: dict[str, Value] = {}
        while self.at(IDENT, "valid_row") or self.at(IDENT, "valid_col") or self.at(IDENT, "addr"):
            kw = self.next()
            if kw.text in valid:
                self.unexpected(kw, "each of addr, valid_row, valid_col once")
            self.expect(PUNCT, "=")
            valid[kw.text] = self.use(self.expect(VALUE, what="an index value"), scope)
        self.expect(PUNCT, ":", "':' and the tile type")
        tt, t = self.type_()
        if not isinstance(t, TileType):
            self.fail("PARSE_TYPE", f"a tile declaration needs a tile type, not {t}", tt,
                      expected="!pto.tile<...>", actual=str(t))
        v = Value(vt.text[1:], t)
        self.define(v, vt, scope)
        return TileDecl(v, valid.get("valid_row"), valid.get("valid_col"), addr=valid.get("addr"), loc=self.loc(at))

    def _set_validshape(self, mt: Token, results: list[Token], scope: Scope) -> TileDecl:
        """``pto.set_validshape %t, %rows, %cols [: T]``: a new run-time valid region for the
        existing tile %t (its type must have ``valid=?x?``), contents kept."""
        if results:
            self.fail("PARSE_ARITY", f"{mt.text} defines no result", results[0], expected=0, actual=len(results))
        vt = self.expect(VALUE, what="the tile %name")
        tile = self.use(vt, scope)
        self.expect(PUNCT, ",", "',' and the valid rows")
        rows = self.use(self.expect(VALUE, what="an index value"), scope)
        self.expect(PUNCT, ",", "',' and the valid columns")
        cols = self.use(self.expect(VALUE, what="an index value"), scope)
        written = self._type_after_colon()
        if written is not None:
            self._agree(written, tile.type)
        return TileDecl(tile, rows, cols, True, loc=self.loc(mt))

    # ------------------------------------------------------------------ scalar ops
    def _scalar(self, spec: S.ScalarOpSpec, mt: Token, results: list[Token], scope: Scope) -> ScalarOp:
        if spec.cls == "extended":
            return self._extended(spec, mt, results, scope)
        rt = self._one_result(mt, results)
        pred = None
        if spec.predicates:
            pt = self.expect(IDENT, what="a predicate")
            if pt.text not in spec.predicates:
                self.fail("PARSE_ATTR", f"'{pt.text}' is not a {spec.name} predicate"
                          f"{did_you_mean(pt.text, spec.predicates)}", pt,
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

    def _extended(self, spec: S.ScalarOpSpec, mt: Token, results: list[Token], scope: Scope) -> ScalarOp:
        """``%lo, %hi = arith.mulsi_extended %a, %b : T`` / ``%s, %c = arith.addui_extended %a, %b
        : T, i1``: two results, typed by the operands (a written second type must agree)."""
        if len(results) != 2:
            self.fail("PARSE_ARITY", f"{mt.text} defines two results, got {len(results)}",
                      results[2] if len(results) > 2 else mt, expected=2, actual=len(results))
        toks = [self.expect(VALUE, what="a value %name (write constants with .const)")]
        self.expect(PUNCT, ",", "',' between operands")
        toks.append(self.expect(VALUE, what="a value %name (write constants with .const)"))
        ops = tuple(self.use(t, scope) for t in toks)
        t = ops[0].type
        second = S.second_type(spec, t) if isinstance(t, ScalarType) else t
        written = self._type_after_colon()
        if written is not None:
            self._agree(written, t)
            if self.accept(PUNCT, ","):
                self._agree(self.type_(), second)
        lo, hi = Value(results[0].text[1:], t), Value(results[1].text[1:], second)
        self.define(lo, results[0], scope)
        self.define(hi, results[1], scope)
        return ScalarOp(spec.name, lo, ops, None, hi, loc=self.loc(mt))

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

    # ------------------------------------------------------------------ templates (syntax only)
    def const_template(self, at: Token, vt: Token) -> ConstTemplate:
        lit = self.number()
        if lit is None:
            self.unexpected(self.peek(), "a literal")
        tok, value = lit
        t: Type = default_literal_type(value)
        if self.accept(PUNCT, ":"):
            t = self.type_()[1]
        if not isinstance(t, ScalarType):
            self.unexpected(tok, "a scalar type")
        try:
            return ConstTemplate(at, vt, t, token_lit(tok.text, value, t).value)
        except ValueError:
            self.unexpected(tok, "a literal of the type")

    def decl_template(self, at: Token, vt: Token) -> DeclTemplate:
        valid: dict[str, Token] = {}
        while self.at(IDENT, "valid_row") or self.at(IDENT, "valid_col"):
            kw = self.next()
            if kw.text in valid:
                self.unexpected(kw, "each once")
            self.expect(PUNCT, "=")
            valid[kw.text] = self.expect(VALUE)
        self.expect(PUNCT, ":")
        tt, t = self.type_()
        if not isinstance(t, TileType):
            self.unexpected(tt, "a tile type")
        return DeclTemplate(at, vt, valid, t)

    def scalar_template(self, spec: S.ScalarOpSpec, mt: Token, results: list[Token]) -> ScalarTemplate:
        if spec.cls == "extended":
            self.unexpected(mt, "a one-result scalar op")       # two results: the token path
        rt = self._one_result(mt, results)
        pred = None
        if spec.predicates:
            pt = self.expect(IDENT)
            if pt.text not in spec.predicates:
                self.unexpected(pt, "a predicate")
            pred = pt.text
            self.expect(PUNCT, ",")
        toks: list[Token] = []
        while not self.at_end() and not self.at(PUNCT, ":"):
            if toks:
                self.expect(PUNCT, ",")
            toks.append(self.expect(VALUE))
        if len(toks) != spec.arity:
            self.unexpected(mt, f"{spec.arity} operands")
        written = self._type_after_colon()
        to = None
        if spec.cls == "cast":
            if written is None or not self.accept(IDENT, "to"):
                self.unexpected(self.peek(), "': FROM to TO'")
            to = self.type_()[1]
        return ScalarTemplate(mt, spec, rt, toks, pred, written[1] if written else None, to)

    def _type_after_colon(self) -> tuple[Token, Type] | None:
        return self.type_() if self.accept(PUNCT, ":") else None

    def _agree(self, written: tuple[Token, Type], actual: Type) -> None:
        if written[1] != actual:
            self.fail("STRUCT_TYPE_MISMATCH", f"written type {written[1]} differs from the operand's {actual}",
                      written[0], expected=str(actual), actual=str(written[1]))
