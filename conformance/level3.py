"""Level 3: whole programs. Random multi-kernel modules (``programs``) go text -> parse ->
bytecode -> load -> backend and every kernel's arrays must equal the reference backend's
within the kernel's error budget; and synchronisation scenarios (producer and consumer
kernels through global memory, a store read back in the same kernel behind a flag, a
ping-pong pipeline through tiles, blocks reached through tensor views and tile subsets) must
give what numpy computes independently. The scenarios are written in the compute and ordering
forms the profile provides (``scenario_forms``), so they run on every profile.

A program's error budget is the spec's (``backends.compare.error_budget``: each
instruction's numerics contract in epsilons) times the row loop's trip count: the loop body
runs once per block, and a loop-carried accumulator adds each block's error to the last.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..assembler import Kernel, Module, load_bytes, parse, verify
from ..backends import get
from ..backends.base import Backend
from ..backends.compare import compare, error_budget
from ..isa import dtypes as dt
from ..isa.diagnostics import PTOError
from ..isa.spec import Instruction
from ..isa.types import Type
from .level0 import explore
from .outcome import Difference, Failure, Outcome
from .features import FEATURES, program_features
from .programs import KernelArgs, Program, block_options, programs, random_values
from .scenario_forms import SCALE, SHIFT, Plan, affine, plan

LEVEL = 3
UNSUPPORTED = "LEGAL_BACKEND_UNSUPPORTED"
SYNC_DTYPES = ("f32", "f16")


# --------------------------------------------------------------------------- running one program

def _run(exe: Any, kernel: str, args: dict[str, Any]) -> PTOError | None:
    """Run a kernel on ``args`` (written in place); the PTOError it raised, if any. Any
    other exception propagates to the caller, which reports it."""
    try:
        exe.run(kernel, **args)
    except PTOError as e:
        return e
    return None


def _element(a: np.ndarray, index: tuple[int, ...] | None) -> str:
    return "" if index is None else repr(a[index].item())


def first_difference(got: dict[str, Any], want: dict[str, Any], budget: float) -> Difference | None:
    """The first array (in parameter order) where ``got`` is outside the budget of ``want``."""
    for name, w in want.items():
        if not isinstance(w, np.ndarray):
            continue
        g = got[name]
        d = compare(name, g, w, budget)
        if not d.ok:
            where = d.first if d.first is not None else (
                tuple(int(i) for i in np.argwhere(np.isnan(g.astype(np.float64)) != np.isnan(w.astype(np.float64)))[0])
                if d.mismatched_nans else None)
            return Difference(name, where or (), _element(w, where), _element(g, where))
    return None


def _errors_agree(got: PTOError | None, want: PTOError | None) -> str | None:
    """Why two runs' errors disagree (None: both succeeded or both raised the same code)."""
    if got is None and want is None:
        return None
    if got is not None and want is not None:
        return None if got.code == want.code else f"raised {got.code}, the reference raised {want.code}"
    if got is not None:
        return f"raised {got.code} ({got.message}); the reference ran"
    return f"ran; the reference raised {want.code} ({want.message})"  # type: ignore[union-attr]


