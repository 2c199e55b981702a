"""Directives (``.arg``, ``.const``, ``.tile``), ``arith.constant``, ``pto.alloc_tile`` and
the ``arith`` scalar ops: statements that define exactly the values they name."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..isa.types import INDEX, ScalarType, TileType, Type
from . import scalar_ops as S
from .ir import Const, ScalarOp, Stmt, TileDecl, Value, default_literal_type, make_lit
from .lexer import IDENT, PUNCT, VALUE, Token
from .scope import Scope
from .tileops import TileOpParser


@dataclass
class KernelBuild:
    """A kernel being parsed: ``.arg`` directives append to its parameters."""

    name: str
    tok: Token
    params: list[Value] = field(default_factory=list)
    scope: Scope = field(default_factory=Scope)


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
