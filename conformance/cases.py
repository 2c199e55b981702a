"""Legal uses of an instruction on a profile, derived from its declaration alone.

A ``Case`` is one concrete use: operand types, attribute values and scalar operands. The
starting point is the declaration's example; for each legal dtype tuple of the profile the
example is re-typed and, where the new dtype breaks a shape rule (row alignment, fractal
boxes), re-shaped from a small table of scalings until ``isa.checks`` accepts it; a tuple
only another form takes (an optional operand the example lacks, such as TMOV's preQuantScalar)
is looked for with that operand filled in. Valid regions and attribute values are then varied
by hypothesis, again keeping only what the checks accept. Nothing here names an instruction:
a new declaration is covered by itself.
"""
from __future__ import annotations

import dataclasses
import enum
import functools
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

from hypothesis import strategies as st

from ..assembler.ir import Const, Kernel, MemRef, Module, PipeLit, TileOp, Value, make_lit
from ..assembler.ordering import SIGN as FLAG_SIGN
from ..isa import dtypes as dt
from ..assembler.verifier import verify
from ..isa.checks import check_legality, check_structure
from ..isa.diagnostics import PTOError
from ..isa.profiles import PROFILES
from ..isa.registry import all_instructions, get
from ..isa.spec import Instruction, Kind, Operand, Role
from ..isa.types import INDEX, GlobalType, Layout, Location, Pipe, ScalarType, TileType, Type, parse_type

DTypeTuple = tuple[dt.DType, ...]

#: flag instructions a case module pairs with their counterpart so the kernel is balanced
PARTNER = {m: next(o for o, sign in FLAG_SIGN.items() if sign == -s) for m, s in FLAG_SIGN.items()}

#: (row factor, column factor) tried in order when a re-typed example breaks a shape rule
SEARCH_LIMIT = 4000
SCALINGS = ((1, 1), (1, 2), (1, 4), (2, 1), (2, 2), (1, 8), (2, 4), (1, 16), (4, 4), (1, 32))


@dataclass(frozen=True)
class Case:
    """One use of ``instr`` on ``profile``: every operand's type, attributes, scalar operands."""

    instr: Instruction
    profile: str
    types: Mapping[str, Type]
    attrs: Mapping[str, Any] = field(default_factory=dict)
    scalars: Mapping[str, Any] = field(default_factory=dict)   # scalar/index/pipe operand values
    offsets: Mapping[str, tuple[int, ...]] = field(default_factory=dict)  # global operand -> indices
    aliases: Mapping[str, str] = field(default_factory=dict)   # input tile -> the output tile it is (in place)
    runtime: frozenset[str] = frozenset()   # index operands passed as kernel parameters, not literals

    @property
    def dtypes(self) -> DTypeTuple:
        """The case's dtype tuple over the instruction's dtype-rule operands."""
        rule = self.instr.dtype_rule(self.profile)
        if rule is None:
            return ()
        return tuple(_dtype(self.types[n]) for n in rule.operands if n in self.types)  # type: ignore[misc]

    @property
    def dtype_key(self) -> str:
        return dtype_key(self.dtypes)

    def errors(self) -> list[Any]:
        """The spec's verdict on this case (empty: legal)."""
        errs = check_structure(self.instr, self.types, self.attrs)
        return errs or check_legality(self.instr, self.types, self.attrs, PROFILES[self.profile],
                                      values=self.scalars)

    def module(self) -> Module:
        """A one-instruction kernel ``@case``: every typed operand is a parameter (output
        tiles too, so a backend's results are observable); pipes are literal, and so are index
        operands with a value in ``scalars`` unless named in ``runtime``."""
        params, args, body = [], {}, []
        c0 = Value("c0", INDEX)
        for op in self.instr.operands:
            if op.kind is Kind.PIPE:
                if op.name in self.scalars:
                    args[op.name] = PipeLit(self.scalars[op.name])
                continue
            t = self.types.get(op.name)
            if t is None:
                continue
            v = Value(op.name, t)
            if op.name in self.aliases:             # in place: the output's value, no parameter of its own
                args[op.name] = Value(self.aliases[op.name], t)
            elif isinstance(t, GlobalType):
                params.append(v)
                at = self.offsets.get(op.name)
                args[op.name] = MemRef(v, at if at else tuple([c0] * max(t.rank, 1)))
            elif isinstance(t, ScalarType) and op.name in self.scalars and op.kind is Kind.INDEX \
                    and isinstance(self.scalars[op.name], int) and op.name not in self.runtime:
                args[op.name] = make_lit(self.scalars[op.name], t)
            else:
                params.append(v)
                args[op.name] = v
        if any(isinstance(a, MemRef) for a in args.values()):
            body.append(Const(c0, 0))
        op = TileOp(self.instr, args, dict(self.attrs))
        partner = PARTNER.get(self.instr.mnemonic)
        if partner is None or self.runtime and self._faults():
            body.append(op)     # a run-time fault stays alone: a partner sharing its operands would hide it
        else:     # a flag alone is not a program: with a literal id the verifier says so (ORDER_*), and
            # with a run-time id a lone wait never ends on a core that models waiting (ascend_sim's
            # ORDER_DEADLOCK): set and wait come in pairs
            pair = TileOp(get(partner), args)
            body += [op, pair] if FLAG_SIGN[self.instr.mnemonic] > 0 else [pair, op]
        return Module((Kernel("case", tuple(params), tuple(body)),))

    def _faults(self) -> bool:
        """Whether the instruction's semantics fault on this case's scalar operands (a flag's
        pipes and id: all its operands)."""
        try:
            self.instr.execute(**self.scalars)
        except PTOError:
            return True
        return False

    def describe(self) -> str:
        ts = ", ".join(f"{k}: {t}" for k, t in self.types.items())
        at = ", ".join(f"{k}={getattr(v, 'name', v)}" for k, v in self.attrs.items())
        same = "".join(f" ({k} is {v})" for k, v in self.aliases.items())
        run = "".join(f" ({k} = {self.scalars.get(k)} at run time)" for k in sorted(self.runtime))
        return f"{self.instr.mnemonic}[{self.dtype_key}] {ts}" + (f" {{{at}}}" if at else "") + same + run


