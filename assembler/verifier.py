"""Check a Module: structure (names, kinds, types, regions) and legality for a profile.

Per-instruction rules come from the declarations through ``isa.checks``; this module only
adds what is about the program: def-before-use, region scoping, yields, scalar-op typing,
and the capacity of all tiles a kernel declares. Every diagnostic is collected.

Programs repeat a few instruction signatures many times, so what depends only on the
signature (the instruction, each argument's name, form and type object, the attributes)
is worked out once per ``diagnose`` call and its diagnostics re-issued at each statement.
"""
from __future__ import annotations

import dataclasses
import operator
from typing import Any, Callable

from ..isa import profiles
from ..isa.checks import check_legality, check_structure, tile_dtype_error, tile_layout_error
from ..isa.diagnostics import LegalityError, Location, PTOError, PTOErrorGroup, StructError
from ..isa.profiles import Profile
from ..isa.suggest import did_you_mean
from ..isa.types import EVENT, INDEX, GlobalType, ScalarType, TileType, Type
from . import scalar_ops as S
from .collector import collector_paused
from .ir import (Bound, Const, For, If, Kernel, Lit, MemRef, Module, PipeLit, ScalarOp, Stmt, Subset, TileDecl,
                 TileOp, Value, View, ViewQuery, Yield, check_literal)
from .subset import subset_problems
from .views import query_problem, view_problems
from .initialisation import uninitialised_reads
from .ordering import SIGN as FLAG_SIGN, check_order
from .operands import defines, gap_error, kind_error
from .scope import MISSING, Scope
from .windows import Constants, faults, window_operands

I1 = ScalarType("i1")
#: instructions that bind a tile to an on-chip byte address: (tile operand, address operand)
_PLACEMENTS = {"TASSIGN": ("tile", "addr")}
_TYPE = operator.attrgetter("type")


def diagnose(module: Module, profile: str | None = None) -> list[PTOError]:
    """Every structural diagnostic, legality for ``profile`` when one is named, and the
    ordering of manual flags (``ordering.py``) and reads of never-written tiles
    (``initialisation.py``) for kernels that are otherwise sound."""
    with collector_paused():          # short-lived objects only (collector.py)
        prof = profiles.get(profile) if profile is not None else None
        errs: list[PTOError] = []
        seen: set[str] = set()
        signatures: dict[tuple, _Signature] = {}
        for k in module.kernels:
            if k.name in seen:
                errs.append(StructError("STRUCT_REDEFINED", f"kernel @{k.name} is defined twice",
                                        location=k.loc or Location(kernel=k.name)))
            seen.add(k.name)
            check = _KernelCheck(k, prof, signatures)
            kernel_errs = check.run()
            if kernel_errs or not check.has_flags:     # flag balance only means something on a sound kernel
                errs += kernel_errs
            else:
                errs += check_order(k)
            if not kernel_errs:                         # so do never-written tiles (initialisation.py)
                errs += uninitialised_reads(k, check.windows.values())
        return errs


def verify(module: Module, profile: str | None = "cpu") -> Module:
    """Raise the diagnostic (``PTOErrorGroup`` for several) if any; return the module."""
    errs = diagnose(module, profile)
    if errs:
        raise errs[0] if len(errs) == 1 else PTOErrorGroup(errs)
    return module


def _signature_key(s: TileOp) -> tuple:
    """What a tile op's signature checks read: the instruction, each argument's name, form
    and type (by identity: the module keeps its types alive while it is checked) and the
    attributes (unhashable for odd attribute values)."""
    key: list[object] = [id(s.instr)]
    add = key.append
    for name, a in s.args.items():
        add(name)
        c = a.__class__
        if c is Value:
            add(id(a.type))  # type: ignore[union-attr]
        elif c is MemRef:
            add((c, id(a.base.type), len(a.indices)))  # type: ignore[union-attr]
        elif c is Lit:
            add((c, id(a.type)))  # type: ignore[union-attr]
        else:
            add((c, a))
    if s.attrs:
        add(None)
        for name, v in s.attrs.items():
            add(name)
            add((v.__class__, repr(v) if v.__class__ is float else v))
    return tuple(key)


def _located(errs: list[PTOError], where: Location) -> list[PTOError]:
    """Diagnostics found for a signature, re-issued at one statement."""
    return [type(e)(e.code, e.message, location=where, expected=e.expected, actual=e.actual, notes=e.notes)
            for e in errs]


