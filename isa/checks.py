"""Per-instruction checks derived from the declarations: the verifier and the backends'
capability checks call these instead of keeping their own operand or dtype lists."""
from __future__ import annotations

import enum
from typing import Any, Mapping

from . import constraints as K
from . import dtypes as dt
from .diagnostics import LegalityError, Location as Loc, PTOError, StructError
from .profiles import PROFILES, Profile
from .spec import Instruction, Kind, Role
from .suggest import did_you_mean
from .types import EventType, GlobalType, ScalarType, TileType, Type

_KIND_OF: dict[Kind, tuple[type, ...]] = {
    Kind.TILE: (TileType,),
    Kind.GLOBAL: (GlobalType,),
    Kind.SCALAR: (ScalarType,),
    Kind.INDEX: (ScalarType,),
    Kind.EVENT: (EventType,),
    Kind.PIPE: (),
}


def _dtype_of(t: Type) -> Any:
    return t.dtype if isinstance(t, (TileType, GlobalType, ScalarType)) else None


def check_structure(instr: Instruction, types: Mapping[str, Type], attrs: Mapping[str, Any],
                    where: Loc | None = None) -> list[PTOError]:
    """Target-independent rules: operand presence and kinds, attributes, shape and valid-region rules."""
    errs: list[PTOError] = []
    where = where or Loc()
    for op in instr.operands:
        t = types.get(op.name)
        if t is None:
            if not op.optional and op.kind is not Kind.PIPE:
                errs.append(StructError("STRUCT_MISSING_OPERAND", f"{instr.mnemonic} needs operand '{op.name}'",
                                        location=where, expected=f"{op.kind.value} operand", actual="nothing"))
            continue
        allowed = _KIND_OF[op.kind]
        if allowed and not isinstance(t, allowed):
            errs.append(StructError("STRUCT_OPERAND_KIND",
                                    f"{instr.mnemonic} operand '{op.name}' has the wrong kind",
                                    location=where, expected=op.kind.value, actual=str(t)))
        elif op.kind is Kind.INDEX and isinstance(t, ScalarType) and t.is_float:
            errs.append(StructError("STRUCT_OPERAND_KIND", f"{instr.mnemonic} operand '{op.name}' must be an integer",
                                    location=where, expected="index or integer scalar", actual=str(t)))
    declared = {a.name: a for a in instr.attrs}
    for name in attrs:
        if name not in declared:
            errs.append(StructError("STRUCT_UNKNOWN_ATTR", f"{instr.mnemonic} has no attribute '{name}'"
                                    f"{did_you_mean(name, declared)}",
                                    location=where, expected=", ".join(declared) or "no attributes",
                                    actual=name))
    for a in instr.attrs:
        if a.name not in attrs:
            if a.required:
                errs.append(StructError("STRUCT_MISSING_ATTR", f"{instr.mnemonic} requires attribute '{a.name}'",
                                        location=where, expected=_attr_domain(a.type), actual="absent"))
            continue
        v = attrs[a.name]
        if not _attr_ok(a.type, v):
            errs.append(StructError("STRUCT_ATTR_VALUE", f"bad value for {instr.mnemonic} attribute '{a.name}'",
                                    location=where, expected=_attr_domain(a.type), actual=repr(v)))
    if not errs:
        for c, msg in K.check_all(instr.constraints, types, attrs):
            if c.code.startswith("STRUCT"):
                errs.append(StructError(c.code, f"{instr.mnemonic}: {msg}", location=where,
                                        expected=c.doc, actual=msg))
    return errs


def check_legality(instr: Instruction, types: Mapping[str, Type], attrs: Mapping[str, Any],
                   profile: Profile, where: Loc | None = None, *, tile_layouts: bool = True,
                   values: Mapping[str, Any] | None = None) -> list[PTOError]:
    """Profile rules: instruction supported, dtype tuple, attribute and pipe values, locations,
    layouts, per-tile capacity and alignment. Assumes check_structure passed. ``values`` holds
    the pipe operands' values (they have no type). ``tile_layouts=False`` leaves out whether
    each tile's layout suits its location: the verifier reports that at the tile's
    declaration (see ``tile_layout_error``), where the user has to change it."""
    where = where or Loc()
    ctx = f"profile={profile.name}"
    if not instr.supported_on(profile.name):
        return [LegalityError("LEGAL_UNSUPPORTED_INSTRUCTION", f"{instr.mnemonic} is not available on {profile.name}",
                              location=where, expected=f"one of profiles {', '.join(p for p in PROFILES if instr.supported_on(p))}",
                              actual=ctx)]
    errs: list[PTOError] = []
    rule = instr.dtype_rule(profile.name)
    if rule is not None and all(n in types for n in rule.operands):
        combo = tuple(_dtype_of(types[n]) for n in rule.operands)
        if None not in combo and not rule.allows(combo):
            legal = "; ".join("(" + ", ".join(d.name for d in t) + ")" for t in rule.sorted_tuples()[:12])
            more = " ..." if len(rule.tuples) > 12 else ""
            errs.append(LegalityError("LEGAL_DTYPE",
                                      f"{instr.mnemonic} does not accept dtypes ({', '.join(rule.operands)}) = "
                                      f"({', '.join(d.name for d in combo)}) on {profile.name}",
                                      location=where, expected=legal + more,
                                      actual="(" + ", ".join(d.name for d in combo) + ")"))
    if not errs:            # a tuple the whole table refuses is not reported again per form
        errs += _form_errors(instr, types, profile.name, where)
    errs += _value_errors(instr, types, attrs, values or {}, profile.name, where)
    for op in instr.operands:
        t = types.get(op.name)
        layouts = profile.global_layouts if op.role is Role.IN else profile.stored_layouts or profile.global_layouts
        if isinstance(t, GlobalType) and t.layout not in layouts:
            verb = "" if op.role is Role.IN else "written "
            errs.append(LegalityError("LEGAL_LAYOUT", f"{instr.mnemonic} operand '{op.name}': {profile.name} has no "
                                      f"{verb}{t.layout.value} global tensors", location=where,
                                      expected=" or ".join(g.value for g in layouts), actual=t.layout.value))
        if not isinstance(t, TileType):
            continue
        if op.locations is not None and t.loc not in op.locations:
            errs.append(LegalityError("LEGAL_LOCATION", f"{instr.mnemonic} operand '{op.name}' in wrong location",
                                      location=where, expected=" or ".join(l.value for l in op.locations),
                                      actual=t.loc.value))
        if tile_layouts:
            for e in (tile_layout_error(t, profile, where, f"operand '{op.name}'"),
                      tile_dtype_error(t, profile, where, f"operand '{op.name}'")):
                if e is not None:
                    errs.append(e)
        size = t.nbytes                   # dt.memory_bytes: 4-bit types take half a byte each
        if size > profile.capacity[t.loc]:
            errs.append(LegalityError("LEGAL_CAPACITY", f"operand '{op.name}' does not fit in {t.loc.value}",
                                      location=where, expected=f"<= {profile.capacity[t.loc]} bytes",
                                      actual=f"{size} bytes"))
        why = profile.row_alignment_error(t.rows, t.cols, dt.memory_bits(t.dtype) / 8, t.layout, t.loc)
        if why:
            errs.append(LegalityError("LEGAL_ALIGNMENT", f"operand '{op.name}': {why} on {profile.name}",
                                      location=where, expected=f"{profile.alignment}-byte aligned rows",
                                      actual=str(t)))
    for c, msg in K.check_all(instr.constraints, types, attrs):
        if c.code.startswith("LEGAL"):
            errs.append(LegalityError(c.code, f"{instr.mnemonic}: {msg}", location=where, expected=c.doc, actual=msg))
    return errs