def dtype_key(dtypes: DTypeTuple) -> str:
    """``f32`` when every operand shares a dtype, else ``f16,f16,f32``."""
    names = [d.name for d in dtypes]
    return "-" if not names else names[0] if len(set(names)) == 1 else ",".join(names)


def _dtype(t: Type) -> dt.DType | None:
    if isinstance(t, ScalarType):
        return None if t.name == "index" else t.dtype
    return getattr(t, "dtype", None)


def retype(t: Type, d: dt.DType) -> Type:
    if isinstance(t, (TileType, GlobalType)):
        return dataclasses.replace(t, dtype=d)
    if isinstance(t, ScalarType):
        return ScalarType(d.name)
    return t


def scale(t: Type, fr: int, fc: int) -> Type:
    """Grow a tile's static shape (and a static valid region that was the full shape) and a
    global's static extents, so windows still fit."""
    if isinstance(t, TileType):
        vr = None if t.valid_rows is None else t.valid_rows * fr
        vc = None if t.valid_cols is None else t.valid_cols * fc
        return dataclasses.replace(t, rows=t.rows * fr, cols=t.cols * fc, valid_rows=vr, valid_cols=vc)
    if isinstance(t, GlobalType):
        shape = list(t.shape)
        if len(shape) >= 2:
            shape[-2] = None if shape[-2] is None else shape[-2] * fr
        if shape:
            shape[-1] = None if shape[-1] is None else shape[-1] * fc
        return dataclasses.replace(t, shape=tuple(shape))
    return t


def example_case(instr: Instruction, profile: str, ex: Any = None) -> Case:
    ex = ex or instr.example
    types = {n: parse_type(s) for n, s in ex.types.items()}
    scalars = dict(ex.scalars)
    return Case(instr, profile, types, dict(ex.attrs), scalars)


def base_cases(instr: Instruction, profile: str) -> dict[DTypeTuple, Case | None]:
    """For each legal dtype tuple of the profile: a legal case (None when no scaling of the
    example could make that tuple legal: the suite reports it instead of hiding it)."""
    return _base_cases(instr.mnemonic, profile)


@functools.lru_cache(maxsize=None)
def _base_cases(mnemonic: str, profile: str) -> dict[DTypeTuple, Case | None]:
    return derive(get(mnemonic), profile)


def derive(instr: Instruction, profile: str) -> dict[DTypeTuple, Case | None]:
    """``base_cases`` without the cache: each tuple from the examples as declared, else from
    ``_other_forms`` of them."""
    if not instr.supported_on(profile):
        return {}
    starts = [example_case(instr, profile, ex) for ex in (instr.example,) + instr.more_examples]
    rule = instr.dtype_rule(profile)
    if rule is None:
        return {(): next((c for c in starts if not c.errors()), None)}
    out: dict[DTypeTuple, Case | None] = {}
    for combo in rule.sorted_tuples():
        out[combo] = next((c for start in starts for c in _from_example(start, rule, combo) if not c.errors()),
                          None)
        if out[combo] is None:       # a form the examples do not carry the tuple in
            out[combo] = next((c for start in _other_forms(instr, rule, combo, starts)
                               for c in _candidates(instr, profile, start.types, start.attrs, start.scalars)
                               if not c.errors()), None)
    return out


