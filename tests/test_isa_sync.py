"""Sync, binding and control-state instructions: operand validation, fault codes, recorded state,
and that no tile value changes."""
from __future__ import annotations

import numpy as np
import pytest

import openpto.isa as I
from openpto.isa import dtypes as dt
from openpto.isa.attrs import RoundMode
from openpto.isa.constraints import check_all
from openpto.isa.spec import Domain, Family
from openpto.isa.types import Pipe, TileType, parse_type
from openpto.isa.values import Tile

pytestmark = pytest.mark.filterwarnings("error")

SYNC = ("TSYNC", "TASSIGN", "SETFMATRIX", "SET_IMG2COL_RPT", "SET_IMG2COL_PADDING",
        "SETHF32MODE", "SETTF32MODE")
MANUAL = ("SET_FLAG", "WAIT_FLAG", "PIPE_BARRIER")
FLAGS = ("SET_FLAG", "WAIT_FLAG")
FMATRIX = dict(fmap_h=9, fmap_w=17, pad_left=1, pad_right=2, pad_top=3, pad_bottom=4)


def fault(mnemonic: str, code: str, **kw: object) -> None:
    with pytest.raises(I.RuntimeFault) as e:
        I.get(mnemonic).execute(**kw)
    assert e.value.code == code


# ------------------------------------------------------------------------------ declarations


def test_families_and_extension_flags() -> None:
    fams = I.by_family()
    # this module's declarations (isa/families/system.py adds the FIFO, SYNCALL ... to the family)
    assert sorted(i.mnemonic for i in fams[Family.SYNC] if i.semantics.__module__.endswith(".sync")) == sorted(SYNC)
    assert sorted(i.mnemonic for i in fams[Family.MANUAL_SYNC]) == sorted(MANUAL)
    assert all(I.get(m).extension for m in MANUAL)
    assert not any(I.get(m).extension for m in SYNC)
    assert I.get("set_flag") is I.get("SET_FLAG")           # PTO-AS spelling looks it up
    for m in SYNC + MANUAL:
        ins = I.get(m)
        assert ins.domain is Domain.NONE and ins.pipe_for({}) is Pipe.S


@pytest.mark.parametrize("mnemonic", SYNC + MANUAL)
def test_example_is_legal_and_runs(mnemonic: str) -> None:
    ins = I.get(mnemonic)
    types = {n: parse_type(t) for n, t in ins.example.types.items()}
    attrs = ins.with_defaults(ins.example.attrs)
    assert check_all(ins.constraints, types, attrs) == []
    rule = ins.dtype_rule()
    if rule is not None and all(n in types for n in rule.operands):    # as the checker: the form given
        assert rule.allows(tuple(types[n].dtype for n in rule.operands))
    tiles = {n: Tile(t) for n, t in types.items() if isinstance(t, TileType)}
    ins.execute(**tiles, **ins.example.scalars, **attrs)


# ------------------------------------------------------------------------------ flags


@pytest.mark.parametrize("mnemonic", FLAGS)
def test_flags_accept_ids_0_to_7_and_pipe_names(mnemonic: str) -> None:
    run = I.get(mnemonic).execute
    for i in range(8):
        assert run(src_pipe=Pipe.MTE2, dst_pipe=Pipe.V, event_id=i) is None
    run(src_pipe="PIPE_M", dst_pipe="fix", event_id=np.int64(7))
    run(src_pipe=Pipe.S, dst_pipe=Pipe.MTE3, event_id=np.uint8(0))


@pytest.mark.parametrize("mnemonic", FLAGS)
@pytest.mark.parametrize("event_id", [8, -1, 1 << 40, True, 1.0, "0", None])
def test_flags_reject_bad_event_ids(mnemonic: str, event_id: object) -> None:
    fault(mnemonic, "RUNTIME_EVENT_ID", src_pipe=Pipe.MTE2, dst_pipe=Pipe.V, event_id=event_id)


@pytest.mark.parametrize("mnemonic", FLAGS)
def test_flags_reject_bad_pipes(mnemonic: str) -> None:
    fault(mnemonic, "RUNTIME_SAME_PIPE", src_pipe=Pipe.V, dst_pipe="PIPE_V", event_id=0)
    fault(mnemonic, "RUNTIME_BAD_PIPE", src_pipe=Pipe.ALL, dst_pipe=Pipe.V, event_id=0)
    fault(mnemonic, "RUNTIME_BAD_PIPE", src_pipe=Pipe.V, dst_pipe=Pipe.ALL, event_id=0)
    fault(mnemonic, "RUNTIME_BAD_PIPE", src_pipe="PIPE_X", dst_pipe=Pipe.V, event_id=0)
    fault(mnemonic, "RUNTIME_BAD_PIPE", src_pipe=Pipe.V, dst_pipe=3, event_id=0)


