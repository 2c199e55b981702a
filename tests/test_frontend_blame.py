"""A diagnostic from a generated kernel is told at the user's Python line (frontend/blame.py):
FRONT_LEGAL for a kernel the profile refuses, the run-time code for a failing run, each with
the kernel's position as a note."""
import inspect

import numpy as np
import pytest

import openpto.frontend as pto
from openpto.isa import PTOError


def _line_of(fn, text):
    src, first = inspect.getsourcelines(fn)
    return first + next(i for i, ln in enumerate(src) if text in ln)


def test_an_integer_division_on_a3_is_refused_at_its_line():
    def f(x: pto.Tensor((8, 16), pto.DT_INT32), y: pto.Tensor((8, 16), pto.DT_INT32)):
        z = x + y
        return z / y
    x = np.ones((8, 16), np.int32)
    with pytest.raises(PTOError) as e:
        pto.jit(f, profile="a3")(x, x)
    err = e.value
    assert err.code == "FRONT_LEGAL"
    assert err.location.line == _line_of(f, "return z / y")
    assert "LEGAL_DTYPE" in err.message and "TDIV" in err.message
    assert any("generated kernel" in n and "tdiv" in n for n in err.notes)


@pytest.mark.parametrize("backend", ["reference", "llvm"])
def test_a_run_time_window_out_of_bounds_is_told_at_the_view(backend):
    def f(x: pto.Tensor((pto.DYNAMIC, 16), pto.DT_FP32), out: pto.Tensor((pto.DYNAMIC, 16), pto.DT_FP32)):
        for i in pto.loop(0, x.shape[0], 1):
            v = pto.view(x, [1, 16], [i + 1, 0])
            pto.assemble(v * 2.0, [i, 0], out)
    x = np.ones((5, 16), np.float32)
    with pytest.raises(PTOError) as e:
        pto.jit(f, backend=backend)(x, np.zeros_like(x))
    err = e.value
    assert err.code == "RUNTIME_OOB"
    assert err.location.line == _line_of(f, "v = pto.view(")
    assert any("tload" in n for n in err.notes)
