"""The tuning loop of the DeepSeek V3.2 operators on the simulator (issue 20 item 3).

Each operator runs as a task graph (``merge=1``: one task per tile subgraph) on the MPMD
runtime's simulated executor for an NPU profile (a3: 24 AIC + 48 AIV cores; a5: 32 + 64), so
the run gives a swimlane and a Chrome trace of cube and vector tasks, and a per-stage roofline
table. Nothing here is a second cost model: a task's time is the simulated executor's (a
timing-only ``ascend_sim`` run of its kernel), and a stage's bound and bound amount are that
run's ``SimResult.busy`` and ``bound``. The *theoretical* time is the bound pipe's work at the
machine's peak rates (isa/machines.py): each instruction on that pipe, from the simulator's
trace, is read back as work (bytes for a transfer on its path's bandwidth curve, MACs for a
cube step, 256-byte repeats for a vector op) and costed at the path's best bandwidth, the cube's
MACs per cycle, or the vector repeats without their start-up, spread over the cores the stage's
tasks can use at once. Like the executor, it does not model HBM shared between cores.

``VARIANTS`` are the tuning steps shown in docs/operators.md: each a name, the operator, its
documented knobs (the shapes tables' tile fields) and the run-time sizes; ``simulate`` runs one
on a profile, ``stage_table`` makes its table, ``format_table`` prints it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..isa.machines import MACHINES, PATH_BY_ENDS, Machine, buffer_name
from ..isa.types import TileType

#: the trace's pipe names -> the bound names ``SimResult.bound`` uses
PIPE_BOUND = {"V": "Vector", "M": "Cube", "MTE1": "MTE1", "MTE2": "MTE2", "MTE3": "MTE3", "FIX": "FIX"}


# --------------------------------------------------------------------------------------------
# the operators at the tuning shapes, and their variants

def _indexer_inputs(s: Any, seq: list[int], rng: np.random.Generator) -> list[np.ndarray]:
    """Quantised indexer inputs: each batch's blocks from a shuffled pool, -1 after them."""
    B, T, N, D = len(seq), s.tokens, s.heads, s.head_dim
    bt = np.full((B, s.max_blocks), -1, np.int32)
    pool, used = rng.permutation(s.num_blocks), 0
    for b, n in enumerate(seq):
        need = -(-n // s.block_size)
        bt[b, :need] = pool[used:used + need]
        used += need
    return [rng.integers(-127, 128, (B, T, N, D)).astype(np.int8),
            (rng.random((B, T, N)) * 0.02 + 1e-3).astype(np.float16),
            rng.integers(-127, 128, (s.num_blocks, s.block_size, D)).astype(np.int8),
            (rng.random((s.num_blocks, s.block_size)) * 0.02 + 1e-3).astype(np.float16),
            rng.standard_normal((B, T, N)).astype(np.float16),
            np.array(seq, np.int32), bt]


def _prolog_inputs(s: Any, t: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Quantised prolog inputs for ``t`` tokens (bf16 activations and float weights)."""
    import ml_dtypes
    bf16 = ml_dtypes.bfloat16
    u = lambda *shape: rng.uniform(-1, 1, shape)                      # noqa: E731
    ang = np.arange(t)[:, None] * (10000.0 ** (-np.arange(s.rope_dim) / s.rope_dim))[None, :]
    h = np.ones((1, 1))
    while h.shape[0] < s.head_dim:
        h = np.block([[h, h], [h, -h]])
    had = (h / math.sqrt(s.head_dim)).astype(bf16)
    nd = s.heads * s.head_dim
    return [u(t, s.hidden).astype(bf16), rng.integers(-128, 128, (t, s.q_lora)).astype(np.int8),
            rng.uniform(1e-3, 2e-2, (t, 1)).astype(np.float32),
            rng.integers(-128, 128, (s.q_lora, nd)).astype(np.int8),
            rng.uniform(1e-3, 2e-2, (nd, 1)).astype(np.float32), u(s.hidden, s.head_dim).astype(bf16),
            u(s.hidden, s.heads).astype(bf16), (1 + 0.1 * u(s.head_dim)).astype(bf16),
            (0.1 * u(s.head_dim)).astype(bf16), np.cos(ang).astype(bf16), np.sin(ang).astype(bf16), had, had]


@dataclass(frozen=True)
class Variant:
    """One point of the tuning loop: an operator at given shapes (knobs included) and sizes."""

    name: str
    operator: str                       # "indexer" | "prolog"
    shapes: Any                         # IndexerShapes | PrologShapes
    sizes: tuple                        # indexer: the batches' sequence lengths; prolog: (tokens,)
    note: str = ""

    def build(self, profile: str, backend: str = "llvm") -> Any:
        """The jitted operator on the simulated executor (one task per tile subgraph)."""
        from . import indexer_prolog as ip
        from . import lightning_indexer as li
        mod = li if self.operator == "indexer" else ip
        return mod.build(self.shapes, quant=True, backend=backend, profile=profile, executor="simulated",
                         merge=1)

    def inputs(self, seed: int = 0) -> list[np.ndarray]:
        rng = np.random.default_rng(seed)
        if self.operator == "indexer":
            return _indexer_inputs(self.shapes, list(self.sizes), rng)
        return _prolog_inputs(self.shapes, int(self.sizes[0]), rng)

    def run(self, fn: Any, args: list[np.ndarray]) -> tuple:
        """Call ``fn``; its outputs as a tuple of arrays."""
        if self.operator == "indexer":
            from . import lightning_indexer as li
            return li.run(fn, *args)
        return tuple(np.asarray(o) for o in fn(*args))

    def with_shapes(self, name: str, note: str = "", **knobs: Any) -> "Variant":
        return Variant(name, self.operator, replace(self.shapes, **knobs), self.sizes, note)


def tuning_variants(scale: str = "doc") -> dict[str, Variant]:
    """The variants at the documented tuning shape (``doc``) or a tiny one for tests (``tiny``)."""
    from .indexer_prolog import PrologShapes
    from .lightning_indexer import IndexerShapes
    if scale == "doc":
        # the public widths (64 index heads of 128, 128-key blocks; the prolog's 7168 / 1536
        # projections) with 4 batches of 2 tokens and 1K keys each: the public decode's layout
        ind = IndexerShapes(heads=64, head_dim=128, block_size=128, num_blocks=40, max_blocks=8, tokens=2,
                            topk=256, tile_cols=128)
        pro = PrologShapes(hidden=7168, q_lora=1536, heads=64, head_dim=128, rope_dim=64, cube=(16, 256, 128))
        seq, tokens = (1000, 700, 1024, 513), 8
    else:
        ind = IndexerShapes(heads=16, head_dim=32, block_size=32, num_blocks=12, max_blocks=4, tokens=2,
                            topk=16, tile_cols=32)
        pro = PrologShapes(hidden=256, q_lora=128, heads=32, head_dim=32, rope_dim=16, tile_rows=4,
                           cube=(16, 64, 32))
        seq, tokens = (100, 37), 4
    base_i = Variant("indexer", "indexer", ind, seq, f"tile_cols={ind.tile_cols}")
    base_p = Variant("prolog", "prolog", pro, (tokens,), f"cube={pro.cube}")
    n2 = 2 * pro.cube[2]
    return {"indexer": base_i, "prolog": base_p,
            # step 1: the query projection's N tile doubled: half as many cube tasks, each moving
            # its q_norm rows once for twice the weight columns (64 -> 32 tasks at the doc shape)
            "prolog_tuned": base_p.with_shapes("prolog_tuned", f"cube={(*pro.cube[:2], n2)}",
                                               cube=(*pro.cube[:2], n2)),
            # step 2: the score matmul's cube tiles set by hand (IndexerShapes.cube): at the doc
            # shape 256 key positions per tile instead of the pipeline's default 128, so half the
            # cube tasks, each loading its batch's queries once for twice the keys
            "indexer_tuned": base_i.with_shapes("indexer_tuned", f"tile_cols={ind.tile_cols}, cube={INDEXER_CUBE[scale]}",
                                                cube=INDEXER_CUBE[scale])}


#: the tuned score matmul tiles (m, k, n) per scale
INDEXER_CUBE = {"doc": (256, 128, 128), "tiny": (64, 32, 32)}

#: the tuning steps docs/operators.md shows: (title, variant before, variant after)
STEPS: list[tuple[str, str, str]] = [
    ("Indexer Prolog: query projection tasks against the cube cores", "prolog", "prolog_tuned"),
    ("Lightning Indexer: the score matmul's tiles", "indexer", "indexer_tuned"),
]


# --------------------------------------------------------------------------------------------
# simulate, and the per-stage table

@dataclass
class Simulated:
    """One variant simulated on one profile: its record, outputs and the kernels' timing runs."""

    variant: Variant
    profile: str
    record: Any
    outputs: tuple
    results: dict[int, Any] = field(default_factory=dict)    # task id -> SimResult (with trace)

    @property
    def makespan_us(self) -> float:
        return self.record.makespan / 1e3


_RESULTS: dict[tuple, Any] = {}


def _timing_result(task: Any, profile: str) -> Any:
    """The timing-only ``ascend_sim`` run of a kernel task with its trace (the run the simulated
    executor times the task by, repeated with ``trace=True``; cached per kernel and signature)."""
    from .. import compile as pto_compile
    from ..runtime.simulated import _signature
    module = task.exe.module
    key = (id(module), profile, task.kernel or "", _signature(task.args, task.blocks))
    hit = _RESULTS.get(key)
    if hit is not None and hit[0] is module:
        return hit[1]
    exe = pto_compile(module, backend="ascend_sim", profile=profile, values=False, hazards="off")
    res = exe.run(task.kernel, block_num=task.blocks, trace=True, **task.args)
    _RESULTS[key] = (module, res)
    return res


def simulate(variant: Variant, profile: str, backend: str = "llvm", seed: int = 0) -> Simulated:
    """Run ``variant`` on the simulated executor of ``profile``; keep every kernel task's
    timing run for the table."""
    fn = variant.build(profile, backend)
    out = variant.run(fn, variant.inputs(seed))
    rec = fn.last_run
    sim = Simulated(variant, profile, rec, out)
    for t in rec.graph.tasks:
        if t.exe is not None:
            sim.results[t.id] = _timing_result(t, profile)
    return sim


def _lines(module: Any) -> dict[tuple[str, int], Any]:
    """(kernel, line) -> the tile statement there (the trace names instructions by line)."""
    from ..assembler.ir import TileOp
    out = {}
    for k in module.kernels:
        for st in k.walk():
            if isinstance(st, TileOp) and st.loc is not None:
                out[(k.name, st.loc.line)] = st
    return out


def _path(st: Any, pipe: str) -> str:
    """The data path of a transfer statement: from its tile operands' buffers (global memory
    when it has a global operand), as the simulator picks it."""
    tiles = [(o.role.name, a.type) for o in st.instr.operands if (a := st.args.get(o.name)) is not None
             and isinstance(getattr(a, "type", None), TileType)]
    srcs = [buffer_name(t.loc) for r, t in tiles if r != "OUT"]
    dsts = [buffer_name(t.loc) for r, t in tiles if r == "OUT"]
    src = srcs[0] if srcs else "GM"
    dst = dsts[0] if dsts else "GM"
    default = {"MTE2": "GM->UB", "MTE1": "L1->L0A", "MTE3": "UB->GM", "FIX": "L0C->GM"}[pipe]
    return PATH_BY_ENDS.get((src, dst), default)


def _peak_bytes_per_cycle(m: Machine, path: str) -> float:
    p = m.paths[path]
    if p.curve:
        return min(max(g for _, g in p.curve), m.hbm_gbps if p.hbm else math.inf) / m.cycles_per_ns
    return float(p.bytes_per_cycle or 1)


def _bytes_moved(m: Machine, path: str, cycles: float) -> float:
    """The bytes a transfer of ``cycles`` on ``path`` moved (the inverse of
    ``Machine.transfer_cycles``, which rises with the size on every path: bisection)."""
    lo, hi = 0.0, max(1.0, cycles * _peak_bytes_per_cycle(m, path) * 2)
    for _ in range(60):
        mid = (lo + hi) / 2
        if m.transfer_cycles(path, int(mid)) < cycles:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def ideal_work(res: Any, pipe: str, m: Machine, lines: dict, kernel: str) -> tuple[float, float, str]:
    """(work, ideal cycles, unit) of ``pipe`` in one timing run: each traced instruction there
    read back as its work and costed at the machine's peak rate for it."""
    work = ideal = 0.0
    unit = {"V": "repeats", "M": "MACs"}.get(pipe, "bytes")
    for e in res.trace or ():
        if e.get("pipe") != pipe or "dur_ns" not in e or e.get("flow"):
            continue
        cyc = e["end_cycle"] - e["start_cycle"]
        if pipe == "V":
            st = lines.get((kernel, e["line"]))
            cost = m.vector[_vector_class(st)] if st is not None else m.vector["vec_binary"]
            reps = max(0.0, (cyc - cost.startup) / cost.per_repeat)
            work, ideal = work + reps, ideal + reps * cost.per_repeat
        elif pipe == "M":
            st = lines.get((kernel, e["line"]))
            size = _left_itemsize(st)
            rate = m.cube_macs.get(size, m.cube_macs[2])
            macs = max(0.0, cyc - m.cube_issue_cycles) * rate
            work, ideal = work + macs, ideal + macs / rate
        else:
            st = lines.get((kernel, e["line"]))
            path = _path(st, pipe) if st is not None else {"MTE2": "GM->UB", "MTE1": "L1->L0A", "MTE3": "UB->GM",
                                                           "FIX": "L0C->GM"}[pipe]
            nbytes = _bytes_moved(m, path, cyc)
            work, ideal = work + nbytes, ideal + nbytes / _peak_bytes_per_cycle(m, path)
    return work, ideal, unit


def _vector_class(st: Any) -> str:
    from ..isa.machines import op_class
    from ..isa.types import Pipe
    return op_class(st.instr, Pipe.V)


def _left_itemsize(st: Any) -> float:
    for o in (st.instr.operands if st is not None else ()):
        a = st.args.get(o.name)
        t = getattr(a, "type", None)
        if isinstance(t, TileType) and o.role.name != "OUT":
            return t.dtype.bits / 8
    return 2


@dataclass(frozen=True)
class StageRow:
    """One stage (kernel) of a simulated run."""

    stage: str
    core: str
    tasks: int
    bound: str                    # the pipe with the most busy cycles over the stage's tasks
    busy: dict[str, float]        # busy cycles per pipe, summed over the stage's tasks
    work: float                   # the bound pipe's work (unit below)
    unit: str
    theoretical_us: float         # that work at the peak rate, over the cores the tasks can use
    simulated_us: float           # first start to last end of the stage's tasks in the run
    task_us: float                # the stage's tasks' simulated durations, summed

    @property
    def bound_cycles(self) -> float:
        return self.busy[self.bound_pipe]

    @property
    def bound_pipe(self) -> str:
        return {v: k for k, v in PIPE_BOUND.items()}[self.bound]


def stage_table(sim: Simulated) -> list[StageRow]:
    """The per-stage roofline table of a simulated run, stages in program order."""
    m = MACHINES[sim.profile]
    rec = sim.record
    groups: dict[str, list[Any]] = {}
    for t in rec.graph.tasks:
        if t.exe is not None:
            groups.setdefault(t.kernel, []).append(t)
    lines_of: dict[int, dict] = {}
    rows = []
    for kernel, tasks in groups.items():
        busy: dict[str, float] = {}
        for t in tasks:
            for p, c in sim.results[t.id].busy.items():
                busy[p] = busy.get(p, 0.0) + c
        pipe = max((p for p in busy if p in PIPE_BOUND), key=lambda p: busy[p])
        work = ideal = 0.0
        unit = "bytes"
        for t in tasks:
            module = t.exe.module
            lines = lines_of.setdefault(id(module), _lines(module))
            w, i, unit = ideal_work(sim.results[t.id], pipe, m, lines, kernel)
            work, ideal = work + w, ideal + i
        core = tasks[0].core
        cores = m.cube_cores if core == "cube" else m.vector_cores
        theo = ideal / min(len(tasks), cores) / m.cycles_per_ns / 1e3
        runs = [rec.runs[t.id] for t in tasks]
        span = (max(r.end for r in runs) - min(r.start for r in runs)) / 1e3
        rows.append(StageRow(kernel, core, len(tasks), PIPE_BOUND[pipe], busy, work, unit, theo, span,
                             sum(r.end - r.start for r in runs) / 1e3))
    return rows


def _amount(x: float, unit: str) -> str:
    if unit == "bytes":
        return f"{x / 1024:,.1f} KB"
    if unit == "MACs":
        return f"{x / 1e6:,.2f} M MACs"
    return f"{x:,.0f} repeats"


def format_table(rows: list[StageRow], title: str = "") -> str:
    """The table as Markdown: stage, core, tasks, bound pipe, its busy cycles, its work, the
    theoretical and the simulated time."""
    out = [f"**{title}**", ""] if title else []
    out += ["| stage | core | tasks | bound | bound busy cycles | bound work | theoretical µs | simulated µs "
            "| task µs (sum) |", "|---|---|---:|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        out.append(f"| {r.stage} | {r.core} | {r.tasks} | {r.bound} | {r.bound_cycles:,.0f} | "
                   f"{_amount(r.work, r.unit)} | {r.theoretical_us:.2f} | {r.simulated_us:.2f} | {r.task_us:.2f} |")
    return "\n".join(out)


def summary_line(sim: Simulated) -> str:
    rec = sim.record
    kinds = {"cube": 0, "vector": 0}
    for t in rec.graph.tasks:
        if t.core in kinds:
            kinds[t.core] += 1
    return (f"{sim.variant.name} on {sim.profile}: {kinds['cube']} cube + {kinds['vector']} vector tasks, "
            f"simulated makespan {sim.makespan_us:.1f} µs")


__all__ = ["Variant", "tuning_variants", "STEPS", "Simulated", "simulate", "StageRow", "stage_table", "format_table",
           "summary_line", "ideal_work"]
