"""Every semantics function is total over every legal dtype tuple of the cpu profile: with
random bits (signalling NaNs, infinities, extremes included) it either computes or raises a
PTOError, never another exception, even when the caller traps floating-point warnings."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import openpto.isa as isa
from openpto.isa import checks, profiles
from openpto.isa.spec import Kind
from openpto.isa.types import GlobalType, ScalarType, TileType, parse_type

CPU = profiles.get("cpu")


def _retyped(t, d):  # noqa: ANN001, ANN202
    if isinstance(t, TileType):
        return t.with_(dtype=d)
    if isinstance(t, GlobalType):
        return dataclasses.replace(t, dtype=d)
    if isinstance(t, ScalarType) and d.name in ("f32", "f16", "bf16", "i8", "i16", "i32", "i64", "u8", "u16",
                                                   "u32", "u64", "i1"):
        return ScalarType(d.name)
    return t


def _random_bits(shape, d, rng):  # noqa: ANN001, ANN202
    if d.kind == "bool":
        return rng.random(shape) < 0.5
    raw = rng.integers(0, 256, size=int(np.prod(shape)) * d.itemsize, dtype=np.uint8)
    return raw.view(d.np_dtype).reshape(shape)


def _value(op, t, rng, scalars):  # noqa: ANN001, ANN202
    if op.kind is Kind.TILE:
        tile = isa.Tile.empty(t)
        tile.data[...] = _random_bits(t.shape, t.dtype, rng)
        return tile
    if op.kind is Kind.GLOBAL:
        shape = tuple(8 if s is None else s for s in t.shape)
        return isa.GlobalRef(_random_bits(shape, t.dtype, rng))
    if op.name in scalars:
        return scalars[op.name]
    if op.kind is Kind.SCALAR:
        return float(rng.standard_normal() * 1e3) if t.is_float else int(rng.integers(-300, 300))
    return 0


CASES = []
for _instr in isa.all_instructions():
    _rule = _instr.dtypes
    for _combo in (_rule.sorted_tuples() if _rule else [None]):
        CASES.append(pytest.param(_instr, _combo, id=f"{_instr.mnemonic}-" + (
            "-".join(d.name for d in _combo) if _combo else "untyped")))


@pytest.mark.parametrize("instr,combo", CASES)
def test_semantics_total_on_random_bits(instr: isa.Instruction, combo) -> None:  # noqa: ANN001
    ex = instr.example
    types = {n: parse_type(s) for n, s in ex.types.items()}
    if combo is not None:
        for name, d in zip(instr.dtypes.operands, combo):
            if name in types:
                types[name] = _retyped(types[name], d)
    if checks.check_structure(instr, types, ex.attrs) or checks.check_legality(instr, types, ex.attrs, CPU):
        pytest.skip("the example's shapes do not suit this dtype tuple")
    rng = np.random.default_rng(len(instr.mnemonic))
    for _ in range(3):
        kwargs = {op.name: _value(op, types.get(op.name), rng, ex.scalars)
                  for op in instr.operands if op.name in types or op.name in ex.scalars}
        try:
            with np.errstate(all="raise"):
                instr.execute(**kwargs, **ex.attrs, **({"sink": []} if instr.mnemonic == "TPRINT" else {}))
        except isa.PTOError:
            pass
