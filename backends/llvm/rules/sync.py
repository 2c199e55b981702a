"""llvm lowering rules: sync, binding and control-state instructions.

The JIT runs in program order, so flags, barriers and tsync only validate their operands with
the reference's fault codes (``isa/families/sync.py``); pipes are literal (checked when the
kernel is generated, faulting when it runs), event ids and config fields may be run-time
values and are checked in generated code. The configuration instructions write per-run
control registers (``cg.state``) under the keys below, one i64 slot per field, so a consumer
such as TIMG2COL reads e.g. ``config_slot(cg, FMATRIX_KEY, "fmap_h")``.
"""
from __future__ import annotations

from typing import Any

from llvmlite import ir

from ....assembler.ir import PipeLit, TileOp
from ....isa.attrs import RoundMode
from ....isa.families.sync import ALIGN, CONFIG_COLUMNS, EVENT_IDS, FMATRIX_FIELDS, RPT_FIELDS, STATE_KEYS
from ....isa.types import Pipe
from .. import numerics as N
from ..codegen import KernelCodegen, widen

I1, I8, I64, F64 = N.I1, N.I8, N.I64, N.F64

#: ``cg.state`` keys (the reference's ``state`` dict keys): fields live at "<key>.<field>".
FMATRIX_KEY = STATE_KEYS["SETFMATRIX"]                 # fields: FMATRIX_FIELDS (i64 each)
IMG2COL_RPT_KEY = STATE_KEYS["SET_IMG2COL_RPT"]        # fields: RPT_FIELDS (i64 each)
IMG2COL_PADDING_KEY = STATE_KEYS["SET_IMG2COL_PADDING"]  # field "pad_value" (f64)
HF32_KEY = STATE_KEYS["SETHF32MODE"]                   # fields "enable" (i64 0/1), "mode" (i64)
TF32_KEY = STATE_KEYS["SETTF32MODE"]
_MODE_CODES = {m: k for k, m in enumerate(RoundMode)}   # "mode" field: index in RoundMode


def config_slot(cg: KernelCodegen, key: str, field: str) -> ir.Value:
    """The stack slot of one control-register field (0 until an instruction sets it);
    ``pad_value`` is an f64 slot, every other field i64."""
    if field == "pad_value":
        return cg.state(f"{key}.{field}", F64, ir.Constant(F64, 0.0))
    return cg.state(f"{key}.{field}", I64, ir.Constant(I64, 0))


