"""Level 1: illegal uses are rejected at compile time with the right diagnostic code.

Illegal programs are mutants of a legal case, made by generic edits that name no
instruction: another dtype for one dtype-rule operand, a tile moved to a location its
operand does not allow, another layout (of a tile or a global tensor), a tile grown past its
location's capacity, an attribute removed / unknown / of the wrong kind, an attribute or pipe value the profile
refuses, an operand removed, one extent (or every extent equal to it) doubled or bumped by
one (shape and row-alignment rules), a valid region shrunk. The expected codes are the
spec's own verdict on the mutant (``Case.errors``, i.e. ``isa.checks``, plus the profile's
per-location capacity over the kernel's tiles); mutants the spec accepts are dropped. A
backend passes a mutant when ``compile`` raises a PTOError carrying one of those codes (a
verifier may stop at the first of several).
"""
from __future__ import annotations

import dataclasses
import enum
from typing import Any, Callable, Iterator, Mapping

from hypothesis import strategies as st

from ..backends.base import Backend
from ..isa import dtypes as dt
from ..isa.diagnostics import PTOError, PTOErrorGroup
from ..isa.profiles import PROFILES
from ..isa.spec import Instruction
from ..isa.types import SCALAR_NAMES, GlobalLayout, GlobalType, Layout, Location, ScalarType, TileType, Type
from . import cases as C
from .cases import retype, scale
from .level0 import explore, precheck, resolve
from .outcome import Failure, Outcome

UNSUPPORTED = "LEGAL_BACKEND_UNSUPPORTED"
UNKNOWN_ATTR = "zz_not_an_attribute"


@dataclasses.dataclass(frozen=True)
class Mutant:
    """An illegal variant of a legal case: what was changed, and the codes the spec gives."""

    change: str
    case: C.Case
    codes: frozenset[str]


#: (what changed, operand types, attributes[, scalar and pipe operand values when they change])
Edit = tuple


# --------------------------------------------------------------------------- edits

def _tiles(case: C.Case) -> list[tuple[str, TileType]]:
    return [(n, t) for n, t in case.types.items() if isinstance(t, TileType)]


def _with(case: C.Case, **types: Type) -> dict[str, Type]:
    return {**case.types, **types}


def _dtype_edits(case: C.Case) -> Iterator[Edit]:
    """One dtype-rule operand retyped so that the tuple leaves the profile's rule (a scalar
    only to the element types a scalar can spell)."""
    rule = case.instr.dtype_rule(case.profile)
    if rule is None or not all(n in case.types for n in rule.operands):
        return
    combo = case.dtypes
    for i, name in enumerate(rule.operands):
        scalar = isinstance(case.types[name], ScalarType)
        for d in dt.ALL:
            new = combo[:i] + (d,) + combo[i + 1:]
            if d != combo[i] and not rule.allows(new) and not (scalar and d.name not in SCALAR_NAMES):
                yield f"dtype of {name}: {combo[i].name} -> {d.name}", \
                    _with(case, **{name: retype(case.types[name], d)}), case.attrs


def _location_edits(case: C.Case) -> Iterator[Edit]:
    """A tile moved to a location its operand declaration excludes (layout kept when the
    profile allows it there, else the profile's first layout for that location)."""
    layouts = PROFILES[case.profile].layouts
    for name, t in _tiles(case):
        allowed = case.instr.operand(name).locations
        if allowed is None:
            continue
        for loc in Location:
            if loc not in allowed:
                there = layouts.get(loc, ())
                lay = t.layout if t.layout in there or not there else there[0]
                yield f"location of {name}: {t.loc.value} -> {loc.value}", \
                    _with(case, **{name: dataclasses.replace(t, loc=loc, layout=lay)}), case.attrs


def _layout_edits(case: C.Case) -> Iterator[Edit]:
    for name, t in _tiles(case):
        for lay in Layout:
            if lay is not t.layout:
                yield f"layout of {name}: {t.layout.value} -> {lay.value}", \
                    _with(case, **{name: dataclasses.replace(t, layout=lay)}), case.attrs


def _global_layout_edits(case: C.Case) -> Iterator[Edit]:
    """A global tensor given another layout (the scale layouts: another rank, another profile)."""
    for name, t in case.types.items():
        if isinstance(t, GlobalType):
            for lay in GlobalLayout:
                if lay is not t.layout:
                    yield f"layout of {name}: {t.layout.value} -> {lay.value}", \
                        _with(case, **{name: dataclasses.replace(t, layout=lay)}), case.attrs


def _growth(nbytes: int, cap: int, power: int) -> int:
    """The smallest power-of-two factor f with nbytes * f**power > cap."""
    f = 2
    while nbytes * f ** power <= cap:
        f *= 2
    return f


