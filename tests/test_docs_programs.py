"""Every PTO program the documentation shows (each ```pto block of README.md and docs/**/*.md)
compiles on every backend and, run on synthesised arguments, gives the llvm backend the
reference backend's fault code or results: the docs' own examples must work everywhere
(docs/assembly.md's ``i32`` loop counter used to crash llvm's code generator).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import openpto as pto
from openpto.assembler.ir import Kernel
from openpto.isa.diagnostics import PTOError
from openpto.isa.types import GlobalType, ScalarType, TileType

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"^```pto\n(.*?)^```", re.M | re.S)
BACKENDS = ("reference", "llvm")
DYNAMIC_DIM = 64      # every `?` dimension of a global tensor
INDEX_ARG = 16        # every index/integer scalar: one 16-row tile step inside 64 rows


def doc_programs() -> list[tuple[str, str]]:
    """(id, text) of every ```pto block in README.md and docs/ (``pto-error`` blocks are
    deliberately wrong and are tested by test_examples.py)."""
    out = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = path.read_text()
        for m in BLOCK.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            out.append((f"{path.relative_to(ROOT)}:{line}", m.group(1)))
    return out


PROGRAMS = doc_programs()


def arguments(kernel: Kernel, seed: int) -> dict[str, Any]:
    """Random arrays of the parameters' shapes (``?`` = DYNAMIC_DIM), fixed scalars."""
    rng = np.random.default_rng(seed)
    args: dict[str, Any] = {}
    for p in kernel.params:
        t = p.type
        if isinstance(t, ScalarType):
            args[p.name] = 1.5 if t.is_float else True if t.name == "i1" else INDEX_ARG
        elif isinstance(t, (GlobalType, TileType)):
            shape = tuple(DYNAMIC_DIM if d is None else int(d) for d in t.shape)
            d = t.dtype.np_dtype
            if np.issubdtype(d, np.integer):
                args[p.name] = rng.integers(-50, 50, shape).astype(d)
            elif d == np.bool_:
                args[p.name] = rng.random(shape) < 0.5
            else:
                args[p.name] = rng.standard_normal(shape).astype(d)
    return args


def outcome(exe: Any, kernel: Kernel, args: dict[str, Any]) -> tuple[str | None, dict[str, np.ndarray]]:
    arrays = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
    try:
        exe.run(kernel.name, **arrays)
    except PTOError as e:
        return e.code, {}
    return None, {k: v for k, v in arrays.items() if isinstance(v, np.ndarray)}


def comparable(kernel: Kernel, name: str, a: np.ndarray) -> np.ndarray:
    """The part of an output both backends define: a tile parameter's static valid region
    (the reference poisons the rest)."""
    t = next(p.type for p in kernel.params if p.name == name)
    if isinstance(t, TileType):
        return a[:t.valid_rows if t.valid_rows is not None else 0, :t.valid_cols if t.valid_cols is not None else 0]
    return a


def test_the_docs_have_programs() -> None:
    assert len(PROGRAMS) >= 15
    assert any(": i32" in text and "for " in text for _, text in PROGRAMS)


@pytest.mark.parametrize("text", [t for _, t in PROGRAMS], ids=[i for i, _ in PROGRAMS])
def test_doc_program_compiles_and_runs_alike_on_every_backend(text: str) -> None:
    module = pto.parse(text)
    exes = {b: pto.compile(module, backend=b, profile="cpu") for b in BACKENDS}
    for kernel in module.kernels:
        args = arguments(kernel, seed=len(text))
        (rc, ra), (lc, la) = (outcome(exes[b], kernel, args) for b in BACKENDS)
        assert lc == rc, f"@{kernel.name}: llvm {lc}, reference {rc}"
        for k in ra:
            r, x = comparable(kernel, k, ra[k]), comparable(kernel, k, la[k])
            if np.issubdtype(r.dtype, np.floating):
                np.testing.assert_allclose(x.astype(np.float64), r.astype(np.float64), rtol=1e-5, atol=1e-6,
                                           equal_nan=True, err_msg=f"@{kernel.name} %{k}")
            else:
                assert np.array_equal(x, r), f"@{kernel.name} %{k}"
