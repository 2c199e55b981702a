"""The GPU path: the generated unit compiled by NVRTC (``cupy.RawModule``) and launched.

One thread block of ``THREADS`` threads per SPMD block (``grid = block_num``), the local
tiles in dynamic shared memory (``max_dynamic_shared_size_bytes`` raised above the 48 KB
default when a kernel needs more). CuPy arrays, and any object CuPy takes through
``__cuda_array_interface__`` or DLPack on the device (torch CUDA tensors), are used in place;
host arrays go through the shared argument checks (``backends.arguments.bind``) and are copied
to the device and the written ones back. NVRTC options keep the numerics the host emulation
tests: no contraction into FMA (``--fmad=false``), IEEE division and square root, denormals
kept. CuPy caches the compiled cubin on disk (keyed by source, options, architecture and NVRTC
version), so a warm start does not call NVRTC.

Everything here needs a CUDA device; it is exercised by the tests that skip with "no CUDA
device" and by ``pto conformance --backend cupy`` on a GPU.
"""
from __future__ import annotations

import time
from typing import Any, Mapping

import numpy as np

from ...assembler.ir import Module
from ...isa.diagnostics import PTOError
from ...isa.types import GlobalType, TileType
from ..arguments import bind, written_params
from ..base import Executable, Result
from . import codegen as G
from .toolchain import cuda_include

THREADS = 256
NVRTC_OPTIONS = ("-std=c++17", "--fmad=false", "-ftz=false", "-prec-div=true", "-prec-sqrt=true")
STATIC_SHARED = 48 * 1024     # shared memory a launch gets without opting in


def available() -> tuple[bool, str]:
    """(True, "") with CuPy importable and a CUDA device present, else the reason."""
    try:
        import cupy
    except ImportError:
        return False, "cupy not installed (pip install openpto[gpu])"
    except Exception as e:  # noqa: BLE001 - a broken install is a reason, not a crash
        return False, f"cupy failed to import: {e}"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001 - CUDARuntimeError without a driver or device
        return False, f"no CUDA device ({str(e).split(':')[0]})"
    if n < 1:
        return False, "no CUDA device"
    return True, ""


def options() -> tuple[str, ...]:
    inc = cuda_include()
    return NVRTC_OPTIONS + ((f"-I{inc}",) if inc is not None else ())


def _on_device(v: Any) -> bool:
    if hasattr(v, "__cuda_array_interface__"):
        return True
    dev = getattr(v, "__dlpack_device__", None)
    if dev is None:
        return False
    try:
        return int(dev()[0]) in (2, 13)     # kDLCUDA, kDLCUDAManaged
    except Exception:  # noqa: BLE001
        return False


def _device_array(cupy: Any, v: Any, p: Any) -> Any:
    """A device argument as a CuPy array (no copy), checked like ``bind`` checks host arrays."""
    a = cupy.asarray(v) if hasattr(v, "__cuda_array_interface__") else cupy.from_dlpack(v)
    t = p.type
    if a.dtype != t.dtype.np_dtype or a.ndim != t.rank:
        raise PTOError("RUNTIME_ARG_DTYPE" if a.ndim == t.rank else "RUNTIME_ARG_SHAPE",
                       f"argument %{p.name} does not match its parameter type",
                       expected=f"{t}", actual=f"{a.ndim}-d {a.dtype}")
    shape = getattr(t, "shape", ())
    for want, got in zip(shape, a.shape):
        if isinstance(want, int) and want != got:
            raise PTOError("RUNTIME_ARG_SHAPE", f"argument %{p.name} has the wrong shape",
                           expected=str(tuple(shape)), actual=str(a.shape))
    if any(s % a.itemsize for s in a.strides):
        raise PTOError("RUNTIME_ARG_STRIDES", f"argument %{p.name}'s strides are not whole elements",
                       expected=f"multiples of {a.itemsize}", actual=str(a.strides))
    if isinstance(t, TileType) and not a.flags.c_contiguous:
        raise PTOError("RUNTIME_ARG_STRIDES", f"tile argument %{p.name} on the device must be C-contiguous",
                       expected="C-contiguous", actual=str(a.strides))
    return a


class DeviceExecutable(Executable):
    def __init__(self, module: Module, profile: str, source: str, abis: Mapping[str, G.KernelABI],
                 faults: Mapping[str, list[G.FaultSite]]) -> None:
        import cupy
        super().__init__(module, profile)
        self.source = source
        self._abis, self._faults = abis, faults
        t0 = time.perf_counter()
        self._module = cupy.RawModule(code=source, options=options(), backend="nvrtc")
        self._fns = {}
        for k in module.kernels:
            fn = self._module.get_function(abis[k.name].symbol)
            if abis[k.name].workspace > STATIC_SHARED:
                fn.max_dynamic_shared_size_bytes = abis[k.name].workspace
            self._fns[k.name] = fn
        self.compile_seconds = time.perf_counter() - t0
        self._written = {k.name: sorted(written_params(k)) for k in module.kernels}

    def run(self, kernel: str, *args: Any, block_num: int = 1, trace: bool = False, **kwargs: Any) -> Result:
        import cupy

        from . import fault_of, slots
        block_num = self._check_launch(kernel, block_num)
        k = self.module.kernel(kernel)
        abi, outputs = self._abis[kernel], self._written[kernel]
        params = [p.name for p in k.params]
        given = dict(zip(params, args)) | kwargs
        device = {n: v for n, v in given.items() if _on_device(v)}
        stand_in = dict(given)
        for p in k.params:         # device arrays: checked here, stood in for by untouched host memory
            if p.name in device:
                a = _device_array(cupy, device[p.name], p)
                device[p.name] = a
                stand_in[p.name] = np.empty(a.shape, a.dtype)
        host = bind(k, [], stand_in)
        values: dict[str, Any] = {}
        copies: list[tuple[np.ndarray, Any]] = []
        for p in k.params:
            v = host[p.name]
            if p.name in device:
                values[p.name] = device[p.name]
            elif isinstance(p.type, (GlobalType, TileType)):
                d = cupy.asarray(np.ascontiguousarray(v) if isinstance(p.type, TileType) else v)
                values[p.name] = d
                if p.name in outputs:
                    copies.append((v, d))
            else:
                values[p.name] = v
        arg = cupy.asarray(slots(k, abi, values, lambda a: a.data.ptr))
        err = cupy.zeros(G.ERR_WORDS, dtype=cupy.int64)
        counts = cupy.zeros(max(len(abi.counters), 1), dtype=cupy.int64)
        start = time.perf_counter_ns()
        self._fns[kernel]((block_num,), (THREADS,), (arg, np.int64(0), np.int64(block_num), err, counts),
                          shared_mem=abi.workspace)
        cupy.cuda.get_current_stream().synchronize()
        end = time.perf_counter_ns()
        for v, d in copies:
            v[...] = cupy.asnumpy(d).reshape(v.shape)
        e = cupy.asnumpy(err)
        if e[0]:
            raise fault_of(k, self._faults[kernel], e)
        c = cupy.asnumpy(counts)
        counters = {m: int(n) for m, n in zip(abi.counters, c) if n}
        counters["instructions"] = sum(counters.values())
        events = [{"name": f"@{kernel}", "pipe": "V", "block": 0, "ts_ns": 0, "dur_ns": end - start, "line": None}] \
            if trace else None
        return Result({n: (device.get(n) if n in device else host[n]) for n in outputs}, counters, events)