def _capacity_edits(case: C.Case) -> Iterator[Edit]:
    """A tile grown past its location's capacity: the whole case scaled (so shape rules
    still hold) along rows, columns or both, and the tile alone."""
    cap, done = PROFILES[case.profile].capacity, set()
    for name, t in _tiles(case):
        for fr, fc, power in ((1, 0, 1), (0, 1, 1), (1, 1, 2)):
            f = _growth(t.nbytes, cap[t.loc], power)
            factors = ((f if fr else 1), (f if fc else 1))
            if factors not in done:
                done.add(factors)
                yield f"every operand scaled {factors[0]}x{factors[1]} so {name} exceeds {t.loc.value}", \
                    {k: scale(v, *factors) for k, v in case.types.items()}, case.attrs
        f = _growth(t.nbytes, cap[t.loc], 1)
        yield f"{name} alone grown to {t.rows * f}x{t.cols}", _with(case, **{name: scale(t, f, 1)}), case.attrs


#: a value of the wrong kind for each attribute type; an enum gets a float, which names no member
#: in any spelling (a bare or quoted member name is a valid public spelling of the enum value)
_WRONG_KIND: dict[type, Any] = {bool: 1, int: True, float: "1.0", enum.Enum: 2.5}


def _wrong_value(kind: type) -> Any:
    return _WRONG_KIND[enum.Enum] if issubclass(kind, enum.Enum) else _WRONG_KIND.get(kind)


def _attr_edits(case: C.Case) -> Iterator[Edit]:
    for a in case.instr.attrs:
        if a.name in case.attrs:
            yield f"attribute {a.name} removed", case.types, {k: v for k, v in case.attrs.items() if k != a.name}
        yield f"attribute {a.name} of the wrong kind", case.types, {**case.attrs, a.name: _wrong_value(a.type)}
    yield f"unknown attribute {UNKNOWN_ATTR}", case.types, {**case.attrs, UNKNOWN_ATTR: 1}


def _value_edits(case: C.Case) -> Iterator[Edit]:
    """An attribute or pipe operand set to a value the profile's value rules refuse (outside the
    rule, or a value whose element-type limit the case's dtype breaks); pipes change the scalars."""
    declared = {a.name for a in case.instr.attrs}
    for rule in case.instr.value_rules(case.profile):
        if not rule.applies(case.types):
            continue
        kind = case.instr.attr(rule.name).type if rule.name in declared else type(case.scalars.get(rule.name))
        if not (isinstance(kind, type) and issubclass(kind, enum.Enum)):
            continue
        t = case.types.get(rule.operand) if rule.operand else None
        for v in kind:
            if rule.error(v, getattr(t, "dtype", None)) is None:
                continue
            if rule.name in declared:
                yield f"{rule.name} = {v.name}, refused on {case.profile}", case.types, {**case.attrs, rule.name: v}
            else:
                yield (f"{rule.name} = {v.name}, refused on {case.profile}", case.types, case.attrs,
                       {**case.scalars, rule.name: v})


def _operand_edits(case: C.Case) -> Iterator[Edit]:
    for name in case.types:
        yield f"operand {name} removed", {k: v for k, v in case.types.items() if k != name}, case.attrs


def _resized(t: TileType, axis: str, new: int) -> TileType:
    """``t`` with one static extent changed; a valid extent that was full follows it."""
    valid = "valid_" + axis
    full = getattr(t, valid) == getattr(t, axis)
    return dataclasses.replace(t, **{axis: new, **({valid: new} if full else {})})


