"""Level 3, several ranks: whole communication programs run as ``ranks=N`` launches (the
embedded execution, docs/comm.md) and compared with numpy — a ring exchange, an all-reduce
built from puts and AtomicAdd notifies, a root-driven broadcast — for 1, 2, 3 and 4 ranks and
several shapes and dtypes; and the same ring with its wait removed, which must be reported as
``ORDER_COMM_RACE`` (a read before the signal), not run to some result.

The programs are generated here (not read from examples/), so a new backend is tested on
shapes and dtypes nobody tuned it for. A backend that does not lower the communication family
reports "unsupported" (LEGAL_BACKEND_UNSUPPORTED at compile time).

With ``mpi=True`` every scenario that runs to a result is also launched as 2 and 4 MPI
processes (runtime/mpi.py, one rank each, the `mpi` extra) and every rank's arrays must equal
the embedded execution's bit for bit: one semantics, two executions. (The MPI execution has no
race detection, so the missing-wait scenario runs embedded only.)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..assembler import load_bytes, parse, verify
from ..backends.base import Backend
from ..backends.compare import error_budget
from ..isa import dtypes as dt
from ..isa.diagnostics import PTOError
from .level3 import LEVEL, UNSUPPORTED, first_difference
from .outcome import Failure, Outcome
from .programs import random_values

RANKS = (1, 2, 3, 4)
DTYPES = ("f32", "f16", "bf16", "i32")
SIZES = ((16, 16), (8, 64), (32, 32))
RACE = "ORDER_COMM_RACE"
MPI_RANKS = (2, 4)

PerRank = dict[str, list[Any]]


def _mem(d: str, rows: int | str, cols: int) -> str:
    return f"!pto.memref<{rows}x{cols}x{d}>"


def _ring(d: str, rows: int, cols: int, wait: bool = True) -> str:
    """y on rank r+1 = x of rank r; z = y + x once the flag says y arrived."""
    m = _mem(d, rows, cols)
    sync = "  twait %flag[%c0], %one {cmp = #pto.cmp<EQ>} : (!pto.memref<1xi32>, i32)\n" if wait else ""
    return (f"kernel @ring(%x : {m}, %y : {m}, %flag : !pto.memref<1xi32>, %z : {m}) {{\n"
            "  .const %c0 = 0 : index\n  .const %c1 = 1 : index\n  .const %one = 1 : i32\n"
            "  %me = pto.get_rank\n  %n = pto.get_rank_num\n"
            "  %after = arith.addi %me, %c1 : index\n  %next = arith.remsi %after, %n : index\n"
            f"  tput %y[%c0, %c0], %x[%c0, %c0], %next : ({m}, {m}, index)\n"
            "  tnotify %flag[%c0], %one, %next {op = #pto.notify_op<Set>} : (!pto.memref<1xi32>, i32, index)\n"
            f"{sync}"
            f"  %ty = tload %y[%c0, %c0] : ({m}) -> !pto.tile<{rows}x{cols}x{d}>\n"
            f"  %tx = tload %x[%c0, %c0] : ({m}) -> !pto.tile<{rows}x{cols}x{d}>\n"
            f"  %tz = tadd %ty, %tx : (!pto.tile<{rows}x{cols}x{d}>, !pto.tile<{rows}x{cols}x{d}>) "
            f"-> !pto.tile<{rows}x{cols}x{d}>\n"
            "  tstore %z[%c0, %c0], %tz\n}\n")


def _allreduce(d: str, rows: int, cols: int) -> str:
    """Every rank puts x into its slot of every rank's buf, AtomicAdds the peer's counter,
    waits for N arrivals and sums the slots in rank order."""
    m, b, t = _mem(d, rows, cols), _mem(d, "?", cols), f"!pto.tile<{rows}x{cols}x{d}>"
    return (f"kernel @allreduce(%x : {m}, %buf : {b}, %cnt : !pto.memref<1xi32>, %y : {m}) {{\n"
            f"  .const %c0 = 0 : index\n  .const %c1 = 1 : index\n  .const %rows = {rows} : index\n"
            "  .const %one = 1 : i32\n"
            "  %me = pto.get_rank\n  %n = pto.get_rank_num\n  %slot = arith.muli %me, %rows : index\n"
            "  scf.for %p = %c0 to %n step %c1 {\n"
            f"    tput %buf[%slot, %c0], %x[%c0, %c0], %p : ({b}, {m}, index)\n"
            "    tnotify %cnt[%c0], %one, %p {op = #pto.notify_op<AtomicAdd>} : (!pto.memref<1xi32>, i32, index)\n"
            "  }\n"
            "  %n32 = arith.index_cast %n : index to i32\n"
            "  twait %cnt[%c0], %n32 {cmp = #pto.cmp<GE>} : (!pto.memref<1xi32>, i32)\n"
            f"  .tile %acc : {t}\n  .tile %t : {t}\n"
            f"  %acc = tload %buf[%c0, %c0] : ({b}) -> {t}\n"
            "  scf.for %k = %c1 to %n step %c1 {\n"
            "    %row = arith.muli %k, %rows : index\n"
            f"    %t = tload %buf[%row, %c0] : ({b}) -> {t}\n"
            "    %acc = tadd %acc, %t\n  }\n"
            "  tstore %y[%c0, %c0], %acc\n}\n")


def _broadcast(d: str, rows: int, cols: int) -> str:
    """The last rank broadcasts its x into every rank's y and signals each; z = y + x."""
    m, t = _mem(d, rows, cols), f"!pto.tile<{rows}x{cols}x{d}>"
    return (f"kernel @broadcast(%x : {m}, %y : {m}, %flag : !pto.memref<1xi32>, %z : {m}) {{\n"
            "  .const %c0 = 0 : index\n  .const %c1 = 1 : index\n  .const %one = 1 : i32\n"
            "  %me = pto.get_rank\n  %n = pto.get_rank_num\n  %last = arith.subi %n, %c1 : index\n"
            "  %root = arith.cmpi eq, %me, %last : index\n"
            "  scf.if %root {\n"
            f"    tbroadcast %y[%c0, %c0], %x[%c0, %c0] : ({m}, {m})\n"
            "    scf.for %p = %c0 to %n step %c1 {\n"
            "      tnotify %flag[%c0], %one, %p {op = #pto.notify_op<Set>} : (!pto.memref<1xi32>, i32, index)\n"
            "    }\n  }\n"
            "  twait %flag[%c0], %one {cmp = #pto.cmp<EQ>} : (!pto.memref<1xi32>, i32)\n"
            f"  %ty = tload %y[%c0, %c0] : ({m}) -> {t}\n"
            f"  %tx = tload %x[%c0, %c0] : ({m}) -> {t}\n"
            f"  %tz = tadd %ty, %tx : ({t}, {t}) -> {t}\n"
            "  tstore %z[%c0, %c0], %tz\n}\n")


