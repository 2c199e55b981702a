"""The cupy backend: PTO kernels as CUDA C++, run on an NVIDIA GPU through CuPy, or emulated.

``compile`` generates one CUDA C++ translation unit per module (``codegen``: a body function
per kernel over the portability header ``runtime.cuh``, one thread block per SPMD block, tiles
in shared memory, instruction loops spread over the block's threads, fused elementwise chains).
Two backends share it:

* ``cupy`` — NVRTC through ``cupy.RawModule``, launched on the current CUDA device
  (``device.py``); unavailable, with the reason, without CuPy or a device;
* ``cupy_emu`` — host emulation: the same unit compiled by the host C++ compiler with
  ``-DPTO_HOST`` (one thread per block) and called through cffi (``host.py``), so the generated
  code's semantics are tested on machines without a GPU.

Both target the ``cuda`` profile. Faults found by checks in the generated code come back as the
same ``RuntimeFault`` codes the reference backend raises.
"""
from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ...assembler.ir import Kernel, Module, ScalarOp, Subset, TileOp, View, ViewQuery
from ...isa import profiles as P
from ...isa.attrs import AtomicMode, ReluMode
from ...isa.diagnostics import LegalityError, Location, PTOError, RuntimeFault
from ...isa.spec import Instruction
from ...isa.types import GlobalLayout, GlobalType, Location as Loc, ScalarType, TileType, Type
from ..arguments import bind, written_params
from ..base import Backend, Executable, Result, flag_option
from . import cache as K
from . import codegen as G
from . import ctypes_ as C
from .scalars import SUPPORTED as SCALAR_SUPPORTED

HEADER = Path(__file__).resolve().parent / "runtime.cuh"
_PLAIN = (GlobalLayout.ND, GlobalLayout.DN, GlobalLayout.NZ)
_OPTIONS = ("cache", "cache_dir")
#: instructions that copy between tiles of one dtype only (no conversion is lowered)
_SAME_DTYPE = ("TMOV", "TEXTRACT")
_MATMUL = ("TMATMUL", "TMATMUL_ACC", "TMATMUL_BIAS", "TGEMV", "TGEMV_ACC", "TGEMV_BIAS")


def _rules() -> Mapping[str, Any]:
    from .rules import RULES
    return RULES


def unit_source(module: Module) -> tuple[str, dict[str, G.KernelABI], dict[str, list[G.FaultSite]]]:
    """The module's translation unit with ``runtime.cuh`` inlined (self-contained: NVRTC needs no
    include path for it and the source hash covers it), the ABIs and the fault sites."""
    src, abis, faults = G.generate(module, _rules())
    header = HEADER.read_text(encoding="utf-8").replace("#pragma once\n", "", 1)
    return src.replace('#include "runtime.cuh"', header, 1), abis, faults


def _dtype_reason(instr: Instruction, types: Mapping[str, Type], name: str) -> str | None:
    bad = sorted({t.dtype.name for t in types.values() if isinstance(t, (TileType, GlobalType))
                  and t.dtype.name not in C.SUPPORTED})
    if bad:
        return f"backend {name!r} runs {instr.mnemonic} on {', '.join(sorted(C.SUPPORTED))} elements, not {', '.join(bad)}"
    return None


def _form_reason(instr: Instruction, types: Mapping[str, Type], name: str) -> str | None:
    """Forms of a ruled instruction this backend does not lower, from the operand types."""
    m = instr.mnemonic
    globs = [t for t in types.values() if isinstance(t, GlobalType)]
    if any(g.layout not in _PLAIN for g in globs):
        return f"backend {name!r} moves ND, DN and NZ global tensors only"
    if "preQuantScalar" in types or "fp" in types:
        return f"backend {name!r} has no pre-quantising {m}"
    dst, src = types.get("dst"), types.get("src")
    if m in _SAME_DTYPE and isinstance(dst, TileType) and isinstance(src, TileType) and dst.dtype != src.dtype:
        return f"backend {name!r} runs {m} between tiles of one dtype only"
    if m == "TSTORE" and isinstance(dst, GlobalType) and isinstance(src, TileType) and dst.dtype != src.dtype \
            and not (dst.dtype.is_float and src.dtype.is_float):
        return f"backend {name!r} converts stores between float dtypes only"
    if m in _MATMUL:
        a, b, d = types.get("a"), types.get("b"), types.get("dst")
        ok = (isinstance(a, TileType) and isinstance(b, TileType) and isinstance(d, TileType)
              and ((a.dtype.is_float and b.dtype.is_float and d.dtype.name == "f32")
                   or (a.dtype.name == b.dtype.name == "i8" and d.dtype.name == "i32")))
        if not ok:
            return f"backend {name!r} multiplies float tiles into f32 and i8 tiles into i32 only"
    return None


