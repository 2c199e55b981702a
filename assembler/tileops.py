"""Tile instruction statements: the synchronous form and the IR Level-2 DPS form, bound
onto an instruction's declared operands (see ``operands.py`` for the mapping).

Binding resolves every value to its definition, checks written types against it, declares
outputs that name new buffers (their type from the signature), and types literals (the
signature's type, else index for index operands, else the dtype of the first tile operand:
a scalar has the tile's dtype).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field, fields
from typing import Any, Callable

from ..isa.diagnostics import Location, PTOError
from ..isa.spec import Instruction, Kind, Operand, Role
from ..isa.suggest import did_you_mean
from ..isa.types import EVENT, INDEX, SCALAR_NAMES, ScalarType, TileType, Type
from .cursor import Cursor, Defer, Item, Silent, new_tile_op, new_value
from .ir import Lit, MemRef, PipeLit, TileOp, Value, token_lit
from .lexer import ATTR, FLOAT, IDENT, INT, PUNCT, STRING, TYPE, VALUE, Token
from .operands import (assign, choose, defines, describe, dps_layout, inout_layout, item_kinds, kind_error,
                       readings, required_count, sole_scalar_type, sync_layout)
from .public import declared_name
from .scope import MISSING, POISON, Scope

Slot = tuple[Token, Type]


@dataclass
class TileTemplate:
    """A tile statement's syntax: ``bind_tile`` binds it to values. As a line template
    (see parser.py) it is also ``apply``-ed to other lines that differ only in %names."""

    instr: Instruction
    mt: Token
    entries: list[tuple[Operand, Item, Slot | None]]   # uses before new definitions
    attrs: dict[str, Any]
    # line templates: (operand, how, place of its %name, written type, defines?, extra)
    plan: list[tuple[str, int, int, Type | None, bool, Any]] = field(default_factory=list)
    # the plan when it holds only values and fixed operands: (operand, place or -1, type or operand)
    common: tuple[tuple[str, int, Any], ...] = ()
    # operand lists whose binding waits for the items' types: (what, readings, items)
    unsettled: list[tuple[str, list[tuple[Operand, ...]], list[Item]]] = field(default_factory=list)
    # line templates of an unsettled statement: the %name places, and one settled template per
    # combination of the items' kinds met so far
    ordinal: dict[int, int] = field(default_factory=dict)
    settled: dict[tuple, "TileTemplate | None"] = field(default_factory=dict)

    @property
    def loc_tok(self) -> Token:
        return self.mt

    def number_names(self, ordinal: dict[int, int]) -> None:
        """Make the plan ``apply`` follows (``ordinal``: id(token) -> place among the %names)."""
        self.ordinal = ordinal
        by_name = {op.name: (op, it, slot) for op, it, slot in self.entries}
        plan = []
        for o in self.instr.operands:               # declaration order: the order of TileOp.args
            if o.name not in by_name:
                continue
            op, it, slot = by_name[o.name]
            t = slot[1] if slot else None
            if it.form is Value:
                plan.append((op.name, _VALUE, ordinal[id(it.tok)], t, defines(op), None))
            elif it.form is MemRef:
                idx = tuple((True, ordinal[id(tok)]) if tok.kind == VALUE else (False, v) for tok, v in it.indices)
                plan.append((op.name, _MEMREF, ordinal[id(it.tok)], t, False, idx))
            elif it.form is PipeLit:
                plan.append((op.name, _FIXED, -1, None, False, PipeLit(it.pipe)))  # type: ignore[arg-type]
            else:
                lit = None
                t = t if t else INDEX if op.kind is Kind.INDEX else None
                if isinstance(t, ScalarType):
                    try:
                        lit = token_lit(it.tok.text, it.number, t)  # type: ignore[arg-type]
                    except ValueError:
                        pass
                plan.append((op.name, _FIXED, -1, None, False, lit) if lit else
                            (op.name, _LITERAL, -1, None, False, (op, it, slot)))
        self.plan = plan
        if all(how == _VALUE or how == _FIXED for _, how, *_ in plan):
            self.common = tuple((name, k, t if how == _VALUE else extra) for name, how, k, t, _, extra in plan)

    def apply(self, p: "TileOpParser", scope: Scope, names: list[str], loc: Location) -> TileOp:
        """``bind_tile`` for a line with these %names; ``Defer`` wherever it would report.

        The token path resolves uses before definitions; here a use of a missing name
        always defers, so resolving in declaration order gives the same statement."""
        if self.unsettled:                  # binding depends on the names' types
            return self._settled_for(scope, names).apply(p, scope, names, loc)
        lookup = scope.lookup
        if self.common:                     # the common case first: every value defined already
            args: dict[str, Any] = {}
            root = scope.root               # tiles and root scalars in one step (Scope.first_look)
            here = (scope if root.poisoned else root).names.get
            for name, k, t in self.common:
                if k < 0:
                    args[name] = t
                    continue
                v = here(names[k]) or lookup(names[k])
                if v.__class__ is not Value or (t is not None and t is not v.type and t != v.type):
                    break
                args[name] = v
            else:
                return new_tile_op(self.instr, args, dict(self.attrs) if self.attrs else {}, loc)
        args = {}
        new: list[Value] = []
        untyped = False
        for name, how, k, t, defs, extra in self.plan:
            if how == _VALUE:
                n = names[k]
                v = lookup(n)
                if v.__class__ is Value:
                    if t is not None and t is not v.type and t != v.type:  # type: ignore[attr-defined]
                        raise Defer
                elif v is MISSING and defs:
                    for v in new:
                        if v.name == n:
                            break
                    else:
                        if t is None:
                            raise Defer
                        v = new_value(n, t)
                        new.append(v)
                else:
                    raise Defer
                args[name] = v
            elif how == _FIXED:
                args[name] = extra
            elif how == _MEMREF:
                base = lookup(names[k])
                if base.__class__ is not Value or (t is not None and t != base.type):  # type: ignore[attr-defined]
                    raise Defer
                idx = tuple(lookup(names[x]) if is_name else x for is_name, x in extra)
                if any(i.__class__ is not Value and i.__class__ is not int for i in idx):
                    raise Defer
                args[name] = MemRef(base, idx)  # type: ignore[arg-type]
            else:
                args[name] = None           # typed below, from the tiles: keeps its place
                untyped = True
        if untyped:
            for name, how, _, _, _, extra in self.plan:
                if how == _LITERAL:
                    try:
                        args[name] = p._literal(self.instr, *extra, args)
                    except PTOError:
                        raise Defer from None
        for v in new:
            scope.define(v)          # names were missing: nothing to report
        return new_tile_op(self.instr, args, dict(self.attrs), loc)

    def _settled_for(self, scope: Scope, names: list[str]) -> "TileTemplate":
        """The template with the open operand lists bound by this line's value types (learned
        once per combination of kinds); ``Defer`` when a name is not a defined value or the
        readings stay ambiguous (the token path reports)."""
        def type_of(it: Item, rs: list[tuple[Operand, ...]], items: list[Item]) -> Type:
            v = scope.lookup(names[self.ordinal[id(it.tok)]])
            if v.__class__ is not Value:
                raise Defer
            return v.type  # type: ignore[union-attr]

        kinds = open_item_kinds(self, type_of)
        key = tuple(kinds)
        if key not in self.settled:
            entries = settled_entries(self, iter(kinds))
            sub = None
            if isinstance(entries, list):
                sub = TileTemplate(self.instr, self.mt, entries, self.attrs)
                sub.number_names(self.ordinal)
            self.settled[key] = sub
        sub = self.settled[key]
        if sub is None:
            raise Defer
        return sub


class FifoTemplate(TileTemplate):
    """A TPUSH/TPOP/TALLOC/TFREE line's template: it binds as the token path does only while
    the kernel declares no pipe (a pipe operand changes the binding: ``tpipes.py``), so in a
    kernel with pipes it defers."""

    @classmethod
    def of(cls, tpl: TileTemplate) -> "FifoTemplate":
        return cls(**{f.name: getattr(tpl, f.name) for f in fields(TileTemplate)})

    def apply(self, p: "TileOpParser", scope: Scope, names: list[str], loc: Location) -> TileOp:
        if p._pipes(scope):   # type: ignore[attr-defined]
            raise Defer
        return super().apply(p, scope, names, loc)


#: looks an open item's value up: (item, its list's readings, the list's items) -> its type
TypeOf = Callable[[Item, "list[tuple[Operand, ...]]", "list[Item]"], "Type | None"]


def open_item_kinds(tpl: TileTemplate, type_of: TypeOf) -> list[Any]:
    """The kinds of the items in ``tpl``'s open operand lists, in order: from the type written
    for an item, else, for a value, ``type_of(item, the list's readings, its items)`` (which
    looks the name up; the fast path and the token path differ in what a miss means)."""
    slots = {id(it): slot for _, it, slot in tpl.entries}
    kinds = []
    for _, rs, items in tpl.unsettled:
        for it in items:
            slot = slots.get(id(it))
            t = slot[1] if slot else None
            if t is None and it.form is Value:
                t = type_of(it, rs, items)
            kinds.append(item_kinds(it.form, t))
    return kinds


def settled_entries(tpl: TileTemplate, kinds: Any
                    ) -> list[tuple[Operand, Item, Slot | None]] | tuple[str, list[tuple[Operand, ...]]]:
    """``tpl``'s entries with each open operand list bound by its items' kinds (``kinds``
    yields them in order, list after list): the positional reading among those that fit (the
    first reading when none fits: the checks after report it). When two readings that disagree
    on what an item is remain: (what the list is, those two readings)."""
    chosen: dict[int, Operand] = {}
    for what, rs, items in tpl.unsettled:
        ks = [next(kinds) for _ in items]
        left = [r for r in rs if all(o.kind in k for o, k in zip(r, ks))]
        got = choose(left) if left else rs[0]
        if isinstance(got, list):
            return what, got
        chosen.update((id(it), op) for op, it in zip(got, items))
    entries = [(chosen.get(id(it), op), it, slot) for op, it, slot in tpl.entries]
    return sorted(entries, key=lambda e: defines(e[0]))


_VALUE, _MEMREF, _FIXED, _LITERAL = range(4)


def _fits(ops: tuple[Operand, ...], forms: list[type]) -> bool:
    """Whether written operands of these forms fill ``ops`` exactly (kinds included)."""
    got, surplus, missing = assign(ops, forms)
    return surplus is None and not missing and all(kind_error(o, f) is None for o, f in zip(got, forms))


class TileOpParser(Cursor):
    _open: list[tuple[str, list[tuple[Operand, ...]], list[Item]]]

    def tile_op(self, instr: Instruction, mt: Token, results: list[Token], scope: Scope) -> TileOp:
        return self.bind_tile(self.tile_template(instr, mt, results), scope)

    def tile_template(self, instr: Instruction, mt: Token, results: list[Token]) -> TileTemplate:
        """Parse the rest of the statement (syntax only: no scope is consulted)."""
        self._open = []
        if (self.at(IDENT, "ins") or self.at(IDENT, "outs")) and self.peek(1).is_(PUNCT, "("):
            return self._dps(instr, mt, results)
        items = self.operand_list(stop=("{", ":"))
        attrs = self.hash_attrs(instr, {})
        if self.at(PUNCT, "{"):
            self.attr_dict(instr, attrs)
        ins_sig: list[Slot] | None = None
        outs_sig: list[Slot] | None = None
        short = False
        res_ops, pos_ops = sync_layout(instr)
        if len(results) > len(res_ops):     # inout tiles named as results: %dst = taxpy %src0, %s
            res_ops, pos_ops = inout_layout(instr, len(results)) or (res_ops, pos_ops)
        res_items = [Item(t, Value, name=t.text[1:]) for t in results]
        if not results:                       # an event token is only ever an SSA result
            res_ops = tuple(o for o in res_ops if o.kind is not Kind.EVENT)
        if not results and res_ops:          # PTO-AS destination first: tadd %dst, %src0, %src1
            k = self._destinations(instr, res_ops, pos_ops, items, mt)
            res_items, items = items[:k], items[k:]
        named = bool(res_items)
        colon = self.accept(PUNCT, ":")
        if colon:
            ins_sig, paren = self.sig_types()
            if self.accept(PUNCT, "->"):
                outs_sig = self.sig_types()[0]
                short = not paren
            elif named and not paren and len(ins_sig) == 1:
                ins_sig, outs_sig = None, ins_sig      # a bare ': T' names the result type
            else:
                short = not paren
        self.hash_attrs(instr, attrs)
        pairs = (self._assign(instr, "result", res_ops, res_items, res_items[0].tok if named else mt)
                 + self._assign(instr, "operand", pos_ops, items, mt))
        slots: dict[int, Slot] = {}
        if outs_sig is not None:
            self._slots(res_items, outs_sig, slots, colon or mt, "results")
        if ins_sig is not None:
            typed = [i for i in items if i.form is not PipeLit]
            every = [i for i in res_items if not results] + typed
            if not results and res_items and len(ins_sig) == len(every) != len(typed):
                typed = every                          # (T_dst, T_src, ...): every written operand
            self._slots(typed, ins_sig, slots, colon or mt, "operands", short)
        return self._template(instr, mt, pairs, slots, attrs)

    def sig_types(self) -> tuple[list[Slot], bool]:
        """A signature's type list: ``(T, ...)`` or, as older public pages print it, bare
        ``T, T, ...``. Returns the types and whether they were parenthesised."""
        if self.at(PUNCT, "("):
            return self.type_list(), True
        out = [self.type_()]
        while self.at(PUNCT, ",") and self._type_at(1):
            self.next()
            out.append(self.type_())
        return out, False

    def _type_at(self, k: int) -> bool:
        """Whether the token ``k`` ahead starts a type (not an operand)."""
        t = self.peek(k)
        return t.kind == TYPE or (t.kind == IDENT and t.text in SCALAR_NAMES)

    def _destinations(self, instr: Instruction, res_ops: tuple[Operand, ...], pos_ops: tuple[Operand, ...],
                      items: list[Item], mt: Token) -> int:
        """How many leading operands of a destination-first statement are its out tiles: the
        one split both halves accept (several is ambiguous, and reported)."""
        forms = [i.form for i in items]
        fits = [k for k in range(required_count(res_ops), len(res_ops) + 1)
                if _fits(res_ops, forms[:k]) and _fits(pos_ops, forms[k:])]
        if len(fits) > 1:
            self.fail("PARSE_ARITY", f"{instr.asm_name}: the destination-first form is ambiguous here: the "
                      f"first {' or '.join(map(str, fits))} operands could be the destinations", mt,
                      expected="the SSA form %d0, %d1 = " + instr.asm_name + " ... naming the results",
                      actual=f"{len(items)} operands")
        return fits[0] if fits else min(len(res_ops), len(items))

    def _template(self, instr: Instruction, mt: Token, pairs: list[tuple[Operand, Item]],
                  slots: dict[int, Slot], attrs: dict[str, Any]) -> TileTemplate:
        pairs = sorted(pairs, key=lambda p: defines(p[0]))   # uses before new definitions
        return TileTemplate(instr, mt, [(op, it, slots.get(id(it))) for op, it in pairs], attrs,
                            unsettled=self._open)

    # ------------------------------------------------------------------ DPS form
    def _dps(self, instr: Instruction, mt: Token, results: list[Token]) -> TileTemplate:
        if results:
            self.fail("PARSE_ARITY", f"the DPS form of {instr.asm_name} has no results; name the "
                      "destination in outs(...)", results[0], expected="no results", actual=len(results))
        lists: dict[str, tuple[Token, list[Item], list[Slot | None] | None]] = {}
        attrs: dict[str, Any] = {}
        while not self.at_end():
            if self.at(PUNCT, "{"):
                self.attr_dict(instr, attrs)
                continue
            kw = self.expect(IDENT, what="ins(...), outs(...) or an attribute dict")
            if kw.text not in ("ins", "outs") or kw.text in lists:
                self.unexpected(kw, "ins(...) or outs(...), once each")
            self.expect(PUNCT, "(")
            items, types = self._dps_list(instr, attrs)
            self.expect(PUNCT, ")", "')'")
            lists[kw.text] = (kw, items, types)
        ins_ops, outs_ops = dps_layout(instr)
        pairs: list[tuple[Operand, Item]] = []
        slots: dict[int, Slot] = {}
        for key, ops in (("ins", ins_ops), ("outs", outs_ops)):
            kw, items, types = lists.get(key, (mt, [], None))
            pairs += self._assign(instr, f"{key} operand", ops, items, kw)
            if types is not None:
                typed = [i for i in items if i.form is not PipeLit]
                if None in types:               # per-item types: ins(%a : T, %b : U)
                    typed, types = zip(*[(i, t) for i, t in zip(typed, types) if t is not None]) or ((), ())
                self._slots(list(typed), list(types), slots, kw, key)
        return self._template(instr, mt, pairs, slots, attrs)

    def _dps_list(self, instr: Instruction, attrs: dict[str, Any]) -> tuple[list[Item], list[Slot | None] | None]:
        """The inside of ``ins(...)`` / ``outs(...)``: operands, an optional attribute dict
        among them (``ins(%a, %b {cmpMode = ...} : T, U)``), then ``: T, ...`` or ``: (T, ...)``
        for all of them, or a type after each (``ins(%a : T, %b : U)``; None for an untyped
        item then). Both at once is ambiguous: PARSE_SIGNATURE."""
        items: list[Item] = []
        per_item: list[Slot | None] = []
        while True:
            items += self.operand_list(stop=(":", ")", "{"))
            if self.at(PUNCT, "{"):
                self.attr_dict(instr, attrs)
                continue
            if not self.accept(PUNCT, ":"):
                break
            colon = self.peek(-1)
            types, paren = self.sig_types()
            if paren or not self.at(PUNCT, ",") or not items:
                if per_item:
                    if len(types) != 1:
                        self.fail("PARSE_SIGNATURE", "types after each operand and a list of types at the end "
                                  "cannot be mixed", colon, expected="one type after each operand", actual=len(types))
                    per_item += [None] * (len(items) - len(per_item) - 1) + types
                    return items, per_item
                return items, types                 # one list for all
            # ``%a : T, %b ...``: a type for the item before the colon, and more items follow
            if len(types) != 1:
                self.fail("PARSE_SIGNATURE", "types after each operand and a list of types at the end cannot be "
                          "mixed", colon, expected="one type after each operand", actual=len(types))
            per_item += [None] * (len(items) - len(per_item) - 1) + types
            self.expect(PUNCT, ",")
        if per_item:
            per_item += [None] * (len(items) - len(per_item))
            return items, per_item
        return items, None

    # ------------------------------------------------------------------ shape checks
    def _assign(self, instr: Instruction, what: str, ops: tuple[Operand, ...], items: list[Item],
                tok: Token) -> list[tuple[Operand, Item]]:
        rs = readings(ops, [item_kinds(i.form) for i in items])
        if rs:
            got_ = choose(rs)
            if isinstance(got_, list):     # an item's kind decides: settled when types are known
                self._open.append((what, rs, items))
                got_ = rs[0]
            return list(zip(got_, items))
        got, surplus, missing = assign(ops, [i.form for i in items])
        if surplus is None and not missing:
            for op, it in zip(got, items):
                why = kind_error(op, it.form)
                if why:
                    self.fail("STRUCT_OPERAND_KIND", f"{instr.asm_name}: {why}", it.tok,
                              expected=op.kind.value, actual=it.tok.text)
            return list(zip(got, items))
        lo, hi = required_count(ops), len(ops)
        names = ", ".join(o.name + ("?" if o.optional else "") for o in ops) or "none"
        want = str(hi) if lo == hi else f"{lo} to {hi}"
        where = items[surplus].tok if surplus is not None else tok
        self.fail("PARSE_ARITY", f"{instr.asm_name} takes {want} {what}(s) ({names}), got {len(items)}",
                  where, expected=f"{want} {what}(s): {names}", actual=len(items))

    def _slots(self, items: list[Item], types: list[Slot], slots: dict[int, Slot], tok: Token,
               what: str, short: bool = False) -> None:
        """Pair written types with items. ``short``: an unparenthesised list may type only the
        leading items (``tcmps %s, %c : T -> U``); the rest keep their defined types."""
        if len(types) != len(items) and not (short and len(types) < len(items)):
            where = types[len(items)][0] if len(types) > len(items) else tok
            self.fail("PARSE_SIGNATURE", f"the signature lists {len(types)} type(s) for {len(items)} {what}",
                      where, expected=len(items), actual=len(types))
        for it, slot in zip(items, types):
            old = slots.get(id(it))
            if old is not None and old[1] != slot[1]:
                self.fail("PARSE_SIGNATURE", f"{it.tok.text} is typed twice: {old[1]} and {slot[1]}", slot[0],
                          expected=str(old[1]), actual=str(slot[1]))
            slots[id(it)] = slot

    # ------------------------------------------------------------------ binding
    def bind_tile(self, tpl: TileTemplate, scope: Scope) -> TileOp:
        """Resolve every value, check written types, declare new outputs, type literals."""
        entries = self._settle(tpl, scope) if tpl.unsettled else tpl.entries
        args: dict[str, Any] = {}
        new: list[tuple[Value, Token]] = []
        for op, it, slot in entries:
            if it.form is Value:
                args[op.name] = self._value(op, it, slot, scope, new, tpl.instr)
            elif it.form is MemRef:
                base = self.use(it.tok, scope)
                self._check_type(base, slot, "STRUCT_TYPE_MISMATCH")
                idx = tuple(self.use(t, scope) if isinstance(v, str) else v for t, v in it.indices)
                args[op.name] = MemRef(base, idx)
            elif it.form is PipeLit:
                args[op.name] = PipeLit(it.pipe)  # type: ignore[arg-type]
        for op, it, slot in entries:
            if it.form is Lit:
                args[op.name] = self._literal(tpl.instr, op, it, slot, args)
        for v, tok in new:
            self.define(v, tok, scope)
        ordered = {o.name: args[o.name] for o in tpl.instr.operands if o.name in args}
        return TileOp(tpl.instr, ordered, tpl.attrs, loc=self.loc(tpl.mt))

    def _settle(self, tpl: TileTemplate, scope: Scope) -> list[tuple[Operand, Item, Slot | None]]:
        """Bind the operand lists the items' forms left open, by the kinds their types give
        (a written type, else the value's definition); two readings left is PARSE_ARITY."""
        def type_of(it: Item, rs: list[tuple[Operand, ...]], items: list[Item]) -> Type | None:
            v = scope.lookup(it.name)
            if v is POISON:
                raise Silent
            if v is MISSING and not any(defines(r[items.index(it)]) for r in rs):
                self.use(it.tok, scope)         # reports STRUCT_UNDEFINED
            return v.type if isinstance(v, Value) else None

        got = settled_entries(tpl, iter(open_item_kinds(tpl, type_of)))
        if isinstance(got, tuple):
            what, (a, b) = got
            self.fail("PARSE_ARITY", f"{tpl.instr.asm_name}: the {what}s can be read two ways: "
                      f"{describe(a)} or {describe(b)}; write their types", tpl.mt,
                      expected="one reading", actual=f"{describe(a)} or {describe(b)}")
        return got

    def _check_type(self, v: Value, slot: Slot | None, code: str) -> None:
        if slot is not None and slot[1] != v.type:
            what = "redefinition of" if code == "STRUCT_REDEFINED" else "type of"
            self.fail(code, f"{what} %{v.name}: written {slot[1]}, defined as {v.type}", slot[0],
                      expected=str(v.type), actual=str(slot[1]))

    def _value(self, op: Operand, it: Item, slot: Slot | None, scope: Scope,
               new: list[tuple[Value, Token]], instr: Instruction | None = None) -> Value:
        v = scope.lookup(it.name)
        if v is POISON:
            raise Silent
        if v is MISSING:
            earlier = [n for n, _ in new if n.name == it.name]
            if earlier:
                return earlier[0]
            if not defines(op):
                self.use(it.tok, scope)   # reports STRUCT_UNDEFINED
            if slot is None and op.kind is Kind.EVENT:
                slot = (it.tok, EVENT)    # an event result has one type: no signature needed
            if slot is None and instr is not None and defines(op) and (sole := sole_scalar_type(instr, op)):
                slot = (it.tok, sole)     # so has TTEST's i1
            if slot is None:
                self.fail("PARSE_MISSING_TYPE", f"new value {it.tok.text} needs a type: write a "
                          "signature (: (...) -> T) or declare it with .tile", it.tok,
                          expected="a type signature", actual="none")
            nv = Value(it.name, slot[1])
            new.append((nv, it.tok))
            return nv
        assert isinstance(v, Value)
        if op.kind is Kind.EVENT and defines(op):
            self.fail("STRUCT_REDEFINED", f"event %{v.name} is already defined: an event is recorded once "
                      "(name each push's or pop's event anew)", it.tok, expected="a new name",
                      actual=f"{it.tok.text} : {v.type}")
        self._check_type(v, slot, "STRUCT_REDEFINED" if defines(op) else "STRUCT_TYPE_MISMATCH")
        return v

    def _literal(self, instr: Instruction, op: Operand, it: Item, slot: Slot | None,
                 args: dict[str, Any]) -> Lit:
        t: Type | None = slot[1] if slot else None
        if t is None and op.kind is Kind.INDEX:
            t = INDEX
        if t is None:
            tiles = [args[o.name].type for o in sorted(instr.operands, key=lambda o: o.role is not Role.IN)
                     if o.kind is Kind.TILE and isinstance(args.get(o.name), Value)]   # sources first
            if tiles and isinstance(tiles[0], TileType) and tiles[0].dtype.name in SCALAR_NAMES:
                t = ScalarType(tiles[0].dtype.name)
        if t is None:
            self.fail("PARSE_MISSING_TYPE", f"cannot tell the type of literal {it.tok.text}; "
                      "write a signature", it.tok, expected="a type signature", actual="none")
        if not isinstance(t, ScalarType):
            self.fail("PARSE_LITERAL", f"a literal cannot have type {t}", slot[0] if slot else it.tok,
                      expected="a scalar type", actual=str(t))
        try:
            return token_lit(it.tok.text, it.number, t)  # type: ignore[arg-type]
        except ValueError as e:
            self.fail("PARSE_LITERAL", str(e), it.tok, expected=t.name, actual=it.tok.text)

    # ------------------------------------------------------------------ attributes
    def attr_dict(self, instr: Instruction, out: dict[str, Any] | None = None) -> dict[str, Any]:
        """``{name = value, ...}``; values by the declared attribute's type. ``out`` holds
        attributes already written (``#name=value`` or another dict): a name stays unique."""
        self.expect(PUNCT, "{")
        out = {} if out is None else out
        first = True
        self.skip_nl()
        while not self.accept(PUNCT, "}"):
            if not first:
                self.expect(PUNCT, ",", "',' or '}'")
                self.skip_nl()
            first = False
            self._attr(instr, self.expect(IDENT, what="an attribute name"), out)
            self.skip_nl()
        return out

    def hash_attrs(self, instr: Instruction, out: dict[str, Any]) -> dict[str, Any]:
        """PTO-AS ``#name=value`` attributes (``tstore %g[%i, %j], %t #atomic=add``)."""
        while self.at(ATTR) and self.peek(1).is_(PUNCT, "="):
            t = self.next()
            name = t.text[1:]
            self._attr(instr, Token(IDENT, name, t.line, t.col + 1), out)
        return out

    def _attr(self, instr: Instruction, nt: Token, out: dict[str, Any]) -> None:
        """One ``name = value`` into ``out``: a declared name, or a public one that stands
        for exactly one declared attribute (``cmp`` for TCMP's ``cmpMode``)."""
        name = nt.text
        try:
            decl = instr.attr(name)
        except KeyError:
            alias, why = declared_name(instr, name)
            if alias is None:
                self.fail("PARSE_ATTR" if why else "STRUCT_UNKNOWN_ATTR",
                          f"{instr.asm_name}: {why}" if why else f"{instr.asm_name} has no attribute '{name}'"
                          f"{did_you_mean(name, (a.name for a in instr.attrs))}", nt,
                          expected=", ".join(a.name for a in instr.attrs) or "no attributes", actual=name)
            name = alias
            decl = instr.attr(name)
        if name in out:
            self.fail("PARSE_ATTR", f"attribute '{name}' given twice", nt)
        self.expect(PUNCT, "=")
        out[name] = self._attr_value(decl.type)

    def _attr_value(self, kind: type) -> Any:
        t = self.peek()
        if t.kind == ATTR:
            self.next()
            return self.opaque(t)[1]
        if t.kind in (INT, FLOAT) or t.is_(IDENT, "true") or t.is_(IDENT, "false"):
            return self.number()[1]  # type: ignore[index]
        enum_kind = isinstance(kind, type) and issubclass(kind, enum.Enum)
        if enum_kind and (t.kind == IDENT or t.kind == STRING):
            self.next()
            return self.member(kind, t.text.strip('"'), t)
        if t.kind == STRING:
            self.fail("PARSE_ATTR", f"a quoted value names an enumeration member; this attribute takes "
                      f"{getattr(kind, '__name__', kind)}", t, expected="a number, true or false", actual=t.text)
        self.unexpected(t, "an attribute value (#pto.KIND<VALUE>, a name, \"name\", a number, true or false)")
