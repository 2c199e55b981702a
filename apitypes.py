"""Type checks at the public API's edge: a wrong-typed argument to ``openpto.parse``,
``load``, ``check`` or ``compile`` is a ``PTO_API_TYPE`` diagnostic naming the function, the
parameter, what it takes and what it got, not an AttributeError from deep inside."""
from __future__ import annotations

import functools
import inspect
import os
from typing import Any, Callable, Mapping, TypeVar

from .isa.diagnostics import PTOError

F = TypeVar("F", bound=Callable[..., Any])
Accepts = tuple[type, ...]

# how each accepted type is named in a message
_NAMES: dict[type, str] = {str: "str", type(None): "None", os.PathLike: "os.PathLike"}


def _spell(types: Accepts) -> str:
    return " or ".join(_NAMES.get(t, t.__name__) for t in types)


def _show(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:                           # noqa: BLE001 - a foreign __repr__ may raise anything
        text = "<unprintable>"
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def typed(accepts: Mapping[str, Accepts]) -> Callable[[F], F]:
    """Wrap a public function so each parameter named in ``accepts`` is checked first."""
    def wrap(fn: F) -> F:
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def checked(*args: Any, **kwargs: Any) -> Any:
            try:
                bound = sig.bind(*args, **kwargs)
            except TypeError as e:
                raise PTOError("PTO_API_TYPE", f"{fn.__name__}(): {e}", expected=f"{fn.__name__}{sig}",
                               actual=f"{len(args)} positional, keywords {sorted(kwargs)}") from None
            for name, types in accepts.items():
                if name in bound.arguments and not isinstance(bound.arguments[name], types):
                    raise PTOError("PTO_API_TYPE", f"{fn.__name__}(): argument '{name}' must be {_spell(types)}",
                                   expected=_spell(types), actual=_show(bound.arguments[name]))
            return fn(*args, **kwargs)
        return checked  # type: ignore[return-value]
    return wrap