def _other_forms(instr: Instruction, rule: Any, combo: DTypeTuple, starts: list[Case]) -> Iterator[Case]:
    """Re-typed examples ``_from_example`` did not try, each once: operands outside the dtype
    rule keeping their declared types, then each example with one optional operand it lacks
    filled in (``_fillers``), either way: the forms a dtype tuple may need that no example
    shows as such (TMOV's i32 -> f16 exists only with an f32 preQuantScalar)."""
    seen = [_retyped(s, rule, combo, True) for s in starts]
    for start in list(starts) + list(_filled(instr, starts)):
        for follow in (False, True):
            c = _retyped(start, rule, combo, follow)
            if c not in seen:
                seen.append(c)
                yield c


def _filled(instr: Instruction, starts: list[Case]) -> Iterator[Case]:
    """Each example with one optional operand it lacks filled in, by each of ``_fillers``."""
    fillers = _fillers(instr)
    for start in starts:
        for name, options in fillers.items():
            if name in start.types:
                continue
            for t, value in options:
                scalars = dict(start.scalars, **({name: value} if value is not None else {}))
                yield dataclasses.replace(start, types=dict(start.types, **{name: t}), scalars=scalars)


def _fillers(instr: Instruction) -> dict[str, list[tuple[Type, Any]]]:
    """Per optional operand: (type, value) pairs to fill it with, nearest the declaration first:
    its type and value in any example that has it, then (a scalar) each scalar type the
    examples give other scalar operands and f32, at the operand's range's lower end or 1, then
    (a tile) the type of each tile the examples give."""
    examples = (instr.example,) + instr.more_examples
    out: dict[str, list[tuple[Type, Any]]] = {}
    for op in instr.operands:
        if not op.optional or op.kind not in (Kind.SCALAR, Kind.INDEX, Kind.TILE):
            continue
        options: list[tuple[Type, Any]] = [(parse_type(ex.types[op.name]), ex.scalars.get(op.name))
                                           for ex in examples if op.name in ex.types]
        if op.kind is Kind.TILE:
            options += [(t, None) for ex in examples for s in ex.types.values()
                        for t in [parse_type(s)] if isinstance(t, TileType)]
        else:
            value = op.bounds[0] if op.bounds is not None else 1
            named = [s for ex in examples for k, s in ex.types.items()
                     if instr.operand(k).kind is op.kind] + (["index"] if op.kind is Kind.INDEX else ["f32"])
            options += [(parse_type(s), value) for s in named]
        out[op.name] = list(dict.fromkeys(options))
    return out


def _from_example(start: Case, rule: Any, combo: DTypeTuple) -> Iterator[Case]:
    """Candidates for ``combo`` from one declared example: re-typed, then re-shaped."""
    c = _retyped(start, rule, combo, True)
    return _candidates(start.instr, start.profile, dict(c.types), c.attrs, c.scalars)


def _retyped(start: Case, rule: Any, combo: DTypeTuple, follow: bool) -> Case:
    """``start`` with the rule's operands of ``combo``'s dtypes. Operands outside the rule
    follow a sibling of their dtype into its new one (``follow``), or keep their own type (an
    f32 scale next to an f32 source that becomes i32)."""
    retyped = dict(start.types)
    new_of = {}
    for name, d in zip(rule.operands, combo):
        if name in retyped:
            new_of.setdefault(_dtype(retyped[name]), d)
            retyped[name] = retype(retyped[name], d)
    for name, t in start.types.items():       # operands outside the rule follow a sibling
        if follow and name not in rule.operands and _dtype(t) in new_of:
            retyped[name] = retype(t, new_of[_dtype(t)])
    scalars = {k: _retype_scalar(v, retyped.get(k)) for k, v in start.scalars.items()}
    return dataclasses.replace(start, types=retyped, scalars=scalars)


