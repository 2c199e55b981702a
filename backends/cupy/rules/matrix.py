"""cupy lowering rules: TMATMUL / TGEMV and their _ACC and _BIAS forms.

Domain: M = a.valid_rows (1 for GEMV), K = a.valid_cols, N = b.valid_cols; dst's top-left
M x N block is written; reads outside a source's valid region raise RUNTIME_INVALID_READ in the
reference's order (a for GEMV, b, then acc_in / bias).

Two code paths in one unit:

* the exact path (host emulation, and the GPU wherever the next one does not apply): one
  thread per element of C; float products and sums in f64 (every f16/bf16/f32 product is
  exact there) rounded once to f32 after adding acc_in / bias, as the reference computes;
  i8 -> i32 wrapping sums.
* on the GPU only (not ``PTO_HOST``; f16 from sm_70, bf16 from sm_80), f16 or bf16 A and B in shared memory with static
  M, N, K multiples of 16 and an f32 result, plain or _ACC: tensor cores through ``nvcuda::wmma``
  16x16x16 fragments, one warp per 16x16 block of C, f32 accumulation (another summation order
  and precision than the exact path, inside the ``sum`` contract). Host emulation does not run
  this branch: its tests check the code around it; it is compiled by nvcc in the tests and
  its values are checked only on a GPU.
"""
from __future__ import annotations

from typing import Any, Callable

from ....assembler.ir import TileOp
from ..codegen import CTile, Gen

WMMA = 16


def _static(*exprs: str) -> bool:
    return all(e.isdigit() for e in exprs)


def _wmma_ok(g: Gen, op: TileOp, kind: str, m: str, k: str, n: str) -> bool:
    a, b, dst = g.tile(op, "a"), g.tile(op, "b"), g.tile(op, "dst")
    params = {p.name for p in g.kernel.params}
    local = not {a.name, b.name, dst.name} & params          # shared memory: aligned, ours
    acc = g.tile(op, "acc_in") if kind == "acc" else dst
    return (kind in ("plain", "acc") and local and a.dtype == b.dtype and a.dtype.name in ("f16", "bf16")
            and dst.dtype.name == "f32" and _static(m, k, n)
            and all(int(x) % WMMA == 0 and int(x) > 0 for x in (m, k, n))
            and all(t.cols % WMMA == 0 for t in (a, b, dst, acc))        # fragment leading dimensions
            and (kind == "plain" or g.tile(op, "acc_in").name == dst.name or g.tile(op, "acc_in").name not in params))


def _wmma(g: Gen, op: TileOp, kind: str, m: int, k: int, n: int) -> None:
    a, b, dst = g.tile(op, "a"), g.tile(op, "b"), g.tile(op, "dst")
    el = "half" if a.dtype.name == "f16" else "__nv_bfloat16"
    g.line("using namespace nvcuda;")
    w, t, kk = g.fresh("w"), g.fresh("blk"), g.fresh("k")
    g.line(f"const int64_t {w} = PTO_TID / 32;")
    with g.block(f"for (int64_t {t} = {w}; {t} < {(m // WMMA) * (n // WMMA)}; {t} += PTO_NT / 32)"):
        g.line(f"const int64_t bi = ({t} / {n // WMMA}) * {WMMA}, bj = ({t} % {n // WMMA}) * {WMMA};")
        g.line(f"wmma::fragment<wmma::matrix_a, 16, 16, 16, {el}, wmma::row_major> fa;")
        g.line(f"wmma::fragment<wmma::matrix_b, 16, 16, 16, {el}, wmma::row_major> fb;")
        g.line("wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;")
        if kind == "acc":
            acc = g.tile(op, "acc_in")
            g.line(f"wmma::load_matrix_sync(fc, {acc.ptr} + bi * {acc.cols} + bj, {acc.cols}, wmma::mem_row_major);")
        else:
            g.line("wmma::fill_fragment(fc, 0.0f);")
        with g.block(f"for (int64_t {kk} = 0; {kk} < {k}; {kk} += 16)"):
            g.line(f"wmma::load_matrix_sync(fa, (const {el}*)({a.ptr} + bi * {a.cols} + {kk}), {a.cols});")
            g.line(f"wmma::load_matrix_sync(fb, (const {el}*)({b.ptr} + {kk} * {b.cols} + bj), {b.cols});")
            g.line("wmma::mma_sync(fc, fa, fb, fc);")
        g.line(f"wmma::store_matrix_sync({dst.ptr} + bi * {dst.cols} + bj, fc, {dst.cols}, wmma::mem_row_major);")


def _exact(g: Gen, op: TileOp, kind: str, m: str, k: str, n: str) -> None:
    dst, a, b = g.tile(op, "dst"), g.tile(op, "a"), g.tile(op, "b")
    is_float = dst.dtype.is_float
    acc_t = "double" if is_float else "int32_t"
    prior: CTile | None = g.tile(op, "acc_in") if kind == "acc" else g.tile(op, "bias") if kind == "bias" else None
    s, kk = g.fresh("sum"), g.fresh("k")

    def widen(t: CTile, i: str, j: str) -> str:
        return f"(double){t.load(i, j)}" if is_float else f"(int32_t){t.load(i, j)}"

    with g.elements(m, n) as (i, j):
        g.line(f"{acc_t} {s} = 0;")
        with g.block(f"for (int64_t {kk} = 0; {kk} < {k}; ++{kk})"):
            if is_float:
                g.line(f"{s} += {widen(a, i, kk)} * {widen(b, kk, j)};")
            else:
                g.line(f"{s} = pto_iadd<int32_t>({s}, pto_imul<int32_t>({widen(a, i, kk)}, {widen(b, kk, j)}));")
        if prior is not None:
            extra = widen(prior, i if kind == "acc" else "0", j)
            g.line(f"{s} = {extra} + {s};" if is_float else f"{s} = pto_iadd<int32_t>({extra}, {s});")
        g.line(dst.store(i, j, f"(float){s}" if is_float else s))


def _rule(kind: str, gemv: bool) -> Callable[[Gen, TileOp], None]:
    def rule(g: Gen, op: TileOp) -> None:
        a, b = g.tile(op, "a"), g.tile(op, "b")
        m = "1" if gemv else a.vr
        k, n = a.vc, b.vc
        if gemv:
            g.check_read(a, m, k, "a")
        g.check_read(b, k, n, "b")
        if kind == "acc":
            g.check_read(g.tile(op, "acc_in"), m, n, "acc_in")
        elif kind == "bias":
            g.check_read(g.tile(op, "bias"), "1", n, "bias")
        if not gemv and _wmma_ok(g, op, kind, m, k, n):
            arch = 700 if a.dtype.name == "f16" else 800     # bf16 fragments: sm_80 on
            g.lines.append(f"#if !defined(PTO_HOST) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= {arch}")
            _wmma(g, op, kind, int(m), int(k), int(n))
            g.lines.append("#else")
            _exact(g, op, kind, m, k, n)
            g.lines.append("#endif")
            return
        _exact(g, op, kind, m, k, n)
    return rule


RULES: dict[str, Any] = {}
for _prefix, _gemv in (("TMATMUL", False), ("TGEMV", True)):
    for _suffix, _kind in (("", "plain"), ("_ACC", "acc"), ("_BIAS", "bias")):
        RULES[_prefix + _suffix] = _rule(_kind, _gemv)
