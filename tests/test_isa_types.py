"""Type spellings: parse(spell(t)) == t, public forms accepted, malformed text rejected."""
from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from openpto.isa import ParseError, dtypes as dt
from openpto.isa.types import (EVENT, GlobalLayout, GlobalType, Layout, Location, PadValue, ScalarType,
                               TileType, parse_type)

extent = st.one_of(st.none(), st.integers(1, 4096))


@st.composite
def tile_types(draw):  # noqa: ANN001, ANN201
    rows, cols = draw(st.integers(1, 512)), draw(st.integers(1, 512))
    vr = draw(st.one_of(st.none(), st.integers(0, rows)))
    vc = draw(st.one_of(st.none(), st.integers(0, cols)))
    return TileType(rows, cols, draw(st.sampled_from(dt.ALL)), draw(st.sampled_from(list(Location))),
                    draw(st.sampled_from(list(Layout))), vr, vc, draw(st.sampled_from(list(PadValue))))


@st.composite
def global_types(draw):  # noqa: ANN001, ANN201
    rank = draw(st.integers(1, 5))
    shape = tuple(draw(extent) for _ in range(rank))
    strides = draw(st.one_of(st.none(), st.tuples(*[extent] * rank)))
    return GlobalType(shape, draw(st.sampled_from(dt.ALL)), strides, draw(st.sampled_from(list(GlobalLayout))))


@given(st.one_of(tile_types(), global_types()))
def test_spelling_round_trips(t) -> None:  # noqa: ANN001
    assert parse_type(t.spell()) == t


def test_compact_and_defaults() -> None:
    t = parse_type("!pto.tile<32x32xf32>")
    assert t == TileType(32, 32, dt.F32)
    assert t.valid == (32, 32) and t.loc is Location.VEC and t.layout is Layout.ND
    assert t.spell() == "!pto.tile<32x32xf32>"
    assert parse_type("!pto.tile<16x16xi1>").dtype is dt.I1
    assert parse_type("index") == ScalarType("index") and parse_type("!pto.event") is EVENT is parse_type("!pto.record_event")


def test_public_tile_buf_form() -> None:
    t = parse_type("!pto.tile_buf<acc, f32, 16, 32, 16, ?, col_major, row_major, 1024, zero>")
    assert t == TileType(16, 32, dt.F32, Location.ACC, Layout.NZ, 16, None, PadValue.ZERO)


def test_memref_strides() -> None:
    g = parse_type("!pto.memref<?x1024xf16, strides=[2048, 1], layout=DN>")
    assert g == GlobalType((None, 1024), dt.F16, (2048, 1), GlobalLayout.DN)


@pytest.mark.parametrize("text", [
    "!pto.tile<32xf32>", "!pto.tile<0x4xf32>", "!pto.tile<4x4xf99>", "!pto.tile<4x4xf32, loc=ram>",
    "!pto.tile<4x4xf32, valid=4>", "!pto.tile<?x4xf32>", "!pto.memref<1x2x3x4x5x6xf32>",
    "!pto.memref<4x4xf32, strides=[1]>", "!pto.tile<4x4xf32, valid=5x4>", "!pto.tile_buf<vec, f32, 4, 4, 4, 9>", "!pto.tensor<4xf32>", "f64", "!pto.tile<4x4xf32, color=red>",
    "!pto.tpipe<0, DIR_C2V, 1024, 2>",   # only where a pipe is declared or used
])
def test_malformed_types_raise_parse_errors(text: str) -> None:
    with pytest.raises(ParseError) as e:
        parse_type(text)
    assert e.value.code == "PARSE_TYPE"


@given(st.one_of(tile_types(), global_types()), st.data())
def test_mutated_spellings_only_raise_parse_errors(t, data) -> None:  # noqa: ANN001
    text = t.spell()
    pos = data.draw(st.integers(0, len(text)))
    junk = data.draw(st.text(alphabet="<>[]x?,=0123456789-abcfi. !", max_size=4))
    cut = data.draw(st.integers(0, 3))
    mutated = text[:pos] + junk + text[pos + cut:]
    try:
        parse_type(mutated)
    except ParseError as e:
        assert e.code == "PARSE_TYPE"
