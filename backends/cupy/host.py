"""Host emulation: the generated CUDA C++ compiled for the CPU and called through cffi.

The unit is compiled with ``-DPTO_HOST`` (``runtime.cuh``: one thread per block, ``PTO_SYNC`` a
no-op, the warp reductions sequential) into a shared library kept in the compile cache
(``cache.py``); its ``<symbol>_host`` entry runs the launch's blocks in order and stops at the
first that fails. Floating-point contraction is off (``-ffp-contract=off``), as ``--fmad=false``
turns it off for NVRTC, so both compilers evaluate the same expressions.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from ...isa.diagnostics import PTOError
from . import toolchain

HOST_FLAGS = ("-x", "c++", "-std=c++17", "-DPTO_HOST", "-O2", "-ffp-contract=off", "-fno-fast-math",
              "-fno-strict-aliasing", "-w", "-shared", "-fPIC")


def compile_shared(source: str, out: Path) -> None:
    """Compile ``source`` into the shared library ``out`` (written atomically).
    PTO_NATIVE_COMPILE when the compiler rejects it (a bug of the backend, never the program's)."""
    exe, inc = toolchain.cxx(), toolchain.cuda_include()
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="pto-cupy-") as tmp:
        src = Path(tmp) / "unit.cu"
        src.write_text(source, encoding="utf-8")
        lib = Path(tmp) / "unit.so"
        cmd = [str(exe), *HOST_FLAGS, f"-I{inc}", str(src), "-o", str(lib)]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.SubprocessError) as e:
            raise PTOError("PTO_NATIVE_COMPILE", f"the host compiler could not run: {e}",
                           expected="a working C++ compiler", actual=str(exe)) from None
        if r.returncode != 0:
            raise PTOError("PTO_NATIVE_COMPILE", "the host compiler rejected the generated CUDA C++ "
                           "(a bug of the cupy backend)", expected="compiled code", actual=r.stderr[-2000:])
        fd, part = tempfile.mkstemp(dir=out.parent, prefix=".tmp-")
        os.close(fd)
        Path(part).write_bytes(lib.read_bytes())
        os.replace(part, out)


class Library:
    """A loaded emulation library: ``entry(symbol)`` is the cffi function of a kernel."""

    def __init__(self, path: Path) -> None:
        from cffi import FFI
        self.ffi = FFI()
        self.path = path
        self._lib = None
        self._symbols: dict[str, object] = {}

    def declare(self, symbols: list[str]) -> None:
        decl = "".join(f"int {s}_host(const int64_t*, unsigned char*, int64_t, int64_t, int64_t, int64_t*, int64_t*);\n"
                       for s in symbols)
        self.ffi.cdef(decl)
        self._lib = self.ffi.dlopen(str(self.path))

    def entry(self, symbol: str):  # noqa: ANN201 - a cffi function
        return getattr(self._lib, symbol + "_host")