def test_pipe_barrier_accepts_every_pipe_including_all() -> None:
    for p in Pipe:
        I.get("PIPE_BARRIER").execute(pipe=p)
    I.get("PIPE_BARRIER").execute(pipe="PIPE_ALL")
    fault("PIPE_BARRIER", "RUNTIME_BAD_PIPE", pipe="VECTOR")
    fault("PIPE_BARRIER", "RUNTIME_BAD_PIPE", pipe=None)


# ------------------------------------------------------------------------------ TSYNC, TASSIGN


def test_tsync_forms() -> None:
    run = I.get("TSYNC").execute
    run(pipe=Pipe.V)
    run(pipe="MTE3")
    run(event=object())
    fault("TSYNC", "RUNTIME_SYNC_FORM")
    fault("TSYNC", "RUNTIME_SYNC_FORM", event=object(), pipe=Pipe.V)
    fault("TSYNC", "RUNTIME_BAD_PIPE", pipe="nope")


@pytest.mark.parametrize("addr", [0, 32, 4096, np.int64(192 * 1024 - 32), 1 << 40])
def test_tassign_aligned_addresses_change_nothing(addr: int) -> None:
    data = np.arange(256, dtype=np.float32).reshape(16, 16)
    t = Tile(parse_type("!pto.tile<16x16xf32>"), data.copy())
    I.get("TASSIGN").execute(tile=t, addr=addr)       # capacity is the verifier's business
    assert (t.data == data).all()


@pytest.mark.parametrize("addr,code", [(16, "RUNTIME_MISALIGNED"), (33, "RUNTIME_MISALIGNED"),
                                       (-32, "RUNTIME_BAD_ADDRESS"), (64.0, "RUNTIME_BAD_ADDRESS"),
                                       (True, "RUNTIME_BAD_ADDRESS")])
def test_tassign_faults(addr: object, code: str) -> None:
    fault("TASSIGN", code, tile=Tile(parse_type("!pto.tile<16x16xf16, loc=mat>")), addr=addr)


def test_tassign_accepts_every_location_and_dtype() -> None:
    ins = I.get("TASSIGN")
    assert ins.operand("tile").locations is None
    assert all(ins.dtype_rule().allows((d,)) for d in dt.STORABLE)


# ------------------------------------------------------------------------------ control state


def test_tsetfmatrix_records_fields() -> None:
    state: dict = {}
    I.get("TSETFMATRIX").execute(**FMATRIX, state=state)
    assert state == {"fmatrix": FMATRIX}
    I.get("TSETFMATRIX").execute(**FMATRIX)            # no state: validation only


@pytest.mark.parametrize("field,value", [("fmap_h", 0), ("fmap_w", 65536), ("pad_left", 256),
                                         ("pad_bottom", -1), ("pad_top", 1.0)])
def test_tsetfmatrix_rejects_out_of_range_fields(field: str, value: object) -> None:
    state: dict = {}
    fault("TSETFMATRIX", "RUNTIME_BAD_CONFIG", **dict(FMATRIX, **{field: value}), state=state)
    assert state == {}


def test_tset_img2col_rpt_and_padding_record_state() -> None:
    state: dict = {}
    I.get("TSET_IMG2COL_RPT").execute(repeat_stride=65535, repeat_time=255, repeat_mode=1,
                                      state=state)
    I.get("TSET_IMG2COL_PADDING").execute(pad_value=-1.25, state=state)
    assert state == {"img2col_rpt": {"repeat_stride": 65535, "repeat_time": 255, "repeat_mode": 1},
                     "img2col_padding": {"pad_value": -1.25}}
    fault("TSET_IMG2COL_RPT", "RUNTIME_BAD_CONFIG", repeat_stride=0, repeat_time=256,
          repeat_mode=0)
    assert I.get("TSET_IMG2COL_PADDING").dtype_rule().allows((dt.I8,))


@pytest.mark.parametrize("mnemonic,key,profiles", [
    ("TSETHF32MODE", "hf32", ("cpu", "a2", "a3")), ("TSETTF32MODE", "tf32", ("cpu", "a5"))])
def test_precision_modes(mnemonic: str, key: str, profiles: tuple[str, ...]) -> None:
    ins = I.get(mnemonic)
    state: dict = {}
    ins.execute(enable=True, mode=RoundMode.ROUND, state=state)
    assert state == {key: {"enable": True, "mode": RoundMode.ROUND}}
    ins.execute(enable=False, state=state)
    assert state[key] == {"enable": False, "mode": RoundMode.RINT}
    assert ins.profiles == profiles
    assert ins.attr("enable").required and not ins.attr("mode").required
    bad = check_all(ins.constraints, {}, ins.with_defaults({"enable": True,
                                                            "mode": RoundMode.FLOOR}))
    assert [c.code for c, _ in bad] == ["LEGAL_ATTR"]