def _statement_reason(s: Any, name: str) -> str | None:
    """Why a statement (beyond its instruction and types) is not lowered, or None."""
    if isinstance(s, (View, ViewQuery, Subset)):
        return f"backend {name!r} has no tensor views or tile subsets"
    if isinstance(s, ScalarOp) and s.op not in SCALAR_SUPPORTED:
        return f"backend {name!r} has no lowering for arith.{s.op}"
    if isinstance(s, TileOp):
        a = s.instr.with_defaults(s.attrs)
        relu = a.get("relu", ReluMode.NONE) is not ReluMode.NONE and s.instr.mnemonic not in _SAME_DTYPE
        if a.get("atomic", AtomicMode.NONE) is not AtomicMode.NONE or relu:
            return f"backend {name!r} has no atomic or relu {s.instr.mnemonic}"
        mode = a.get("mode")
        if mode is not None and s.instr.mnemonic in _SAME_DTYPE and mode.name != "SingleModeVec0":
            return f"backend {name!r} has no {mode.name} {s.instr.mnemonic}"
    return None


class _CupyBase(Backend):
    default_profile = "cuda"
    profiles = ("cuda",)

    @property
    def rules(self) -> Mapping[str, Any]:   # type: ignore[override]
        return _rules()

    def unsupported(self, instr: Instruction, types: Mapping[str, Type], profile: str) -> str | None:
        why = super().unsupported(instr, types, profile)
        return why or _dtype_reason(instr, types, self.name) or _form_reason(instr, types, self.name)

    def _capability_errors(self, module: Module, profile: str) -> list[PTOError]:
        errors = super()._capability_errors(module, profile)
        if errors:
            return errors
        for k in module.kernels:
            for index, s in enumerate(k.walk()):
                why = _statement_reason(s, self.name)
                if why:
                    errors.append(_located(LegalityError, "LEGAL_BACKEND_UNSUPPORTED", why, k, index, s,
                                           expected=f"a statement {self.name!r} supports",
                                           actual=type(s).__name__))
            need = G.abi_for(k, "").workspace
            limit = P.get(profile).capacity[Loc.VEC]
            if need > limit:
                errors.append(LegalityError(
                    "LEGAL_CAPACITY", f"@{k.name}'s local tiles do not fit one thread block's shared memory",
                    location=Location(k.loc.file if k.loc else None, k.loc.line if k.loc else None,
                                      k.loc.col if k.loc else None, k.name),
                    expected=f"<= {limit} bytes (profile {profile})", actual=f"{need} bytes"))
        return errors

    def _options(self, options: dict[str, Any]) -> tuple[bool, Any]:
        extra = {k: v for k, v in options.items() if k not in _OPTIONS}
        if extra:
            raise PTOError("PTO_OPTION", f"unknown {self.name} backend option(s): {', '.join(extra)}",
                           expected=", ".join(_OPTIONS), actual=", ".join(extra))
        use = options.get("cache", True)
        flag_option("cache", use)
        return use, options.get("cache_dir")


def _located(cls: type, code: str, message: str, k: Kernel, index: int, s: Any, **kw: Any) -> PTOError:
    at = getattr(s, "loc", None) or Location()
    return cls(code, message, location=Location(at.file, at.line, at.col, k.name, index, at.source_line), **kw)


class CupyEmulationBackend(_CupyBase):
    """Host emulation of the cupy backend: the generated CUDA C++ compiled by the host C++
    compiler (``-DPTO_HOST``: one thread per block) and called through cffi. Options:
    ``cache`` (default True) and ``cache_dir``."""

    name = "cupy_emu"

    def is_available(self) -> tuple[bool, str]:
        from .toolchain import host_available
        try:
            import cffi  # noqa: F401
        except ImportError:          # pragma: no cover - a dependency
            return False, "cffi is not installed"
        return host_available()

    def _compile(self, module: Module, profile: str, **options: Any) -> Executable:
        from . import host, toolchain
        use_cache, cache_dir = self._options(options)
        source, abis, faults = unit_source(module)
        directory = Path(cache_dir) if cache_dir is not None else K.default_dir()
        k = K.key(source, profile, {"flags": host.HOST_FLAGS}, "host:" + toolchain.host_fingerprint())
        path = K.path_for(directory, k)
        compiled = not (use_cache and path.is_file())
        if compiled:
            if not use_cache:
                import tempfile
                path = Path(tempfile.mkdtemp(prefix="pto-cupy-")) / "unit.so"
            host.compile_shared(source, path)
        lib = host.Library(path)
        lib.declare([abis[kk.name].symbol for kk in module.kernels])
        return EmulatedExecutable(module, profile, source, lib, abis, faults, compiled)


