"""Level 0: the program format. Every generated one-instruction module survives text and
bytecode exactly: ``parse(m.to_text()) == m``, printing is idempotent, and
``load_bytes(m.to_bytes())`` gives the same module, text and bytes back.

The format is the shared assembler's, not the backend's, so the verdict is the same for
every backend; it is still reported per instruction x dtype so the report can say which
level each pair reached. ``explore`` is the hypothesis loop the levels share.
"""
from __future__ import annotations

from typing import Any, Callable, TypeVar

from hypothesis import HealthCheck, Phase, Verbosity, given, seed as hseed, settings
from hypothesis import strategies as st

from ..assembler import load_bytes, parse
from ..backends.base import Backend
from ..isa.diagnostics import PTOError
from ..isa.registry import get
from ..isa.spec import Instruction
from . import cases as C
from .outcome import Failure, Outcome

T = TypeVar("T")


class _Found(Exception):
    """Raised inside the property so hypothesis shrinks; the Failure travels in a closure."""


def explore(strategy: st.SearchStrategy[T], check: Callable[[T], Failure | None], max_examples: int,
            seed: int | None) -> tuple[int, Failure | None]:
    """Run ``check`` on up to ``max_examples`` draws; (examples run, the shrunk failure or None).

    ``check`` reports a problem by returning a Failure; the last one recorded is from
    hypothesis' final replay of the minimal example. ``seed`` None derandomises."""
    state: dict[str, Any] = {"n": 0, "failure": None}

    @settings(max_examples=max(max_examples, 1), derandomize=seed is None, database=None, deadline=None,
              suppress_health_check=list(HealthCheck), phases=(Phase.generate, Phase.shrink),
              report_multiple_bugs=False, verbosity=Verbosity.quiet)
    @given(st.data())
    def prop(data: st.DataObject) -> None:
        value = data.draw(strategy)
        state["n"] += 1
        failure = check(value)
        if failure is not None:
            state["failure"] = failure
            raise _Found

    run = prop if seed is None else hseed(seed)(prop)
    try:
        run()
    except _Found:
        pass
    except Exception as e:  # noqa: BLE001 - hypothesis' own complaints become a reported failure
        if state["failure"] is None:
            state["failure"] = Failure(f"the property could not run: {type(e).__name__}: {e}")
    return state["n"], state["failure"]


def resolve(instr: Instruction | str) -> Instruction:
    return instr if isinstance(instr, Instruction) else get(instr)


def precheck(level: int, instr: Instruction, profile: str, dtypes: C.DTypeTuple) -> Outcome | None:
    """The outcome when there is nothing to test: not on the profile, or no legal case."""
    key = C.dtype_key(dtypes)
    bases = C.base_cases(instr, profile)
    if dtypes not in bases:
        return Outcome(level, instr.mnemonic, key, "unsupported",
                       reason=f"dtypes ({key}) of {instr.mnemonic} are not legal on profile {profile}")
    if bases[dtypes] is None:
        return Outcome(level, instr.mnemonic, key, "skipped",
                       reason="no legal case could be derived from the declaration's example")
    return None


def roundtrip_failure(case: C.Case) -> Failure | None:
    """Why ``case``'s module does not survive text and bytecode unchanged, or None."""
    text: str | None = None
    try:
        module = case.module()
        text = module.to_text()
        parsed = parse(text)
        data = module.to_bytes()
        loaded = load_bytes(data)
        broken = next((what for what, ok in (
            ("parse(to_text(m)) == m", parsed == module),
            ("printing is idempotent", parsed.to_text() == text),
            ("load_bytes(to_bytes(m)) == m", loaded == module),
            ("the loaded module prints the same text", loaded.to_text() == text),
            ("the loaded module encodes to the same bytes", loaded.to_bytes() == data),
        ) if not ok), None)
        if broken is not None:
            return Failure(f"round trip broken: not {broken}", program=text)
    except PTOError as e:
        return Failure(f"a generated legal module does not round-trip: {e.code}: {e.message}", program=text)
    except Exception as e:  # noqa: BLE001 - any crash of printer, parser or bytecode is a failure
        return Failure(f"round trip raised {type(e).__name__}: {e}", program=text)
    return None


def run_level0(backend: Backend, profile: str, instr: Instruction | str, dtypes: C.DTypeTuple,
               max_examples: int = 5, seed: int | None = None) -> Outcome:
    """L0 for one instruction x dtype tuple on ``profile`` (``backend`` only labels the run:
    the program format is shared by all backends)."""
    instr = resolve(instr)
    early = precheck(0, instr, profile, dtypes)
    if early is not None:
        return early
    n, failure = explore(C.cases(instr, profile, dtypes), roundtrip_failure, max_examples, seed)
    status = "fail" if failure is not None else "pass"
    return Outcome(0, instr.mnemonic, C.dtype_key(dtypes), status, n,
                   reason=failure.message if failure else "", failure=failure)