@dataclass
class ProgramCheck:
    """Checks generated programs on ``backend`` against the reference backend."""

    backend: Backend
    profile: str
    reference: Backend

    def allows(self, instr: Instruction, types: dict[str, Type]) -> bool:
        return self.backend.unsupported(instr, types, self.profile) is None

    def __call__(self, program: Program) -> Failure | None:
        text = program.text
        module = load_bytes(parse(text).to_bytes())
        want_exe = self.reference.compile(module, self.profile)
        try:
            exe = self.backend.compile(module, self.profile)
        except PTOError as e:
            return Failure(f"compiling a legal program raised {e.code}: {e.message}", program=text)
        except Exception as e:  # noqa: BLE001 - a broken backend is reported, not raised
            return Failure(f"compile raised {type(e).__name__}: {e}", program=text)
        for ka in program.kernels:
            failure = self.kernel(exe, want_exe, module.kernel(ka.kernel), ka, text)
            if failure is not None:
                return self.alone(ka, module, failure)
        return None

    def alone(self, ka: KernelArgs, module: Module, failure: Failure) -> Failure:
        """The failure again from a module of the failing kernel alone, when that still
        fails (a smaller reproducer than hypothesis' shrinking reaches), else ``failure``."""
        if len(module.kernels) == 1:
            return failure
        single = Program(Module((module.kernel(ka.kernel),)).to_text(), (ka,))
        return self(single) or failure

    def kernel(self, exe: Any, want_exe: Any, kernel: Kernel, ka: KernelArgs, text: str) -> Failure | None:
        """Run one kernel on copies of the same arguments on both backends and compare."""
        want, got = ka.make(), ka.make()
        want_err = _run(want_exe, ka.kernel, want)

        def failed(message: str, difference: Difference | None = None) -> Failure:
            return Failure(message, program=text, inputs=ka.make(), difference=difference, kernel=ka.kernel)

        try:
            got_err = _run(exe, ka.kernel, got)
        except Exception as e:  # noqa: BLE001
            return failed(f"@{ka.kernel} raised {type(e).__name__}: {e}")
        why = _errors_agree(got_err, want_err)
        if why is not None:
            return failed(f"@{ka.kernel} {why}")
        if want_err is not None:
            return None
        budget = error_budget(kernel) * max(ka.trips, 1)
        diff = first_difference(got, want, budget)
        if diff is not None:
            return failed(f"@{ka.kernel}: {diff.operand} differs from the reference backend beyond the "
                          f"budget of {budget:g} eps", diff)
        return None


#: programs drawn per ``programs(require=...)`` feature before the random ones
PINNED_EXAMPLES = 2
#: the features each pinned family has by construction (conformance/features.py)
PINNED = {"matrix": ("matrix-pipeline", "acc-in-place"), "in-place": ("in-place-chain",)}


@dataclass
class _Recording:
    """``check``, remembering the features (``features.program_features``) of every
    program it ran."""

    check: ProgramCheck
    seen: set[str]

    def __call__(self, program: Program) -> Failure | None:
        failure = self.check(program)
        calls = [(ka.kernel, {a.name: a.value for a in ka.args if a.value is not None}) for ka in program.kernels]
        self.seen |= program_features(parse(program.text), calls)
        return failure


def programs_outcome(backend: Backend, profile: str, max_examples: int, seed: int | None) -> Outcome:
    """The random-program scenario family as one outcome: ``PINNED_EXAMPLES`` programs of each
    pinned family (a matrix pipeline accumulating in place; an in-place elementwise chain),
    then ``max_examples`` random ones. Its ``coverage`` says which features the programs that
    ran had; a feature the backend admits that none had fails the self-check."""
    check = ProgramCheck(backend, profile, get("reference"))
    if not block_options(profile, check.allows):
        return Outcome(LEVEL, "L3:programs", "mixed", "unsupported",
                       reason=f"backend {backend.name!r} cannot load and store tiles of any dtype on {profile}")
    record = _Recording(check, set())
    n, failure, admitted = 0, None, []
    for require, features in PINNED.items():
        strategy = programs(profile, check.allows, require)
        if strategy.is_empty:
            continue
        admitted += features
        count, failure = explore(strategy, record, PINNED_EXAMPLES, seed)
        n += count
        if failure is not None:
            break
    if failure is None:
        count, failure = explore(programs(profile, check.allows), record, max_examples, seed)
        n += count
    coverage = {f: f in record.seen for f in FEATURES if f in admitted}
    missed = [f for f, seen in coverage.items() if not seen]
    if failure is None and missed:
        return Outcome(LEVEL, "L3:programs", "mixed", "fail", n, coverage=coverage,
                       reason="self-check: no program that ran had these features: " + ", ".join(missed))
    return Outcome(LEVEL, "L3:programs", "mixed", "fail" if failure else "pass", n,
                   reason=failure.message if failure else "", failure=failure, coverage=coverage)


# --------------------------------------------------------------------------- sync scenarios

@dataclass(frozen=True)
class Scenario:
    """A hand-written program family: ``text(dtype, cols, plan)`` gives the module in the
    forms ``plan`` picked for the profile (``scenario_forms``), ``calls`` the kernels to run in
    order, ``expect(inputs, dtype, plan)`` numpy's result per output array."""

    name: str
    doc: str
    text: Callable[[str, int, Plan], str]
    calls: tuple[str, ...]
    arrays: Callable[[int, int, str, np.random.Generator], dict[str, Any]]
    expect: Callable[[dict[str, Any], str, Plan], dict[str, np.ndarray]]
    sizes: tuple[tuple[int, int], ...]      # (rows, cols)