class CupyBackend(_CupyBase):
    """The GPU: the generated CUDA C++ compiled by NVRTC (``cupy.RawModule``) and launched with
    one thread block per SPMD block. Options: ``cache`` and ``cache_dir`` (accepted for
    symmetry with ``cupy_emu``; compiled cubins live in CuPy's kernel cache)."""

    name = "cupy"

    def is_available(self) -> tuple[bool, str]:
        from .device import available
        return available()

    def _compile(self, module: Module, profile: str, **options: Any) -> Executable:
        from .device import DeviceExecutable
        self._options(options)
        source, abis, faults = unit_source(module)
        return DeviceExecutable(module, profile, source, abis, faults)


def _i64(n: int) -> int:
    return n - (1 << 64) if n >= 1 << 63 else n


def slots(kernel: Kernel, abi: G.KernelABI, values: Mapping[str, Any], address: Any) -> np.ndarray:
    """The i64 argument slots of one launch; ``address(array)`` gives an array's address."""
    out = np.zeros(abi.nslots, dtype=np.int64)
    for p in kernel.params:
        s, t, v = abi.slots[p.name], p.type, values[p.name]
        if isinstance(t, GlobalType):
            out[s] = _i64(address(v))
            out[s + 1:s + 1 + v.ndim] = v.shape
            out[s + 1 + v.ndim:s + 1 + 2 * v.ndim] = [st // v.itemsize for st in v.strides]
        elif isinstance(t, TileType):
            out[s] = _i64(address(v))
        elif isinstance(t, ScalarType):
            out[s] = np.float64(v).view(np.int64) if t.is_float else _i64(int(v))
    return out


def fault_of(kernel: Kernel, faults: list[G.FaultSite], err: np.ndarray) -> RuntimeFault:
    """The RuntimeFault a kernel's error record describes."""
    from ..llvm.codegen import format_details
    site_no = int(err[0])
    if not 1 <= site_no <= len(faults):
        return RuntimeFault("RUNTIME_INTERNAL", "generated code reported an unknown fault",
                            location=Location(kernel=kernel.name), actual=site_no)
    site = faults[site_no - 1]
    details = [int(x) for x in err[1:G.ERR_SLOTS]]
    return RuntimeFault(site.code, site.message, location=site.location,
                        expected=format_details(site.expected, details),
                        actual=format_details(site.actual, details))


class EmulatedExecutable(Executable):
    def __init__(self, module: Module, profile: str, source: str, lib: Any, abis: Mapping[str, G.KernelABI],
                 faults: Mapping[str, list[G.FaultSite]], compiled: bool) -> None:
        super().__init__(module, profile)
        self.source = source
        self.compiled = compiled              # False: loaded from the compile cache
        self._lib, self._abis, self._faults = lib, abis, faults
        self._kernels = {k.name: (k, lib.entry(abis[k.name].symbol), sorted(written_params(k)))
                         for k in module.kernels}

    def run(self, kernel: str, *args: Any, block_num: int = 1, trace: bool = False, **kwargs: Any) -> Result:
        block_num = self._check_launch(kernel, block_num)
        k, fn, outputs = self._kernels[kernel]
        abi = self._abis[kernel]
        values = bind(k, args, kwargs)
        staged: list[tuple[np.ndarray, np.ndarray]] = []
        for p in k.params:              # tile parameters are addressed row-major: stage others
            v = values[p.name]
            if isinstance(p.type, TileType) and not v.flags.c_contiguous:
                c = np.ascontiguousarray(v)
                if p.name in outputs:
                    staged.append((v, c))
                values[p.name] = c
        arg = slots(k, abi, values, lambda a: a.ctypes.data)
        ws = np.empty(abi.workspace + 64, dtype=np.uint8)
        base = ws.ctypes.data
        err = np.zeros(G.ERR_WORDS, dtype=np.int64)
        counts = np.zeros(max(len(abi.counters), 1), dtype=np.int64)
        ffi = self._lib.ffi
        t0 = time.perf_counter_ns()
        with contextlib.ExitStack():
            rc = fn(ffi.cast("int64_t*", arg.ctypes.data), ffi.cast("unsigned char*", base + (-base % 64)),
                    0, block_num, block_num, ffi.cast("int64_t*", err.ctypes.data),
                    ffi.cast("int64_t*", counts.ctypes.data))
        t1 = time.perf_counter_ns()
        for v, c in staged:
            v[...] = c
        if rc:
            raise fault_of(k, self._faults[kernel], err)
        counters = {m: int(n) for m, n in zip(abi.counters, counts) if n}
        counters["instructions"] = sum(counters.values())
        events = [{"name": f"@{kernel}", "pipe": "V", "block": 0, "ts_ns": 0, "dur_ns": t1 - t0, "line": None}] \
            if trace else None
        return Result({n: values[n] for n in outputs}, counters, events)
