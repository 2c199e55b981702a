"""The public tensor-view statements (decision "Tensor views"):

    %tv = pto.make_tensor_view %ptr, shape = [%m, %n], strides = [%s0, %s1] [, layout = nd] : T
    %pv = pto.partition_view %tv, offsets = [%i, %j], sizes = [16, 16] [: T_src ->] T
    %p  = pto.tensor_view_addr %tv [: T_src -> !pto.ptr<T, gm>]
    %d  = pto.get_tensor_view_dim %tv, %k [: T_src -> index]       (also _stride)

A view is a global value (``GlobalType``), so every instruction that takes a ``!pto.memref``
takes a view; list items are ``index``/integer values or integer literals. The optional
``layout`` hint (``nd``/``dn``/``nz``, also ``{layout = #pto.layout<dn>}``) is the result type's
layout (decision "make_tensor_view layout"), so it prints as the type's ``layout=`` option.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

import dataclasses

from ..isa.types import INDEX, GlobalLayout, GlobalType, Type
from .ir import QUERY_OPS, VIEW_OPS, Bound, Value, View, ViewQuery
from .lexer import ATTR, IDENT, PUNCT, STRING, VALUE, Token
from .scope import Scope

#: every spelling of the view statements -> the op's name
VIEW_FORMS: dict[str, str] = {p + n: n for n in VIEW_OPS + QUERY_OPS for p in ("", "pto.")}
#: the keyword lists each view op takes, in written order
#: a layout attribute's word without case or underscores (``mx_a_zz``, ``MX_AZZ``) -> its layout
_LAYOUT_WORDS = {g.value.lower().replace("_", ""): g for g in GlobalLayout}
_LISTS = {"make_tensor_view": ("shape", "strides"), "partition_view": ("offsets", "sizes"),
          "tensor_view_addr": ()}


class ViewParser:
    """Parses the view statements; mixed into the parser (uses its cursor and scope helpers)."""

    def view_statement(self: Any, mt: Token, results: list[Token], scope: Scope) -> View | ViewQuery:
        op = VIEW_FORMS[mt.text.lower()]
        rt = self._one_result(mt, results)
        st = self.expect(VALUE, what="a tensor view %name")
        src = self.use(st, scope)
        if not isinstance(src.type, GlobalType):
            self.fail("STRUCT_OPERAND_KIND", f"{mt.text} takes a tensor view, %{src.name} is {src.type}", st,
                      expected="!pto.tensor_view<...> (a !pto.memref)", actual=str(src.type))
        if op in QUERY_OPS:
            self.expect(PUNCT, ",", "',' and the dimension")
            dim = self._bound(scope)
            t = self._signature(src, INDEX, required=False)
            if t != INDEX:
                self.fail("PARSE_TYPE", f"{mt.text} gives an index, not {t}", mt, expected="index", actual=str(t))
            v = Value(rt.text[1:], INDEX)
            self.define(v, rt, scope)
            return ViewQuery(op, v, src, dim, loc=self.loc(mt))
        lists: dict[str, tuple[Bound, ...]] = {}
        for kw in _LISTS[op]:
            self.expect(PUNCT, ",", f"',' and {kw} = [...]")
            self.expect(IDENT, kw, f"'{kw}'")
            self.expect(PUNCT, "=", "'='")
            lists[kw] = self._bound_list(scope)
        layout = self._layout_hint() if op == "make_tensor_view" else None
        default = GlobalType((None,), src.type.dtype) if op == "tensor_view_addr" else None
        t = self._signature(src, default, required=default is None)
        if not isinstance(t, GlobalType):
            self.fail("PARSE_TYPE", f"{mt.text} defines a tensor view, not {t}", mt,
                      expected="!pto.tensor_view<...>", actual=str(t))
        if layout is not None:
            t = self._with_layout(t, layout, lists["strides"])
        v = Value(rt.text[1:], t)
        self.define(v, rt, scope)
        return View(op, v, src, offsets=lists.get("offsets", ()),
                    sizes=lists.get("sizes", lists.get("shape", ())), strides=lists.get("strides", ()),
                    loc=self.loc(mt))

    def _layout_hint(self: Any) -> tuple[Token, GlobalLayout] | None:
        """``, layout = nd`` or ``{layout = ...}`` after the lists: the value's token and layout."""
        if self.at(PUNCT, ",") and self.peek(1).text == "layout":
            self.next()
            braced = False
        elif self.at(PUNCT, "{"):
            self.next()
            braced = True
        else:
            return None
        self.expect(IDENT, "layout", "'layout'")
        self.expect(PUNCT, "=", "'='")
        vt = self.peek()
        text = vt.text
        if vt.kind == ATTR and text.lower().startswith("#pto.layout<") and text.endswith(">"):
            text = text[len("#pto.layout<"):-1]
        elif vt.kind == STRING:
            text = text[1:-1]
        elif vt.kind != IDENT:
            self.unexpected(vt, "a layout (nd, dn or nz)")
        self.next()
        layout = _LAYOUT_WORDS.get(text.strip().lower().replace("_", ""))
        if layout is None:
            self.fail("PARSE_ATTR", f"unknown tensor-view layout {vt.text}", vt,
                      expected=", ".join(g.value.lower() for g in GlobalLayout), actual=vt.text)
        if braced:
            self.expect(PUNCT, "}", "'}'")
        return vt, layout

    def _with_layout(self: Any, t: GlobalType, hint: tuple[Token, GlobalLayout],
                     strides: tuple[Bound, ...]) -> GlobalType:
        """The result type with the hinted layout; PARSE_ATTR when the written type states
        another, or when literal strides show another (ND: unit last stride; DN: unit stride in
        the second-to-last dimension)."""
        vt, layout = hint
        if t.layout is not GlobalLayout.ND and t.layout is not layout:
            self.fail("PARSE_ATTR", f"layout {layout.value} differs from the view type's {t.layout.value}", vt,
                      expected=t.layout.value, actual=layout.value)
        unit = {GlobalLayout.ND: -1, GlobalLayout.DN: -2}.get(layout)
        if unit is not None and len(strides) >= -unit and isinstance(strides[unit], int) and strides[unit] != 1:
            self.fail("PARSE_ATTR", f"layout {layout.value} needs a unit stride in dim {len(strides) + unit}, the "
                      f"strides are {list(strides)}", vt, expected="stride 1", actual=str(strides[unit]))
        return dataclasses.replace(t, layout=layout)

    def _bound_list(self: Any, scope: Scope) -> tuple[Bound, ...]:
        """``[a, b, ...]``: values or integer literals (possibly empty)."""
        self.expect(PUNCT, "[", "'['")
        out: list[Bound] = []
        while not self.accept(PUNCT, "]"):
            if out:
                self.expect(PUNCT, ",", "',' or ']'")
            out.append(self._bound(scope))
        return tuple(out)

    def _signature(self: Any, src: Value, default: Type | None, required: bool) -> Type | None:
        """``: T_res`` or ``: T_src -> T_res`` (the source's type must then agree); the result
        type, ``default`` when none is written."""
        if not self.accept(PUNCT, ":"):
            if required:
                self.fail("PARSE_MISSING_TYPE", "the view's type is needed", self.peek(),
                          expected=": !pto.tensor_view<...>", actual=str(self.peek()))
            return default
        first = self.type_()
        if not self.accept(PUNCT, "->"):
            return first[1]
        self._agree(first, src.type)
        return self.type_()[1]


