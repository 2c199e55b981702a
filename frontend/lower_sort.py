"""The sort-based topk kernel (largest first, a dtype the profile sorts): one row per invocation,
planned by frontend/topksort.py.

Per chunk of the row: TLOAD, TFILLPAD with the lowest value up to whole runs, TCI of the
positions as the u32 payload, TSORT32, the single-list TMRGSORT passes (two record tiles in
turn), TSUBVIEW of each run's head and one multi-list TMRGSORT of them (a single run: TSUBVIEW of
its first k records). Several chunks: the first chunk's best is copied (TMOV), each later one is
merged after the running best (TMRGSORT, the best first so ties keep the lower position), under
an ``scf.if`` on the chunk index. Last, TGATHER with a mask pattern takes the values out of the
records, TRESHAPE to i32 and a second TGATHER the positions; both are stored at column 0.
"""
from __future__ import annotations

from ..isa.dtypes import I32, U16, U32, DType
from . import graph as g
from .emit import Emitter, LoweredKernel
from .topksort import EXECUTED_COLS, SortPlan

#: the TGATHER mask pattern picking a record's value, by elements per record
VALUE_PATTERN = {2: "P0101", 4: "P0001"}
#: the pattern picking the index word of records seen as i32 pairs
INDEX_PATTERN = "P1010"


class SortTopkKernel(Emitter):
    """topk by sorting each row (see the module docstring)."""

    def emit(self) -> LoweredKernel:
        k = self.k
        n = k.nodes[0]
        src = n.inputs[0].value
        assert isinstance(src, g.TensorValue)
        idxs: g.TensorValue = n.extra["indices"]
        sp: SortPlan = n.extra["sort"]
        top: list[str] = []
        body: list[str] = []
        p = "    "
        row = self.open_invocations(top, body)
        self._row, self._src, self._sp = row, src, sp
        d, per, c0 = sp.dtype, sp.per, self.const(0)
        self._final = self.tile(body, p, "top", per * sp.k, d)
        if sp.chunks > 1:
            best = self.tile(body, p, "best", per * sp.k, d)
            merged = self.tile(body, p, "merged", per * sp.k, d)
        if sp.runs > 1 or sp.chunks > 1:
            self._executed = self.declare(body, p, "executed",
                                          self.tile_type(1, EXECUTED_COLS, U16, "1", "4"), None, None)
        if sp.chunks == 1:
            self.chunk(body, p, c0, None)
            final = self._final
        else:
            c, q = "%" + self.fresh("chunk"), p + "  "
            body.append(f"{p}scf.for {c} = {c0} to {self.const(sp.chunks)} step {self.const(1)} {{")
            col0 = "%" + self.fresh("col")
            body.append(f"{q}{col0} = arith.muli {c}, {self.const(sp.chunk)} : index")
            vc = (self.extent(body, q, self.const(sp.cols), col0, sp.chunk, "vc")
                  if sp.cols % sp.chunk else None)
            self.chunk(body, q, col0, vc)
            first = "%" + self.fresh("first_chunk")
            body += [f"{q}{first} = arith.cmpi eq, {c}, {c0} : index",
                     f"{q}scf.if {first} {{",
                     f"{q}  {best} = tmov {self._final}",
                     f"{q}}} else {{",
                     f"{q}  {merged}, {self._executed} = tmrgsort {best}, {self._final} {{exhausted = false}}",
                     f"{q}  {best} = tmov {merged}",
                     f"{q}}}",
                     f"{p}}}"]
            final = best
        values = self.tile(body, p, "values", sp.k, d)
        bits = self.tile(body, p, "bits", 2 * sp.k, I32)
        index = self.tile(body, p, "index", sp.k, I32)
        body += [f"{p}{values} = tgather {final} {{maskPattern = #pto.mask_pattern<{VALUE_PATTERN[per]}>}}",
                 f"{p}{bits} = treshape {final}",
                 f"{p}{index} = tgather {bits} {{maskPattern = #pto.mask_pattern<{INDEX_PATTERN}>}}",
                 f"{p}tstore {self.gindex(self.places[n.out], row, c0, body, p)}, {values}",
                 f"{p}tstore {self.gindex(self.places[idxs], row, c0, body, p)}, {index}"]
        return self.close(top, body)

    def tile(self, out: list[str], pad: str, name: str, cols: int, dt: DType, extra: str = "") -> str:
        """A one-row tile whose valid region is its ``cols`` columns (the static width may be
        rounded up to the profile's row alignment)."""
        return self.declare(out, pad, name, self.tile_type(1, cols, dt, "1", str(cols), extra), None, None)

    def chunk(self, out: list[str], pad: str, col0: str, vc: str | None) -> None:
        """Sort the chunk at column ``col0`` (``vc`` valid positions when run-time, else the
        chunk's length) and leave its best k records in the ``top`` tile."""
        sp, d, per, c0 = self._sp, self._sp.dtype, self._sp.per, self.const(0)
        length = min(sp.chunk, sp.cols)
        x = self.declare(out, pad, self._src.name, self.tile_type(1, sp.padded, d, "1", "?" if vc else str(length)),
                         None, vc)
        out.append(f"{pad}{x} = tload {self.gindex(self.places[self._src], self._row, col0, out, pad)}")
        if sp.pads:
            xp = self.tile(out, pad, "padded", sp.padded, d, ", pad=min")
            out.append(f"{pad}{xp} = tfillpad {x}")
        else:
            xp = x
        ix = self.tile(out, pad, "position", sp.padded, U32)
        start = "0"
        if col0 != c0:
            start = "%" + self.fresh("start")
            out.append(f"{pad}{start} = arith.index_cast {col0} : index to u32")
        out.append(f"{pad}{ix} = tci {start} {{descending = false}}")
        ra = self.tile(out, pad, "records", per * sp.padded, d)
        out.append(f"{pad}{ra} = tsort32 {xp}, {ix}")
        cur = ra
        if sp.passes:
            rb = self.tile(out, pad, "merge", per * sp.padded, d)
            for block in sp.block_lens():
                nxt = rb if cur == ra else ra
                out.append(f"{pad}{nxt} = tmrgsort {cur}, {self.const(block)}")
                cur = nxt
        if sp.runs == 1:
            out.append(f"{pad}{self._final} = tsubview {cur}, {c0}, {c0}")
            return
        runs = []
        for m in range(sp.runs):
            r = self.tile(out, pad, f"run{m}", per * sp.head, d)
            out.append(f"{pad}{r} = tsubview {cur}, {c0}, {self.const(m * per * sp.run)}")
            runs.append(r)
        out.append(f"{pad}{self._final}, {self._executed} = tmrgsort {', '.join(runs)} {{exhausted = false}}")
