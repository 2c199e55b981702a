"""llvm lowering rules: quantisation (``isa/families/quant.py``).

TDEQUANT is a fusable map rule: the integer code widens exactly to f32, then one f32 subtraction
and one f32 multiplication, each rounded (no fused multiply-add, as the reference).
SET_QUANT_SCALAR / SET_QUANT_VECTOR write per-run control registers (``cg.state``) under the
reference's state keys, one slot per field, for a consumer such as a pre-quantising move:

* ``quant_scalar.scale`` (f64 holding the f32 exactly), ``quant_scalar.out_type`` (i64: the
  index of the ``QuantOutType`` member, -1 until set);
* ``quant_vector.ptr`` (i64: the scaling tile's address, 0 until set), ``quant_vector.cols``
  (i64: its valid columns), so the consumer reads the tile's values when it runs.
"""
from __future__ import annotations

from typing import Any

from llvmlite import ir

from ....assembler.ir import TileOp
from ....isa.attrs import QuantOutType
from ....isa.families.quant import STATE_KEYS
from .. import numerics as N
from ..codegen import Access, KernelCodegen, MapRule

I64, F32, F64 = N.I64, N.F32, N.F64

SCALAR_KEY = STATE_KEYS["SET_QUANT_SCALAR"]
VECTOR_KEY = STATE_KEYS["SET_QUANT_VECTOR"]
_OUT_CODES = {m: k for k, m in enumerate(QuantOutType)}
_SLOTS = {"scale": (F64, 0.0), "out_type": (I64, -1), "ptr": (I64, 0), "cols": (I64, 0)}


def quant_slot(cg: KernelCodegen, key: str, field: str) -> ir.Value:
    """The stack slot of one quantisation-register field (see the module doc for the types)."""
    ty, init = _SLOTS[field]
    return cg.state(f"{key}.{field}", ty, ir.Constant(ty, init))


def _dequant_value(cg: KernelCodegen, op: TileOp, vals: list[ir.Value]) -> ir.Value:
    b = cg.b
    code, scale, offset = vals
    x = b.sitofp(code, F32)                       # i8 / i16 are exact in f32
    return b.fmul(b.fsub(x, offset), scale)


def _dequant_check(cg: KernelCodegen, op: TileOp) -> None:
    """scale/offset are read as rows x 1 even when dst has no valid column."""
    dst = cg.tile(op, "dst")
    for name in ("scale", "offset"):
        cg.check_read(cg.tile(op, name), dst.vrows, ir.Constant(I64, 1), name)


def _set_quant_scalar(cg: KernelCodegen, op: TileOp) -> None:
    b = cg.b
    v = cg.scalar(op, "preQuantScalar")
    if v is None:
        return
    b.store(b.fpext(v, F64), quant_slot(cg, SCALAR_KEY, "scale"))
    code = _OUT_CODES[cg.attrs(op)["OutType"]]
    b.store(ir.Constant(I64, code), quant_slot(cg, SCALAR_KEY, "out_type"))


def _set_quant_vector(cg: KernelCodegen, op: TileOp) -> None:
    b = cg.b
    fp = cg.tile(op, "fp")
    b.store(b.ptrtoint(fp.ptr, I64), quant_slot(cg, VECTOR_KEY, "ptr"))
    b.store(fp.vcols, quant_slot(cg, VECTOR_KEY, "cols"))


RULES: dict[str, Any] = {
    "TDEQUANT": MapRule((Access("src", "elem", "src"), Access("scale", "row", "scale"),
                         Access("offset", "row", "offset")), _dequant_value, check=_dequant_check),
    "SET_QUANT_SCALAR": _set_quant_scalar,
    "SET_QUANT_VECTOR": _set_quant_vector,
}