# --------------------------------------------------------------------------- static checks

Problem = tuple[str, str, object, object]      # code, message, expected, actual


def view_problems(s: View, known: Callable[[Bound], int | None]) -> Iterator[Problem]:
    """What the verifier reports about a view statement whose values are defined: element
    types, list lengths and ranks, and the bounds that constants already break. ``known``
    gives a bound's value when it is known before run time."""
    src, res = s.source.type, s.result.type
    if not isinstance(src, GlobalType) or not isinstance(res, GlobalType):
        yield ("STRUCT_OPERAND_KIND", f"pto.{s.op} maps a tensor view to a tensor view",
               "!pto.tensor_view<...>", f"{src} -> {res}")
        return
    if src.dtype != res.dtype:
        yield ("STRUCT_TYPE_MISMATCH", f"pto.{s.op} keeps the element type", src.dtype.name, res.dtype.name)
    if s.op == "tensor_view_addr":
        if res.rank != 1:
            yield ("STRUCT_TYPE_MISMATCH", "pto.tensor_view_addr gives a pointer (a rank-1 global)",
                   f"!pto.ptr<{src.dtype.name}, gm>", str(res))
        return
    if s.op == "make_tensor_view" and src.rank != 1:
        yield ("STRUCT_TYPE_MISMATCH", "pto.make_tensor_view builds a view over a pointer (a rank-1 global)",
               "!pto.ptr<T, gm>", str(src))
    lists = (("offsets", s.offsets), ("sizes", s.sizes)) if s.op == "partition_view" else \
        (("shape", s.sizes), ("strides", s.strides))
    rank = src.rank if s.op == "partition_view" else res.rank
    for kw, items in lists:
        if len(items) != rank:
            yield ("STRUCT_INDEX", f"pto.{s.op} needs one entry of {kw} per dimension", rank, len(items))
    if s.op == "partition_view" and res.rank != src.rank:
        yield ("STRUCT_TYPE_MISMATCH", "a partition has the rank of its view", src.rank, res.rank)
    if any(len(items) != rank for _, items in lists):
        return
    yield from _static_bounds(s, src, res, known)


