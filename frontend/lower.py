"""Kernels -> PTO-AS: one ordinary module holding every distinct kernel of a partition.

Each kernel is written as a person would write it: global tensors and run-time sizes as
parameters (named after the user's tensors and dims), ``.tile`` buffers named after the
tensors they hold, one ``scf.for`` over the kernel's invocations (``%first`` .. ``%first +
%count``, dealt out over ``pto.get_block_idx`` / ``get_block_num``), inside it the row block's
loads, tile ops and stores, with an inner column loop where a row reduction combines its
partial results. Partial edge tiles get run-time valid regions (``valid_row`` /
``valid_col``). The text goes through ``pto.parse`` and ``pto.check`` for the target profile.
Lowering rules are tables keyed by the op names of the tensor graph.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..isa import profiles
from ..isa.diagnostics import FrontendError
from ..isa.dtypes import F32, I1, I32, DType
from ..isa.types import Location as Loc
from . import graph as g
from .graph import Dim, Sym
from .partition import Kernel, Partition
from .tiling import Buffer, Place, TileNode, dim_key, dims_equal, reshaped

#: tile-tile binary ops, tile-scalar forms, per-row and per-column broadcast forms
BINARY = {"add": "tadd", "sub": "tsub", "mul": "tmul", "div": "tdiv", "maximum": "tmax", "minimum": "tmin"}
SCALAR = {"add": "tadds", "sub": "tsubs", "mul": "tmuls", "div": "tdivs", "maximum": "tmaxs",
          "minimum": "tmins"}
ROW_EXPAND = {"add": "trowexpandadd", "sub": "trowexpandsub", "mul": "trowexpandmul",
              "div": "trowexpanddiv", "maximum": "trowexpandmax", "minimum": "trowexpandmin"}
COL_EXPAND = {"add": "tcolexpandadd", "sub": "tcolexpandsub", "mul": "tcolexpandmul",
              "div": "tcolexpanddiv", "maximum": "tcolexpandmax", "minimum": "tcolexpandmin"}
COMMUTATIVE = ("add", "mul", "maximum", "minimum")
UNARY = {"exp": "texp", "log": "tlog", "sqrt": "tsqrt", "rsqrt": "trsqrt", "abs": "tabs", "neg": "tneg",
         "relu": "trelu", "reciprocal": "trecip"}
COMPARE = {"eq": "EQ", "ne": "NE", "lt": "LT", "le": "LE", "gt": "GT", "ge": "GE"}
#: a compare with the scalar first is the swapped compare with the scalar second
SWAPPED = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
CAST_MODE = {"rint": "RINT", "round": "ROUND", "floor": "FLOOR", "ceil": "CEIL", "trunc": "TRUNC"}
ROW_REDUCE = {"sum": "trowsum", "max": "trowmax", "min": "trowmin"}
COL_REDUCE = {"sum": "tcolsum", "max": "tcolmax", "min": "tcolmin"}
COMBINE = {"sum": "tadd", "max": "tmax", "min": "tmin"}
_SYM_ARITH = {"add": "addi", "sub": "subi", "mul": "muli", "floordiv": "floordivsi", "mod": "remsi",
              "min": "minsi", "max": "maxsi"}


def _ident(s: str) -> str:
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in s)
    return out if out and not out[0].isdigit() else "v" + out


def _dim(d: Dim) -> str:
    return str(d) if isinstance(d, int) else "?"


def _round_up(n: int, m: int) -> int:
    return -(-n // m) * m


@dataclass
class KernelParam:
    """A kernel parameter and where its value comes from at run time."""

    name: str
    kind: str               # buffer / sym / first / count
    buffer: Buffer | None = None
    sym: str | None = None


@dataclass
class LoweredKernel:
    kernel: Kernel
    name: str
    params: list[KernelParam]
    text: str


@dataclass
class Lowered:
    """Every distinct kernel's text, and per kernel of the partition the code it runs."""

    kernels: list[LoweredKernel]
    code: dict[int, LoweredKernel] = field(default_factory=dict)   # Kernel.index -> code
    params: dict[int, list[KernelParam]] = field(default_factory=dict)   # Kernel.index -> arguments

    @property
    def text(self) -> str:
        return "\n\n".join(k.text for k in self.kernels) + "\n"


def _literal(v: float | int, dt: DType) -> str:
    if dt.is_float:
        f = float(v)
        if math.isnan(f):
            return "nan"
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return repr(f)
    return str(int(v))


def _identity(red: str, dt: DType) -> str:
    if red == "sum":
        return _literal(0, dt)
    if dt.is_float:
        return "-inf" if red == "max" else "inf"
    return str(dt.min if red == "max" else dt.max)


