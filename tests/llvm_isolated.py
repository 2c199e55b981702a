"""Run PTO programs on a backend in a child process, every array argument a view inside a
larger buffer of canary bytes, so that the safety tests can observe what must never happen:
a crash or heap corruption (the child dies), a hang (the child times out) or a write outside
an argument (a canary byte changed, in the guard zones or in the gaps of a strided view).
"""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

CANARY = 0xA5
GUARD = 4096          # bytes of canary before and after every array

Case = tuple[str, dict[str, Any]]        # program text, arguments (arrays and Python scalars)
Outcome = tuple[str | None, dict[str, np.ndarray], list[str], str | None]   # code, arrays, smashed, actual


def guarded(a: np.ndarray, spread: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(view, buffer): a copy of ``a`` as a view inside a canary-filled byte buffer; with
    ``spread`` > 1 the view takes every spread-th element of a wider row (canary gaps)."""
    a = np.asarray(a)
    inner_shape = a.shape[:-1] + (a.shape[-1] * spread,)
    nbytes = int(np.prod(inner_shape)) * a.itemsize
    buf = np.full(2 * GUARD + nbytes, CANARY, np.uint8)
    inner = buf[GUARD:GUARD + nbytes].view(a.dtype).reshape(inner_shape)
    view = inner[..., ::spread]
    view[...] = a
    return view, buf


def untouched(view: np.ndarray, buf: np.ndarray) -> bool:
    """Every byte of ``buf`` outside ``view``'s elements still holds the canary."""
    base = view.__array_interface__["data"][0] - buf.__array_interface__["data"][0]
    idx = np.indices(view.shape).reshape(view.ndim, -1)
    offs = base + (np.array(view.strides)[:, None] * idx).sum(0)
    covered = np.zeros(buf.size, bool)
    covered[(offs[:, None] + np.arange(view.itemsize)).ravel()] = True
    return bool((buf[~covered] == CANARY).all())


def run_cases(cases: list[Case], backend: str, spread: int = 1) -> list[Outcome]:
    """Run every case here (compiling each distinct text once) on guarded copies of its arrays:
    (fault code, the arrays after the run, the arguments written outside, the fault's actual)."""
    import openpto as pto
    from openpto.isa.diagnostics import PTOError
    exes: dict[str, Any] = {}
    out: list[Outcome] = []
    for text, args in cases:
        if text not in exes:
            exes[text] = pto.compile(pto.parse(text), backend=backend, profile="cpu")
        bufs, call = {}, {}
        for k, v in args.items():
            if isinstance(v, np.ndarray):
                call[k], bufs[k] = guarded(v, spread)
            else:
                call[k] = v
        code = actual = None
        try:
            exes[text](**call)
        except PTOError as e:
            code, actual = e.code, e.actual
        smashed = [k for k in bufs if not untouched(call[k], bufs[k])]
        out.append((code, {k: np.array(call[k]) for k in bufs}, smashed, actual))
    return out


def isolated(cases: list[Case], backend: str = "llvm", spread: int = 1, timeout: float = 120) -> list[Outcome]:
    """``run_cases`` in a child process; a crash or a hang is an AssertionError naming it."""
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "in.pkl", Path(tmp) / "out.pkl"
        src.write_bytes(pickle.dumps((cases, backend, spread)))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).parent)] + sys.path))
        try:
            proc = subprocess.run([sys.executable, __file__, str(src), str(dst)], capture_output=True,
                                  timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{backend}: the run did not finish in {timeout} s (a hang)") from None
        assert proc.returncode == 0, (f"{backend}: the child process died (rc {proc.returncode}): "
                                      f"{proc.stderr.decode(errors='replace')[-3000:]}")
        return pickle.loads(dst.read_bytes())


if __name__ == "__main__":
    cases, backend, spread = pickle.loads(Path(sys.argv[1]).read_bytes())
    Path(sys.argv[2]).write_bytes(pickle.dumps(run_cases(cases, backend, spread)))
