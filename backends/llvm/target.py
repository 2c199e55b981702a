"""The host target: one LLVM target machine, the optimisation pipeline, object code in and out.

LLVM is touched only here. ``compile_object`` runs the new pass manager at O3 for the host
CPU (so loops vectorise for the widest vector unit it has) and emits an object file; ``Loaded``
links object code into an MCJIT engine, which is all a warm start from the disk cache needs.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import threading
from functools import lru_cache

import llvmlite
import llvmlite.binding as llvm

#: libm functions generated code may call (LLVM lowers ``frem`` to fmodf/fmod, for instance).
_LIBM_SYMBOLS = ("fmodf", "fmod", "expf", "logf", "exp", "log", "floorf", "ceilf", "truncf", "roundf",
                 "rintf", "nearbyintf", "sqrtf", "powf", "ldexpf", "frexpf")
_lock = threading.Lock()


@lru_cache(maxsize=None)
def _init() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    for name in _LIBM_SYMBOLS:
        fn = getattr(libm, name, None)
        if fn is not None:
            llvm.add_symbol(name, ctypes.cast(fn, ctypes.c_void_p).value)


@lru_cache(maxsize=None)
def host() -> tuple[str, str, str]:
    """(triple, cpu name, feature string) of this machine."""
    _init()
    return llvm.get_process_triple(), llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()


def fingerprint() -> str:
    """What compiled code depends on besides the module: target, CPU, features, LLVM."""
    triple, cpu, features = host()
    return f"{triple}|{cpu}|{features}|llvmlite {llvmlite.__version__}|llvm {llvm.llvm_version_info}"


@lru_cache(maxsize=None)
def machine() -> llvm.TargetMachine:
    """The shared target machine for optimising and emitting code."""
    return _new_machine()


def _new_machine() -> llvm.TargetMachine:
    triple, cpu, features = host()
    target = llvm.Target.from_triple(triple)
    return target.create_target_machine(cpu=cpu, features=features, opt=3, reloc="default",
                                        codemodel="jitdefault", jit=True)


def optimize(ir_text: str, level: int = 3) -> llvm.ModuleRef:
    """Parse and optimise ``ir_text`` for the host (the new pass manager's O``level`` pipeline)."""
    _init()
    with _lock:
        mod = llvm.parse_assembly(ir_text)
        mod.verify()
        tm = machine()
        mod.triple, mod.data_layout = tm.triple, str(tm.target_data)
        pto = llvm.create_pipeline_tuning_options(speed_level=level)
        pto.loop_vectorization = True
        pto.slp_vectorization = True
        # No unrolling beyond the vectoriser's interleaving: with it, LLVM fully unrolls the
        # constant-trip row loops of a 16-row tile (10x the IR: softmax's cold compile 1.4 s
        # instead of 0.05 s) for run times within noise of the rolled loops.
        pto.loop_unrolling = False
        pb = llvm.create_pass_builder(tm, pto)
        pm = pb.getModulePassManager()
        pm.run(mod, pb)
    return mod


def compile_object(ir_text: str) -> bytes:
    """Optimised object code for ``ir_text``."""
    mod = optimize(ir_text)
    with _lock:
        return machine().emit_object(mod)


def assembly(ir_text: str) -> str:
    """The host assembly of ``ir_text`` after optimisation (to check what vectorised)."""
    mod = optimize(ir_text)
    with _lock:
        return machine().emit_assembly(mod)


class Loaded:
    """Object code linked into memory; ``address(name)`` gives a function's entry point. Keep
    the object alive as long as the code may run."""

    def __init__(self, obj: bytes) -> None:
        _init()
        with _lock:
            empty = llvm.parse_assembly("")
            # an engine owns its target machine, so each gets its own
            self._engine = llvm.create_mcjit_compiler(empty, _new_machine())
            self._engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
            self._engine.finalize_object()

    def address(self, name: str) -> int:
        with _lock:
            return self._engine.get_function_address(name)