BLOCK = 16


def _loop(body: str) -> str:
    """A row-block loop with a run-time valid row count ``%vr`` for the last block."""
    return ("  scf.for %r = %c0 to %rows step %cB iter_args(%left = %rows) -> (index) {\n"
            f"    %vr = arith.minsi %left, %cB : index\n{body}"
            f"    %rest = arith.subi %left, %cB : index\n    scf.yield %rest : index\n  }}\n")


def _head(name: str, params: str) -> str:
    return (f"kernel @{name}({params}) {{\n  .const %c0 = 0 : index\n  .const %cB = {BLOCK} : index\n")


def _tile(name: str, d: str, c: int) -> str:
    return f"    .tile %{name} valid_row = %vr : !pto.tile<{BLOCK}x{c}x{d}, valid=?x{c}>\n"


def _x_tile(p: Plan, d: str, c: int) -> str:
    """The declaration of %v, the tile a tile-form shift step reads x's block into."""
    return "" if p.shift.scalar is not None else _tile("v", d, c)


def _shift(p: Plan, t: str, x_block: str) -> str:
    """The shift step on %t; a tile form adds the input block, loaded into %v from
    ``x_block`` first."""
    if p.shift.scalar is not None:
        return f"    {p.shift.line(t)}\n"
    return f"    %v = tload {x_block}\n    {p.shift.line(t, other='v')}\n"


def _producer_consumer(d: str, c: int, p: Plan) -> str:
    g = f"!pto.memref<?x{c}x{d}>"
    x = "" if p.shift.scalar is not None else f"%x : {g}, "      # the shift adds x's block
    produce = _head("produce", f"%x : {g}, %mid : {g}, %a : {d}, %rows : index") + _loop(
        _tile("t", d, c) + f"    %t = tload %x[%r, %c0]\n    {p.scale.line('t')}\n"
        "    tstore %mid[%r, %c0], %t\n") + "}\n"
    consume = _head("consume", f"{x}%mid : {g}, %y : {g}, %b : {d}, %rows : index") + _loop(
        _tile("u", d, c) + _x_tile(p, d, c) + "    %u = tload %mid[%r, %c0]\n"
        + _shift(p, "u", "%x[%r, %c0]") + "    tstore %y[%r, %c0], %u\n") + "}\n"
    return produce + consume


def _store_load(d: str, c: int, p: Plan) -> str:
    g, order = f"!pto.memref<?x{c}x{d}>", [("MTE3", "MTE2", 0)]
    return _head("roundtrip", f"%x : {g}, %mid : {g}, %y : {g}, %a : {d}, %b : {d}, %rows : index") + _loop(
        _tile("t", d, c) + _tile("u", d, c) + _x_tile(p, d, c)
        + f"    %t = tload %x[%r, %c0]\n    {p.scale.line('t')}\n    tstore %mid[%r, %c0], %t\n"
        + p.sync.signals(order, "    ") + p.sync.waits(order, "    ")
        + "    %u = tload %mid[%r, %c0]\n" + _shift(p, "u", "%x[%r, %c0]")
        + "    tstore %y[%r, %c0], %u\n") + "}\n"


