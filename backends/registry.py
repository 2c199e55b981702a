"""Finding backends: built-ins, installed plug-ins (entry-point group ``openpto.backends``),
and ``package.module:attr`` references, so a third-party backend needs no change here."""
from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any, Callable

from ..isa.diagnostics import PTOError
from .base import Backend

GROUP = "openpto.backends"

BUILTIN: dict[str, str] = {
    "reference": "openpto.backends.reference:ReferenceBackend",
}

_registered: dict[str, Callable[[], Any]] = {}


def register(name: str, factory: Callable[[], Any]) -> None:
    """Make ``factory()`` (a Backend, or a Backend class) available under ``name`` in this process."""
    _registered[name] = factory


def _plugins() -> dict[str, Callable[[], Any]]:
    found: dict[str, Callable[[], Any]] = {}
    for ep in entry_points(group=GROUP):
        found.setdefault(ep.name, ep.load)
    return found


def _import(ref: str) -> Any:
    module, _, attr = ref.partition(":")
    try:
        obj: Any = importlib.import_module(module)
        for part in attr.split(".") if attr else ():
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as e:
        raise PTOError("PTO_BACKEND_LOAD", f"cannot load backend {ref!r}: {e}",
                       expected="an importable package.module:attr", actual=ref) from None
    return obj


def _instantiate(obj: Any, ref: str) -> Backend:
    if isinstance(obj, type) and issubclass(obj, Backend):
        obj = obj()
    elif callable(obj) and not isinstance(obj, Backend):
        obj = obj()
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
    if spec in _registered:
        return _instantiate(_registered[spec](), spec)
    if spec in BUILTIN:
        return _instantiate(_import(BUILTIN[spec]), spec)
    plugins = _plugins()
    if spec in plugins:
        try:
            obj = plugins[spec]()
        except Exception as e:  # a broken plug-in must not take the caller down
            raise PTOError("PTO_BACKEND_LOAD", f"plug-in backend {spec!r} failed to load: {e}") from None
        return _instantiate(obj, spec)
    if ":" in spec:
        return _instantiate(_import(spec), spec)
    raise PTOError("PTO_UNKNOWN_BACKEND", f"no backend named {spec!r}",
                   expected=" | ".join(names()), actual=spec)