def _static_bounds(s: View, src: GlobalType, res: GlobalType, known: Callable[[Bound], int | None]) -> Iterator[Problem]:
    sizes = [known(b) for b in s.sizes]
    for d, (n, want) in enumerate(zip(sizes, res.shape)):
        if n is not None and n < 0:
            yield ("STRUCT_OOB", f"pto.{s.op}: size {n} in dim {d} is negative", "a size >= 0", str(n))
        elif n is not None and want is not None and n != want:
            yield ("STRUCT_TYPE_MISMATCH", f"pto.{s.op}: size {n} in dim {d} differs from the type's extent",
                   str(want), str(n))
    if s.op == "partition_view":
        for d, (o, n, ext) in enumerate(zip((known(b) for b in s.offsets), sizes, src.shape)):
            if o is not None and o < 0:
                yield ("STRUCT_OOB", f"pto.partition_view: offset {o} in dim {d} is negative", "an offset >= 0", str(o))
            elif o is not None and ext is not None and o + (n or 0) > ext:
                yield ("STRUCT_OOB", f"pto.partition_view: the window [{o}, {o + (n or 0)}) in dim {d} is outside "
                       f"the view", f"[0, {ext})", f"[{o}, {o + (n or 0)})")
        return
    strides = [known(b) for b in s.strides]
    for d, st in enumerate(strides):
        if st is not None and st < 0:
            yield ("STRUCT_OOB", f"pto.make_tensor_view: stride {st} in dim {d} is negative", "a stride >= 0", str(st))
    if src.shape[0] is not None and None not in sizes and None not in strides and min(sizes) > 0 \
            and min(strides) >= 0:  # type: ignore[type-var]
        span = 1 + sum((n - 1) * st for n, st in zip(sizes, strides))  # type: ignore[operator]
        if span > src.shape[0]:
            yield ("STRUCT_OOB", f"pto.make_tensor_view: the view spans {span} elements of a {src.shape[0]}-element "
                   "pointer", f"<= {src.shape[0]}", str(span))


def query_problem(s: ViewQuery, known: Callable[[Bound], int | None]) -> Problem | None:
    """A constant dimension outside the view's rank."""
    t = s.source.type
    k = known(s.dim)
    if isinstance(t, GlobalType) and k is not None and not 0 <= k < t.rank:
        return ("STRUCT_OOB", f"pto.{s.op}: dimension {k} of a rank-{t.rank} view", f"[0, {t.rank})", str(k))
    if not isinstance(t, GlobalType):
        return ("STRUCT_OPERAND_KIND", f"pto.{s.op} reads a tensor view", "!pto.tensor_view<...>", str(t))
    return None
