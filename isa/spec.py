"""The declaration schema: what every instruction states about itself, once.

The verifier, the generated docs, the conformance strategies and backend capability
checks all read these records; nothing else in the project lists operands or dtypes.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from . import dtypes as dt
from .targets import TARGETS
from .types import Layout, Location, Pipe, Type


class Family(enum.Enum):
    SYNC = "sync and resource binding"
    ELEMENTWISE = "elementwise tile-tile"
    TILE_SCALAR = "tile-scalar"
    REDUCE_EXPAND = "axis reduce and expand"
    MEMORY = "memory"
    MATRIX = "matrix"
    MOVEMENT = "data movement and layout"
    COMPLEX = "complex"
    MANUAL_SYNC = "manual sync (extension)"
    COMM = "communication across ranks"


class Role(enum.Enum):
    IN = "in"
    OUT = "out"
    INOUT = "inout"


class Kind(enum.Enum):
    TILE = "tile"
    GLOBAL = "global"    # a global tensor addressed as %g[%i, %j, ...]
    SCALAR = "scalar"    # integer or float scalar value
    INDEX = "index"      # an index-typed scalar (offsets, counts)
    EVENT = "event"
    PIPE = "pipe"        # a pipe name (set_flag, wait_flag, pipe_barrier, tsync)


class Domain(enum.Enum):
    """Which elements an instruction computes; everything else in its outputs is unspecified."""

    DST = "the destination's valid region"
    SRC = "the source's valid region"
    STATIC_DST = "the destination's whole static tile"
    MATMUL = "M = A.valid_rows, K = A.valid_cols, N = B.valid_cols"
    ROW0 = "the first row of the destination, dst.valid_cols elements"
    NONE = "no tile elements (control, sync or hint)"
    SPECIAL = "stated in the semantics paragraph"


@dataclass(frozen=True)
class Operand:
    name: str
    role: Role
    kind: Kind
    doc: str = ""
    optional: bool = False
    locations: tuple[Location, ...] | None = None   # architecture-wide; None = any
    layouts: tuple[Layout, ...] | None = None
    # global operands: the tile operand whose valid region is the window moved at the indices,
    # WHOLE when the operand is the whole tensor (its indices must be zero), ELEMENT for the one
    # element at the indices, or another global operand whose whole shape is the window here
    window: str | None = None
    # index operands whose semantics fault outside a fixed range: the inclusive (lo, hi) the
    # value must lie in (hi None: no upper end), and the alignment it must be a multiple of.
    # Conformance tries the values at and just past these edges; the docs show them.
    bounds: tuple[int, int | None] | None = None
    multiple: int | None = None


WHOLE = "*"
ELEMENT = "."


@dataclass(frozen=True)
class Attr:
    """An attribute: an enum (``enum`` set), a bool, or an int; ``default`` None = required."""

    name: str
    type: type                      # an enum class, bool or int
    default: Any = None
    doc: str = ""

    @property
    def required(self) -> bool:
        return self.default is None


#: The ``sum`` contract as conformance checks it (conformance/contracts.py), in f64.
SUM_BOUND = ("order-independent, accumulated in at least f32: |result - exact| <= g * S + m * d32 + "
             "u(dtype) * (|exact| + g * S + m * d32) + d(dtype) / 2, where exact is the exact sum, S the "
             "sum of |terms|, m = n + 2 (n = reduction length), g = m * u32 / (1 - m * u32), u32 = 2**-24 "
             "and d32 f32's smallest denormal, u(dtype) half the dtype's epsilon and d(dtype) its smallest "
             "denormal (one final rounding); a finite exact sum gives a finite result unless that bound "
             "reaches the dtype's overflow threshold; NaN exactly where the exact sum is NaN; where S "
             "exceeds f32's range, intermediate overflow is order-dependent and only the NaN rule holds")
PRODUCT_BOUND = ("order-independent, multiplied in at least f32: the sum bound with S = |exact product|; "
                 "where a partial product may leave f32's normal range (the product of the factors "
                 "above 1 in magnitude overflows, or of the non-zero ones below 1 underflows) the result "
                 "depends on the order and only the NaN rule holds; a zero result has the exact product's sign")


@dataclass(frozen=True)
class Numerics:
    """The accuracy contract a backend must meet for this instruction.

    kinds: ``exact`` (bit-exact), ``rounded`` (correctly rounded, compute in f32 for
    narrow floats, round once), ``ulp`` (within ``ulp`` units in the last place of the
    correctly rounded result), ``sum`` (order-independent sum/dot accumulated in at least
    f32, see ``SUM_BOUND``; ``product=True`` for products), ``unspecified`` (not tested).
    """

    kind: str
    ulp: float = 0.0
    note: str = ""
    product: bool = False        # kind "sum" over products of the terms (TROWPROD, TCOLPROD)

    def describe(self) -> str:
        base = {
            "exact": "exact: bit-identical results on every backend",
            "rounded": "correctly rounded (IEEE binary32 round-to-nearest-even; f16/bf16 compute in f32 and round once); integers wrap; a NaN result may be any NaN (payloads are not specified)",
            "ulp": f"within {self.ulp:g} ulp of the correctly rounded result; special values exact",
            "sum": PRODUCT_BOUND if self.product else SUM_BOUND,
            "unspecified": "backend-defined (conformance does not test values)",
        }[self.kind]
        return base + (f"; {self.note}" if self.note else "")


EXACT = Numerics("exact")
ROUNDED = Numerics("rounded")
#: IEEE 754-2019 maximum/minimum: the result is one operand, bit for bit, except that which
#: NaN a NaN result is stays free (targets differ: x86 keeps an operand's, GPUs canonicalise)
MINMAX = Numerics("rounded", note="the result is one of the operands (nothing is rounded)")
SUM = Numerics("sum")


@dataclass(frozen=True)
class Constraint:
    """A static rule over operand types and attributes. ``check`` returns an error text or None.

    ``code`` is the diagnostic code used when it fails (STRUCT_* for shape/valid-region
    rules, LEGAL_* for location/layout rules).
    """

    doc: str
    check: Callable[[Mapping[str, Type], Mapping[str, Any]], str | None]
    code: str = "STRUCT_SHAPE"


DTypeTuple = tuple[dt.DType, ...]


@dataclass(frozen=True)
class DTypeRule:
    """Legal element-type tuples over ``operands`` (tile or scalar operands, in order)."""

    operands: tuple[str, ...]
    tuples: frozenset[DTypeTuple]

    def allows(self, combo: DTypeTuple) -> bool:
        return combo in self.tuples

    def sorted_tuples(self) -> list[DTypeTuple]:
        order = {d: i for i, d in enumerate(dt.ALL + dt.CODED)}
        return sorted(self.tuples, key=lambda t: [order[d] for d in t])


def same(operands: Sequence[str], dtypes: Sequence[dt.DType]) -> DTypeRule:
    """Every listed operand has the same dtype, drawn from ``dtypes``."""
    return DTypeRule(tuple(operands), frozenset(tuple([d] * len(operands)) for d in dtypes))


def tuples(operands: Sequence[str], combos: Sequence[Sequence[dt.DType]]) -> DTypeRule:
    return DTypeRule(tuple(operands), frozenset(tuple(c) for c in combos))


@dataclass(frozen=True)
class ValueRule:
    """The values an enum attribute or a pipe operand may take on one profile, where a target's
    headers accept fewer than the architecture-wide type; each allowed value may also name the
    element types of ``operand`` it works with (None: any the dtype rule allows). ``unless``: an
    optional operand whose presence selects another form, where the rule does not apply."""

    name: str                                              # the attribute or pipe operand
    values: Mapping[Any, tuple[dt.DType, ...] | None]      # allowed value -> dtypes of ``operand``
    operand: str | None = None
    unless: str | None = None
    code: str = "LEGAL_ATTR"                               # the diagnostic a refused value gets

    def applies(self, present: Any) -> bool:
        return self.unless is None or self.unless not in present

    def error(self, value: Any, dtype: dt.DType | None) -> str | None:
        """Why ``value`` (with ``operand`` of ``dtype``) is refused, or None."""
        if value not in self.values:
            return f"{self.name} = {getattr(value, 'name', value)} is not one of {self.describe_values()}"
        allowed = self.values[value]
        if allowed is not None and dtype is not None and dtype not in allowed:
            return (f"{self.name} = {getattr(value, 'name', value)} takes {self.operand} of "
                    f"{dt.names(allowed)}, got {dtype}")
        return None

    def describe_values(self) -> str:
        return " ".join(getattr(v, "name", str(v)) for v in self.values)

    def describe(self) -> str:
        """One line for the docs: each value, with the element types it is limited to."""
        groups: list[tuple[list[str], tuple[dt.DType, ...] | None]] = []
        for v, ds in self.values.items():        # neighbours with the same element types share a clause
            if groups and groups[-1][1] == ds:
                groups[-1][0].append(getattr(v, "name", str(v)))
            else:
                groups.append(([getattr(v, "name", str(v))], ds))
        parts = [" ".join(vs) + ("" if ds is None else f" ({self.operand}: {dt.names(ds)})") for vs, ds in groups]
        form = f" (without {self.unless})" if self.unless else ""
        return f"{self.name}{form}: " + ", ".join(parts)


@dataclass(frozen=True)
class FormRule:
    """The element-type tuples one profile converts in the form an optional operand selects,
    where that form takes fewer than the dtype rule (the union of every form) allows: a check
    keyed on the operand's presence, which a profile-blind constraint cannot make."""

    operand: str                              # the optional operand whose presence selects the form
    rule: DTypeRule                           # the tuples that form takes on the profile
    code: str = "LEGAL_DTYPE"

    def applies(self, present: Any) -> bool:
        return self.operand in present

    def error(self, combo: DTypeTuple) -> str | None:
        """Why the form refuses ``combo`` over ``rule.operands``, or None."""
        if self.rule.allows(combo):
            return None
        return (f"with {self.operand}, ({', '.join(self.rule.operands)}) = "
                f"({', '.join(d.name for d in combo)}) is not converted")

    def describe(self) -> str:
        """One line for the docs: the form and its tuples."""
        body = "; ".join("(" + ", ".join(d.name for d in t) + ")" for t in self.rule.sorted_tuples())
        return f"with {self.operand}: ({', '.join(self.rule.operands)}) in {body or 'nothing'}"


