"""The public config-tile forms of SETFMATRIX / SET_IMG2COL_RPT / SET_IMG2COL_PADDING
(decision "Config tiles"): ``!pto.fmatrix_config`` is a 1x16 f32 tile whose row 0 holds
fmap_h, fmap_w, pad_left, pad_right, pad_top, pad_bottom, repeat_stride, repeat_time,
repeat_mode, pad_value; the instructions read the same fields their scalar forms take."""
from __future__ import annotations

import numpy as np
import pytest

import openpto
from openpto.assembler.bytecode import load_bytes
from openpto.isa import registry as I
from openpto.isa.diagnostics import PTOError
from openpto.isa.types import TileType, parse_type
from openpto.isa.values import Tile

BACKENDS = ("reference", "llvm")
GOOD = [4, 5, 1, 2, 3, 0, 16, 2, 1, -0.75]      # the ten config columns, by hand

PUBLIC = """
kernel @k(%cfg : !pto.fmatrix_config) {
  pto.setfmatrix %cfg : !pto.fmatrix_config
  pto.set_img2col_rpt ins(%cfg : !pto.fmatrix_config) outs()
  pto.set_img2col_padding %cfg : !pto.fmatrix_config -> ()
}
"""
CANONICAL = """
kernel @k(%cfg : !pto.tile<1x16xf32>) {
  setfmatrix %cfg : (!pto.tile<1x16xf32>)
  set_img2col_rpt %cfg : (!pto.tile<1x16xf32>)
  set_img2col_padding %cfg : (!pto.tile<1x16xf32>)
}
"""


def _cfg(values: list[float], dtype: type = np.float32) -> np.ndarray:
    a = np.zeros((1, 16), dtype)
    a[0, :len(values)] = values
    return a


def test_the_public_spelling_is_the_canonical_program() -> None:
    m = openpto.parse(PUBLIC)
    assert m == openpto.parse(CANONICAL)
    assert parse_type("!pto.fmatrix_config") == TileType(1, 16, parse_type("!pto.tile<1x16xf32>").dtype)
    openpto.check(m)
    assert openpto.parse(m.to_text()) == m and load_bytes(m.to_bytes()) == m


def test_the_fields_come_from_row_0_by_hand() -> None:
    state: dict = {}
    cfg = Tile.of(_cfg(GOOD))
    I.get("SETFMATRIX").execute(cfg=cfg, state=state)
    I.get("SET_IMG2COL_RPT").execute(cfg=cfg, state=state)
    I.get("SET_IMG2COL_PADDING").execute(cfg=cfg, state=state)
    assert state == {"fmatrix": {"fmap_h": 4, "fmap_w": 5, "pad_left": 1, "pad_right": 2, "pad_top": 3,
                                 "pad_bottom": 0},
                     "img2col_rpt": {"repeat_stride": 16, "repeat_time": 2, "repeat_mode": 1},
                     "img2col_padding": {"pad_value": -0.75}}
    state = {}
    I.get("SET_IMG2COL_RPT").execute(cfg=Tile.of(_cfg([1, 1, 0, 0, 0, 0, 65535, 255, 7, 9], np.int32)), state=state)
    assert state == {"img2col_rpt": {"repeat_stride": 65535, "repeat_time": 255, "repeat_mode": 7}}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_a_good_config_runs(backend: str, dtype: type) -> None:
    text = CANONICAL if dtype is np.float32 else CANONICAL.replace("xf32", "xi32")
    vals = GOOD if dtype is np.float32 else GOOD[:-1] + [7]
    res = openpto.compile(openpto.parse(text), backend=backend, profile="cpu")(_cfg(vals, dtype))
    assert res.counters["SETFMATRIX"] == 1 and res.counters["instructions"] == 3


# (column, value, line of the faulting instruction, field the message names)
BAD = [(1, 4.5, 3, "fmap_w"), (1, np.nan, 3, "fmap_w"), (0, 0, 3, "fmap_h"), (5, 256, 3, "pad_bottom"),
       (6, np.inf, 4, "repeat_stride"), (6, 1e9, 4, "repeat_stride"), (8, -1, 4, "repeat_mode")]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("col,value,line,field", BAD)
def test_bad_fields_fault_alike(backend: str, col: int, value: float, line: int, field: str) -> None:
    vals = list(GOOD)
    vals[col] = value
    with pytest.raises(PTOError) as e:
        openpto.compile(openpto.parse(PUBLIC), backend=backend, profile="cpu")(_cfg(vals))
    assert (e.value.code, e.value.location.line) == ("RUNTIME_BAD_CONFIG", line)
    assert field in e.value.message


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_config_tile_without_the_ten_columns_is_an_invalid_read(backend: str) -> None:
    text = ("kernel @k(%n : index) {\n  .tile %c valid_col = %n : !pto.tile<1x16xf32, valid=1x?>\n"
            "  %c = texpands 1.0 : (f32) -> !pto.tile<1x16xf32, valid=1x?>\n"
            "  setfmatrix %c : (!pto.tile<1x16xf32, valid=1x?>)\n}\n")
    exe = openpto.compile(openpto.parse(text), backend=backend, profile="cpu")
    exe(10)
    with pytest.raises(PTOError) as e:
        exe(9)
    assert (e.value.code, e.value.location.line) == ("RUNTIME_INVALID_READ", 4)


PRE = "kernel @k(%cfg : !pto.fmatrix_config, %h : !pto.tile<1x16xf16>, %s : !pto.tile<1x8xf32>, %i : index) {\n  "


@pytest.mark.parametrize("line,code", [
    ("setfmatrix %i, %i, %i, %i, %i, %i, %cfg", "STRUCT_OPERAND_FORM"),
    ("setfmatrix", "STRUCT_OPERAND_FORM"),
    ("set_img2col_padding 1.0, %cfg", "STRUCT_OPERAND_FORM"),
    ("setfmatrix %i, %i, %i", "STRUCT_MISSING_OPERAND"),
    ("setfmatrix %h", "LEGAL_DTYPE"),
    ("set_img2col_padding %h", "LEGAL_DTYPE"),
    ("set_img2col_rpt %s", "STRUCT_VALID_REGION"),
])
def test_bad_forms_are_located_diagnostics(line: str, code: str) -> None:
    with pytest.raises(PTOError) as e:
        openpto.check(openpto.parse(PRE + line + "\n}\n"), profile="cpu")
    errs = getattr(e.value, "errors", [e.value])
    assert [(x.code, x.location.line) for x in errs] == [(code, 2)]
