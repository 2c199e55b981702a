"""Collected by ``pytest --pyargs openpto.conformance --pto-backend NAME`` (see plugin.py)."""
from __future__ import annotations

from typing import Any

import pytest

from openpto.backends import get
from openpto.conformance import cases as C
from openpto.conformance.runner import DEFAULT_EXAMPLES, Patterns, _level_fns


def _options(config: Any) -> dict[str, Any]:
    return {"backend": config.getoption("--pto-backend", None),
            "profiles": config.getoption("--pto-profile", None) or ["cpu"],
            "level": config.getoption("--pto-level", 3),
            "examples": config.getoption("--pto-max-examples", None),
            "seed": config.getoption("--pto-seed", 0),
            "only": Patterns.parse(config.getoption("--pto-only", "") or "")}


def pytest_generate_tests(metafunc: Any) -> None:
    o = _options(metafunc.config)
    if o["backend"] is None:
        skip = pytest.mark.skip(reason="pass --pto-backend NAME to run the conformance suite")
        for name in ("check", "programs"):
            if name in metafunc.fixturenames:
                metafunc.parametrize(name, [pytest.param(None, marks=skip)])
        return
    if "check" in metafunc.fixturenames:
        params = [pytest.param((p, i.mnemonic, d), id=f"{p}-{i.mnemonic}-{C.dtype_key(d)}")
                  for p in o["profiles"] for i in C.instructions(p)
                  if not o["only"].items or o["only"].match(i.mnemonic) for d in C.supported_dtypes(i, p)]
        metafunc.parametrize("check", params)
    if "programs" in metafunc.fixturenames:
        metafunc.parametrize("programs", o["profiles"] if o["level"] >= 3 else [])


def test_instruction(check: Any, request: Any) -> None:
    from openpto.isa import get as instruction

    o = _options(request.config)
    profile, mnemonic, dtypes = check
    backend = get(o["backend"])
    instr = instruction(mnemonic)
    base = C.base_cases(instr, profile)[dtypes]
    if base is not None and backend.unsupported(instr, base.types, profile):
        pytest.skip(backend.unsupported(instr, base.types, profile))
    fns = _level_fns()
    for level in range(0, min(o["level"], 2) + 1):
        out = fns[level](backend, profile, instr, dtypes, max_examples=o["examples"] or DEFAULT_EXAMPLES[level],
                         seed=o["seed"])
        if out.status == "skipped":
            pytest.skip(out.reason)
        assert out.status == "pass", _explain(out)


def test_programs(programs: str, request: Any) -> None:
    from openpto.conformance.level3 import run_level3
    from openpto.conformance.level3_comm import run_level3_comm

    o = _options(request.config)
    backend = get(o["backend"])
    outs = run_level3(backend, programs, o["examples"] or DEFAULT_EXAMPLES[3], o["seed"])
    outs += run_level3_comm(backend, programs, o["seed"])
    bad = [x for x in outs if x.status == "fail"]
    assert not bad, "\n".join(_explain(x) for x in bad)


def _explain(o: Any) -> str:
    text = f"{o.instruction} [{o.dtypes}] L{o.level}: {o.reason}"
    f = o.failure
    if f is not None:
        text += f"\n{f.message}"
        if f.difference:
            d = f.difference
            text += f"\nfirst difference {d.operand}{list(d.index)}: expected {d.expected}, actual {d.actual}"
        if f.program:
            text += "\n" + f.program
    return text