@dataclass(frozen=True)
class Example:
    """A concrete legal use: operand types by name (PTO-AS spellings) and attribute values."""

    types: Mapping[str, str]
    attrs: Mapping[str, Any] = field(default_factory=dict)
    scalars: Mapping[str, Any] = field(default_factory=dict)  # values for scalar/index operands
    # the control state it runs in, for instructions whose meaning depends on earlier ones (a
    # TPOP needs a pushed FIFO slot); passed as a deep copy to semantics taking ``state``
    state: Mapping[str, Any] | None = None
    # row 0 of a tile operand whose values the instruction reads as configuration (a config
    # tile's fields), for an example that must run as written; other tiles hold any values
    contents: Mapping[str, tuple[float, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Instruction:
    mnemonic: str
    family: Family
    summary: str
    operands: tuple[Operand, ...]
    semantics: Callable[..., Any]
    dtypes: DTypeRule | None
    numerics: Numerics
    domain: Domain
    pipe: Pipe | Callable[[Mapping[str, Type]], Pipe]
    doc: str
    example: Example
    attrs: tuple[Attr, ...] = ()
    constraints: tuple[Constraint, ...] = ()
    profile_dtypes: Mapping[str, DTypeRule] = field(default_factory=dict)  # per-profile narrowing
    profiles: tuple[str, ...] | None = None   # profiles that support it at all; None = all
    aliases: tuple[str, ...] = ()             # other accepted mnemonics (e.g. tmatmul.acc)
    more_examples: tuple[Example, ...] = ()   # legal uses of other forms (conversions, modes)
    extension: bool = False                   # not in the public PTO inventory
    special_values: str = ""                  # NaN / inf / -0 / overflow / div-by-zero behaviour
    # per-profile limits on attribute / pipe operand values (a newer target not named borrows
    # its base profile's, as dtype_rule does)
    profile_values: Mapping[str, tuple[ValueRule, ...]] = field(default_factory=dict)
    # per-profile dtype tuples of the form an optional operand selects (borrowed as profile_values)
    profile_forms: Mapping[str, tuple[FormRule, ...]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.mnemonic

    @property
    def asm_name(self) -> str:
        """Canonical PTO-AS mnemonic (lowercase)."""
        return self.mnemonic.lower()

    def operand(self, name: str) -> Operand:
        for o in self.operands:
            if o.name == name:
                return o
        raise KeyError(f"{self.mnemonic} has no operand {name!r}")

    def attr(self, name: str) -> Attr:
        for a in self.attrs:
            if a.name == name:
                return a
        raise KeyError(f"{self.mnemonic} has no attribute {name!r}")

    @property
    def outputs(self) -> tuple[Operand, ...]:
        return tuple(o for o in self.operands if o.role is not Role.IN)

    @property
    def inputs(self) -> tuple[Operand, ...]:
        return tuple(o for o in self.operands if o.role is not Role.OUT)

    def dtype_rule(self, profile: str | None = None) -> DTypeRule | None:
        """The dtype rule, narrowed for ``profile`` when the declaration narrows it, or by the
        target table (isa/targets.py) for the newer targets the declaration does not name."""
        if profile is not None and profile in self.profile_dtypes:
            return self.profile_dtypes[profile]
        target = TARGETS.get(profile) if profile is not None else None
        if target is not None:
            base = self.dtype_rule(target.base)
            if base is not None:
                return DTypeRule(base.operands, target.narrow(self.mnemonic, base.operands, base.tuples))
        return self.dtypes

    @staticmethod
    def _per_profile(table: Mapping[str, tuple], profile: str | None) -> tuple:
        """``table``'s entry for ``profile``, else that of the profile a newer target borrows from
        (isa/targets.py); none on a profile neither names."""
        if profile is None:
            return ()
        if profile in table:
            return table[profile]
        target = TARGETS.get(profile)
        return Instruction._per_profile(table, target.base) if target is not None else ()

    def value_rules(self, profile: str | None) -> tuple[ValueRule, ...]:
        """The value limits on ``profile`` (the declaration's or the borrowed profile's)."""
        return self._per_profile(self.profile_values, profile)

    def form_rules(self, profile: str | None) -> tuple[FormRule, ...]:
        """The per-form dtype limits on ``profile`` (the declaration's or the borrowed profile's)."""
        return self._per_profile(self.profile_forms, profile)

    def supported_on(self, profile: str) -> bool:
        """Legal on ``profile``: the declaration's ``profiles`` (None = all), except that a newer
        target the declaration does not name decides by its implementation table."""
        target = TARGETS.get(profile)
        if target is not None and (self.profiles is None or profile not in self.profiles):
            rule = self.dtype_rule(profile)
            return target.provides(self.mnemonic) and (rule is None or bool(rule.tuples))
        return self.profiles is None or profile in self.profiles

    def pipe_for(self, types: Mapping[str, Type]) -> Pipe:
        return self.pipe(types) if callable(self.pipe) else self.pipe

    def with_defaults(self, attrs: Mapping[str, Any]) -> dict[str, Any]:
        out = {a.name: a.default for a in self.attrs if a.default is not None}
        out.update(attrs)
        return out

    def execute(self, **kwargs: Any) -> Any:
        """Run the reference semantics: operands and attributes by name; defaults filled in.

        IEEE floating-point exceptions are flags, not traps: overflow, underflow, invalid and
        signalling-NaN conversions produce their IEEE results without numpy warnings."""
        args = self.with_defaults({a.name: kwargs.pop(a.name) for a in self.attrs if a.name in kwargs})
        args.update(kwargs)
        with np.errstate(all="ignore"):
            return self.semantics(**args)
