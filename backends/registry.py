"""Finding backends: built-ins, installed plug-ins (entry-point group ``openpto.backends``),
and ``package.module:attr`` references, so a third-party backend needs no change here.

Whatever a plug-in does wrong while being found and built (its import raises, its entry
point names something that is not a Backend, its constructor fails) becomes a
``PTO_BACKEND_LOAD`` diagnostic: a broken plug-in must not take the caller down.
"""
from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any, Callable

from ..isa.diagnostics import PTOError
from .base import Backend

GROUP = "openpto.backends"

BUILTIN: dict[str, str] = {
    "reference": "openpto.backends.reference:ReferenceBackend",
    "llvm": "openpto.backends.llvm:LLVMBackend",
    "ascend_sim": "openpto.backends.ascend_sim:AscendSimBackend",
    "cupy": "openpto.backends.cupy:CupyBackend",
    "cupy_emu": "openpto.backends.cupy:CupyEmulationBackend",
}

_registered: dict[str, Callable[[], Any]] = {}


def register(name: str, factory: Callable[[], Any] | Backend) -> None:
    """Make a backend available under ``name`` in this process: a Backend instance, or a
    factory (a Backend subclass is one) called on each ``get``. Registered names win over
    built-ins and plug-ins of the same name."""
    _registered[name] = (lambda: factory) if isinstance(factory, Backend) else factory


def _plugins() -> dict[str, Callable[[], Any]]:
    found: dict[str, Callable[[], Any]] = {}
    for ep in entry_points(group=GROUP):
        found.setdefault(ep.name, ep.load)
    return found


def _import(ref: str) -> Any:
    module, _, attr = ref.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


def _build(load: Callable[[], Any], ref: str) -> Backend:
    """``load()`` gives a Backend, a Backend class or a factory; return the Backend."""
    try:
        obj = load()
        if callable(obj) and not isinstance(obj, Backend):
            obj = obj()
    except PTOError:
        raise
    except Exception as e:  # noqa: BLE001 - any failure of third-party code is a load failure
        raise PTOError("PTO_BACKEND_LOAD", f"backend {ref!r} failed to load: {type(e).__name__}: {e}",
                       expected="an importable Backend subclass, instance or factory", actual=ref) from None
    if not isinstance(obj, Backend):
        raise PTOError("PTO_BACKEND_LOAD", f"{ref!r} is not an openpto Backend",
                       expected="a Backend subclass, instance or factory", actual=type(obj).__name__)
    return obj


def names() -> list[str]:
    """Every backend name known here: built-in, registered and installed plug-ins."""
    return sorted(set(BUILTIN) | set(_registered) | set(_plugins()))


def get(spec: str | Backend) -> Backend:
    """A backend by name (``reference``), by ``package.module:attr``, or passed through."""
    if isinstance(spec, Backend):
        return spec
    if not isinstance(spec, str):
        raise PTOError("PTO_UNKNOWN_BACKEND", "a backend is named by a string or given as a Backend",
                       expected="str | Backend", actual=type(spec).__name__)
    if spec in _registered:
        return _build(_registered[spec], spec)
    if spec in BUILTIN:
        return _build(lambda: _import(BUILTIN[spec]), spec)
    plugins = _plugins()
    if spec in plugins:
        return _build(plugins[spec], spec)
    if ":" in spec:
        return _build(lambda: _import(spec), spec)
    raise PTOError("PTO_UNKNOWN_BACKEND", f"no backend named {spec!r}",
                   expected=" | ".join(names()), actual=spec)