def _candidates(instr: Instruction, profile: str, types: dict[str, Type], attrs: Mapping[str, Any],
                scalars: Mapping[str, Any]) -> Iterator[Case]:
    """Re-shaped, re-placed and re-attributed variants of a re-typed example, nearest first
    (at most ``SEARCH_LIMIT``): whole-case scalings, then other attribute values, then other
    locations for one tile operand, then one operand's columns scaled on its own."""
    def case(t: dict[str, Type], a: Mapping[str, Any]) -> Case:
        return Case(instr, profile, t, a, values)

    values = next((v for v in _pipe_choices(instr, profile, scalars)
                   if not Case(instr, profile, types, attrs, v).errors()), scalars)

    def scaled(t: dict[str, Type]) -> Iterator[dict[str, Type]]:
        for fr, fc in SCALINGS:
            yield {k: scale(v, fr, fc) for k, v in t.items()}

    attr_sets = [dict(attrs)] + [dict(attrs, **{n: v}) for n, vs in attr_values(instr).items() for v in vs
                                  if attrs.get(n) is not v]
    layouts = PROFILES[profile].layouts
    placed = [types]
    for op in instr.operands:
        t = types.get(op.name)
        if isinstance(t, TileType):
            for loc in op.locations or tuple(Location):
                for lay in layouts.get(loc, ()):
                    if (loc, lay) != (t.loc, t.layout):
                        placed.append(dict(types, **{op.name: dataclasses.replace(t, loc=loc, layout=lay)}))
    count = 0
    for a in attr_sets:
        for p in placed:
            for t in scaled(p):
                count += 1
                if count > SEARCH_LIMIT:
                    return
                yield case(t, a)
    tiles = [n for n, t in types.items() if isinstance(t, TileType)]
    for a in attr_sets:
        for t in scaled(types):
            for n in tiles:
                for f in (2, 4, 8):
                    for fr, fc in ((1, f), (f, 1)):
                        count += 1
                        if count > SEARCH_LIMIT:
                            return
                        yield case(dict(t, **{n: scale(t[n], fr, fc)}), a)