class _Signature:
    """One instruction signature's verdicts: whether its argument names and forms are sound,
    which arguments define or use values (with their forms; in the order of ``args``, which
    the key fixes and which is declaration order for a sound signature, so diagnostics come
    in statement order), and what the isa checks report (unlocated; worked out at first use)."""

    def __init__(self, s: TileOp) -> None:
        instr = s.instr
        declared = [o.name for o in instr.operands if o.name in s.args]
        self.sound = (list(s.args) == declared and gap_error(instr, s.args) is None
                      and all(kind_error(o, s.args[o.name]) is None for o in instr.operands if o.name in s.args))
        self.plan = tuple((defines(o), next(c for c in (Value, MemRef, Lit, object) if isinstance(s.args[o.name], c)))
                          for o in instr.operands if o.name in s.args)
        self.found: list[PTOError] | None = None
        self.windows = window_operands(instr)     # global operands whose windows windows.py bounds
        self.placed = _PLACEMENTS.get(instr.mnemonic)   # (tile, address) operands, see ``_placement``
        self.flags = instr.mnemonic in FLAG_SIGN        # a set_flag / wait_flag: ordering.py has work

    def check(self, s: TileOp, profile: Profile | None) -> list[PTOError]:
        """Structure, then (when that passes) legality for ``profile``."""
        if self.found is None:
            self.found = _guarded(lambda: check_structure(s.instr, s.types(), s.attrs, Location()),
                                  f"{s.instr.mnemonic} structure check", Location())
            if not self.found and profile is not None:
                self.found = _guarded(lambda: check_legality(s.instr, s.types(), s.attrs, profile, Location(),
                                                             tile_layouts=False, values=pipe_values(s)),
                                      f"{s.instr.mnemonic} legality check", Location())
        return self.found


def pipe_values(s: TileOp) -> dict[str, Any]:
    """The pipe operands' values, which profiles may limit (they carry no type)."""
    return {name: a.pipe for name, a in s.args.items() if isinstance(a, PipeLit)}


def _guarded(fn: Callable[[], list[PTOError]], what: str, where: Location) -> list[PTOError]:
    """Run an isa check; a check that raises is a declaration bug, reported, not thrown."""
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - never let bad input surface as a traceback
        return [StructError("STRUCT_CHECK_FAILED", f"{what} raised {type(e).__name__}: {e}", location=where)]


