"""Scalar operations (MLIR ``arith`` names) and block-id queries, as one table.

Each row states its operand count and a *class* that fixes both the text form and the
typing rule; the parser, printer and verifier read the class, never the op name.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..isa.types import INDEX, ScalarType

CMPI_PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
CMPF_PREDICATES = ("false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
                   "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true")


@dataclass(frozen=True)
class ScalarOpSpec:
    """``cls`` is one of: int_binary, float_binary, float_unary, cmpi, cmpf, select,
    cast (``: A to B``; ``cast`` names the allowed from/to classes), block (no operands,
    result index), extended (two integer operands, two results: the low half and the high
    half or the carry, ``second`` says which type the second has)."""

    name: str
    arity: int
    cls: str
    cast: tuple[str, str] = ("", "")   # (from, to) classes: int, index, float, int_wider ...
    doc: str = ""
    second: str = ""                   # extended: "same" (a high half) or "i1" (a carry bit)

    @property
    def predicates(self) -> tuple[str, ...]:
        return {"cmpi": CMPI_PREDICATES, "cmpf": CMPF_PREDICATES}.get(self.cls, ())

    @property
    def text_name(self) -> str:
        """Canonical spelling: ``arith.<name>``, block queries ``pto.<name>``."""
        return ("pto." if self.cls == "block" else "arith.") + self.name


def _rows() -> list[ScalarOpSpec]:
    rows = [ScalarOpSpec(n, 2, "int_binary") for n in (
        "addi", "subi", "muli", "divsi", "divui", "remsi", "remui", "floordivsi", "ceildivsi", "ceildivui",
        "andi", "ori", "xori", "shli", "shrsi", "shrui", "maxsi", "minsi", "maxui", "minui")]
    rows += [ScalarOpSpec(n, 2, "float_binary") for n in (
        "addf", "subf", "mulf", "divf", "remf", "maxf", "minf", "maxnumf", "minnumf", "maximumf", "minimumf")]
    rows += [ScalarOpSpec("negf", 1, "float_unary"),
             ScalarOpSpec("cmpi", 2, "cmpi", doc="integer compare, result i1"),
             ScalarOpSpec("cmpf", 2, "cmpf", doc="float compare, result i1"),
             ScalarOpSpec("select", 3, "select", doc="cond ? a : b with an i1 condition")]
    casts = {"index_cast": ("int_or_index", "int_or_index"), "index_castui": ("int_or_index", "int_or_index"),
             "bitcast": ("bits", "bits"), "sitofp": ("int", "float"),
             "uitofp": ("int", "float"), "fptosi": ("float", "int"), "fptoui": ("float", "int"),
             "extsi": ("int", "wider_int"), "extui": ("int", "wider_int"),
             "trunci": ("int", "narrower_int"), "extf": ("float", "wider_float"),
             "truncf": ("float", "narrower_float")}
    rows += [ScalarOpSpec(n, 1, "cast", c) for n, c in casts.items()]
    rows += [ScalarOpSpec("addui_extended", 2, "extended", second="i1", doc="wrapped sum and unsigned carry-out"),
             ScalarOpSpec("mulsi_extended", 2, "extended", second="same", doc="signed product: low, high half"),
             ScalarOpSpec("mului_extended", 2, "extended", second="same", doc="unsigned product: low, high half")]
    rows += [ScalarOpSpec(n, 0, "block", doc="this task's block (sub-block) index or count")
             for n in ("get_block_idx", "get_block_num", "get_subblock_idx", "get_subblock_num")]
    rows += [ScalarOpSpec(n, 0, "block", doc="this rank's id, or the launch's rank count (docs/comm.md)")
             for n in ("get_rank", "get_rank_num")]
    return rows


SCALAR_OPS: dict[str, ScalarOpSpec] = {r.name: r for r in _rows()}

BLOCK_RESULT = INDEX


def lookup(name: str) -> ScalarOpSpec | None:
    """``arith.addi``, ``addi`` and ``pto.get_block_idx`` all name table rows."""
    n = name.lower()
    for prefix in ("arith.", "pto."):
        if n.startswith(prefix):
            n = n[len(prefix):]
            break
    return SCALAR_OPS.get(n)


def second_type(spec: ScalarOpSpec, t: ScalarType) -> ScalarType:
    """The type of an extended op's second result for operands of type ``t``."""
    return ScalarType("i1") if spec.second == "i1" else t


def width(t: ScalarType) -> int:
    """Bits of a scalar type (index counts as 64)."""
    return 64 if t.name == "index" else t.dtype.bits


def is_int(t: object) -> bool:
    return isinstance(t, ScalarType) and not t.is_float


def is_float(t: object) -> bool:
    return isinstance(t, ScalarType) and t.is_float


def cast_error(spec: ScalarOpSpec, src: ScalarType, dst: ScalarType) -> str | None:
    """Why ``spec`` cannot convert ``src`` to ``dst``, or None."""
    frm, to = spec.cast
    if frm in ("int", "int_or_index") and not is_int(src):
        return f"{spec.name} needs an integer operand, got {src}"
    if frm == "float" and not is_float(src):
        return f"{spec.name} needs a float operand, got {src}"
    if to == "float" and not is_float(dst):
        return f"{spec.name} produces a float, not {dst}"
    if to in ("int", "int_or_index", "wider_int", "narrower_int") and not is_int(dst):
        return f"{spec.name} produces an integer, not {dst}"
    if to in ("wider_float", "narrower_float") and not is_float(dst):
        return f"{spec.name} produces a float, not {dst}"
    if spec.name in ("index_cast", "index_castui") and (src.name == "index") == (dst.name == "index"):
        return f"{spec.name} converts between index and an integer type"
    if frm == "bits":
        for t in (src, dst):
            if t.name in ("index", "i1"):
                return f"bitcast reinterprets element bits; {t} has no fixed element width"
        if width(src) != width(dst):
            return f"bitcast keeps the width: {src} is {width(src)} bits, {dst} {width(dst)}"
    if to.startswith("wider") and width(dst) <= width(src):
        return f"{spec.name} needs a wider result than {src}, got {dst}"
    if to.startswith("narrower") and width(dst) >= width(src):
        return f"{spec.name} needs a narrower result than {src}, got {dst}"
    return None
