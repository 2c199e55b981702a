"""Every instruction of the spec runs on the reference backend: its example, with every tile
operand passed in as a kernel argument, gives exactly what calling the declaration's
semantics directly gives (the semantics themselves are tested against independent
expectations in test_isa_*). This pins the interpreter's operand, attribute, scalar and
global-memory plumbing for all instructions at once."""
from __future__ import annotations

import numpy as np
import pytest

import openpto as pto
from openpto.isa import GlobalRef, Kind, PTOError, Role, Tile, all_instructions
from openpto.isa.render import example_statement
from openpto.isa.types import GlobalType, ScalarType, TileType, parse_type

INSTRS = all_instructions()


def random_array(shape: tuple[int, ...], dtype: np.dtype, rng: np.random.Generator) -> np.ndarray:
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True).astype(dtype)
    return (rng.standard_normal(shape) * 4).astype(dtype)


def program(instr) -> tuple[str, list[tuple[str, object]]]:  # noqa: ANN001
    """Every operand with a type becomes a parameter (output tiles included)."""
    ex = instr.example
    params = [(op.name, parse_type(ex.types[op.name])) for op in instr.operands if op.name in ex.types]
    lines = [f".arg %{n} : {t}" for n, t in params]
    if any(op.kind is Kind.GLOBAL and op.name in ex.types for op in instr.operands):
        lines.append(".const %c0 = 0 : index")
    return "\n".join(lines + [example_statement(instr)]) + "\n", params


def inputs(instr, params, rng):  # noqa: ANN001
    ex = instr.example
    values = {}
    for name, t in params:
        if isinstance(t, (TileType, GlobalType)):
            shape = t.shape if isinstance(t, TileType) else tuple(d or 4 for d in t.shape)
            values[name] = random_array(shape, t.dtype.np_dtype, rng)
        elif isinstance(t, ScalarType):
            values[name] = ex.scalars.get(name, 1)
        else:
            values[name] = None
    return values


def direct(instr, params, values):  # noqa: ANN001
    """The semantics called on fresh copies, as the isa tests call them."""
    ex = instr.example
    kw, tiles = {}, {}
    for name, t in params:
        v = values[name]
        if isinstance(t, TileType):
            tiles[name] = kw[name] = Tile(t, v.copy())
        elif isinstance(t, GlobalType):
            kw[name] = GlobalRef(v.copy())
            tiles[name] = kw[name]
        else:
            kw[name] = v
    for op in instr.operands:
        if op.kind is Kind.PIPE and op.name in ex.scalars:
            kw[op.name] = ex.scalars[op.name]
    instr.execute(**kw, **ex.attrs)
    return tiles


def same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.array_equal(a.view(np.uint8), b.view(np.uint8))


@pytest.mark.parametrize("instr", INSTRS, ids=lambda i: i.mnemonic)
def test_reference_runs_every_instruction_like_its_semantics(instr) -> None:  # noqa: ANN001
    text, params = program(instr)
    exe = pto.compile(pto.parse(text), "reference", "cpu")
    rng = np.random.default_rng(sum(map(ord, instr.mnemonic)))
    values = inputs(instr, params, rng)
    try:
        expected = direct(instr, params, values)
    except PTOError as e:        # a precondition the random data breaks: the backend must agree
        with pytest.raises(PTOError) as got:
            exe(**{k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in values.items()})
        assert got.value.code == e.code
        return
    args = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in values.items()}
    result = exe(**args)
    written = {op.name for op in instr.operands if op.role is not Role.IN and op.name in args}
    assert set(result.outputs) == {n for n in written if isinstance(args[n], np.ndarray)}
    for name, t in params:
        if not isinstance(args[name], np.ndarray):
            continue
        want = expected[name]
        if isinstance(want, Tile):
            r, c = want.valid
            assert same(args[name][:r, :c], want.data[:r, :c]), name
        else:
            assert same(args[name], want.array), name
