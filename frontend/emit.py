"""Writing kernels: the names, index arithmetic, tile types and tile ops every kernel shares.

``Emitter`` holds one kernel's text as it is written: pooled constants, run-time sizes as
``index`` parameters (expressions computed once, at the kernel's top or at the top of its loop),
global tensors as ``!pto.memref`` parameters named after the user's tensors, ``.tile`` buffers
named ``%t_<tensor>`` with run-time valid regions for partial tiles, and the lowering of each
vector node of the tile graph by the tables below (keyed by the op table's names).
frontend/lower.py builds the kernels' loops around it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..isa import profiles
from ..isa.diagnostics import FrontendError
from ..isa.dtypes import I1, DType
from . import graph as g
from .graph import Dim, Sym
from .partition import Kernel, Partition
from .tiling import Buffer, Place, TileNode, dims_equal, reshaped

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


@dataclass
class Block:
    """The row block (and column tile) an invocation works on."""

    r: str
    vr: str | None           # valid-rows value when run-time, else None
    vr_s: str                # valid rows as written in a type
    c: str
    vc: str | None
    vc_s: str


class Emitter:
    """Writes one kernel's text: names, index values, parameters, tile types, and the tile ops
    of vector nodes (shared by every kind of kernel)."""

    def __init__(self, k: Kernel, part: Partition) -> None:
        self.k = k
        self.part = part
        self.places = part.graph.places
        self.prof = profiles.get(part.graph.profile)
        self.consts: dict[str, str] = {}
        self.params: list[KernelParam] = []
        self.buffers: dict[int, str] = {}            # id(Buffer) -> param name
        self.buffer_objs: dict[int, Buffer] = {}
        self.syms: dict[object, str] = {}
        self.names: set[str] = set()
        self.tiles: dict[str, str] = {}              # tile name -> type
        # the last node of this kernel reading each tensor: a tile whose tensor is read no more
        # is written again in place by the next op of its type (fewer, hotter buffers)
        self.last_use: dict[g.TensorValue, int] = {}
        for i, n in enumerate(k.nodes):
            for t in n.tensor_inputs():
                self.last_use[t] = i
        self.current = -1
        self.reused: str | None = None           # the tile the current node writes in place
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



    # the invocation loop -------------------------------------------------------------------
    def open_invocations(self, top: list[str], body: list[str]) -> str:
        """The loop over this task's invocations, %first .. %first + %count, dealt out over the
        launch's blocks; returns the invocation index."""
        self.first, self.count = self.fresh("first"), self.fresh("count")
        blk, nblk, lo, hi, inv = (self.fresh(n) for n in ("blk", "nblk", "lo", "hi", "inv"))
        top += [f"  %{blk} = pto.get_block_idx", f"  %{nblk} = pto.get_block_num",
                f"  %{lo} = arith.addi %{self.first}, %{blk} : index",
                f"  %{hi} = arith.addi %{self.first}, %{self.count} : index"]
        body.append(f"  scf.for %{inv} = %{lo} to %{hi} step %{nblk} {{")
        return "%" + inv

    def extent(self, body: list[str], pad: str, total: str, base: str, t: int, name: str) -> str:
        """min(total - base, t): the valid extent of a tile that may be the partial last one."""
        left, v = self.fresh(name + "left"), self.fresh(name)
        body += [f"{pad}%{left} = arith.subi {total}, {base} : index",
                 f"{pad}%{v} = arith.minsi %{left}, {self.const(t)} : index"]
        return "%" + v

    def split(self, body: list[str], pad: str, inv: str, ncols: str) -> tuple[str, str]:
        """(row tile, column tile) of a grid invocation."""
        bi, bj = self.fresh("bi"), self.fresh("bj")
        body += [f"{pad}%{bi} = arith.divsi {inv}, {ncols} : index",
                 f"{pad}%{bj} = arith.remsi {inv}, {ncols} : index"]
        return "%" + bi, "%" + bj

    def close(self, top: list[str], body: list[str]) -> LoweredKernel:
        """End the invocation loop and the kernel; its parameters: buffers and sizes in first-use
        order, then %first and %count."""
        body.append("  }")
        params = [f"%{q.name} : {self.memref(q.buffer) if q.buffer else 'index'}" for q in self.params]
        params += [f"%{self.first} : index", f"%{self.count} : index"]
        self.params += [KernelParam(self.first, "first"), KernelParam(self.count, "count")]
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
        row0 = self.value(place.row0, self._pre)
        col0 = self.value(place.col0, self._pre)
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
    def vtile(self) -> tuple[int, int]:
        """The vector tile shape (a matmul kernel's vector ops work on its output tiles)."""
        return self.k.vtile

    def wide_type(self, dt: DType, blk: Block) -> str:
        return self.tile_type(self.vtile[0], self.vtile[1], dt, blk.vr_s, blk.vc_s)

    def rowvec_type(self, dt: DType, blk: Block) -> str:
        return self.tile_type(self.vtile[0], 1, dt, blk.vr_s, "1")

    def colvec_type(self, dt: DType, blk: Block) -> str:
        return self.tile_type(1, self.vtile[1], dt, "1", blk.vc_s)

    def load(self, t: g.TensorValue, mode: str, blk: Block, env: dict, out: list[str], pad: str,
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

    def result_tile(self, n: TileNode, blk: Block, env: dict, out: list[str], pad: str,
                    rowvec: bool | None = None) -> str:
        rowvec = n.is_rowvec if rowvec is None else rowvec
        typ = self.rowvec_type(n.out.dtype, blk) if rowvec else self.wide_type(n.out.dtype, blk)
        for a in n.inputs:          # in place: an operand's tile of this type, dead after this op
            t = a.value
            if a.mode != "tile" or not isinstance(t, g.TensorValue) or self.last_use.get(t) != self.current:
                continue
            keys = [key for key in (t, (t, "tile")) if key in env]
            tile = env[keys[0]] if keys else None
            if tile is None or self.tiles.get(tile[1:]) != typ:
                continue
            if any(v == tile for key, v in env.items() if key not in keys):
                continue
            for key in keys:
                del env[key]
            env[n.out] = tile
            self.reused = tile
            return tile
        tile = self.declare(out, pad, n.out.name, typ, blk.vr, None if rowvec else blk.vc)
        env[n.out] = tile
        return tile

    def store(self, n: TileNode, tile: str, blk: Block, out: list[str], pad: str) -> None:
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
            idx = self.value(v, self._pre)
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
    def node(self, n: TileNode, blk: Block, env: dict, out: list[str], pad: str) -> None:
        """The tile ops of one vector node for this block (loads of what it reads first, the
        store of its result when it leaves the kernel after)."""
        self.current = self.k.nodes.index(n)
        self.reused = None
        start = len(out)
        self._node(n, blk, env, out, pad)
        if self.reused is not None:     # written in place: the line still names the tensor
            for i in range(start, len(out)):
                if out[i].startswith(f"{pad}{self.reused} = "):
                    out[i] += f"  // {n.out}"

    def _node(self, n: TileNode, blk: Block, env: dict, out: list[str], pad: str) -> None:
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
        if n.name == "arange":      # one row (a 1-D tensor): TCI counts from the tile's column
            dst = self.result_tile(n, blk, env, out, pad)
            start = self.fresh("start")
            out.append(f"{pad}%{start} = arith.index_cast {blk.c} : index to i32")
            out.append(f"{pad}{dst} = tci %{start} {{descending = false}}")
            self.store(n, dst, blk, out, pad)
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
            elif rowvec and a.mode == "col":    # a [1, 1] operand of a per-row result
                ops.append(("tile", self.spread(a.value, blk, env, out, pad)))  # type: ignore[arg-type]
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
        elif n.kind == "cast" and dt == in_dt:            # to its own type: the values as they are
            if dst != ops[0][1]:                          # (TCVT f32 -> f32 would round to integers)
                out.append(f"{pad}{dst} = tmov {ops[0][1]}")
        elif n.kind == "cast":      # the op's rounding mode where a float becomes an integer
            mode = CAST_MODE[n.op.attrs.get("mode", "rint")] if in_dt.is_float and not dt.is_float else "RINT"
            out.append(f"{pad}{dst} = tcvt {ops[0][1]} {{roundMode = #pto.round<{mode}>}}")
        elif n.kind == "binary":
            self.binary(n.name, ops, dst, dt, blk, out, pad)
        elif n.kind == "compare":
            self.compare(n.name, ops, dst, in_dt, blk, out, pad)
        elif n.kind == "select":
            mask = self.expand_mask(ops[0], dt, blk, out, pad)
            a, b = (self.expand(o, dt, blk, out, pad) for o in ops[1:])
            out.append(f"{pad}{dst} = tsel {mask}, {a}, {b}")
        else:  # pragma: no cover - tiling only makes the kinds above
            raise AssertionError(n.kind)
        self.store(n, dst, blk, out, pad)

    def spread(self, t: g.TensorValue, blk: Block, env: dict, out: list[str], pad: str) -> str:
        """A per-row tile holding the single value of a [1, 1] tensor in every row: loaded as a
        1 x 1 tile and broadcast down the rows (TCOLEXPAND), once per block."""
        key = (t, "spread")
        if key in env:
            return env[key]
        one = self.declare(out, pad, t.name, self.tile_type(1, 1, t.dtype, "1", "1"), None, None)
        out.append(f"{pad}{one} = tload {self.gindex(self.places[t], self.const(0), self.const(0), out, pad)}")
        tile = self.declare(out, pad, "bc", self.rowvec_type(t.dtype, blk), blk.vr, None)
        out.append(f"{pad}{tile} = tcolexpand {one}")
        env[key] = tile
        return tile

    def expand_mask(self, o: tuple[str, object], dt: DType, blk: Block, out: list[str], pad: str) -> str:
        """A full i1 tile for a select's mask. A per-row or per-column mask cannot be broadcast
        as i1 (TROWEXPAND/TCOLEXPAND take numbers), so it becomes 1/0 of the select's own type
        (TSEL), is broadcast as that, and is compared with 0 again (TCMPS NE)."""
        mode, v = o
        if mode in ("tile", "scalar"):
            return self.expand(o, I1, blk, out, pad)
        if mode == "row":
            typ, vr, vc = self.rowvec_type(dt, blk), blk.vr, None
        else:
            typ, vr, vc = self.colvec_type(dt, blk), None, blk.vc
        one, zero, num = (self.declare(out, pad, base, typ, vr, vc) for base in ("one", "zero", "mask_num"))
        out.append(f"{pad}{one} = texpands {_literal(1, dt)}")
        out.append(f"{pad}{zero} = texpands {_literal(0, dt)}")
        out.append(f"{pad}{num} = tsel {v}, {one}, {zero}")
        wide = self.expand((mode, num), dt, blk, out, pad)
        mask = self.declare(out, pad, "mask", self.wide_type(I1, blk), blk.vr, blk.vc)
        out.append(f"{pad}{mask} = tcmps {wide}, {_literal(0, dt)} {{cmpMode = #pto.cmp<NE>}}")
        return mask

    def expand(self, o: tuple[str, object], dt: DType, blk: Block, out: list[str], pad: str) -> str:
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

    def binary(self, name: str, ops: list, dst: str, dt: DType, blk: Block, out: list[str], pad: str) -> None:
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

    def compare(self, name: str, ops: list, dst: str, dt: DType, blk: Block, out: list[str], pad: str) -> None:
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

    def acc_init(self, n: TileNode, row: Block, env: dict, out: list[str], pad: str) -> None:
        acc = self.declare(out, pad, n.out.name, self.rowvec_type(n.out.dtype, row), row.vr, None)
        out.append(f"{pad}{acc} = texpands {_identity(n.reduce, n.out.dtype)}")  # type: ignore[arg-type]
        env[("acc", n.out)] = acc

    def partial(self, n: TileNode, blk: Block, inner: dict, env: dict, out: list[str], pad: str) -> None:
        src = self.load(n.inputs[0].value, "tile", blk, inner, out, pad)  # type: ignore[arg-type]
        part = self.declare(out, pad, n.out.name + "_part", self.rowvec_type(n.out.dtype, blk), blk.vr, None)
        acc = env[("acc", n.out)]
        out.append(f"{pad}{part} = {ROW_REDUCE[n.reduce]} {src}")  # type: ignore[index]
        out.append(f"{pad}{acc} = {COMBINE[n.reduce]} {acc}, {part}")  # type: ignore[index]

    def finish_reduce(self, n: TileNode, row: Block, env: dict, out: list[str], pad: str) -> None:
        acc = env[("acc", n.out)]
        self.scale_mean(n, acc, out, pad)
        env[n.out] = acc
        self.store(n, acc, row, out, pad)


def _as_rows(place: Place, t: g.TensorValue) -> Place:
    """A per-row vector's place seen as R x 1: the result of a last-axis reduction without its
    kept dim ([A, B] from [A, B, C], or [A] from [A, C]) holds one value per source row, in the
    same order, so its whole buffer is viewed as (A*B) x 1 (the tiler never puts such a result
    in a window: frontend/tiling.py)."""
    if dims_equal(place.cols, 1):
        return place
    if dims_equal(place.rows, 1) or place.whole():
        return reshaped(place, (g.sym_binop("mul", place.rows, place.cols), 1), None)
    return place