def _ping_pong(d: str, c: int, p: Plan) -> str:
    """Two halves per iteration through ping/pong buffers; forward flags carry data from
    load to compute to store, reverse flags hand buffers back (pre-set, drained after). In
    the barrier form each wait is a barrier and a set is nothing."""
    g, t, s = f"!pto.memref<?x{c}x{d}>", f"!pto.tile<{BLOCK}x{c}x{d}>", p.sync
    back = [(src, dst, i) for src, dst in (("V", "MTE2"), ("MTE3", "V")) for i in (0, 1)]

    def half(i: int, row: str) -> tuple[str, str, str]:
        load = (s.waits([("V", "MTE2", i)], "    ") + f"    %in{i} = tload %x[{row}, %c0]\n"
                + s.signals([("MTE2", "V", i)], "    "))
        work = (s.waits([("MTE2", "V", i), ("MTE3", "V", i)], "    ")
                + f"    {p.scale.line(f'out{i}', f'in{i}')}\n    {p.shift.line(f'out{i}', other=f'in{i}')}\n"
                + s.signals([("V", "MTE2", i), ("V", "MTE3", i)], "    "))
        store = (s.waits([("V", "MTE3", i)], "    ") + f"    tstore %y[{row}, %c0], %out{i}\n"
                 + s.signals([("MTE3", "V", i)], "    "))
        return load, work, store

    h0, h1 = half(0, "%r"), half(1, "%r1")
    decls = "".join(f"  .tile %{n}{i} : {t}\n" for n in ("in", "out") for i in (0, 1))
    body = "    %r1 = arith.addi %r, %cB : index\n" + "".join(h0[k] + h1[k] for k in range(3))
    return (f"kernel @pingpong(%x : {g}, %y : {g}, %a : {d}, %b : {d}, %rows : index) {{\n"
            f"  .const %c0 = 0 : index\n  .const %cB = {BLOCK} : index\n  .const %c2B = {2 * BLOCK} : index\n"
            + decls + s.signals(back, "  ") + f"  scf.for %r = %c0 to %rows step %c2B {{\n{body}  }}\n"
            + s.waits(back, "  ") + "}\n")


def _views(d: str, c: int, p: Plan) -> str:
    """The row-block loop of the other scenarios with both tensors reached through views: a
    ``make_tensor_view`` over each rank-1 pointer and a ``partition_view`` per block (decision
    "Tensor views"), each block's tile scaled in place through two ``pto.subset`` halves of its
    rows (decision "pto.subset"), then shifted whole."""
    v, pv, half = f"!pto.tensor_view<?x{c}x{d}>", f"!pto.partition_tensor_view<?x{c}x{d}>", BLOCK // 2
    t = f"!pto.tile<{BLOCK}x{c}x{d}, valid=?x{c}>"
    sub = f"!pto.tile<{half}x{c}x{d}, valid=?x{c}>"
    body = ("    %xp = pto.partition_view %xv, offsets = [%r, %c0], sizes = [%vr, %cC] : " + f"{v} -> {pv}\n"
            + _tile("t", d, c) + _x_tile(p, d, c) + "    %t = tload %xp[%c0, %c0]\n"
            + "".join(f"    %h{k} = pto.subset %t[{k * half}, 0] sizes [{half}, {c}] : {t}\n"
                      f"    {p.scale.line(f'h{k}', tile_type=sub, d=d)}\n" for k in (0, 1))
            + _shift(p, "t", "%xp[%c0, %c0]")
            + f"    %yp = pto.partition_view %yv, offsets = [%r, 0], sizes = [%vr, {c}] : {v} -> {pv}\n"
            "    tstore %yp[%c0, %c0], %t\n")
    return (_head("viewed", f"%x : !pto.ptr<{d}, gm>, %y : !pto.ptr<{d}, gm>, %a : {d}, %b : {d}, %rows : index")
            + f"  .const %cC = {c} : index\n  .const %c1 = 1 : index\n"
            f"  %xv = pto.make_tensor_view %x, shape = [%rows, %cC], strides = [%cC, %c1] : {v}\n"
            f"  %yv = pto.make_tensor_view %y, shape = [%rows, {c}], strides = [{c}, 1], layout = nd : {v}\n"
            + _loop(body) + "}\n")


def _flat_in_out(rows: int, cols: int, d: str, rng: np.random.Generator) -> dict[str, Any]:
    """``_in_out``'s arrays as the rank-1 memory a pointer parameter takes."""
    args = _in_out(("x",), ("y",))(rows, cols, d, rng)
    return dict(args, x=args["x"].reshape(-1), y=args["y"].reshape(-1))


def _in_out(names_in: tuple[str, ...], names_out: tuple[str, ...]) -> Callable[..., dict[str, Any]]:
    def make(rows: int, cols: int, d: str, rng: np.random.Generator) -> dict[str, Any]:
        dtype = dt.get(d)
        args: dict[str, Any] = {n: random_values((rows, cols), dtype, rng) for n in names_in}
        args.update({n: np.full((rows, cols), np.nan, dtype.np_dtype) for n in names_out})
        return dict(args, a=SCALE, b=SHIFT, rows=rows)
    return make


