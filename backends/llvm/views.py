"""Tensor views in generated code (decision "Tensor views"): a view is an address, shapes and
element strides in stack slots, the same parts a global parameter has in its argument slots,
so ``KernelCodegen.glob`` addresses both alike. Each view is checked against its source when
it is made, with the reference backend's checks in the same order (``reference/views.py``)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ...assembler.ir import View, ViewQuery
from ...isa.types import GlobalType
from . import numerics as N

if TYPE_CHECKING:
    from .codegen import KernelCodegen

I64, I128 = N.I64, ir.IntType(128)
Parts = tuple[ir.Value, list[ir.Value], list[ir.Value]]     # address (i64), shape, element strides


def define(cg: "KernelCodegen", name: str, parts: Parts) -> None:
    """Store a view's parts in its stack slots (made at its first definition)."""
    addr, shape, strides = parts
    if name not in cg.views:
        cg.views[name] = (cg.alloca(I64, name + ".addr"), [cg.alloca(I64, f"{name}.n{d}") for d in range(len(shape))],
                          [cg.alloca(I64, f"{name}.s{d}") for d in range(len(strides))])
    a, ns, ss = cg.views[name]
    for v, slot in zip([addr, *shape, *strides], [a, *ns, *ss]):
        cg.b.store(v, slot)


def _typed(cg: "KernelCodegen", op: str, t: GlobalType, shape: list[ir.Value], strides: list[ir.Value]) -> None:
    """RUNTIME_VIEW_SHAPE where the view's extents or strides differ from static ones of its type."""
    for what, have, want in (("shape", shape, t.shape), ("strides", strides, t.strides or ())):
        for d, (h, w) in enumerate(zip(have, want)):
            if w is not None:
                cg.fault(cg.b.icmp_signed("!=", h, cg.i64(w)), "RUNTIME_VIEW_SHAPE",
                         f"pto.{op}: the view's {what} in dim {d} differs from its type",
                         expected=f"{what} {t}", actual=f"{{0}} in dim {d}", details=[h])


def make_tensor_view(cg: "KernelCodegen", s: View) -> None:
    b = cg.b
    addr, base_shape, base_strides = cg.global_parts(s.source.name, s.source.type)   # type: ignore[arg-type]
    sizes, strides = [cg.index(x) for x in s.sizes], [cg.index(x) for x in s.strides]
    zero = cg.i64(0)
    for what, items in (("size", sizes), ("stride", strides)):
        for d, v in enumerate(items):
            cg.fault(b.icmp_signed("<", v, zero), "RUNTIME_VIEW_SHAPE",
                     f"pto.make_tensor_view: {what} in dim {d} is negative", expected=f"a {what} >= 0",
                     actual="{0}", details=[v])
    empty = ir.Constant(N.I1, 0)
    span = ir.Constant(I128, 1)
    cap = ir.Constant(I128, 1 << 64)       # each term clamped: five of them cannot overflow i128
    for n, k in zip(sizes, strides):
        empty = b.or_(empty, b.icmp_signed("==", n, zero))
        term = b.mul(b.sext(b.sub(n, cg.i64(1)), I128), b.sext(k, I128))
        span = b.add(span, b.select(b.icmp_signed(">", term, cap), cap, term))
    outside = b.and_(b.not_(empty), b.icmp_signed(">", span, b.sext(base_shape[0], I128)))
    cg.fault(outside, "RUNTIME_OOB", "pto.make_tensor_view: the view reaches outside its pointer",
             expected="at most {0} elements", actual="more (shape and strides of the view)", details=[base_shape[0]])
    mem = [b.mul(k, base_strides[0]) for k in strides]
    t: GlobalType = s.result.type   # type: ignore[assignment]
    _typed(cg, s.op, t, sizes, mem)
    define(cg, s.result.name, (addr, sizes, mem))


def partition_view(cg: "KernelCodegen", s: View) -> None:
    from .codegen import span_outside
    b = cg.b
    addr, shape, strides = cg.global_parts(s.source.name, s.source.type)   # type: ignore[arg-type]
    offs, sizes = [cg.index(x) for x in s.offsets], [cg.index(x) for x in s.sizes]
    flat = cg.i64(0)
    for d, (o, n, ext, st) in enumerate(zip(offs, sizes, shape, strides)):
        cg.fault(span_outside(b, o, n, ext), "RUNTIME_OOB",
                 f"pto.partition_view: the window is outside the view in dim {d}",
                 expected="offset >= 0, size >= 0, offset + size <= {0}", actual="offset {1}, size {2}",
                 details=[ext, o, n])
        flat = b.add(flat, b.mul(o, st))
    t: GlobalType = s.result.type   # type: ignore[assignment]
    _typed(cg, s.op, t, sizes, strides)
    size = cg.i64(t.dtype.np_dtype.itemsize)
    define(cg, s.result.name, (b.add(addr, b.mul(flat, size)), sizes, strides))


def tensor_view_addr(cg: "KernelCodegen", s: View) -> None:
    """A contiguous rank-1 pointer from the view's origin over its footprint."""
    b = cg.b
    addr, shape, strides = cg.global_parts(s.source.name, s.source.type)   # type: ignore[arg-type]
    zero, one = cg.i64(0), cg.i64(1)
    empty = ir.Constant(N.I1, 0)
    span = one
    for n, k in zip(shape, strides):
        empty = b.or_(empty, b.icmp_signed("==", n, zero))
        pos = b.select(b.icmp_signed(">", k, zero), k, zero)
        span = b.add(span, b.mul(b.sub(n, one), pos))
    extent = b.select(empty, zero, span)
    t: GlobalType = s.result.type   # type: ignore[assignment]
    _typed(cg, s.op, t, [extent], [one])
    define(cg, s.result.name, (addr, [extent], [one]))


def query(cg: "KernelCodegen", s: ViewQuery) -> None:
    """The extent or element stride of a run-time dimension (RUNTIME_OOB outside the rank)."""
    b = cg.b
    t: GlobalType = s.source.type   # type: ignore[assignment]
    _, shape, strides = cg.global_parts(s.source.name, t)
    k = cg.index(s.dim)
    cg.fault(b.or_(b.icmp_signed("<", k, cg.i64(0)), b.icmp_signed(">=", k, cg.i64(t.rank))), "RUNTIME_OOB",
             f"pto.{s.op}: no such dimension", expected=f"[0, {t.rank})", actual="{0}", details=[k])
    items = shape if s.op == "get_tensor_view_dim" else strides
    v = items[0]
    for d in range(1, t.rank):
        v = b.select(b.icmp_signed("==", k, cg.i64(d)), items[d], v)
    cg.set_var(s.result.name, s.result.type, v)   # type: ignore[arg-type]


BUILDERS = {"make_tensor_view": make_tensor_view, "partition_view": partition_view,
            "tensor_view_addr": tensor_view_addr}