def _np(d: str) -> np.dtype:
    return np.dtype(dt.get(d).np_dtype)


def _add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a + b in a's dtype (integers wrap; floats computed wide and rounded once)."""
    if a.dtype.kind == "i":
        return (a.astype(np.int64) + b.astype(np.int64)).astype(a.dtype)
    return (a.astype(np.float64) + b.astype(np.float64)).astype(a.dtype)


def _zeros(n: int, shape: tuple[int, ...], d: np.dtype) -> list[np.ndarray]:
    return [np.zeros(shape, d) for _ in range(n)]


def _ring_arrays(n: int, rows: int, cols: int, d: str, rng: np.random.Generator) -> PerRank:
    return {"x": [random_values((rows, cols), dt.get(d), rng) for _ in range(n)], "y": _zeros(n, (rows, cols), _np(d)),
            "flag": _zeros(n, (1,), np.dtype(np.int32)), "z": _zeros(n, (rows, cols), _np(d))}


def _ring_expect(a: PerRank, n: int) -> PerRank:
    xs = a["x"]
    return {"y": [xs[(r - 1) % n] for r in range(n)], "z": [_add(xs[(r - 1) % n], xs[r]) for r in range(n)]}


def _allreduce_arrays(n: int, rows: int, cols: int, d: str, rng: np.random.Generator) -> PerRank:
    return {"x": [random_values((rows, cols), dt.get(d), rng) for _ in range(n)], "buf": _zeros(n, (rows * n, cols), _np(d)),
            "cnt": _zeros(n, (1,), np.dtype(np.int32)), "y": _zeros(n, (rows, cols), _np(d))}


def _allreduce_expect(a: PerRank, n: int) -> PerRank:
    acc = a["x"][0]
    for x in a["x"][1:]:                 # rank order, one rounding per step: what the tadds compute
        acc = _add(acc, x)
    return {"y": [acc] * n, "buf": [np.concatenate(a["x"])] * n}


def _broadcast_expect(a: PerRank, n: int) -> PerRank:
    root = a["x"][n - 1]
    return {"y": [root] * n, "z": [_add(root, a["x"][r]) for r in range(n)]}


@dataclass(frozen=True)
class CommScenario:
    """A multi-rank program family: ``text(dtype, rows, cols)``, its per-rank arrays and numpy's
    per-rank result; ``error`` names the code the launch must raise instead (with ranks > 1)."""

    name: str
    doc: str
    kernel: str
    text: Callable[[str, int, int], str]
    arrays: Callable[[int, int, int, str, np.random.Generator], PerRank]
    expect: Callable[[PerRank, int], PerRank]
    error: str | None = None