def _affine(inputs: dict[str, Any], d: str, p: Plan) -> dict[str, np.ndarray]:
    """mid and y of the plan's scale and shift steps, computed by numpy from x."""
    return affine(inputs["x"], d, p)


def _y(inputs: dict[str, Any], d: str, p: Plan) -> dict[str, np.ndarray]:
    return {"y": _affine(inputs, d, p)["y"]}


SCENARIOS = (
    Scenario("L3:sync-producer-consumer", "one kernel stores, the next (run after it) loads",
             _producer_consumer, ("produce", "consume"), _in_out(("x",), ("mid", "y")), _affine,
             ((16, 16), (40, 32), (5, 64))),
    Scenario("L3:sync-store-load",
             "a kernel stores a block and loads it back behind MTE3 -> MTE2 (a flag, or a barrier)",
             _store_load, ("roundtrip",), _in_out(("x",), ("mid", "y")), _affine,
             ((16, 16), (40, 32), (5, 64))),
    Scenario("L3:sync-ping-pong", "double-buffered load / compute / store with flags (or barriers)",
             _ping_pong, ("pingpong",), _in_out(("x",), ("y",)),
             _y, ((32, 16), (64, 32), (96, 64))),
    Scenario("L3:views", "blocks loaded and stored through tensor views, scaled through tile subsets",
             _views, ("viewed",), _flat_in_out, _y,
             ((16, 16), (40, 32), (5, 64))),
)


def scenario_outcome(backend: Backend, profile: str, sc: Scenario, d: str, seed: int) -> Outcome:
    """Every size of one scenario on one dtype: run the kernels in order on shared arrays
    (a failure's reproducer is the module and inputs; run ``sc.calls`` in that order)."""
    rng = np.random.default_rng(seed)
    n = 0
    forms = plan(profile, d)
    if isinstance(forms, str):
        return Outcome(LEVEL, sc.name, d, "unsupported", n, reason=forms)
    for rows, cols in sc.sizes:
        text = sc.text(d, cols, forms)
        try:
            module = verify(load_bytes(parse(text).to_bytes()), profile)
        except PTOError as e:
            return Outcome(LEVEL, sc.name, d, "unsupported", n, reason=f"not legal on {profile}: {e.code}")
        args = sc.arrays(rows, cols, d, rng)
        inputs = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}

        def failed(message: str, difference: Difference | None = None, kernel: str = sc.calls[0]) -> Outcome:
            f = Failure(message, program=text, inputs=inputs, difference=difference, kernel=kernel)
            return Outcome(LEVEL, sc.name, d, "fail", n, reason=message, failure=f)

        try:
            exe = backend.compile(module, profile)
            for k in sc.calls:
                params = {p.name for p in module.kernel(k).params}
                exe.run(k, **{p: v for p, v in args.items() if p in params})
        except PTOError as e:
            if e.code == UNSUPPORTED:
                return Outcome(LEVEL, sc.name, d, "unsupported", n, reason=e.message)
            return failed(f"{sc.doc}: raised {e.code}: {e.message}")
        except Exception as e:  # noqa: BLE001 - reported, not raised
            return failed(f"{sc.doc}: raised {type(e).__name__}: {e}")
        n += 1
        want = sc.expect(inputs, d, forms)
        budget = sum(error_budget(k) for k in module.kernels)
        diff = first_difference({k: args[k] for k in want}, want, budget)
        if diff is not None:
            return failed(f"{sc.doc} ({rows}x{cols}): {diff.operand} differs from numpy", diff, sc.calls[-1])
    return Outcome(LEVEL, sc.name, d, "pass", n)


def run_level3(backend: Backend, profile: str, max_examples: int = 25, seed: int | None = 0) -> list[Outcome]:
    """L3 on ``profile``: the random-program family (``max_examples`` modules), then each
    sync scenario per dtype, one Outcome each."""
    out = [programs_outcome(backend, profile, max_examples, seed)]
    base = 0 if seed is None else seed
    out += [scenario_outcome(backend, profile, sc, d, base + i)
            for i, sc in enumerate(SCENARIOS) for d in SYNC_DTYPES]
    return out


__all__ = ["ProgramCheck", "SCENARIOS", "first_difference", "run_level3"]
