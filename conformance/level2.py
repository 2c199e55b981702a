"""Level 2: each instruction's results equal its reference semantics within its numerics
contract, over its iteration domain.

One example: a legal case (``cases``), perhaps other values for its literal index operands,
input values (``values``); the backend compiles ``case.module()`` and runs kernel ``case`` on
copies of the inputs; the declaration's semantics run on ``Tile``/``GlobalRef`` objects made
from the same inputs; ``contracts.compare`` judges. When the semantics raise a PTOError (a
broken precondition: an index out of range, a misaligned address) the backend must raise
one with the same code.

Before hypothesis explores, a deterministic sweep runs the base case once per value of each
enum or bool attribute on three fixed input recipes (ties and in-range indices; specials and
strided globals; ordinary values and mid-range integers such as E8M0 scales near 1). A short
hypothesis run may never draw TCVT's RINT together with a tie, and a rounding bug must not
hide behind that luck. A failure the sweep finds is handed to hypothesis to shrink.
"""
from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import io
from typing import Any, Callable, Iterable

import numpy as np
from hypothesis import reject, strategies as st

from ..assembler.verifier import verify
from ..backends.base import Backend
from ..isa.diagnostics import PTOError
from ..isa.spec import Instruction, Role
from . import cases as C
from . import coverage as COV
from . import values as V
from .contracts import compare, oracle
from .level0 import explore, precheck, resolve
from .outcome import Failure, Outcome

DEFAULT_EXAMPLES = 12

#: (float mode, int mode, bool mode, seed, strided globals) of the sweep's fixed inputs
SWEEP_RECIPES = (("boundary", "small", "random", 1, False), ("specials", "specials", "sparse", 2, True),
                 ("ordinary", "mid", "dense", 3, True))


class _Runner:
    """Compiles each distinct program once per level run and checks one example."""

    def __init__(self, backend: Backend, profile: str) -> None:
        self.backend = backend
        self.profile = profile
        self._compiled: dict[str, Any] = {}
        self.seen: set[str] = set()      # the situations of every example checked so far

    def _executable(self, case: C.Case, text: str) -> Any:
        if text not in self._compiled:
            self._compiled[text] = self.backend.compile(case.module(), self.profile)
        return self._compiled[text]

    def check(self, case: C.Case, inputs: dict[str, Any], recipe: str | None = None) -> Failure | None:
        self.seen |= COV.exercised(case, inputs, recipe)
        with contextlib.redirect_stdout(io.StringIO()):     # TPRINT's output is not a result
            return self._check(case, inputs)

    def _check(self, case: C.Case, inputs: dict[str, Any]) -> Failure | None:
        text = case.module().to_text()

        def failed(message: str, difference: Any = None) -> Failure:
            kept = {k: v for k, v in inputs.items() if k not in case.aliases}   # the kernel's parameters
            return Failure(message, program=text, inputs=recorded(kept), difference=difference)

        try:
            exe = self._executable(case, text)
        except PTOError as e:
            return failed(f"compiling a legal program failed: {e.code}: {e.message}")
        except Exception as e:  # noqa: BLE001 - a crashing backend is a failure, not an escape
            return failed(f"compile raised {type(e).__name__}: {e}")
        try:
            want = oracle(case, inputs)
            want_error: PTOError | None = None
        except PTOError as e:
            want, want_error = {}, e
        except Exception as e:  # noqa: BLE001 - a semantics bug must be reported, not raised
            return failed(f"the reference semantics raised {type(e).__name__}: {e}")
        args, got = arguments(case, inputs)
        try:
            exe.run("case", **args)
        except PTOError as e:
            if want_error is None:
                return failed(f"the backend raised {e.code}: {e.message}; the semantics succeed")
            if e.code != want_error.code:
                return failed(f"the backend raised {e.code}; the semantics raise {want_error.code} "
                              f"({want_error.message})")
            return None
        except Exception as e:  # noqa: BLE001
            return failed(f"the backend raised {type(e).__name__}: {e}")
        if want_error is not None:
            return failed(f"the backend ran; the semantics raise {want_error.code}: {want_error.message}")
        try:
            diff = compare(case.instr, case, got, want, inputs)
        except Exception as e:  # noqa: BLE001 - e.g. an output of the wrong dtype written in place
            return failed(f"comparing the results raised {type(e).__name__}: {e}")
        if diff is None:
            return None
        return failed(f"{diff.operand}{list(diff.index)}: expected {diff.expected}, got {diff.actual} "
                      f"({case.instr.numerics.kind} contract)", diff)


