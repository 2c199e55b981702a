"""Run a PTO program on a backend and collect the fault code or the arrays it leaves: the
llvm family tests compare these between the llvm and the reference backend."""
from __future__ import annotations

from typing import Any

import numpy as np

import openpto as pto
from openpto.isa.diagnostics import PTOError

_EXES: dict[tuple[str, str], Any] = {}


def executable(text: str, backend: str) -> Any:
    """``text`` compiled for profile cpu on ``backend``, once per process."""
    key = (text, backend)
    if key not in _EXES:
        _EXES[key] = pto.compile(pto.parse(text), backend=backend, profile="cpu")
    return _EXES[key]


def run_program(text: str, backend: str, args: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """(fault code, {}) when the run raises, else (None, the argument arrays after the run);
    inputs are copied, so one ``args`` serves both backends."""
    arrays = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
    try:
        executable(text, backend)(**arrays)
    except PTOError as e:
        return e.code, {}
    return None, {k: v for k, v in arrays.items() if isinstance(v, np.ndarray)}


def run_both(text: str, tmp: Any, **args: object) -> tuple[dict, dict]:
    """Run the one-kernel module on the reference and llvm backends (llvm caching in ``tmp``)
    with copies of ``args``; the final arrays of each."""
    module = pto.parse(text)
    outs = []
    for backend, options in (("reference", {}), ("llvm", {"cache_dir": tmp})):
        mine = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
        pto.compile(module, backend, "cpu", **options)(**mine)
        outs.append(mine)
    return outs[0], outs[1]


def assert_same_bits(text: str, args: dict[str, Any], out: str, tmp: Any) -> None:
    """The reference and llvm backends leave the same bytes in the array ``out`` (NaN payloads
    and signed zeros included) when both run ``text`` with copies of ``args``."""
    ref, llvm = run_both(text, tmp, **args)
    np.testing.assert_array_equal(llvm[out].view(np.uint8), ref[out].view(np.uint8))
