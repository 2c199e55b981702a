"""openpto: a portable implementation of the PTO (Parallel Tile Operation) virtual ISA.

The stable Python API: ``parse``/``load`` a program, ``check`` it for a profile, print it
(``Module.to_text``) or serialise it (``Module.to_bytes``), and ``compile`` it for a backend.
Each function checks its arguments' types first (``PTO_API_TYPE``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import os

from .apitypes import typed
from .assembler import Module
from .assembler import parse as _parse
from .assembler.loading import load as _load
from .assembler.verifier import verify as _verify
from .isa import PTOError, PTOErrorGroup

if TYPE_CHECKING:
    from .backends import Backend, Executable

__version__ = "0.1.0"


_TEXT, _NAME = (str,), (str, type(None))
parse = typed({"text": _TEXT, "filename": _NAME})(_parse)
load = typed({"path": (str, os.PathLike)})(_load)


@typed({"module": (Module,), "profile": _NAME})
def check(module: Module, profile: str | None = "cpu") -> Module:
    """Verify structure and, for ``profile``, legality; raise every diagnostic found
    (one ``PTOError``, or a ``PTOErrorGroup`` for several). Returns the module."""
    return _verify(module, profile)


@typed({"module": (Module,), "profile": _NAME})
def compile(module: Module, backend: "str | Backend" = "reference", profile: str | None = None,
            **options: Any) -> "Executable":
    """Verify ``module`` for ``profile`` (the backend's default when None) and lower it with
    ``backend`` (a name, ``package.module:attr``, or a Backend). Unsupported instructions fail
    here with a LEGAL_* diagnostic, never at run time."""
    from .backends import get
    return get(backend).compile(module, profile, **options)


__all__ = ["Module", "PTOError", "PTOErrorGroup", "__version__", "check", "compile", "load", "parse"]