def _c(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


def _always(cg: KernelCodegen, code: str, message: str, expected: str, actual: str) -> None:
    """A fault the operands make certain (literal pipes): raised when the kernel reaches it."""
    cg.fault(ir.Constant(I1, 1), code, message, expected=expected.replace("{", "{{").replace("}", "}}"),
             actual=actual.replace("{", "{{").replace("}", "}}"))


def _pipe(cg: KernelCodegen, op: TileOp, name: str) -> Pipe | None:
    """A pipe operand as a Pipe; a fault (RUNTIME_BAD_PIPE) for anything else."""
    a = op.args.get(name)
    if isinstance(a, PipeLit) and isinstance(a.pipe, Pipe):
        return a.pipe
    _always(cg, "RUNTIME_BAD_PIPE", f"{name} is not a pipe", " ".join(p.value for p in Pipe), repr(a))
    return None


def _event_id(cg: KernelCodegen, op: TileOp) -> None:
    v = cg.scalar(op, "event_id")
    if v is None:
        _always(cg, "RUNTIME_EVENT_ID", "event id out of range", f"an integer in [0, {EVENT_IDS})", "None")
        return
    b = cg.b
    bad = b.or_(b.icmp_signed("<", v, _c(0)), b.icmp_signed(">=", v, _c(EVENT_IDS)))
    cg.fault(bad, "RUNTIME_EVENT_ID", "event id out of range", expected=f"an integer in [0, {EVENT_IDS})",
             actual="{0}", details=[v])


def _flag(cg: KernelCodegen, op: TileOp) -> None:
    """SET_FLAG / WAIT_FLAG: two different concrete pipes and an event id in 0..7."""
    src, dst = _pipe(cg, op, "src_pipe"), _pipe(cg, op, "dst_pipe")
    if src is None or dst is None:
        return
    for what, p in (("src_pipe", src), ("dst_pipe", dst)):
        if p is Pipe.ALL:
            _always(cg, "RUNTIME_BAD_PIPE", f"{what} cannot be ALL in a flag", "a single pipe", "ALL")
            return
    if src is dst:
        _always(cg, "RUNTIME_SAME_PIPE", "a flag must join two different pipes", "src_pipe != dst_pipe",
                f"{src.value} -> {dst.value}")
        return
    _event_id(cg, op)


def _pipe_barrier(cg: KernelCodegen, op: TileOp) -> None:
    _pipe(cg, op, "pipe")


def _tsync(cg: KernelCodegen, op: TileOp) -> None:
    event, pipe = op.args.get("event"), op.args.get("pipe")
    if (event is None) == (pipe is None):
        _always(cg, "RUNTIME_SYNC_FORM", "tsync takes either an event or a pipe", "exactly one of event, pipe",
                "both" if event is not None else "neither")
        return
    if pipe is not None:
        _pipe(cg, op, "pipe")


def _tassign(cg: KernelCodegen, op: TileOp) -> None:
    """Only the address checks: the tile keeps its storage (contents unspecified). The
    alignment test reads the operand's own bits (``cg.scalar`` saturates a u64 above 2^63 - 1;
    its low bits are what alignment is about)."""
    addr = cg.scalar(op, "addr")
    if addr is None:
        _always(cg, "RUNTIME_BAD_ADDRESS", "tile address must be a non-negative integer", "an integer >= 0",
                "None")
        return
    b = cg.b
    a = op.args["addr"]
    bits = widen(b, cg.value(a), a.type)   # type: ignore[arg-type,union-attr]
    cg.fault(b.icmp_signed("<", addr, _c(0)), "RUNTIME_BAD_ADDRESS", "tile address must be a non-negative integer",
             expected="an integer >= 0", actual="{0}", details=[addr])
    cg.fault(b.icmp_unsigned("!=", b.and_(bits, _c(ALIGN - 1)), _c(0)),
             "RUNTIME_MISALIGNED", "tile address is not 32-byte aligned", expected=f"a multiple of {ALIGN}",
             actual="{0}", details=[addr])


def _from_config(cg: KernelCodegen, op: TileOp, names: tuple[str, ...]) -> dict[str, ir.Value] | None:
    """The public form's fields read from row 0 of the config tile (the reference's
    ``_from_config``, checks in its order: the valid region, then each integer field holding an
    integer); None for the scalar-field form."""
    if "cfg" not in op.args:
        return None
    b = cg.b
    t = cg.tile(op, "cfg")
    cg.check_read(t, _c(1), _c(len(CONFIG_COLUMNS)), "the config tile")
    out = {n: t.load(b, _c(0), _c(CONFIG_COLUMNS.index(n))) for n in names}
    for name, v in out.items():
        if name != "pad_value" and isinstance(v.type, ir.FloatType):
            whole = cg.intrinsic("llvm.trunc.f32", v.type, [v])
            cg.fault(b.fcmp_unordered("!=", v, whole), "RUNTIME_BAD_CONFIG", f"{name} out of range",
                     expected="an integer", actual="a fraction, NaN or infinity")
    return out


def _config(key: str, fields: dict[str, tuple[int, int]]) -> Any:
    def rule(cg: KernelCodegen, op: TileOp) -> None:
        b = cg.b
        read = _from_config(cg, op, tuple(fields))
        values = []
        for name, (lo, hi) in fields.items():         # every field checked before any is recorded
            v = cg.scalar(op, name) if read is None else read[name]
            if v is None:
                _always(cg, "RUNTIME_BAD_CONFIG", f"{name} out of range", f"an integer in [{lo}, {hi}]", "None")
                return
            if isinstance(v.type, ir.FloatType):       # an integral f32 from the config tile
                bad = b.or_(b.fcmp_ordered("<", v, ir.Constant(v.type, lo)), b.fcmp_ordered(">", v, ir.Constant(v.type, hi)))
                cg.fault(bad, "RUNTIME_BAD_CONFIG", f"{name} out of range", expected=f"an integer in [{lo}, {hi}]",
                         actual="{0}", details=[v])
                v = b.fptosi(v, I64)
            elif v.type != I64:                        # an i32 config tile
                v = b.sext(v, I64)
            bad = b.or_(b.icmp_signed("<", v, _c(lo)), b.icmp_signed(">", v, _c(hi)))
            cg.fault(bad, "RUNTIME_BAD_CONFIG", f"{name} out of range", expected=f"an integer in [{lo}, {hi}]",
                     actual="{0}", details=[v])
            values.append((name, v))
        for name, v in values:
            b.store(v, config_slot(cg, key, name))
    return rule


def _tset_img2col_padding(cg: KernelCodegen, op: TileOp) -> None:
    """Records the pad value as given (f64; integers converted by their signedness)."""
    b = cg.b
    read = _from_config(cg, op, ("pad_value",))
    if read is not None:
        v = read["pad_value"]
        f = b.fpext(v, F64) if isinstance(v.type, ir.FloatType) else b.sitofp(v, F64)
        b.store(f, config_slot(cg, IMG2COL_PADDING_KEY, "pad_value"))
        return
    v = cg.scalar(op, "pad_value")
    if v is None:
        return
    t = op.args["pad_value"].type   # type: ignore[union-attr]
    if isinstance(v.type, ir.FloatType):
        f = b.fpext(v, F64)
    elif t.name != "index" and not N.signed(t.dtype):
        f = b.uitofp(v, F64)
    else:
        f = b.sitofp(v, F64)
    b.store(f, config_slot(cg, IMG2COL_PADDING_KEY, "pad_value"))


def _set_mode(key: str) -> Any:
    def rule(cg: KernelCodegen, op: TileOp) -> None:
        a = cg.attrs(op)
        b = cg.b
        b.store(_c(1 if a.get("enable") else 0), config_slot(cg, key, "enable"))
        b.store(_c(_MODE_CODES.get(a.get("mode", RoundMode.RINT), 0)), config_slot(cg, key, "mode"))
    return rule


RULES: dict[str, Any] = {
    "SET_FLAG": _flag, "WAIT_FLAG": _flag, "PIPE_BARRIER": _pipe_barrier, "TSYNC": _tsync,
    "TASSIGN": _tassign,
    "SETFMATRIX": _config(FMATRIX_KEY, FMATRIX_FIELDS),
    "SET_IMG2COL_RPT": _config(IMG2COL_RPT_KEY, RPT_FIELDS),
    "SET_IMG2COL_PADDING": _tset_img2col_padding,
    "SETHF32MODE": _set_mode(HF32_KEY), "SETTF32MODE": _set_mode(TF32_KEY),
}