def arguments(case: C.Case, inputs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Kernel arguments (fresh copies) and the written operands to read back after the run."""
    args: dict[str, Any] = {}
    written: dict[str, Any] = {}
    for op in case.instr.operands:
        if op.name not in inputs or op.name in case.aliases:     # an alias is its output's argument
            continue
        v = inputs[op.name]
        if isinstance(v, V.GlobalArg):
            g = v.fresh()
            args[op.name] = g.view
            if op.role is not Role.IN:
                written[op.name] = g
        elif isinstance(v, np.ndarray):
            args[op.name] = v.copy()
            if op.role is not Role.IN:
                written[op.name] = args[op.name]
        else:
            args[op.name] = v
    return args, written


def recorded(inputs: dict[str, Any]) -> dict[str, Any]:
    """Inputs as a failure report keeps them: arrays (global tensors as the view the kernel
    got, strides included) and scalars."""
    return {k: (v.view if isinstance(v, V.GlobalArg) else v) for k, v in inputs.items()}


def _legal(case: C.Case, base: C.Case, backend: Backend, profile: str) -> bool:
    """A drawn case is usable: the spec accepts its program (literal indices included) and
    the backend claims it."""
    if backend.unsupported(case.instr, case.types, profile):
        return False
    if case.scalars is base.scalars or dict(case.scalars) == dict(base.scalars):
        return True
    try:
        verify(case.module(), profile)
    except PTOError:
        return False
    return True


def examples(instr: Instruction, profile: str, dtypes: C.DTypeTuple, backend: Backend
             ) -> st.SearchStrategy[tuple[C.Case, dict[str, Any]]]:
    """(case, inputs) pairs: a legal case the backend claims, perhaps with other literal
    indices; inputs that, when they break a precondition, are mostly redrawn in range."""
    base = C.base_cases(instr, profile)[dtypes]
    assert base is not None
    legal_cases = C.cases(instr, profile, dtypes)
    redraw = st.sampled_from((True, True, True, False))

    @st.composite
    def one(draw: st.DrawFn) -> tuple[C.Case, dict[str, Any]]:
        case = V.draw_index_literals(draw, draw(legal_cases))
        if not _legal(case, base, backend, profile):
            reject()
        inputs = V.draw_inputs(draw, case)
        if _breaks_precondition(case, inputs) and draw(redraw):
            inputs = V.draw_inputs(draw, case, in_range=True)   # mostly test values, not only errors
        return case, inputs
    return one()


def _breaks_precondition(case: C.Case, inputs: dict[str, Any]) -> bool:
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            oracle(case, inputs)
    except Exception:  # noqa: BLE001 - PTOErrors, and semantics bugs the check reports later
        return True
    return False


def sweep_cases(base: C.Case) -> list[C.Case]:
    """The base case, then the base case with each enum/bool attribute set to each of its
    values, where the spec accepts that."""
    out = [base]
    for name, values in C.attr_values(base.instr).items():     # the values cases.varied draws from
        current = base.attrs.get(name, base.instr.attr(name).default)
        for v in values:
            c = dataclasses.replace(base, attrs=dict(base.attrs, **{name: v}))
            if v is not current and not c.errors():
                out.append(c)
    return out


def run_level2(backend: Backend, profile: str, instr: Instruction | str, dtypes: C.DTypeTuple,
               max_examples: int = DEFAULT_EXAMPLES, seed: int | None = None) -> Outcome:
    """L2 for one instruction x dtype tuple on ``profile``."""
    instr = resolve(instr)
    key = C.dtype_key(dtypes)
    if profile not in backend.profiles:
        return Outcome(2, instr.mnemonic, key, "unsupported",
                       reason=f"backend {backend.name!r} does not target profile {profile}")
    early = precheck(2, instr, profile, dtypes)
    if early is not None:
        return early
    base = C.base_cases(instr, profile)[dtypes]
    assert base is not None
    why = backend.unsupported(instr, base.types, profile)
    if why:
        return Outcome(2, instr.mnemonic, key, "unsupported", reason=why)
    if instr.numerics.kind == "unspecified":
        return Outcome(2, instr.mnemonic, key, "skipped",
                       reason="numerics unspecified: values are not tested")
    runner = _Runner(backend, profile)
    count, failure = 0, None
    for case in sweep_cases(base):
        if backend.unsupported(instr, case.types, profile):
            continue
        for recipe in SWEEP_RECIPES:
            count += 1
            failure = runner.check(case, V.recipe_inputs(case, *recipe))
            if failure is not None:
                break
        if failure is not None:     # let hypothesis look for smaller inputs on the failing case
            n, shrunk = explore(V.inputs(case), lambda i, c=case: runner.check(c, i), max_examples, seed)
            count += n
            failure = shrunk or failure
            break
    built = [c for c in C.structured(base) if not backend.unsupported(instr, c.types, profile)]
    edges = [c for c in C.edges(base) if not backend.unsupported(instr, c.types, profile)]
    if failure is None:
        n, failure = _situation_sweep(runner, [base] + built, sweep_cases(base)[1:] + [
            v for c in built for v in sweep_cases(c)[1:] if not backend.unsupported(instr, v.types, profile)],
            max_examples, seed, edges)
        count += n
    if failure is None:
        n, failure = explore(examples(instr, profile, dtypes, backend), lambda ex: runner.check(*ex),
                             max_examples, seed)
        count += n
    admitted = COV.applicable([base] + built, strided=True)
    coverage = {s: s in runner.seen for s in COV.SITUATIONS if s in admitted}
    missed = [s for s, seen in coverage.items() if not seen]
    if failure is None and missed:
        return Outcome(2, instr.mnemonic, key, "fail", count,
                       "self-check: the spec admits these situations but no case generated them: "
                       + ", ".join(missed), coverage=coverage)
    status = "fail" if failure is not None else "pass"
    return Outcome(2, instr.mnemonic, key, status, count, failure.message if failure else "", failure,
                   coverage=coverage)


def _situation_sweep(runner: _Runner, built: list[C.Case], variants: list[C.Case], max_examples: int,
                     seed: int | None, edges: list[C.Case] | None = None) -> tuple[int, Failure | None]:
    """Every structured case (``cases.structured``) with ordinary inputs, then with each value
    situation its operands admit (``values.situation_inputs``); ``variants`` (other attribute
    values of those cases) with the value situations alone; ``edges`` (``cases.edges``: index
    operands at the ends of their range, every pipe) with ordinary inputs alone: what the run
    must reach by construction. A failure is handed to hypothesis to shrink its inputs."""
    def values(case: C.Case) -> tuple[str, ...]:
        return tuple(s for s in COV.VALUE_SITUATIONS if s in COV.value_situations(case))
    plan = [(c, (None,) + values(c)) for c in built] + [(c, values(c)) for c in variants] \
        + [(c, (None,)) for c in edges or ()]
    count = 0
    for case, recipes in plan:
        for recipe in recipes:
            count += 1
            inputs = V.situation_inputs(case, recipe or "ordinary")
            failure = runner.check(case, inputs, recipe)
            if failure is not None:
                n, shrunk = explore(V.inputs(case), lambda i, c=case: runner.check(c, i), max_examples, seed)
                return count + n, shrunk or failure
    return count, None


def _selected(mnemonic: str, only: Iterable[str] | str | None) -> bool:
    if only is None:
        return True
    pats = [p.strip() for p in (only.split(",") if isinstance(only, str) else only) if p.strip()]
    return not pats or any(fnmatch.fnmatchcase(mnemonic, p.upper()) for p in pats)


def run_level2_all(backend: Backend, profile: str, only: Iterable[str] | str | None = None,
                   max_examples: int = DEFAULT_EXAMPLES, seed: int | None = None,
                   progress: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """L2 for every instruction of ``profile`` (``only``: mnemonics or fnmatch patterns) x
    every legal dtype tuple; ``progress`` is called with each outcome as it is made."""
    outs: list[Outcome] = []
    for instr in C.instructions(profile):
        if not _selected(instr.mnemonic, only):
            continue
        for dtypes in C.supported_dtypes(instr, profile):
            o = run_level2(backend, profile, instr, dtypes, max_examples, seed)
            outs.append(o)
            if progress is not None:
                progress(o)
    return outs