class _KernelCheck:
    def __init__(self, kernel: Kernel, profile: Profile | None,
                 signatures: dict[tuple, _Signature] | None = None) -> None:
        self.k = kernel
        self.profile = profile
        self.errors: list[PTOError] = []
        self.index = -1
        self.at: object = None          # what is being checked (its ``loc`` locates diagnostics)
        self.at_index = -1              # ... and its index in the kernel
        self.signatures = {} if signatures is None else signatures
        self.by_args: dict[tuple, _Signature] = {}      # see ``_tile_op``
        self.scalar_rules: dict[tuple, str | None] = {}   # see ``_scalar``
        self.has_flags = False          # any set_flag / wait_flag: the ordering check has work
        self.layout_checked: set[str] = set()       # tiles whose layout was checked at their declaration
        self.bad_layout: dict[str, int] = {}        # ... found bad: index of the error, until a use notes it
        self.consts = Constants()                   # integer values known statically (windows.py)
        self.known = self.consts.known              # ... what Constants.forget drops from
        self.handlers = {TileOp: self._tile_op, ScalarOp: self._scalar, Const: self._const,
                         TileDecl: self._tile_decl, For: self._for, If: self._if, View: self._view,
                         ViewQuery: self._query, Subset: self._subset}
        self.windows: dict[str, Subset] = {}        # pto.subset results (storage of their parent) ...
        self.windowed: set[str] = set()             # ... and those whose statement was checked

    @property
    def where(self) -> Location:
        """The location diagnostics get: made only when there is one to report."""
        return dataclasses.replace(getattr(self.at, "loc", None) or Location(), kernel=self.k.name,
                                   index=max(self.at_index, 0))

    def run(self) -> list[PTOError]:
        root = Scope()
        self.first_look = root.first_look()    # the root's names: the verifier never poisons
        self.at, self.at_index = self.k, self.index
        for p in self.k.params:
            if p.name in root.names:            # as the parser: a tile's same-type redeclaration is no excuse
                self._err("STRUCT_REDEFINED", f"parameter %{p.name} reuses a name already defined in the kernel",
                          actual=f"%{p.name} : {p.type}")
            else:
                self._define(p, root)
        self._block(self.k.body, root, None, top=True)
        if self.profile is not None:
            self._capacity(root)
        return self.errors

    # ------------------------------------------------------------------ helpers
    def _err(self, code: str, msg: str, expected: object = None, actual: object = None) -> None:
        cls = LegalityError if code.startswith("LEGAL") else StructError
        self.errors.append(cls(code, msg, location=self.where, expected=expected, actual=actual))

    def _use(self, v: Value, scope: Scope) -> bool:
        prev = scope.lookup(v.name)
        if prev is MISSING or not isinstance(prev, Value):
            self._err("STRUCT_UNDEFINED", f"use of undefined value %{v.name}", actual=f"%{v.name}")
            return False
        if prev.type is not v.type and prev.type != v.type:
            self._err("STRUCT_TYPE_MISMATCH", f"%{v.name} is used as {v.type} but defined as {prev.type}",
                      expected=str(prev.type), actual=str(v.type))
            return False
        return True

    def _uses(self, values: tuple[Value, ...], scope: Scope) -> bool:
        """``_use`` each value (reporting every bad one); whether all were good."""
        ok, here, lookup = True, scope.names.get, scope.lookup
        for v in values:
            if (here(v.name) or lookup(v.name)) is not v and not self._use(v, scope):
                ok = False
        return ok

    def _define(self, v: Value, scope: Scope) -> None:
        self.known.pop(id(v), None)     # one Value object may stand for several definitions (bytecode)
        why = scope.define(v)
        if why:
            self._err("STRUCT_REDEFINED", why, actual=f"%{v.name} : {v.type}")
        elif self.profile is not None and v.type.__class__ is TileType and v.name not in self.layout_checked:
            self._declared_layout(v)

    def _declared_layout(self, v: Value) -> None:
        """A tile's layout and element type must suit its location: reported once, at its
        declaration (the ``.tile``, the parameter or the first instruction writing it), where
        it is changed."""
        assert self.profile is not None and isinstance(v.type, TileType)
        self.layout_checked.add(v.name)
        for e in (tile_layout_error(v.type, self.profile, self.where, f"tile %{v.name}"),
                  tile_dtype_error(v.type, self.profile, self.where, f"tile %{v.name}")):
            if e is not None:
                self.bad_layout.setdefault(v.name, len(self.errors))
                self.errors.append(e)

    def _note_layout_uses(self, s: TileOp) -> None:
        """Add the first instruction using a badly laid out tile to its declaration's error."""
        for name, a in s.args.items():
            at = self.bad_layout.pop(a.name, None) if a.__class__ is Value else None  # type: ignore[union-attr]
            if at is not None:
                e = self.errors[at]
                self.errors[at] = type(e)(e.code, e.message, location=e.location, expected=e.expected,
                                          actual=e.actual, notes=[*e.notes, f"first used by {s.instr.mnemonic} "
                                                                  f"(operand '{name}') at {self.where}"])

    def _index(self, v: Value | int, scope: Scope, what: str, want: Type | None = None) -> None:
        if isinstance(v, int):
            return
        if self._use(v, scope) and not S.is_int(v.type):
            self._err("STRUCT_INDEX", f"{what} %{v.name} must be index or an integer", actual=str(v.type))
        elif want is not None and v.type != want:
            self._err("STRUCT_INDEX", f"{what} %{v.name} has type {v.type}, the loop counter {want}",
                      expected=str(want), actual=str(v.type))

    def _guarded(self, fn: Callable[[], list[PTOError]], what: str) -> list[PTOError]:
        return _guarded(fn, what, self.where)

    # ------------------------------------------------------------------ regions
    def _block(self, body: tuple[Stmt, ...], scope: Scope, yields: tuple[Type, ...] | None,
               top: bool = False, owner: tuple[object, int] | None = None) -> None:
        handlers = self.handlers
        for n, s in enumerate(body):
            self.at = s
            self.index = self.at_index = self.index + 1
            handler = handlers.get(type(s))
            if handler is not None:
                handler(s, scope)
            elif isinstance(s, Yield):
                self._yield(s, scope, yields, top, last=n == len(body) - 1)
            else:
                self._err("STRUCT_OPERAND_KIND", f"not a statement: {type(s).__name__}")
        if yields and not (body and isinstance(body[-1], Yield)):
            if owner:
                self.at, self.at_index = owner
            self._err("STRUCT_YIELD", "the region must end with scf.yield of "
                      + ", ".join(str(t) for t in yields), expected=len(yields), actual="no yield")

    def _yield(self, s: Yield, scope: Scope, yields: tuple[Type, ...] | None, top: bool, last: bool) -> None:
        for v in s.values:
            self._use(v, scope)
        if top:
            self._err("STRUCT_YIELD", "scf.yield outside any region")
        elif not last:
            self._err("STRUCT_YIELD", "scf.yield must be the last statement of its region")
        want = yields or ()
        got = tuple(v.type for v in s.values)
        if not top and got != want:
            self._err("STRUCT_YIELD", f"the region yields {len(want)} value(s), this yield gives {len(got)}"
                      if len(got) != len(want) else "yielded types differ from the region's results",
                      expected=", ".join(map(str, want)) or "nothing", actual=", ".join(map(str, got)) or "nothing")

    # ------------------------------------------------------------------ statements
    def _tile_decl(self, s: TileDecl, scope: Scope) -> None:
        t = s.value.type
        if s.keep:
            self._set_valid(s, scope)
            return
        if s.addr is not None:
            self._index(s.addr, scope, "tile address")
            self._placement(s.value, s.addr, scope)
        if s.value.name in self.windows:
            self._err("STRUCT_REDEFINED", f"%{s.value.name} names a pto.subset window; it cannot be declared again",
                      expected="a new name", actual=f".tile %{s.value.name}")
        if not isinstance(t, TileType):
            self._err("STRUCT_OPERAND_KIND", f".tile %{s.value.name} needs a tile type", actual=str(t))
            return
        for v, static, axis in ((s.valid_rows, t.valid_rows, "rows"), (s.valid_cols, t.valid_cols, "cols")):
            if v is None:
                continue
            self._index(v, scope, f"valid {axis}")
            if static is not None:
                self._err("STRUCT_INDEX", f"run-time valid {axis} given but the type's valid {axis} are static",
                          expected="'?' in valid=RxC", actual=str(t))
        self._define(s.value, scope)

    def _view(self, s: View, scope: Scope) -> None:
        """A tensor view statement (``views.py``): its source, its list entries as index values,
        then the static checks once every value is sound."""
        ok = self._uses((s.source,), scope)
        for items, what in ((s.offsets, "offset"), (s.sizes, "size"), (s.strides, "stride")):
            for b in items:
                ok = self._bound_ok(b, scope, what) and ok
        if ok:
            for code, msg, expected, actual in view_problems(s, self._known(scope)):
                self._err(code, msg, expected=expected, actual=actual)
        self._define(s.result, scope)

    def _subset(self, s: Subset, scope: Scope) -> None:
        """``pto.subset`` (``subset.py``): its parent, offsets as index values, then the window's
        static checks; the result takes no capacity of its own (it is the parent's storage)."""
        ok = self._uses((s.source,), scope)
        for b in s.offsets:
            ok = self._bound_ok(b, scope, "offset") and ok
        if ok:
            for code, msg, expected, actual in subset_problems(s, self._known(scope)):
                self._err(code, msg, expected=expected, actual=actual)
        name = s.result.name
        first = self.windows.setdefault(name, s)
        if first is not s or (isinstance(scope.lookup(name), Value) and name not in self.windowed):
            # one name, one window: backends bind a child to its parent once, where it is made
            self._err("STRUCT_REDEFINED", f"%{name} is already {'a subset' if first is not s else 'a tile'}; "
                      "a pto.subset result needs a name of its own", expected="a new name", actual=f"%{name}")
        self.windowed.add(name)
        self._define(s.result, scope)

    def _query(self, s: ViewQuery, scope: Scope) -> None:
        if self._uses((s.source,), scope) and self._bound_ok(s.dim, scope, "dimension"):
            problem = query_problem(s, self._known(scope))
            if problem is not None:
                self._err(problem[0], problem[1], expected=problem[2], actual=problem[3])
        if s.result.type != INDEX:
            self._err("STRUCT_TYPE_MISMATCH", f"pto.{s.op} gives an index", expected="index", actual=str(s.result.type))
        self._define(s.result, scope)

    def _bound_ok(self, b: Bound, scope: Scope, what: str) -> bool:
        n = len(self.errors)
        self._index(b, scope, what)
        return len(self.errors) == n

    def _known(self, scope: Scope) -> Callable[[Bound], int | None]:
        return lambda b: self.consts.value(b, scope.lookup)

    def _set_valid(self, s: TileDecl, scope: Scope) -> None:
        """``pto.set_validshape``: an existing tile of this type with two dynamic valid extents,
        and both extents given as index values."""
        t = s.value.type
        if self._uses((s.value,), scope) and (not isinstance(t, TileType) or t.valid_rows is not None
                                               or t.valid_cols is not None):
            self._err("STRUCT_VALID_REGION", f"pto.set_validshape needs a tile whose valid region is ?x?, "
                      f"%{s.value.name} is {t}", expected="!pto.tile<RxCxT, valid=?x?>", actual=str(t))
        for v, axis in ((s.valid_rows, "rows"), (s.valid_cols, "cols")):
            if v is None:
                self._err("STRUCT_INDEX", f"pto.set_validshape needs the valid {axis}", expected="an index value",
                          actual="none")
            else:
                self._index(v, scope, f"valid {axis}")

    def _const(self, s: Const, scope: Scope) -> None:
        t = s.result.type
        if not isinstance(t, ScalarType):
            self._err("STRUCT_TYPE_MISMATCH", "a constant has a scalar type", actual=str(t))
        else:
            try:
                check_literal(s.value, t)
            except ValueError as e:
                self._err("STRUCT_TYPE_MISMATCH", str(e), expected=str(t), actual=repr(s.value))
                t = None
        self._define(s.result, scope)
        if isinstance(t, ScalarType):
            self.consts.const(s)

    def _tile_op(self, s: TileOp, scope: Scope) -> None:
        args = s.args
        # the same argument objects again (uses share their definition's Value) and the same
        # attribute value objects (a line template's; alive while the module is checked, so
        # their ids name them): same signature
        attrs = s.attrs
        same = (id(s.instr), *args, *map(id, args.values()), None, *attrs, *map(id, attrs.values())) if attrs \
            else (id(s.instr), *args, *map(id, args.values()))
        sig = self.by_args.get(same)
        if sig is None:
            key = _signature_key(s)
            try:
                sig = self.signatures.get(key)
            except TypeError:
                return self._tile_op_unshared(s, scope)
            if sig is None:
                sig = self.signatures[key] = _Signature(s)
            self.by_args[same] = sig
        if not sig.sound:
            return self._tile_op_unshared(s, scope)
        if sig.flags:
            self.has_flags = True
        before, new, lookup, here = len(self.errors), [], scope.lookup, self.first_look
        for a, (defs, form) in zip(args.values(), sig.plan):
            if form is Value:
                prev = here(a.name) or lookup(a.name)
                if defs and a.type is EVENT and prev is not MISSING:
                    self._event_twice(a)
                    continue
                if prev is a:                # the very value defined: the common case
                    continue
                if defs:
                    if prev is MISSING:
                        new.append(a)
                    elif isinstance(prev, Value) and prev.type is not a.type and prev.type != a.type:
                        self._err("STRUCT_REDEFINED", f"%{a.name} is written as {a.type} but was declared as "
                                  f"{prev.type}", expected=str(prev.type), actual=str(a.type))
                elif not (isinstance(prev, Value) and (prev.type is a.type or prev.type == a.type)):
                    self._use(a, scope)    # reports
            elif form is MemRef:
                self._memref(a, scope)
            elif form is Lit:
                self._lit(a)
        if len(self.errors) == before:
            found = sig.found
            if found is None:
                found = sig.check(s, self.profile)
            if found:
                self.errors += _located(found, self.where)
            else:
                if sig.windows:
                    self._windows(s, scope, sig.windows)
                if sig.placed:
                    self._placement(s.args.get(sig.placed[0]), s.args.get(sig.placed[1]), scope)
                if sig.flags:
                    self._flag_id(s, scope)
        if self.bad_layout:
            self._note_layout_uses(s)
        for v in new:
            self._define(v, scope)

    def _tile_op_unshared(self, s: TileOp, scope: Scope) -> None:
        """The checks ``_tile_op`` shares per signature, made for this statement alone: for a
        signature that is unsound or cannot be a key. Every diagnostic in statement order."""
        instr, before = s.instr, len(self.errors)
        if instr.mnemonic in FLAG_SIGN:
            self.has_flags = True
        declared = {o.name for o in instr.operands}
        for name in s.args:
            if name not in declared:
                self._err("STRUCT_UNKNOWN_OPERAND", f"{instr.asm_name} has no operand '{name}'"
                          f"{did_you_mean(name, declared)}",
                          expected=", ".join(sorted(declared)), actual=name)
        gap = gap_error(instr, s.args)
        if gap:
            self._err("STRUCT_MISSING_OPERAND", f"{instr.asm_name}: {gap}")
        new: list[Value] = []
        for o in instr.operands:
            a = s.args.get(o.name)
            if a is None:
                continue
            why = kind_error(o, a)
            if why:
                self._err("STRUCT_OPERAND_KIND", f"{instr.asm_name}: {why}", expected=o.kind.value)
            elif isinstance(a, Value) and defines(o):
                prev = scope.lookup(a.name)
                if a.type is EVENT and prev is not MISSING:
                    self._event_twice(a)
                elif prev is MISSING:
                    new.append(a)
                elif isinstance(prev, Value) and prev.type != a.type:
                    self._err("STRUCT_REDEFINED", f"%{a.name} is written as {a.type} but was declared as "
                              f"{prev.type}", expected=str(prev.type), actual=str(a.type))
            elif isinstance(a, Value):
                self._use(a, scope)
            elif isinstance(a, MemRef):
                self._memref(a, scope)
            elif isinstance(a, Lit):
                self._lit(a)
        if len(self.errors) == before:
            self.errors += self._guarded(lambda: check_structure(instr, s.types(), s.attrs, self.where),
                                         f"{instr.mnemonic} structure check")
        if len(self.errors) == before and self.profile is not None:
            prof = self.profile
            self.errors += self._guarded(lambda: check_legality(instr, s.types(), s.attrs, prof, self.where,
                                                                tile_layouts=False, values=pipe_values(s)),
                                         f"{instr.mnemonic} legality check")
        if len(self.errors) == before:
            self._windows(s, scope, window_operands(instr))
            placed = _PLACEMENTS.get(instr.mnemonic)
            if placed:
                self._placement(s.args.get(placed[0]), s.args.get(placed[1]), scope)
            if instr.mnemonic in FLAG_SIGN:
                self._flag_id(s, scope)
        if self.bad_layout:
            self._note_layout_uses(s)
        for v in new:
            self._define(v, scope)

    def _windows(self, s: TileOp, scope: Scope, windows: tuple[tuple[str, str], ...]) -> None:
        """STRUCT_OOB for each global window that constant indices put outside its tensor."""
        for f in faults(s, windows, self.consts, scope.lookup):
            self._err("STRUCT_OOB", f.message, expected=f.expected, actual=f.actual)

    def _memref(self, a: MemRef, scope: Scope) -> None:
        if not self._use(a.base, scope):
            return
        for i in a.indices:
            self._index(i, scope, "index")
        t = a.base.type
        if isinstance(t, GlobalType) and len(a.indices) != t.rank:
            self._err("STRUCT_INDEX", f"%{a.base.name} has rank {t.rank} but {len(a.indices)} indices are given",
                      expected=t.rank, actual=len(a.indices))

    def _lit(self, a: Lit) -> None:
        try:
            check_literal(a.value, a.type)
        except ValueError as e:
            self._err("STRUCT_TYPE_MISMATCH", str(e), expected=str(a.type), actual=repr(a.value))

    def _scalar(self, s: ScalarOp, scope: Scope) -> None:
        spec = S.SCALAR_OPS.get(s.op)
        if spec is None:
            self._err("STRUCT_SCALAR_TYPE", f"unknown scalar op '{s.op}'{did_you_mean(s.op, S.SCALAR_OPS)}",
                      expected=" ".join(S.SCALAR_OPS))
        elif len(s.operands) != spec.arity:
            self._err("STRUCT_SCALAR_TYPE", f"{s.op} takes {spec.arity} operand(s)", expected=spec.arity,
                      actual=len(s.operands))
        elif self._uses(s.operands, scope):
            results = (s.result,) if s.second is None else (s.result, s.second)
            key = (spec.name, s.predicate, *map(id, map(_TYPE, results)), *map(id, map(_TYPE, s.operands)))
            try:
                why = self.scalar_rules.get(key, False)
            except TypeError:               # an odd predicate: no key
                why = _scalar_rule(spec, s)
            if why is False:
                why = self.scalar_rules[key] = _scalar_rule(spec, s)
            if why:
                self._err("STRUCT_SCALAR_TYPE", f"{s.op}: {why}",
                          actual=", ".join(str(v.type) for v in s.operands)
                          + f" -> {', '.join(str(v.type) for v in s.results)}")
            else:
                for v in results:
                    self._define(v, scope)
                self.consts.scalar(s, scope.lookup)        # after _define, which forgets the old value
                return
        for v in s.results:
            self._define(v, scope)

    def _for(self, s: For, scope: Scope) -> None:
        if not S.is_int(s.iv.type):
            self._err("STRUCT_INDEX", "a loop counter is index or an integer", actual=str(s.iv.type))
        for b, what in ((s.lb, "lower bound"), (s.ub, "upper bound"), (s.step, "step")):
            self._index(b, scope, what, s.iv.type)
        for v in s.inits:
            self._use(v, scope) if isinstance(v, Value) else self._lit(v)
        itypes = tuple(a.type for a in s.iter_args)
        if len(s.inits) != len(s.iter_args) or tuple(i.type for i in s.inits) != itypes:
            self._err("STRUCT_REGION", "iter_args and their initial values differ in number or type",
                      expected=", ".join(map(str, itypes)), actual=", ".join(str(i.type) for i in s.inits))
        if any(isinstance(t, TileType) for t in itypes):
            self._err("STRUCT_REGION", "tiles are buffers: carry a tile across iterations by writing "
                      "the same buffer, not through iter_args")
        if s.results and tuple(r.type for r in s.results) != itypes:
            self._err("STRUCT_REGION", "the loop's results must match its iter_args",
                      expected=", ".join(map(str, itypes)), actual=", ".join(str(r.type) for r in s.results))
        owner, body = (self.at, self.at_index), scope.child()
        self._define(s.iv, body)
        for a in s.iter_args:
            self._define(a, body)
        self._block(s.body, body, itypes or None, owner=owner)
        self.at, self.at_index = owner
        for r in s.results:
            self._define(r, scope)

    def _if(self, s: If, scope: Scope) -> None:
        if self._use(s.cond, scope) and s.cond.type != I1:
            self._err("STRUCT_REGION", f"the condition %{s.cond.name} must be i1", actual=str(s.cond.type))
        rtypes = tuple(r.type for r in s.results)
        if any(isinstance(t, TileType) for t in rtypes):
            self._err("STRUCT_REGION", "tiles are buffers: write the same buffer in both branches instead "
                      "of yielding a tile")
        owner = (self.at, self.at_index)
        if s.results and not s.else_body:
            self._err("STRUCT_REGION", "scf.if with results needs an else region")
        self._block(s.then_body, scope.child(), rtypes or None, owner=owner)
        if s.else_body:
            self._block(s.else_body, scope.child(), rtypes or None, owner=owner)
        self.at, self.at_index = owner
        for r in s.results:
            self._define(r, scope)

    # ------------------------------------------------------------------ capacity
    def _placement(self, tile: object, addr: object, scope: Scope) -> None:
        """LEGAL_ALIGNMENT when a constant on-chip address is not aligned as the profile's buffer
        for the tile's location requires; LEGAL_CAPACITY when it puts a tile's bytes (its packed
        size, ``TileType.nbytes``) past the end of that buffer. A run-time address is checked by
        the backends when the program runs (RUNTIME_MISALIGNED)."""
        t = getattr(tile, "type", None)
        if self.profile is None or not isinstance(t, TileType):
            return
        at = addr.value if isinstance(addr, Lit) else (
            self.consts.value(addr, scope.lookup) if isinstance(addr, Value) else None)
        if at.__class__ is not int:
            return
        align = self.profile.address_alignment.get(t.loc)   # type: ignore[call-overload]
        if align and at >= 0 and at % align:   # type: ignore[operator]
            self._err("LEGAL_ALIGNMENT", f"%{tile.name} is placed at byte {at}, which is not {align}-byte aligned "  # type: ignore[attr-defined]
                      f"as {self.profile.name}'s {t.loc.value} buffer requires",
                      expected=f"an address that is a multiple of {align}", actual=f"{at} ({at} % {align} = {at % align})")   # type: ignore[operator]
        cap = self.profile.capacity.get(t.loc)   # type: ignore[call-overload]
        if cap is None or at < 0 or at + t.nbytes <= cap:   # type: ignore[operator]
            return
        end = at + t.nbytes     # type: ignore[operator]
        self._err("LEGAL_CAPACITY", f"%{tile.name} ({t.nbytes} bytes) placed at byte {at} ends at byte {end}, "  # type: ignore[attr-defined]
                  f"past {self.profile.name}'s {cap}-byte {t.loc.value} buffer",
                  expected=f"address + {t.nbytes} <= {cap}", actual=f"{at} + {t.nbytes} = {end}")

    def _event_twice(self, a: Value) -> None:
        """STRUCT_REDEFINED: an event token is recorded by one statement (it is an SSA value, not a
        buffer a second producer could write again)."""
        self._err("STRUCT_REDEFINED", f"event %{a.name} is already defined: an event is recorded once",
                  expected="a new name for each recorded event", actual=f"%{a.name} : {a.type}")

    def _flag_id(self, s: TileOp, scope: Scope) -> None:
        """LEGAL_EVENT_ID when a set_flag / wait_flag names a constant id past the ids the profile
        has for its (src pipe, dst pipe) pair (``Profile.flag_ids``); a run-time id, or a pair
        the semantics refuse (one pipe twice, ALL), is left to RUNTIME_EVENT_ID / _SAME_PIPE /
        _BAD_PIPE when the program runs."""
        src, dst, eid = s.args.get("src_pipe"), s.args.get("dst_pipe"), s.args.get("event_id")
        if self.profile is None or not isinstance(src, PipeLit) or not isinstance(dst, PipeLit):
            return
        at = eid.value if isinstance(eid, Lit) else (
            self.consts.value(eid, scope.lookup) if isinstance(eid, Value) else None)
        n = self.profile.flag_ids(src.pipe, dst.pipe)
        if at.__class__ is not int or n is None or 0 <= at < n:   # type: ignore[operator]
            return
        self._err("LEGAL_EVENT_ID", f"flag id {at} is outside the {n} ids {self.profile.name} has for the pipe pair "
                  f"{src.pipe.value} -> {dst.pipe.value}", expected=f"an id in [0, {n})", actual=str(at))

    def _capacity(self, root: Scope) -> None:
        assert self.profile is not None
        used: dict[object, tuple[int, int]] = {}
        for v in root.tiles():
            if v.name in self.windows:
                continue
            t = v.type
            assert isinstance(t, TileType)
            total, count = used.get(t.loc, (0, 0))
            used[t.loc] = (total + t.nbytes, count + 1)
        self.at, self.at_index = self.k, self.index
        for loc, (total, count) in used.items():
            cap = self.profile.capacity.get(loc)  # type: ignore[call-overload]
            if cap is not None and total > cap:
                self._err("LEGAL_CAPACITY", f"the {count} {loc.value} tile(s) of kernel @{self.k.name} take "  # type: ignore[attr-defined]
                          f"{total} bytes, more than {self.profile.name}'s {cap}",
                          expected=f"<= {cap} bytes", actual=f"{total} bytes")


