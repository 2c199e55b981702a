"""llvm addressing of the global scale layouts: the index terms of ``isa/glayouts.py`` in IR.

A scale-layout read checks what the reference's ``_read`` checks, in the same order (whole K
units, then each dim's index range, before any element is read), then visits every (i, j) of
the matrix with the address of its element: the written indices plus the layout's terms, through
the tensor's strides.
"""
from __future__ import annotations

from typing import Callable

from llvmlite import ir

from ...isa import glayouts as GL
from . import numerics as N
from .codegen import GlobalView, KernelCodegen, span_outside

I64 = N.I64


def _c(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


def _term(b: ir.IRBuilder, t: GL.Term, x: ir.Value) -> ir.Value:
    """``coef * ((x // div) % mod)`` for x >= 0."""
    v = b.udiv(x, _c(t.div)) if t.div != 1 else x
    if t.mod is not None:
        v = b.urem(v, _c(t.mod))
    return b.mul(v, _c(t.coef)) if t.coef != 1 else v


def _top(b: ir.IRBuilder, t: GL.Term, n: ir.Value) -> ir.Value:
    """``Term.top``: the term's largest value over x in [0, n), n > 0."""
    q = b.udiv(b.sub(n, _c(1)), _c(t.div))
    if t.mod is not None:
        q = b.select(b.icmp_unsigned("<", q, _c(t.mod - 1)), q, _c(t.mod - 1))
    return b.mul(q, _c(t.coef))


def read_scale(cg: KernelCodegen, g: GlobalView, rows: ir.Value, cols: ir.Value, what: str,
               each: Callable[[ir.Value, ir.Value, ir.Value], None] | None) -> None:
    """Check a rows x cols scale-matrix read of ``g`` and call ``each(i, j, address)`` per
    element (None: only the checks, as TPREFETCH)."""
    s = GL.of(g.type.layout)
    assert s is not None
    b = cg.b
    k = cols if s.side == "A" else rows
    cg.fault(b.icmp_unsigned("!=", b.urem(k, _c(s.k_unit)), _c(0)), "RUNTIME_VALID_REGION",
             f"a {s.layout.value} load moves whole units of {s.k_unit} along K",
             expected=f"valid {s.k_axis} a multiple of {s.k_unit}", actual="{0}", details=[k])
    nonempty = b.and_(b.icmp_signed(">", rows, _c(0)), b.icmp_signed(">", cols, _c(0)))
    n = {"i": rows, "j": cols}
    for d, terms in enumerate(s.index):
        need = _c(1)
        for t in terms:
            need = b.add(need, _top(b, t, n[t.var]))
        bad = span_outside(b, g.offsets[d], need, g.shape[d])
        cg.fault(b.and_(nonempty, bad), "RUNTIME_OOB", f"{what} accessed out of bounds in dim {d}",
                 expected="indices in [0, {0})", actual="[{1}, {1+2})", details=[g.shape[d], g.offsets[d], need])
    if each is None:
        return
    with cg.loop(0, rows, name="r") as i:
        with cg.loop(0, cols, name="c") as j:
            x = {"i": i, "j": j}
            flat = _c(0)
            for d, terms in enumerate(s.index):
                idx = g.offsets[d]
                for t in terms:
                    idx = b.add(idx, _term(b, t, x[t.var]))
                flat = b.add(flat, b.mul(idx, g.strides[d]))
            each(i, j, b.gep(g.ptr, [flat], source_etype=g.elem))


def visit_conv(cg: KernelCodegen, g: GlobalView, rows: ir.Value, cols: ir.Value, what: str,
               each: Callable[[ir.Value, ir.Value, ir.Value], None] | None) -> None:
    """A rows x cols transfer with a convolution-layout tensor (``isa.glayouts.conv_places``):
    the same checks in the same order (the valid region is the tensor's matrix, then each dim's
    index range), then ``each(i, j, address)`` per element (None: only the checks)."""
    c = GL.conv_of(g.type.layout)
    assert c is not None
    b = cg.b
    c0 = GL.c0_of(g.type.dtype.itemsize)

    def radix(d: int, part: str) -> ir.Value:
        """``GL.digit_extent`` in IR (a folded dim's extent is a static multiple of C0)."""
        if part == GL.INNER:
            return _c(c0)
        return b.udiv(g.shape[d], _c(c0)) if part == GL.OUTER else g.shape[d]

    def prod(digits: tuple[tuple[int, str], ...]) -> ir.Value:
        n = _c(1)
        for d, part in digits:
            n = b.mul(n, radix(d, part))
        return n

    want_r, want_c = prod(c.digits("i")), prod(c.digits("j"))
    bad = b.or_(b.icmp_signed("!=", rows, want_r), b.icmp_signed("!=", cols, want_c))
    cg.fault(bad, "RUNTIME_VALID_REGION", f"a {c.layout.value} transfer moves the whole tensor's matrix",
             expected="valid region {0}x{1}", actual="{2}x{3}", details=[want_r, want_c, rows, cols])
    nonempty = b.and_(b.icmp_signed(">", rows, _c(0)), b.icmp_signed(">", cols, _c(0)))
    for d in range(GL.RANK):
        out = span_outside(b, g.offsets[d], g.shape[d], g.shape[d])
        cg.fault(b.and_(nonempty, out), "RUNTIME_OOB", f"{what} accessed out of bounds in dim {d}",
                 expected="indices in [0, {0})", actual="[{1}, {1+0})", details=[g.shape[d], g.offsets[d]])
    if each is None:
        return
    radices = [(var, d, part, prod(inner), radix(d, part)) for var, d, part, inner in GL.conv_radices(c)]
    with cg.loop(0, rows, name="r") as i:
        with cg.loop(0, cols, name="c") as j:
            x = {"i": i, "j": j}
            index = list(g.offsets[:GL.RANK])
            for var, d, part, div, mod in radices:       # inside the loops every extent is > 0
                digit = b.urem(b.udiv(x[var], div), mod)
                index[d] = b.add(index[d], b.mul(digit, _c(c0)) if part == GL.OUTER else digit)
            flat = _c(0)
            for d in range(GL.RANK):
                flat = b.add(flat, b.mul(index[d], g.strides[d]))
            each(i, j, b.gep(g.ptr, [flat], source_etype=g.elem))
