"""Backends: the plug-in interface (``Backend``, ``Executable``, ``Result``) and discovery
(``get``, ``names``, ``register``; entry-point group ``openpto.backends``)."""
from .base import Backend, Executable, Result
from .registry import GROUP, get, names, register

__all__ = ["Backend", "Executable", "GROUP", "Result", "get", "names", "register"]