SCENARIOS: tuple[CommScenario, ...] = (
    CommScenario("L3:comm-ring", "each rank puts x into the next rank's y, notifies, waits, adds",
                 "ring", _ring, _ring_arrays, _ring_expect),
    CommScenario("L3:comm-allreduce", "an all-reduce from puts and AtomicAdd notifies, summed in rank order",
                 "allreduce", _allreduce, _allreduce_arrays, _allreduce_expect),
    CommScenario("L3:comm-broadcast", "the last rank broadcasts x to every rank and signals each",
                 "broadcast", _broadcast, _ring_arrays, _broadcast_expect),
    CommScenario("L3:comm-missing-wait", "the ring without its wait: the load of y races the put",
                 "ring", lambda d, r, c: _ring(d, r, c, wait=False), _ring_arrays, _ring_expect, error=RACE),
)


def _copy(a: PerRank) -> PerRank:
    return {k: [x.copy() for x in v] for k, v in a.items()}


def _mpi_difference(backend: Backend, module: Any, profile: str, sc: CommScenario, inputs: PerRank,
                    embedded: PerRank, n: int) -> str | None:
    """Launch the scenario on ``n`` MPI processes; what differs from the embedded run, if anything."""
    from ..runtime.mpi import launch
    from .runner import backend_spec

    args = {k: [x.copy() for x in v] for k, v in inputs.items()}
    try:
        launch(module, sc.kernel, args, ranks=n, backend=backend_spec(backend), profile=profile,
               wait_timeout=30.0, timeout=300.0)
    except PTOError as e:
        return f"the MPI execution raised {e.code}: {e.message}"
    for name, per in embedded.items():
        for r in range(n):
            if not np.array_equal(args[name][r], per[r], equal_nan=True):
                at = tuple(int(i) for i in np.argwhere(args[name][r] != per[r])[0])
                return (f"{name}[rank {r}] differs between the MPI and the embedded execution at {at}: "
                        f"{args[name][r][at]!r} vs {per[r][at]!r}")
    return None


def comm_outcome(backend: Backend, profile: str, sc: CommScenario, d: str, seed: int,
                 mpi: bool = False) -> Outcome:
    """Every size and rank count of one scenario on one dtype (``mpi``: 2 and 4 ranks also
    launched under MPI and compared with the embedded run)."""
    if not backend.multi_rank:
        return Outcome(LEVEL, sc.name, d, "unsupported", 0,
                       reason=f"backend {backend.name!r} runs one rank only (no ranks=N launches)")
    rng = np.random.default_rng(seed)
    n_done = 0
    for rows, cols in SIZES:
        text = sc.text(d, rows, cols)
        try:
            module = verify(load_bytes(parse(text).to_bytes()), profile)
            exe = backend.compile(module, profile)
        except PTOError as e:
            status = "unsupported" if e.code in (UNSUPPORTED,) or e.code.startswith("LEGAL") else "fail"
            return Outcome(LEVEL, sc.name, d, status, n_done, reason=f"{e.code}: {e.message}")
        budget = error_budget(module.kernels[0])
        for n in RANKS:
            args = sc.arrays(n, rows, cols, d, rng)
            inputs = _copy(args)
            where = f"({rows}x{cols}, {n} ranks)"

            def failed(message: str, diff: Any = None) -> Outcome:
                f = Failure(f"{message} {where}", program=text, difference=diff, kernel=sc.kernel,
                            inputs={f"{k}[{r}]": v for k, vs in inputs.items() for r, v in enumerate(vs)})
                return Outcome(LEVEL, sc.name, d, "fail", n_done, reason=f.message, failure=f)

            want_error = sc.error if n > 1 else None
            try:
                exe.run(sc.kernel, ranks=n, **args)
            except PTOError as e:
                if e.code == want_error:
                    n_done += 1
                    continue
                return failed(f"{sc.doc}: raised {e.code}: {e.message}")
            except Exception as e:  # noqa: BLE001 - reported, not raised
                return failed(f"{sc.doc}: raised {type(e).__name__}: {e}")
            if want_error is not None:
                return failed(f"{sc.doc}: ran to the end instead of raising {want_error}")
            n_done += 1
            for name, per in sc.expect(inputs, n).items():
                for r in range(n):
                    diff = first_difference({name: args[name][r]}, {name: per[r]}, budget * n)
                    if diff is not None:
                        diff.operand = f"{name}[rank {r}]"
                        return failed(f"{sc.doc}: {diff.operand} differs from numpy", diff)
            if mpi and n in MPI_RANKS:
                why = _mpi_difference(backend, module, profile, sc, inputs, args, n)
                if why is not None:
                    return failed(f"{sc.doc}: {why}")
                n_done += 1
    return Outcome(LEVEL, sc.name, d, "pass", n_done)


def run_level3_comm(backend: Backend, profile: str, seed: int | None = 0, mpi: bool = False) -> list[Outcome]:
    """Each multi-rank scenario per dtype, one Outcome each (``mpi``: compared with MPI launches too)."""
    base = 0 if seed is None else seed
    return [comm_outcome(backend, profile, sc, d, base + i, mpi=mpi and sc.error is None)
            for i, sc in enumerate(SCENARIOS) for d in DTYPES]


__all__ = ["SCENARIOS", "comm_outcome", "run_level3_comm"]