def _value_errors(instr: Instruction, types: Mapping[str, Type], attrs: Mapping[str, Any],
                  values: Mapping[str, Any], profile: str, where: Loc) -> list[PTOError]:
    """The declaration's per-profile value rules (``Instruction.value_rules``): an attribute
    (its default when not written) or a given pipe operand outside the profile's values."""
    errs: list[PTOError] = []
    declared = {a.name: a for a in instr.attrs}
    for rule in instr.value_rules(profile):
        if not rule.applies(types):
            continue
        if rule.name in declared:
            value = attrs.get(rule.name, declared[rule.name].default)
        elif rule.name in values:
            value = values[rule.name]
        else:
            continue
        t = types.get(rule.operand) if rule.operand else None
        why = rule.error(value, _dtype_of(t) if t is not None else None)
        if why:
            errs.append(LegalityError(rule.code, f"{instr.mnemonic}: {why} on {profile}", location=where,
                                      expected=rule.describe(), actual=f"{rule.name} = {getattr(value, 'name', value)}"
                                      + (f" with {rule.operand} {_dtype_of(t)}" if t is not None else "")))
    return errs


def _form_errors(instr: Instruction, types: Mapping[str, Type], profile: str, where: Loc) -> list[PTOError]:
    """The declaration's per-profile form rules (``Instruction.form_rules``): with the form's
    operand present, the dtype tuple must be one that form converts on the profile."""
    errs: list[PTOError] = []
    for rule in instr.form_rules(profile):
        if not rule.applies(types) or not all(n in types for n in rule.rule.operands):
            continue
        combo = tuple(_dtype_of(types[n]) for n in rule.rule.operands)
        why = None if None in combo else rule.error(combo)
        if why:
            errs.append(LegalityError(rule.code, f"{instr.mnemonic}: {why} on {profile}", location=where,
                                      expected="; ".join("(" + ", ".join(d.name for d in t) + ")"
                                                         for t in rule.rule.sorted_tuples()),
                                      actual="(" + ", ".join(d.name for d in combo) + ")"))
    return errs


def tile_layout_error(t: TileType, profile: Profile, where: Loc, what: str) -> LegalityError | None:
    """LEGAL_LAYOUT when ``t``'s layout is not one ``profile`` takes in ``t``'s location."""
    why = profile.layout_error(t.loc, t.layout)
    if why is None:
        return None
    return LegalityError("LEGAL_LAYOUT", f"{why} ({what})", location=where,
                         expected=" or ".join(l.value for l in profile.layouts.get(t.loc, ())) or "nothing",
                         actual=t.layout.value)


def tile_dtype_error(t: TileType, profile: Profile, where: Loc, what: str) -> LegalityError | None:
    """LEGAL_DTYPE when ``t``'s element type is not one ``profile``'s ``t.loc`` holds (the
    scale locations: ``Profile.location_dtypes``)."""
    why = profile.dtype_error(t.loc, t.dtype)
    if why is None:
        return None
    return LegalityError("LEGAL_DTYPE", f"{why} ({what})", location=where,
                         expected=" or ".join(d.name for d in profile.location_dtypes[t.loc]), actual=t.dtype.name)


def _attr_ok(kind: type, v: Any) -> bool:
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return isinstance(v, kind)
    if kind is bool:
        return isinstance(v, bool)
    if kind is int:     # an int attribute is an i64, as every backend holds it
        return isinstance(v, int) and not isinstance(v, bool) and -(1 << 63) <= v < 1 << 63
    if kind is float:
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    return isinstance(v, kind)


def _attr_domain(kind: type) -> str:
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return " | ".join(m.name for m in kind)
    return "an int in [-2^63, 2^63 - 1]" if kind is int else kind.__name__