def _scalar_rule(spec: S.ScalarOpSpec, s: ScalarOp) -> str | None:
    """Why the operand/result types do not fit the op's class, or None."""
    ts = [v.type for v in s.operands]
    r = s.result.type
    cls = spec.cls
    if cls == "block":
        return None if r == INDEX else "the result is index"
    if cls == "cast":
        if not (isinstance(ts[0], ScalarType) and isinstance(r, ScalarType)):
            return "casts convert scalars"
        return S.cast_error(spec, ts[0], r)
    if (cls == "extended") != (s.second is not None):
        return f"{spec.name} defines {2 if cls == 'extended' else 1} result(s)"
    if cls == "extended":
        if not all(S.is_int(t) and t.name not in ("index", "i1") for t in ts) or len(set(ts)) != 1:
            return "operands must share one integer type of fixed width (not index or i1)"
        if r != ts[0] or s.second.type != S.second_type(spec, ts[0]):  # type: ignore[union-attr]
            return f"the results are {ts[0]}, {S.second_type(spec, ts[0])}"   # type: ignore[arg-type]
        return None
    if cls == "select":
        if ts[0] != I1:
            return "the condition must be i1"
        return None if ts[1] == ts[2] == r else "both choices and the result have one type"
    want = S.is_float if cls in ("float_binary", "float_unary", "cmpf") else S.is_int
    if not all(want(t) for t in ts) or len(set(ts)) != 1:
        return f"operands must share one {'float' if want is S.is_float else 'integer'} type"
    if cls in ("cmpi", "cmpf"):
        if s.predicate not in spec.predicates:
            return f"predicate {s.predicate!r} is not one of {' '.join(spec.predicates)}"
        return None if r == I1 else "a comparison produces i1"
    return None if r == ts[0] else "the result has the operands' type"