class _Emitter:
    """Writes one kernel's text."""

    def __init__(self, k: Kernel, part: Partition) -> None:
        self.k = k
        self.part = part
        self.places = part.graph.places
        self.prof = profiles.get(part.graph.profile)
        self.lines: list[str] = []
        self.consts: dict[str, str] = {}
        self.params: list[KernelParam] = []
        self.buffers: dict[int, str] = {}            # id(Buffer) -> param name
        self.buffer_objs: dict[int, Buffer] = {}
        self.syms: dict[object, str] = {}
        self.names: set[str] = set()
        self.tiles: dict[str, str] = {}              # tile name -> type
        self.counter = 0
        self._pre: list[str] = []
        self._loop_pre: list[str] = []
        self.loop_var: str | None = None
        self.loop_head: str | None = None
        if k.loop is not None:     # the pto.loop runs inside: its index is the scf.for's
            lp = k.loop
            self.loop_var = lp.index.name
            iv = self.fresh(lp.index.name or "idx")
            self.syms[lp.index.key()] = "%" + iv
            bounds = [self.value(d, self._pre) for d in (lp.start, lp.stop, lp.step)]
            self.loop_head = f"  scf.for %{iv} = {bounds[0]} to {bounds[1]} step {bounds[2]} {{  // {lp.name}"

    # names and values ------------------------------------------------------------------
    def fresh(self, base: str) -> str:
        base = _ident(base)
        name, i = base, 1
        while name in self.names:
            i += 1
            name = f"{base}_{i}"
        self.names.add(name)
        return name

    def const(self, v: int) -> str:
        key = str(v)
        if key not in self.consts:
            self.consts[key] = self.fresh(f"c{v}" if v >= 0 else f"cm{-v}")
        return "%" + self.consts[key]

    def value(self, d: Dim, out: list[str]) -> str:
        """An index value for ``d`` (constants pooled, run-time expressions computed once)."""
        if isinstance(d, int):
            return self.const(d)
        if d.op == "const":
            return self.const(int(d.args[0]))  # type: ignore[arg-type]
        key = d.key()
        if key in self.syms:
            return self.syms[key]
        if d.op == "var":
            name = self.fresh(d.name or "n")
            self.params.append(KernelParam(name, "sym", sym=d.name))
            self.syms[key] = "%" + name
            return "%" + name
        if self.loop_var is not None and self.loop_var in d.variables():
            target = self._loop_pre       # depends on the kernel's loop index: computed in the loop
        else:
            target = self._pre
        if d.op not in _SYM_ARITH:
            raise FrontendError("FRONT_UNSUPPORTED_OP", f"the run-time expression {d} has no index form",
                                expected="+ - * // % min max of run-time integers", actual=str(d))
        a, b = (self.value(x, out) for x in d.args)  # type: ignore[arg-type]
        name = self.fresh("s")
        target.append(f"  %{name} = arith.{_SYM_ARITH[d.op]} {a}, {b} : index")
        self.syms[key] = "%" + name
        return "%" + name

    def buffer(self, b: Buffer) -> str:
        if id(b) not in self.buffers:
            name = self.fresh(b.name + ("_T" if b.transposed else ""))
            self.buffers[id(b)] = name
            self.buffer_objs[id(b)] = b
            self.params.append(KernelParam(name, "buffer", buffer=b))
        return "%" + self.buffers[id(b)]

    def memref(self, b: Buffer) -> str:
        layout = ", layout=DN" if b.transposed else ""
        return f"!pto.memref<{_dim(b.rows)}x{_dim(b.cols)}x{b.dtype.name}{layout}>"

    # tile types ----------------------------------------------------------------------------
    def align(self, dt: DType) -> int:
        if not self.prof.enforce_row_alignment:
            return 1
        return max(1, self.prof.alignment // max(dt.itemsize, 1))

    def tile_type(self, rows: int, cols: int, dt: DType, vr: str, vc: str, extra: str = "") -> str:
        cols_s = _round_up(cols, self.align(dt))
        valid = "" if (vr, vc) == (str(rows), str(cols_s)) else f", valid={vr}x{vc}"
        return f"!pto.tile<{rows}x{cols_s}x{dt.name}{extra}{valid}>"

    def declare(self, out: list[str], pad: str, base: str, typ: str, vr_val: str | None,
                vc_val: str | None) -> str:
        name = self.fresh("t_" + base)
        self.tiles[name] = typ
        opts = (f" valid_row = {vr_val}" if vr_val else "") + (f" valid_col = {vc_val}" if vc_val else "")
        out.append(f"{pad}.tile %{name}{opts} : {typ}")
        return "%" + name


@dataclass
class _Block:
    """The row block (and column tile) an invocation works on."""

    r: str
    vr: str | None           # valid-rows value when run-time, else None
    vr_s: str                # valid rows as written in a type
    c: str
    vc: str | None
    vc_s: str


class _VectorKernel(_Emitter):
    """grid / rows / colloop kernels: vector ops over row blocks."""

    def emit(self) -> LoweredKernel:
        k = self.k
        tr, tc = k.tile
        top: list[str] = []
        body: list[str] = []
        first, count = self.fresh("first"), self.fresh("count")
        rows_partial = not (isinstance(k.rows, int) and k.rows % tr == 0)
        wide_cols = k.cols
        cols_partial = not (isinstance(wide_cols, int) and wide_cols % tc == 0)
        # invocation loop
        blk, nblk, lo, hi, inv = (self.fresh(n) for n in ("blk", "nblk", "lo", "hi", "inv"))
        top.append(f"  %{blk} = pto.get_block_idx")
        top.append(f"  %{nblk} = pto.get_block_num")
        top.append(f"  %{lo} = arith.addi %{first}, %{blk} : index")
        top.append(f"  %{hi} = arith.addi %{first}, %{count} : index")
        rows_v = self.value(k.rows, top)
        cols_v = self.value(wide_cols, top) if k.mode != "rows" or cols_partial else None
        p = "    "
        body.append(f"  scf.for %{inv} = %{lo} to %{hi} step %{nblk} {{")
        if k.mode == "grid":
            nc = self.value(k.grid[1], top)
            bi, bj = self.fresh("bi"), self.fresh("bj")
            body.append(f"{p}%{bi} = arith.divsi %{inv}, {nc} : index")
            body.append(f"{p}%{bj} = arith.remsi %{inv}, {nc} : index")
        else:
            bi, bj = inv, None
        r = self.fresh("r")
        body.append(f"{p}%{r} = arith.muli %{bi}, {self.const(tr)} : index")
        vr = None
        if rows_partial:
            left, vr = self.fresh("rleft"), self.fresh("vr")
            body.append(f"{p}%{left} = arith.subi {rows_v}, %{r} : index")
            body.append(f"{p}%{vr} = arith.minsi %{left}, {self.const(tr)} : index")
        row = _Block("%" + r, "%" + vr if vr else None, "?" if vr else str(tr), self.const(0), None, "1")

        if k.mode in ("grid", "rows"):
            if k.mode == "grid":
                c = self.fresh("c")
                body.append(f"{p}%{c} = arith.muli %{bj}, {self.const(tc)} : index")
                cval = "%" + c
            else:
                cval = self.const(0)
            vc = None
            if cols_partial and k.mode == "grid":
                left, vc = self.fresh("cleft"), self.fresh("vc")
                body.append(f"{p}%{left} = arith.subi {cols_v}, {cval} : index")
                body.append(f"{p}%{vc} = arith.minsi %{left}, {self.const(tc)} : index")
            elif cols_partial:      # rows mode over dynamic columns: one tile, the columns valid
                vc = self.fresh("vc")
                body.append(f"{p}%{vc} = arith.minsi {cols_v}, {self.const(tc)} : index")
            blk_ = _Block(row.r, row.vr, row.vr_s, cval, "%" + vc if vc else None,
                          "?" if vc else str(min(tc, wide_cols) if isinstance(wide_cols, int) else tc))
            env: dict[g.TensorValue, str] = {}
            for n in k.nodes:
                self.node(n, blk_, env, body, p)
        else:   # colloop: accumulators per row block, a column loop, then the row-vector ops
            env = {}
            for n in k.nodes:
                if n.kind == "reduce":
                    self.acc_init(n, row, env, body, p)
            cc = self.fresh("c")
            body.append(f"{p}scf.for %{cc} = {self.const(0)} to {cols_v} step {self.const(tc)} {{")
            q = p + "  "
            vc = None
            if cols_partial:
                left, vc = self.fresh("cleft"), self.fresh("vc")
                body.append(f"{q}%{left} = arith.subi {cols_v}, %{cc} : index")
                body.append(f"{q}%{vc} = arith.minsi %{left}, {self.const(tc)} : index")
            blk_ = _Block(row.r, row.vr, row.vr_s, "%" + cc, "%" + vc if vc else None,
                          "?" if vc else str(tc))
            inner = dict(env)
            for n in k.nodes:
                if n.kind == "reduce":
                    self.partial(n, blk_, inner, env, body, q)
                elif not n.is_rowvec:
                    self.node(n, blk_, inner, body, q)
            body.append(f"{p}}}")
            for n in k.nodes:
                if n.kind == "reduce":
                    self.finish_reduce(n, row, env, body, p)
                elif n.is_rowvec:
                    self.node(n, row, env, body, p)
        body.append("  }")

        params = [f"%{q.name} : {self.memref(q.buffer) if q.buffer else 'index'}" for q in self.params]
        params += [f"%{first} : index", f"%{count} : index"]
        self.params += [KernelParam(first, "first"), KernelParam(count, "count")]
        return self.finish(params, top, body)

    def finish(self, params: list[str], top: list[str], body: list[str]) -> LoweredKernel:
        k = self.k
        consts = [f"  .const %{name} = {v} : index" for v, name in self.consts.items()]
        head = [f"// {k.name}: " + " + ".join(n.name for n in k.nodes)
                + f" ({k.mode}, {k.tile[0]}x{k.tile[1]} tiles)"]
        for n in k.nodes:
            head.append(f"//   {n.out} = {n.name}  ({n.op.loc or 'no source line'})")
        if self.loop_head is not None:
            body = [self.loop_head] + ["  " + ln for ln in self._loop_pre + body] + ["  }"]
        text = "\n".join(head + [f"kernel @{k.name}({', '.join(params)}) {{"] + consts + self._pre + top
                         + body + ["}"])
        return LoweredKernel(k, k.name, self.params, text)

    # operands ------------------------------------------------------------------------------
    def gindex(self, place: Place, r: str, c: str, out: list[str], pad: str) -> str:
        """``%buf[row, col]`` for the tile at local (r, c) of a place."""
        b = self.buffer(place.buffer)
        row0 = self.value(place.row0, self.pre)
        col0 = self.value(place.col0, self.pre)
        rr = r if dims_equal(place.row0, 0) else self.add(row0, r, out, pad)
        cc = c if dims_equal(place.col0, 0) else self.add(col0, c, out, pad)
        return f"{b}[{rr}, {cc}]"

    def add(self, a: str, b: str, out: list[str], pad: str) -> str:
        if a == self.const(0):
            return b
        if b == self.const(0):
            return a
        n = self.fresh("i")
        out.append(f"{pad}%{n} = arith.addi {a}, {b} : index")
        return "%" + n

    @property
    def pre(self) -> list[str]:
        return self._pre

    @property
    def vtile(self) -> tuple[int, int]:
        """The vector tile shape (a matmul kernel's vector ops work on its output tiles)."""
        return self.k.vtile

    def wide_type(self, dt: DType, blk: _Block) -> str:
        return self.tile_type(self.vtile[0], self.vtile[1], dt, blk.vr_s, blk.vc_s)

    def rowvec_type(self, dt: DType, blk: _Block) -> str:
        return self.tile_type(self.vtile[0], 1, dt, blk.vr_s, "1")

    def colvec_type(self, dt: DType, blk: _Block) -> str:
        return self.tile_type(1, self.vtile[1], dt, "1", blk.vc_s)

    def load(self, t: g.TensorValue, mode: str, blk: _Block, env: dict, out: list[str], pad: str,
             rowvec: bool = False) -> str:
        """The tile holding operand ``t`` for this block: one computed in this kernel, else
        loaded from global memory once (a per-row vector, a per-column one, or a full tile)."""
        if t in env and mode in ("tile", "row"):
            return env[t]
        key = (t, mode)
        if key in env:
            return env[key]
        place = self.places[t]
        if mode == "row" or rowvec:
            typ = self.rowvec_type(t.dtype, blk)
            tile = self.declare(out, pad, t.name, typ, blk.vr, None)
            idx = self.gindex(_as_rows(place, t), blk.r, self.const(0), out, pad)
        elif mode == "col":
            typ = self.colvec_type(t.dtype, blk)
            tile = self.declare(out, pad, t.name, typ, None, blk.vc)
            idx = self.gindex(place, self.const(0), blk.c, out, pad)
        else:
            typ = self.wide_type(t.dtype, blk)
            tile = self.declare(out, pad, t.name, typ, blk.vr, blk.vc)
            idx = self.gindex(place, blk.r, blk.c, out, pad)
        out.append(f"{pad}{tile} = tload {idx}")
        env[key] = tile
        return tile

    def result_tile(self, n: TileNode, blk: _Block, env: dict, out: list[str], pad: str,
                    rowvec: bool | None = None) -> str:
        rowvec = n.is_rowvec if rowvec is None else rowvec
        typ = self.rowvec_type(n.out.dtype, blk) if rowvec else self.wide_type(n.out.dtype, blk)
        tile = self.declare(out, pad, n.out.name, typ, blk.vr, None if rowvec else blk.vc)
        env[n.out] = tile
        return tile

    def store(self, n: TileNode, tile: str, blk: _Block, out: list[str], pad: str) -> None:
        if n.out not in self.k.writes and n.kind != "copy":
            return
        place = n.extra.get("target") or self.places[n.out]
        if n.is_rowvec:
            place = _as_rows(place, n.out)
            out.append(f"{pad}tstore {self.gindex(place, blk.r, self.const(0), out, pad)}, {tile}")
        else:
            out.append(f"{pad}tstore {self.gindex(place, blk.r, blk.c, out, pad)}, {tile}")

    def scalar(self, v: g.Operand, dt: DType, out: list[str], pad: str) -> str:
        """A scalar operand of a tile op: a literal, or a run-time integer converted to ``dt``."""
        if isinstance(v, Sym):
            idx = self.value(v, self.pre)
            if dt.is_float:
                i64, f = self.fresh("si"), self.fresh("sf")
                out.append(f"{pad}%{i64} = arith.index_cast {idx} : index to i64")
                out.append(f"{pad}%{f} = arith.sitofp %{i64} : i64 to {dt.name}")
                return "%" + f
            cast = self.fresh("si")
            out.append(f"{pad}%{cast} = arith.index_cast {idx} : index to {dt.name}")
            return "%" + cast
        if isinstance(v, bool):
            v = int(v)
        return _literal(v, dt)  # type: ignore[arg-type]

    # nodes ---------------------------------------------------------------------------------
    def node(self, n: TileNode, blk: _Block, env: dict, out: list[str], pad: str) -> None:
        rowvec = n.is_rowvec
        if n.kind == "reduce":      # rows mode: the whole row is one tile
            src = self.load(n.inputs[0].value, "tile", blk, env, out, pad)  # type: ignore[arg-type]
            dst = self.result_tile(n, blk, env, out, pad, rowvec=True)
            out.append(f"{pad}{dst} = {ROW_REDUCE[n.reduce]} {src}")  # type: ignore[index]
            self.scale_mean(n, dst, out, pad)
            self.store(n, dst, blk, out, pad)
            return
        if n.kind == "copy":
            src = self.load(n.inputs[0].value, "tile", blk, env, out, pad)  # type: ignore[arg-type]
            self.store(n, src, blk, out, pad)
            return
        if n.kind == "full":
            dst = self.result_tile(n, blk, env, out, pad)
            out.append(f"{pad}{dst} = texpands {self.scalar(n.op.attrs.get('value', 0), n.out.dtype, out, pad)}")
            self.store(n, dst, blk, out, pad)
            return
        ops = []
        for a in n.inputs:
            if a.mode == "scalar":
                ops.append(("scalar", a.value))
            else:
                mode = "tile" if rowvec else a.mode
                ops.append((mode, self.load(a.value, mode, blk, env, out, pad, rowvec=rowvec)))  # type: ignore[arg-type]
        dst = self.result_tile(n, blk, env, out, pad)
        dt = n.out.dtype
        in_dt = next((a.value.dtype for a in n.inputs if isinstance(a.value, g.TensorValue)), dt)
        if n.kind == "unary":
            out.append(f"{pad}{dst} = {UNARY[n.name]} {ops[0][1]}")
        elif n.kind == "cast" and dt.kind == "bool":      # to a mask: nonzero
            out.append(f"{pad}{dst} = tcmps {ops[0][1]}, {_literal(0, in_dt)} {{cmpMode = #pto.cmp<NE>}}")
        elif n.kind == "cast":      # the op's rounding mode where a float becomes an integer
            mode = CAST_MODE[n.op.attrs.get("mode", "rint")] if in_dt.is_float and not dt.is_float else "RINT"
            out.append(f"{pad}{dst} = tcvt {ops[0][1]} {{roundMode = #pto.round<{mode}>}}")
        elif n.kind == "binary":
            self.binary(n.name, ops, dst, dt, blk, out, pad)
        elif n.kind == "compare":
            self.compare(n.name, ops, dst, in_dt, blk, out, pad)
        elif n.kind == "select":
            mask = self.expand(ops[0], I1, blk, out, pad)
            a, b = (self.expand(o, dt, blk, out, pad) for o in ops[1:])
            out.append(f"{pad}{dst} = tsel {mask}, {a}, {b}")
        else:  # pragma: no cover - tiling only makes the kinds above
            raise AssertionError(n.kind)
        self.store(n, dst, blk, out, pad)

    def expand(self, o: tuple[str, object], dt: DType, blk: _Block, out: list[str], pad: str) -> str:
        """A full tile for an operand: itself, or its broadcast / scalar spread over the tile."""
        mode, v = o
        if mode == "tile":
            return v  # type: ignore[return-value]
        tmp = self.declare(out, pad, "bc", self.wide_type(dt, blk), blk.vr, blk.vc)
        if mode == "scalar":
            out.append(f"{pad}{tmp} = texpands {self.scalar(v, dt, out, pad)}")  # type: ignore[arg-type]
        elif mode == "row":
            out.append(f"{pad}{tmp} = trowexpand {v}")
        else:
            out.append(f"{pad}{tmp} = tcolexpand {v}")
        return tmp

    def binary(self, name: str, ops: list, dst: str, dt: DType, blk: _Block, out: list[str], pad: str) -> None:
        (m0, a), (m1, b) = ops
        if m0 == "scalar" and m1 == "scalar":
            raise FrontendError("FRONT_UNSUPPORTED_OP", f"{name} of two scalars has no tile", expected="a tensor operand",
                                actual="two scalars")
        if m0 == "scalar" and name in COMMUTATIVE:
            (m0, a), (m1, b) = (m1, b), (m0, a)
        if m1 == "scalar":
            if m0 != "tile":
                a = self.expand((m0, a), dt, blk, out, pad)
            out.append(f"{pad}{dst} = {SCALAR[name]} {a}, {self.scalar(b, dt, out, pad)}")
            return
        if m0 == "scalar":          # scalar - tile, scalar / tile
            s = self.scalar(a, dt, out, pad)
            if m1 != "tile":
                b = self.expand((m1, b), dt, blk, out, pad)
            if name == "div":
                out.append(f"{pad}{dst} = tdivs {b}, {s} {{reverse = true}}")
            else:                   # sub: -(b) + s
                out.append(f"{pad}{dst} = tneg {b}")
                out.append(f"{pad}{dst} = tadds {dst}, {s}")
            return
        if m0 != "tile" and name in COMMUTATIVE:
            (m0, a), (m1, b) = (m1, b), (m0, a)
        if m0 == "tile" and m1 == "row":
            out.append(f"{pad}{dst} = {ROW_EXPAND[name]} {a}, {b}")
        elif m0 == "tile" and m1 == "col":
            out.append(f"{pad}{dst} = {COL_EXPAND[name]} {a}, {b}")
        else:
            a = self.expand((m0, a), dt, blk, out, pad)
            b = self.expand((m1, b), dt, blk, out, pad)
            out.append(f"{pad}{dst} = {BINARY[name]} {a}, {b}")

    def compare(self, name: str, ops: list, dst: str, dt: DType, blk: _Block, out: list[str], pad: str) -> None:
        (m0, a), (m1, b) = ops
        if m0 == "scalar":
            (m0, a), (m1, b), name = (m1, b), (m0, a), SWAPPED[name]
        a = self.expand((m0, a), dt, blk, out, pad)
        if m1 == "scalar":
            out.append(f"{pad}{dst} = tcmps {a}, {self.scalar(b, dt, out, pad)} {{cmpMode = #pto.cmp<{COMPARE[name]}>}}")
        else:
            b = self.expand((m1, b), dt, blk, out, pad)
            out.append(f"{pad}{dst} = tcmp {a}, {b} {{cmpMode = #pto.cmp<{COMPARE[name]}>}}")

    def scale_mean(self, n: TileNode, dst: str, out: list[str], pad: str) -> None:
        if not n.extra.get("mean"):
            return
        length = n.extra["length"]
        if isinstance(length, int):
            out.append(f"{pad}{dst} = tmuls {dst}, {_literal(1.0 / length, n.out.dtype)}")
        else:
            out.append(f"{pad}{dst} = tdivs {dst}, {self.scalar(length, n.out.dtype, out, pad)}")

    def acc_init(self, n: TileNode, row: _Block, env: dict, out: list[str], pad: str) -> None:
        acc = self.declare(out, pad, n.out.name, self.rowvec_type(n.out.dtype, row), row.vr, None)
        out.append(f"{pad}{acc} = texpands {_identity(n.reduce, n.out.dtype)}")  # type: ignore[arg-type]
        env[("acc", n.out)] = acc

    def partial(self, n: TileNode, blk: _Block, inner: dict, env: dict, out: list[str], pad: str) -> None:
        src = self.load(n.inputs[0].value, "tile", blk, inner, out, pad)  # type: ignore[arg-type]
        part = self.declare(out, pad, n.out.name + "_part", self.rowvec_type(n.out.dtype, blk), blk.vr, None)
        acc = env[("acc", n.out)]
        out.append(f"{pad}{part} = {ROW_REDUCE[n.reduce]} {src}")  # type: ignore[index]
        out.append(f"{pad}{acc} = {COMBINE[n.reduce]} {acc}, {part}")  # type: ignore[index]

    def finish_reduce(self, n: TileNode, row: _Block, env: dict, out: list[str], pad: str) -> None:
        acc = env[("acc", n.out)]
        self.scale_mean(n, acc, out, pad)
        env[n.out] = acc
        self.store(n, acc, row, out, pad)


def _as_rows(place: Place, t: g.TensorValue) -> Place:
    """A per-row vector's place seen as R x 1 (a rank-1 result of a reduction is stored as one)."""
    if dims_equal(place.cols, 1):
        return place
    return reshaped(place, (place.cols, 1), None) if dims_equal(place.rows, 1) else place


class _ColReduceKernel(_VectorKernel):
    """One column block per invocation: partial column reductions over the row tiles."""

    def emit(self) -> LoweredKernel:
        k = self.k
        n = k.nodes[0]
        tr, tc = k.tile
        top: list[str] = []
        body: list[str] = []
        first, count = self.fresh("first"), self.fresh("count")
        blk, nblk, lo, hi, inv = (self.fresh(x) for x in ("blk", "nblk", "lo", "hi", "inv"))
        top += [f"  %{blk} = pto.get_block_idx", f"  %{nblk} = pto.get_block_num",
                f"  %{lo} = arith.addi %{first}, %{blk} : index",
                f"  %{hi} = arith.addi %{first}, %{count} : index"]
        rows_v = self.value(k.rows, top)
        cols_v = self.value(k.cols, top)
        rows_partial = not (isinstance(k.rows, int) and k.rows % tr == 0)
        cols_partial = not (isinstance(k.cols, int) and k.cols % tc == 0)
        p = "    "
        body.append(f"  scf.for %{inv} = %{lo} to %{hi} step %{nblk} {{")
        c = self.fresh("c")
        body.append(f"{p}%{c} = arith.muli %{inv}, {self.const(tc)} : index")
        vc = None
        if cols_partial:
            left, vc = self.fresh("cleft"), self.fresh("vc")
            body += [f"{p}%{left} = arith.subi {cols_v}, %{c} : index",
                     f"{p}%{vc} = arith.minsi %{left}, {self.const(tc)} : index"]
        colblk = _Block(self.const(0), None, "1", "%" + c, "%" + vc if vc else None, "?" if vc else str(tc))
        dt = n.out.dtype
        acc = self.declare(body, p, n.out.name, self.colvec_type(dt, colblk), None, colblk.vc)
        body.append(f"{p}{acc} = texpands {_identity(n.reduce, dt)}")  # type: ignore[arg-type]
        r = self.fresh("r")
        body.append(f"{p}scf.for %{r} = {self.const(0)} to {rows_v} step {self.const(tr)} {{")
        q = p + "  "
        vr = None
        if rows_partial:
            left, vr = self.fresh("rleft"), self.fresh("vr")
            body += [f"{q}%{left} = arith.subi {rows_v}, %{r} : index",
                     f"{q}%{vr} = arith.minsi %{left}, {self.const(tr)} : index"]
        blk_ = _Block("%" + r, "%" + vr if vr else None, "?" if vr else str(tr), "%" + c,
                      colblk.vc, colblk.vc_s)
        src = self.load(n.inputs[0].value, "tile", blk_, {}, body, q)  # type: ignore[arg-type]
        part = self.declare(body, q, n.out.name + "_part", self.colvec_type(dt, blk_), None, blk_.vc)
        body.append(f"{q}{part} = {COL_REDUCE[n.reduce]} {src}")  # type: ignore[index]
        body.append(f"{q}{acc} = {COMBINE[n.reduce]} {acc}, {part}")  # type: ignore[index]
        body.append(f"{p}}}")
        self.scale_mean(n, acc, body, p)
        place = self.places[n.out]
        body.append(f"{p}tstore {self.gindex(place, self.const(0), '%' + c, body, p)}, {acc}")
        body.append("  }")
        params = [f"%{q_.name} : {self.memref(q_.buffer) if q_.buffer else 'index'}" for q_ in self.params]
        params += [f"%{first} : index", f"%{count} : index"]
        self.params += [KernelParam(first, "first"), KernelParam(count, "count")]
        return self.finish(params, top, body)


class _MatmulKernel(_VectorKernel):
    """One output tile per invocation: load A and B panels into mat tiles, move them into the
    cube's left/right tiles, multiply-accumulate over K, store the acc tile."""

    def layout(self, loc: Loc, prefer: str) -> str:
        allowed = [lay.name for lay in self.prof.layouts.get(loc, ())]
        return prefer if prefer in allowed or not allowed else allowed[0]

    def emit(self) -> LoweredKernel:
        k = self.k
        n = k.nodes[0]
        a, b = n.inputs[0].value, n.inputs[1].value
        assert isinstance(a, g.TensorValue) and isinstance(b, g.TensorValue)
        tm, tk, tn = n.tile[0], n.extra["tk"], n.extra["tn"]
        m, kk, nn = n.rows, n.extra["k"], n.cols
        dt = a.dtype
        acc_dt = F32 if dt.is_float else I32     # the cube accumulates in f32 / i32; TSTORE narrows
        c0 = max(1, 32 // dt.itemsize)
        tms, tks, tns = _round_up(tm, 16), _round_up(tk, max(16, c0)), _round_up(tn, 16)
        top: list[str] = []
        body: list[str] = []
        first, count = self.fresh("first"), self.fresh("count")
        blk, nblk, lo, hi, inv = (self.fresh(x) for x in ("blk", "nblk", "lo", "hi", "inv"))
        top += [f"  %{blk} = pto.get_block_idx", f"  %{nblk} = pto.get_block_num",
                f"  %{lo} = arith.addi %{first}, %{blk} : index",
                f"  %{hi} = arith.addi %{first}, %{count} : index"]
        mv, kv, nv = self.value(m, top), self.value(kk, top), self.value(nn, top)
        ncols = self.value(k.grid[1], top)
        p = "    "
        body.append(f"  scf.for %{inv} = %{lo} to %{hi} step %{nblk} {{")
        bi, bj, r, c = (self.fresh(x) for x in ("bi", "bj", "r", "c"))
        body += [f"{p}%{bi} = arith.divsi %{inv}, {ncols} : index",
                 f"{p}%{bj} = arith.remsi %{inv}, {ncols} : index",
                 f"{p}%{r} = arith.muli %{bi}, {self.const(tm)} : index",
                 f"{p}%{c} = arith.muli %{bj}, {self.const(tn)} : index"]
        vals = {}
        for nm, base, v, t in (("vr", "%" + r, mv, tm), ("vc", "%" + c, nv, tn)):
            left, vv = self.fresh(nm + "left"), self.fresh(nm)
            body += [f"{p}%{left} = arith.subi {v}, {base} : index",
                     f"{p}%{vv} = arith.minsi %{left}, {self.const(t)} : index"]
            vals[nm] = "%" + vv
        lay_left, lay_right, lay_acc = (self.layout(Loc.LEFT, "NZ"), self.layout(Loc.RIGHT, "ZN"),
                                        self.layout(Loc.ACC, "NZ"))
        acc = self.declare(body, p, n.out.name + "_acc",
                           f"!pto.tile<{tms}x{tns}x{acc_dt.name}, loc=acc, layout={lay_acc}, valid=?x?>",
                           vals["vr"], vals["vc"])
        kx = self.fresh("k")
        body.append(f"{p}scf.for %{kx} = {self.const(0)} to {kv} step {self.const(tk)} {{")
        q = p + "  "
        left_, vk = self.fresh("kleft"), self.fresh("vk")
        body += [f"{q}%{left_} = arith.subi {kv}, %{kx} : index",
                 f"{q}%{vk} = arith.minsi %{left_}, {self.const(tk)} : index"]
        a_t, b_t = n.extra.get("a_trans"), n.extra.get("b_trans")
        am = self.declare(body, q, a.name + "_mat",
                          f"!pto.tile<{tms}x{tks}x{dt.name}, loc=mat, layout={'ZN' if a_t else 'NZ'}, valid=?x?>",
                          vals["vr"], "%" + vk)
        bm = self.declare(body, q, b.name + "_mat",
                          f"!pto.tile<{tks}x{tns}x{dt.name}, loc=mat, layout={'ZN' if b_t else 'NZ'}, valid=?x?>",
                          "%" + vk, vals["vc"])
        pa, pb = self.places[a], self.places[b]
        if a_t:      # A stored K x M: its transpose, read column-major (DN -> ZN mat)
            pa = Place(pa.buffer.transpose(), 0, 0, pa.cols, pa.rows)
        if b_t:
            pb = Place(pb.buffer.transpose(), 0, 0, pb.cols, pb.rows)
        lt = self.declare(body, q, a.name + "_left",
                          f"!pto.tile<{tms}x{tks}x{dt.name}, loc=left, layout={lay_left}, valid=?x?>",
                          vals["vr"], "%" + vk)
        rt = self.declare(body, q, b.name + "_right",
                          f"!pto.tile<{tks}x{tns}x{dt.name}, loc=right, layout={lay_right}, valid=?x?>",
                          "%" + vk, vals["vc"])
        body.append(f"{q}{am} = tload {self.gindex(pa, '%' + r, '%' + kx, body, q)}")
        body.append(f"{q}{bm} = tload {self.gindex(pb, '%' + kx, '%' + c, body, q)}")
        body.append(f"{q}{lt} = tmov {am}")
        body.append(f"{q}{rt} = tmov {bm}")
        fresh = self.fresh("fresh")
        body.append(f"{q}%{fresh} = arith.cmpi eq, %{kx}, {self.const(0)} : index")
        body.append(f"{q}scf.if %{fresh} {{")
        body.append(f"{q}  {acc} = tmatmul {lt}, {rt}")
        body.append(f"{q}}} else {{")
        body.append(f"{q}  {acc} = tmatmul_acc {acc}, {lt}, {rt}")
        body.append(f"{q}}}")
        body.append(f"{p}}}")
        if n.out in k.writes:
            body.append(f"{p}tstore {self.gindex(self.places[n.out], '%' + r, '%' + c, body, p)}, {acc}")
        if len(k.nodes) > 1:    # vector ops on the output tile (one core: acc -> vec)
            blk_ = _Block("%" + r, vals["vr"], "?", "%" + c, vals["vc"], "?")
            vec = self.declare(body, p, n.out.name, self.wide_type(n.out.dtype, blk_), vals["vr"], vals["vc"])
            body.append(f"{p}{vec} = tmov {acc}")
            env: dict = {n.out: vec}
            for m in k.nodes[1:]:
                self.node(m, blk_, env, body, p)
        body.append("  }")
        params = [f"%{q_.name} : {self.memref(q_.buffer) if q_.buffer else 'index'}" for q_ in self.params]
        params += [f"%{first} : index", f"%{count} : index"]
        self.params += [KernelParam(first, "first"), KernelParam(count, "count")]
        return self.finish(params, top, body)


class _TransposeKernel(_VectorKernel):
    """One tile per invocation: load tile (i, j), TTRANS it, store it at (j, i)."""

    def emit(self) -> LoweredKernel:
        k = self.k
        n = k.nodes[0]
        src = n.inputs[0].value
        assert isinstance(src, g.TensorValue)
        tr, tc = k.tile
        al = self.align(src.dtype)
        trs, tcs = _round_up(tr, al), _round_up(tc, al)
        top: list[str] = []
        body: list[str] = []
        first, count = self.fresh("first"), self.fresh("count")
        blk, nblk, lo, hi, inv = (self.fresh(x) for x in ("blk", "nblk", "lo", "hi", "inv"))
        top += [f"  %{blk} = pto.get_block_idx", f"  %{nblk} = pto.get_block_num",
                f"  %{lo} = arith.addi %{first}, %{blk} : index",
                f"  %{hi} = arith.addi %{first}, %{count} : index"]
        rv, cv, ncols = self.value(k.rows, top), self.value(k.cols, top), self.value(k.grid[1], top)
        p = "    "
        bi, bj, r, c = (self.fresh(x) for x in ("bi", "bj", "r", "c"))
        body += [f"  scf.for %{inv} = %{lo} to %{hi} step %{nblk} {{",
                 f"{p}%{bi} = arith.divsi %{inv}, {ncols} : index",
                 f"{p}%{bj} = arith.remsi %{inv}, {ncols} : index",
                 f"{p}%{r} = arith.muli %{bi}, {self.const(tr)} : index",
                 f"{p}%{c} = arith.muli %{bj}, {self.const(tc)} : index"]
        vals = {}
        for nm, base, v, t in (("vr", "%" + r, rv, tr), ("vc", "%" + c, cv, tc)):
            left, vv = self.fresh(nm + "left"), self.fresh(nm)
            body += [f"{p}%{left} = arith.subi {v}, {base} : index",
                     f"{p}%{vv} = arith.minsi %{left}, {self.const(t)} : index"]
            vals[nm] = "%" + vv
        dt = src.dtype.name
        a = self.declare(body, p, src.name, f"!pto.tile<{trs}x{tcs}x{dt}, valid=?x?>", vals["vr"], vals["vc"])
        t = self.declare(body, p, n.out.name, f"!pto.tile<{tcs}x{trs}x{dt}, valid=?x?>", vals["vc"], vals["vr"])
        body.append(f"{p}{a} = tload {self.gindex(self.places[src], '%' + r, '%' + c, body, p)}")
        body.append(f"{p}{t} = ttrans {a}")
        body.append(f"{p}tstore {self.gindex(self.places[n.out], '%' + c, '%' + r, body, p)}, {t}")
        body.append("  }")
        params = [f"%{q_.name} : {self.memref(q_.buffer) if q_.buffer else 'index'}" for q_ in self.params]
        params += [f"%{first} : index", f"%{count} : index"]
        self.params += [KernelParam(first, "first"), KernelParam(count, "count")]
        return self.finish(params, top, body)


_EMITTERS = {"grid": _VectorKernel, "rows": _VectorKernel, "colloop": _VectorKernel,
             "colreduce": _ColReduceKernel, "matmul": _MatmulKernel, "transpose": _TransposeKernel}


def lower_kernel(k: Kernel, part: Partition) -> LoweredKernel:
    """One kernel's PTO-AS text and parameters."""
    return _EMITTERS[k.mode](k, part).emit()


def lower(part: Partition) -> Lowered:
    """Every distinct kernel of ``part`` as PTO-AS; an isomorphic kernel runs the code of the
    first of its kind with its own arguments (``Lowered.code`` maps each kernel to its code and
    ``Lowered.params`` to the arguments it passes)."""
    out = Lowered([])
    for k in part.kernels():
        lk = lower_kernel(k, part)
        out.params[k.index] = lk.params
        if k.shares is not None:
            shared = out.code[k.shares.index]
            if len(shared.params) != len(lk.params):   # pragma: no cover - the hash covers the params
                raise AssertionError(f"{k.name} is not isomorphic to {shared.name}")
            out.code[k.index] = shared
            continue
        out.kernels.append(lk)
        out.code[k.index] = lk
    return out