def _pipe_choices(instr: Instruction, profile: str, scalars: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """The example's scalars, then with each pipe operand at each pipe the profile allows (a
    profile may refuse the example's pipe: ``Instruction.value_rules``)."""
    yield dict(scalars)
    for rule in instr.value_rules(profile):
        if rule.name in scalars and isinstance(scalars[rule.name], Pipe):
            for v in rule.values:
                yield dict(scalars, **{rule.name: v})


def _retype_scalar(v: Any, t: Type | None) -> Any:
    """An example scalar converted to the operand's (new) type (2.5 for a float, 2 for an
    int), wrapped into the type's range so it still spells as a literal of that type."""
    if isinstance(t, ScalarType) and isinstance(v, (int, float)) and not isinstance(v, bool):
        if t.is_float:
            return float(v)
        if t.name != "i1":
            if t.name == "index":
                return int(v)
            lo, hi = int(t.dtype.min), int(t.dtype.max)
            return lo + (int(v) - lo) % (hi - lo + 1)
    return v


def supported_dtypes(instr: Instruction, profile: str) -> list[DTypeTuple]:
    return list(base_cases(instr, profile))


def instructions(profile: str) -> list[Instruction]:
    return [i for i in all_instructions() if i.supported_on(profile)]


# --------------------------------------------------------------------------- variation

def attr_values(instr: Instruction) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for a in instr.attrs:
        if isinstance(a.type, type) and issubclass(a.type, enum.Enum):
            out[a.name] = list(a.type)
        elif a.type is bool:
            out[a.name] = [False, True]
    return out


def _with_valid(case: Case, vr: int, vc: int) -> Case:
    """Every tile with the largest static shape of the case gets valid region (vr, vc)."""
    tiles = {n: t for n, t in case.types.items() if isinstance(t, TileType)}
    if not tiles:
        return case
    rows = max(t.rows for t in tiles.values())
    cols = max(t.cols for t in tiles.values())
    types = dict(case.types)
    for n, t in tiles.items():
        if t.shape == (rows, cols) and not t.dynamic:
            types[n] = dataclasses.replace(t, valid_rows=min(vr, rows), valid_cols=min(vc, cols))
    return dataclasses.replace(case, types=types)


def _tile_window(op: Operand, instr: Instruction) -> bool:
    """Whether global operand ``op`` is addressed by a tile-sized window (named, or unnamed):
    those get drawn offsets; the whole tensor, one element or another tensor's shape keep the
    zero indices (the comm family's remote windows are sized by the local tensor)."""
    return op.window is None or any(t.name == op.window and t.kind is Kind.TILE for t in instr.operands)


def _with_offsets(case: Case, draw: st.DrawFn) -> Case:
    """Global operands addressed away from their origin: each index drawn so the largest tile
    window still fits a static extent (the window is at most the case's largest tile); operands
    that address the whole tensor (MGATHER, MSCATTER) keep the zero indices their spec requires."""
    tiles = [t for t in case.types.values() if isinstance(t, TileType)]
    rows = max((t.rows for t in tiles), default=1)
    cols = max((t.cols for t in tiles), default=1)
    whole = {o.name for o in case.instr.operands if not _tile_window(o, case.instr)}   # indices stay 0
    offsets = {}
    for name, t in case.types.items():
        if isinstance(t, GlobalType) and t.rank >= 1 and all(d is not None for d in t.shape) \
                and name not in whole:
            window = ([1] * (t.rank - 2) + [rows, cols])[-t.rank:] if t.rank >= 2 else [rows * cols]
            offsets[name] = tuple(draw(st.integers(0, max(int(d) - w, 0))) for d, w in zip(t.shape, window))
    return dataclasses.replace(case, offsets=offsets) if offsets else case


@st.composite
def varied(draw: st.DrawFn, base: Case) -> Case:
    """``base`` with other attribute values and a partial valid region where the spec allows."""
    case = base
    choices = attr_values(base.instr)
    if choices:
        attrs = dict(base.attrs)
        for name, values in choices.items():
            if draw(st.booleans()):
                attrs[name] = draw(st.sampled_from(values))
        candidate = dataclasses.replace(case, attrs=attrs)
        if not candidate.errors():
            case = candidate
    if draw(st.booleans()):
        candidate = _with_offsets(case, draw)
        if not candidate.errors():
            case = candidate
    tiles = [t for t in case.types.values() if isinstance(t, TileType)]
    if tiles and draw(st.booleans()):
        rows = max(t.rows for t in tiles)
        cols = max(t.cols for t in tiles)
        vr = draw(st.sampled_from(sorted({1, max(rows // 2, 1), rows - 1 or 1, rows})))
        vc = draw(st.sampled_from(sorted({1, max(cols // 2, 1), cols - 1 or 1, cols})))
        candidate = _with_valid(case, vr, vc)
        if not candidate.errors():
            case = candidate
    return case


def cases(instr: Instruction, profile: str, dtypes: DTypeTuple) -> st.SearchStrategy[Case]:
    """Legal cases of ``instr`` with that dtype tuple (the base case first, for shrinking)."""
    base = base_cases(instr, profile).get(dtypes)
    if base is None:
        return st.nothing()
    return st.one_of(st.just(base), varied(base))


# --------------------------------------------------------------------------- situations by construction

#: (row factor, column factor) tried in order to make every tile of a case non-square
NONSQUARE_SCALINGS = ((1, 2), (2, 1), (1, 4), (4, 1), (2, 4), (1, 8))


def _legal(case: Case) -> bool:
    return not case.errors()


def nonsquare(base: Case) -> Case:
    """``base`` with every static tile non-square when a whole-case scaling makes that legal
    (a square tile hides swapped axes); ``base`` itself otherwise."""
    def square(c: Case) -> int:
        return sum(t.rows == t.cols for t in c.types.values() if isinstance(t, TileType))
    if not square(base):
        return base
    best = base
    for fr, fc in NONSQUARE_SCALINGS:
        c = dataclasses.replace(base, types={k: scale(v, fr, fc) for k, v in base.types.items()})
        if square(c) < square(best) and _legal(c):
            best = c
            if not square(c):
                break
    return best


def _with_tile_valid(case: Case, name: str, vr: int, vc: int) -> Case:
    t = case.types[name]
    assert isinstance(t, TileType)
    types = dict(case.types, **{name: dataclasses.replace(t, valid_rows=min(vr, t.rows), valid_cols=min(vc, t.cols))})
    return dataclasses.replace(case, types=types)


#: extents of the leading dimensions put in front of a global's own (rank 5 from rank 1)
LEAD_DIMS = (3, 2, 2, 2)
#: global ranks in the order structured cases take them (each case the first one not yet taken)
RANKS = (5, 1, 4, 3, 2)


def _with_every_offset(case: Case, rank: int | None = None) -> Case | None:
    """Every windowed global with static extents given ``rank`` dimensions (leading ones put
    in front or dropped; None: its own rank), grown by one window and addressed at a non-zero
    index on every dimension: a view into a larger array (None: no such global)."""
    tiles = _tiles_of(case)
    types, offsets = dict(case.types), dict(case.offsets)
    for op in case.instr.operands:
        t = case.types.get(op.name)
        if not isinstance(t, GlobalType) or not _tile_window(op, case.instr) or t.strides is not None \
                or any(d is None for d in t.shape) or t.rank < 1:
            continue
        if rank is not None:
            t = dataclasses.replace(t, shape=LEAD_DIMS[:max(rank - t.rank, 0)] + tuple(t.shape)[-rank:])
        w = tiles.get(op.window or "") or max(tiles.values(), key=lambda x: x.rows * x.cols, default=None)
        rows, cols = (w.rows, w.cols) if w is not None else (1, 1)
        window = ([1] * (t.rank - 2) + [rows, cols])[-t.rank:] if t.rank >= 2 else [cols]   # rank 1: one row
        shape = tuple(max(int(d), n) + 1 for d, n in zip(t.shape, window))
        types[op.name] = dataclasses.replace(t, shape=shape)
        offsets[op.name] = tuple(d - n for d, n in zip(shape, window))
    if offsets == dict(case.offsets):
        return None
    return dataclasses.replace(case, types=types, offsets=offsets)


def _global_ranks(case: Case) -> set[int]:
    """The ranks of ``case``'s windowed globals (global operands read or written at indices)."""
    return {t.rank for op in case.instr.operands for t in [case.types.get(op.name)]
            if isinstance(t, GlobalType) and _tile_window(op, case.instr)}


def _placed(cases: list[Case]) -> list[Case]:
    """``cases`` with their windowed globals viewed at non-zero indices, each case at the first
    rank of ``RANKS`` no earlier case took (else its first legal one), then one more case per
    rank still missing that some case accepts: every legal rank 1..5 is reached, mostly
    without adding a compile."""
    out: list[Case] = []
    taken: set[int] = set()
    for c in cases:
        order = sorted(RANKS, key=lambda r: r in taken)
        moved = next((m for r in order for m in [_with_every_offset(c, r)] if m is not None and _legal(m)), None)
        out.append(moved if moved is not None else c)
        taken |= _global_ranks(moved) if moved is not None else set()
    if not taken:
        return out
    for r in RANKS:
        if r not in taken:
            extra = next((m for c in cases for m in [_with_every_offset(c, r)] if m is not None and _legal(m)), None)
            if extra is not None:
                out.append(extra)
                taken.add(r)
    return out


def _with_rows(case: Case, vr: int) -> Case:
    """Every static tile with ``vr`` valid rows (at most its own), columns unchanged."""
    types = {n: dataclasses.replace(t, valid_rows=min(vr, t.rows)) if isinstance(t, TileType) and not t.dynamic
             else t for n, t in case.types.items()}
    return dataclasses.replace(case, types=types)


def _tiles_of(case: Case) -> dict[str, TileType]:
    return {n: t for n, t in case.types.items() if isinstance(t, TileType) and not t.dynamic}


def structured(base: Case) -> list[Case]:
    """Legal cases built for the structural situations (``coverage.SITUATIONS``), few so that
    each costs one compile, all from the non-square form of ``base``: a narrow valid region
    (one column, several rows); one valid row of part of twice the columns (several blocks
    where an instruction works in blocks); one operand's valid region differing from the
    others'; operands of static shapes of their own around the same valid regions
    (``reshaped``). Each goes with globals viewed at non-zero indices when the spec accepts that."""
    ns = nonsquare(base)
    tiles = _tiles_of(ns)
    out: list[Case] = []
    if tiles:
        rows = max(t.rows for t in tiles.values())
        cols = max(t.cols for t in tiles.values())
        tries = ([(vr, 1) for vr in dict.fromkeys((rows - 1, rows, 2)) if vr >= 2],
                 [(1, vc) for vc in dict.fromkeys((cols - 1, max(cols // 2, 1), cols))])
        wide = dataclasses.replace(ns, types={k: scale(v, 1, 2) for k, v in ns.types.items()})
        wide = wide if _legal(wide) else ns       # several blocks for instructions that work in blocks
        for start, options in zip((ns, wide), tries):
            found = next((c for vr, vc in options for c in [_with_valid(start, vr, vc)]
                          if c.types != start.types and _legal(c)), None)
            if found is None and start is wide:    # one valid row of every tile, all columns
                found = next((c for c in [_with_rows(wide, 1)] if c.types != wide.types and _legal(c)), None)
            if found is not None:
                out.append(found)
        order = sorted(tiles, key=lambda n: base.instr.operand(n).role is not Role.IN)   # sources first
        differ = next((c for n in order for t in [tiles[n]]
                       for vr, vc in dict.fromkeys(((t.rows - 1, t.cols - 1), (t.rows, max(t.cols // 2, 1)),
                                                   (max(t.rows // 2, 1), t.cols), (1, t.cols), (t.rows, 1)))
                       if vr >= 1 and vc >= 1 and (vr, vc) != t.valid
                       for c in [_with_tile_valid(ns, n, vr, vc)] if _legal(c)), None)
        if differ is not None:
            out.append(differ)
        other = reshaped(ns)
        if other is not None:
            out.append(other)
    if not out and ns is not base:
        out.append(ns)
    placed = _placed(out or [ns])
    placed, extra = _with_layouts(placed, ns)
    if not any(p.offsets != c.offsets for p, c in zip(placed, out or [ns])):
        moved = _with_every_offset(ns)
        if moved is not None and _legal(moved):
            placed.append(moved)
    return [c for c in placed if c is not base] + extra + _without_optional(ns) + _in_place(ns) + _global_forms(base)


def _global_layouts(case: Case) -> tuple[Any, ...]:
    return tuple(t.layout for t in case.types.values() if isinstance(t, GlobalType))


def _global_forms(base: Case) -> list[Case]:
    """The declaration's other examples in base's dtype tuple whose global tensors have other
    layouts (TLOAD's scale layouts), where the spec accepts them: layouts only an example shows."""
    rule = base.instr.dtype_rule(base.profile)
    if rule is None:
        return []
    out: list[Case] = []
    for ex in (base.instr.example,) + base.instr.more_examples:
        start = example_case(base.instr, base.profile, ex)
        if set(start.types) != set(base.types) or _global_layouts(start) == _global_layouts(base):
            continue              # another form (SYNCALL's soft one) is not another layout
        found = next((c for c in _from_example(start, rule, base.dtypes) if not c.errors()), None)
        if found is not None:
            out.append(found)
    return out


# --------------------------------------------------------------------------- static shapes of their own

#: (row factor, column factor) a tile operand's static shape is grown by for ``reshaped``, in order
RESHAPINGS = ((1, 2), (2, 2), (1, 3), (2, 1), (2, 3), (3, 1), (1, 4), (4, 1))


def _grown(t: TileType, fr: int, fc: int) -> TileType:
    """``t`` with ``fr`` times the rows and ``fc`` times the columns, its valid region kept."""
    return dataclasses.replace(t, rows=t.rows * fr, cols=t.cols * fc)


def reshaped(case: Case) -> Case | None:
    """``case`` with tile operands grown to static shapes of their own, each keeping its valid
    region (so the valid regions still cover dst's as before): sources first, then outputs,
    each by the first of ``RESHAPINGS`` the checks accept (row alignment, fractal boxes,
    capacity, the shape rules) that no other tile was grown by, one with a column factor no
    other tile has first, never making a tile square: the tiles end out of proportion, and a
    backend addressing one operand with another's row stride reads the wrong elements. None when
    the checks accept no operand grown (equal static shapes required) or the case has fewer than
    two static tiles."""
    tiles = _tiles_of(case)
    if len(tiles) < 2:
        return None
    order = sorted(tiles, key=lambda n: case.instr.operand(n).role is not Role.IN)   # sources first
    factor = {n: (1, 1) for n in tiles}
    out = case
    for name in order:
        others = {f for n, f in factor.items() if n != name}
        options = sorted((f for f in RESHAPINGS if f not in others),
                         key=lambda f: f[1] in {c for _, c in others})     # stable: a new column factor first
        for fr, fc in options:
            t, g = tiles[name], _grown(tiles[name], fr, fc)
            if g.rows == g.cols and t.rows != t.cols:       # a non-square tile stays non-square
                continue
            c = dataclasses.replace(out, types=dict(out.types, **{name: g}))
            if _legal(c):
                out, factor[name] = c, (fr, fc)
                break
    return out if out is not case else None


# --------------------------------------------------------------------------- layout forms

#: the layouts a vector or a layout-reading operand is tried in (the physical orders of a 2-D tile)
VECTOR_LAYOUTS = (Layout.ND, Layout.DN)


def _forms(t: TileType) -> list[TileType]:
    """``t`` in the other layout of ``VECTOR_LAYOUTS`` (a fractal NZ/ZN tile stays as it is),
    and a one-column tile in the wide ND per-row form (a static width of one 32-byte block,
    one valid column)."""
    out = [dataclasses.replace(t, layout=lay) for lay in VECTOR_LAYOUTS
           if lay is not t.layout and t.layout in VECTOR_LAYOUTS]
    if t.cols == 1:
        out.append(dataclasses.replace(t, layout=Layout.ND, cols=max(32 // t.dtype.itemsize, 2), valid_cols=1))
    return out


def _layout_changes(case: Case) -> list[tuple[str, int]]:
    """(tile operand, index into ``_forms``) worth a case: every form of a vector operand
    (one static row or column), and of any tile operand when the instruction reads layout (the
    checks refuse some operand in some layout of ``VECTOR_LAYOUTS``)."""
    tiles = _tiles_of(case)
    legal = {(n, k): _legal(dataclasses.replace(case, types=dict(case.types, **{n: f})))
             for n, t in tiles.items() for k, f in enumerate(_forms(t))}
    reads = any(not ok for (n, k), ok in legal.items() if _forms(tiles[n])[k].shape == tiles[n].shape)
    return [(n, k) for (n, k), ok in legal.items()
            if ok and (reads or 1 in tiles[n].shape)]


def _with_layouts(placed: list[Case], ns: Case) -> tuple[list[Case], list[Case]]:
    """Each layout change of ``_layout_changes(ns)`` folded into one of the ``placed`` cases
    that the checks still accept with it (no new program text to compile beyond what that
    case costs), else made on ``ns`` as an extra case; returns (placed, extra)."""
    out, extra, taken = list(placed), [], set()
    for name, k in _layout_changes(ns):
        done = False
        for j, c in enumerate(out):
            t = c.types.get(name)
            if j in taken or not isinstance(t, TileType) or t.dynamic or len(_forms(t)) <= k:
                continue
            moved = dataclasses.replace(c, types=dict(c.types, **{name: _forms(t)[k]}))
            if _legal(moved):
                out[j], done = moved, True
                taken.add(j)
                break
        if not done:
            extra.append(dataclasses.replace(ns, types=dict(ns.types, **{name: _forms(ns.types[name])[k]})))
    return out, extra


def _in_place(case: Case) -> list[Case]:
    """``case`` with its first input tile of exactly the first output's type passed as that
    output (dst == src, acc_in == dst; never a scratch output), when the verifier accepts it."""
    outs = [op.name for op in case.instr.outputs[:1] if isinstance(case.types.get(op.name), TileType)]  # not scratch
    for op in case.instr.operands:
        t = case.types.get(op.name)
        if op.role is Role.IN and isinstance(t, TileType):
            for o in outs:
                if case.types[o] == t:
                    c = dataclasses.replace(case, aliases={op.name: o})
                    try:
                        verify(c.module(), case.profile)
                    except PTOError:
                        continue
                    return [c]
    return []


def _without_optional(case: Case) -> list[Case]:
    """``case`` without its optional operands (another form, such as TGATHER's mask form), with
    every attribute value that form accepts; empty when the spec refuses it."""
    optional = [op.name for op in case.instr.operands if op.optional and op.name in case.types]
    if not optional:
        return []
    types = {k: v for k, v in case.types.items() if k not in optional}
    scalars = {k: v for k, v in case.scalars.items() if k not in optional}
    bare = dataclasses.replace(case, types=types, scalars=scalars, offsets={
        k: v for k, v in case.offsets.items() if k not in optional})
    return [bare] if _legal(bare) else []


# --------------------------------------------------------------------------- range edges

def edge_values(op: Operand) -> tuple[int, ...]:
    """The values at and just past the ends of ``op``'s declared range (``lo - 1, lo, hi,
    hi + 1``) and half a step off its alignment (``m / 2, m + m / 2``)."""
    out: list[int] = []
    if op.bounds is not None:
        lo, hi = op.bounds
        out += [lo - 1, lo] + ([hi, hi + 1] if hi is not None else [])
    if op.multiple is not None:
        out += [op.multiple // 2, op.multiple + op.multiple // 2]
    return tuple(dict.fromkeys(out))


def ranged_operands(instr: Instruction) -> list[Operand]:
    """Index operands that declare a range or an alignment, and pipe operands: the operands
    whose edge values ``edges`` tries."""
    return [op for op in instr.operands if op.kind is Kind.PIPE
            or op.kind is Kind.INDEX and (op.bounds is not None or op.multiple is not None)]


def edges(base: Case) -> list[Case]:
    """``base`` with each ranged index operand at each of its ``edge_values`` and each pipe
    operand at every pipe (so two pipe operands meet, and ALL is tried), one change at a time.
    The ranged index operands are kernel parameters (``Case.runtime``): every value of one
    operand shares one program, hence one compile, and a flag whose values fault needs no partner
    (its fault is its own). Only programs the verifier accepts are kept; out-of-range values are meant to
    fault at run time, with the semantics' code."""
    ranged = [op for op in ranged_operands(base.instr) if op.name in base.scalars]
    runtime = frozenset(op.name for op in ranged if op.kind is Kind.INDEX and isinstance(base.scalars[op.name], int))
    out: list[Case] = []
    for op in ranged:
        values = edge_values(op) if op.name in runtime else tuple(p for p in Pipe) if op.kind is Kind.PIPE else ()
        for v in values:
            if op.kind is Kind.PIPE and v == base.scalars[op.name]:
                continue
            c = dataclasses.replace(base, scalars=dict(base.scalars, **{op.name: v}), runtime=runtime)
            try:
                verify(c.module(), c.profile)
            except PTOError:
                continue
            out.append(c)
    return out
