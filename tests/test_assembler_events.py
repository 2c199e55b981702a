"""The public IR Level-2 event forms are the flag instructions under another spelling."""
from __future__ import annotations

import pytest

import openpto as pto
from openpto.assembler.events import OP_CLASS_PIPE
from openpto.isa.types import Pipe


def test_record_wait_and_barrier_are_flags_and_a_barrier() -> None:
    public = """.arg %e : index
pto.record_event[TLOAD, TVEC, 0]
pto.wait_event[TLOAD, TVEC, 0]
pto.barrier(TVEC)
record_event[TMATMUL, TSTORE_ACC, %e]
wait_event[TMATMUL, TSTORE_ACC, %e]
"""
    flags = """.arg %e : index
set_flag #pto.pipe<MTE2>, #pto.pipe<V>, 0
wait_flag #pto.pipe<MTE2>, #pto.pipe<V>, 0
pipe_barrier #pto.pipe<V>
set_flag #pto.pipe<M>, #pto.pipe<FIX>, %e
wait_flag #pto.pipe<M>, #pto.pipe<FIX>, %e
"""
    m = pto.parse(public)
    assert m == pto.parse(flags)
    pto.check(m, "a3")
    assert pto.parse(m.to_text()) == m


def test_every_op_class_names_a_pipe() -> None:
    assert OP_CLASS_PIPE["TLOAD"] is Pipe.MTE2 and OP_CLASS_PIPE["TVEC"] is Pipe.V
    for cls, pipe in OP_CLASS_PIPE.items():
        m = pto.parse(f"pto.barrier({cls})\n")
        assert m.kernel().body[0].args["pipe"].pipe is pipe


@pytest.mark.parametrize("text, code, col", [
    ("pto.record_event[TLOAD, TFOO, 0]\n", "PARSE_ATTR", 25),
    ("pto.record_event[TLOAD, TVEC]\n", "PARSE_TOKEN", 29),
    ("pto.barrier(TVEC\n", "PARSE_TOKEN", 17),
    ("%r = pto.wait_event[TLOAD, TVEC, 0]\n", "PARSE_ARITY", 1),
    (".arg %f : f32\npto.record_event[TLOAD, TVEC, %f]\n", "STRUCT_INDEX", 31),
])
def test_malformed_event_forms(text: str, code: str, col: int) -> None:
    with pytest.raises(pto.PTOError) as e:
        pto.parse(text, filename="e.pto")
    err = getattr(e.value, "errors", [e.value])[0]
    assert (err.code, err.location.col) == (code, col), err.render()