def _shape_edits(case: C.Case) -> Iterator[Edit]:
    """One extent doubled or bumped by one (row alignment), on the tile alone or on every
    tile sharing that extent; and one tile's static valid region halved."""
    tiles, done = _tiles(case), set()
    for name, t in tiles:
        for axis in ("rows", "cols"):
            old = getattr(t, axis)
            for how, new in (("doubled", old * 2), ("plus one", old + 1)):
                yield f"{name}.{axis} {how}", _with(case, **{name: _resized(t, axis, new)}), case.attrs
                peers = {n: _resized(u, axis, new) for n, u in tiles if getattr(u, axis) == old}
                if len(peers) > 1 and (axis, new) not in done:
                    done.add((axis, new))
                    yield f"every {axis} = {old} {how}", _with(case, **peers), case.attrs
            v = getattr(t, "valid_" + axis)
            if v is not None and v > 1:
                yield f"{name}.valid_{axis} halved", _with(case, **{name: dataclasses.replace(
                    t, **{"valid_" + axis: v // 2})}), case.attrs


EDITS: tuple[Callable[[C.Case], Iterator[Edit]], ...] = (
    _dtype_edits, _location_edits, _layout_edits, _global_layout_edits, _capacity_edits, _attr_edits, _value_edits,
    _operand_edits, _shape_edits)


# --------------------------------------------------------------------------- the spec's verdict

def kernel_capacity_exceeded(types: Mapping[str, Type], profile: str) -> bool:
    """The profile's program-level rule: a kernel's tiles in one location fit in it together."""
    cap, used = PROFILES[profile].capacity, {}
    for t in types.values():
        if isinstance(t, TileType):
            used[t.loc] = used.get(t.loc, 0) + t.nbytes
    return any(total > cap[loc] for loc, total in used.items())


def spec_codes(case: C.Case) -> frozenset[str]:
    """Every code the spec gives ``case`` (empty: legal)."""
    codes = {e.code for e in case.errors()}
    if kernel_capacity_exceeded(case.types, case.profile):
        codes.add("LEGAL_CAPACITY")
    return frozenset(codes)


def edits(case: C.Case) -> list[Edit]:
    """Every generic edit of ``case``, in table order (legal or not: the spec decides later)."""
    return [e for make in EDITS for e in make(case)]


def judge(case: C.Case, edit: Edit) -> Mutant | None:
    """The mutant an edit makes with the spec's codes; None when the spec accepts it (or a
    rule cannot judge it: that tests the spec, not the backend)."""
    change, types, attrs, *scalars = edit
    mutant = dataclasses.replace(case, types=dict(types), attrs=dict(attrs),
                                 scalars=dict(scalars[0]) if scalars else case.scalars)
    try:
        codes = spec_codes(mutant)
    except Exception:  # noqa: BLE001
        return None
    return Mutant(change, mutant, codes) if codes else None


def mutants(case: C.Case) -> list[Mutant]:
    """The spec-illegal mutants of a legal case, in edit order."""
    return [m for m in (judge(case, e) for e in edits(case)) if m is not None]


# --------------------------------------------------------------------------- the check

def _codes(e: PTOError) -> list[str]:
    return [x.code for x in e.errors] if isinstance(e, PTOErrorGroup) else [e.code]


def _text(case: C.Case) -> str | None:
    try:
        return case.module().to_text()
    except Exception:  # noqa: BLE001 - an illegal mutant need not be printable
        return None


def rejection_failure(backend: Backend, profile: str, m: Mutant) -> Failure | None:
    """None when compiling ``m`` raises one of the spec's codes, else why not."""
    try:
        module = m.case.module()
    except Exception:  # noqa: BLE001 - the IR cannot hold this mutant: nothing to compile
        return None
    want = " | ".join(sorted(m.codes))
    try:
        backend.compile(module, profile)
    except PTOError as e:
        got = _codes(e)
        if m.codes.intersection(got):
            return None
        return Failure(f"{m.change}: rejected with {', '.join(got)}, the spec expects {want}",
                       program=_text(m.case))
    except Exception as e:  # noqa: BLE001 - a crash is a failure, not an escape
        return Failure(f"{m.change}: compile raised {type(e).__name__}: {e} (the spec expects {want})",
                       program=_text(m.case))
    return Failure(f"{m.change}: an illegal program compiled (the spec expects {want})", program=_text(m.case))


@st.composite
def _case_and_mutant(draw: st.DrawFn, instr: Instruction, profile: str, dtypes: C.DTypeTuple) -> Mutant | None:
    case = draw(C.cases(instr, profile, dtypes))
    options = edits(case)
    return judge(case, draw(st.sampled_from(options))) if options else None


def run_level1(backend: Backend, profile: str, instr: Instruction | str, dtypes: C.DTypeTuple,
               max_examples: int = 5, seed: int | None = None) -> Outcome:
    """L1 for one instruction x dtype tuple: every mutant of the base case, then
    ``max_examples`` mutants of varied cases drawn by hypothesis."""
    instr = resolve(instr)
    key = C.dtype_key(dtypes)
    early = precheck(1, instr, profile, dtypes)
    if early is not None:
        return early
    base = C.base_cases(instr, profile)[dtypes]
    assert base is not None
    try:
        backend.compile(base.module(), profile)
    except PTOError as e:
        if UNSUPPORTED in _codes(e):
            return Outcome(1, instr.mnemonic, key, "unsupported", reason=e.message)
        failure = Failure(f"a legal program was rejected with {', '.join(_codes(e))}: {e.message}",
                          program=_text(base))
        return Outcome(1, instr.mnemonic, key, "fail", 1, failure.message, failure)
    except Exception as e:  # noqa: BLE001
        failure = Failure(f"compiling a legal program raised {type(e).__name__}: {e}", program=_text(base))
        return Outcome(1, instr.mnemonic, key, "fail", 1, failure.message, failure)

    def check(m: Mutant | None) -> Failure | None:
        return None if m is None else rejection_failure(backend, profile, m)

    examples, failure = 1, None
    for m in mutants(base):
        examples += 1
        failure = check(m)
        if failure is not None:
            break
    if failure is None:
        n, failure = explore(_case_and_mutant(instr, profile, dtypes), check, max_examples, seed)
        examples += n
    status = "fail" if failure is not None else "pass"
    return Outcome(1, instr.mnemonic, key, status, examples, failure.message if failure else "", failure)
