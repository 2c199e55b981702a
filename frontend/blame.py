"""A diagnostic raised in generated code, told at the user's Python line.

The checker, a backend's compile and a kernel run report positions in the generated PTO-AS
(``<frontend f>:19:12``), which the user never wrote. This module finds the kernel and the
tensor op that produced that line - the kernel's header lists its ops with their source lines,
and each instruction's destination tile is named after the tensor it computes - and re-raises
the diagnostic there: as ``FRONT_LEGAL`` when the program cannot be built for the profile, or
with its own ``RUNTIME_*`` code when a run fails; the kernel position goes into a note.
"""
from __future__ import annotations

import re

from ..isa.diagnostics import FrontendError, Location, PTOError
from .codes import front_error
from .emit import LoweredKernel
from .lower import Lowered
from . import graph as g

_DEST = re.compile(r"^\s*%t_([A-Za-z0-9_]+?)(?:_\d+)?\s*=")
_COMMENT = re.compile(r"//\s*%([A-Za-z0-9_]+)\s*$")
_STORE = re.compile(r"^\s*tstore %([A-Za-z0-9_]+)\[")


def _kernel_at(low: Lowered, line: int) -> tuple[LoweredKernel, int] | None:
    """The kernel whose text holds 1-based ``line`` of ``low.text``, and the line within it."""
    start = 1
    for lk in low.kernels:
        n = lk.text.count("\n") + 1
        if start <= line < start + n:
            return lk, line - start
        start += n + 1                  # the blank line between kernels
    return None


def _op_of(lk: LoweredKernel, text: str, fn: g.Function | None) -> g.Op | None:
    """The op behind the instruction ``text``: the one computing the tensor its destination tile
    (or a trailing ``// %name``) is named after; for a load, the view it reads through; else the
    kernel's first op with a source line (the kernel as a whole)."""
    nodes = lk.kernel.nodes
    made = {o: op for op in fn.walk() for o in op.outputs} if fn is not None else {}
    store = _STORE.match(text)
    if store:                                   # the op whose result lands in that buffer
        for n in nodes:
            target = n.extra.get("target")
            if (target.buffer.name if target is not None else n.out.name.lstrip("%")) == store.group(1):
                return n.op
    load = _DEST.match(text) if " tload " in text else None
    if load:                                    # a load through a view: the view's line
        for n in nodes:
            for t in n.tensor_inputs():
                if t.name.lstrip("%") == load.group(1):
                    op = made.get(t)
                    return op if op is not None and op.loc is not None else n.op
    for m in (_COMMENT.search(text), _DEST.match(text)):
        for n in nodes if m else ():
            if n.out.name.lstrip("%") == m.group(1):
                return n.op
    first = next((n for n in nodes if n.op.loc is not None), nodes[0] if nodes else None)
    return first.op if first is not None else None


def _find(err: PTOError, low: Lowered, fn: g.Function | None) -> tuple[g.Op | None, str, str]:
    """(op, kernel name, the kernel's instruction) for an error in ``low``'s text or kernels."""
    loc = err.location
    if loc.line is not None and (loc.file or "").startswith("<frontend"):
        hit = _kernel_at(low, loc.line)
        if hit is not None:
            lk, i = hit
            text = lk.text.splitlines()[i] if i < len(lk.text.splitlines()) else ""
            return _op_of(lk, text, fn), lk.name, text.strip()
    if loc.kernel is not None:
        for lk in low.kernels:
            if lk.name == loc.kernel:
                return _op_of(lk, "", fn), lk.name, ""
    return None, "", ""


def origin(err: PTOError, low: Lowered, fn: g.Function | None = None) -> tuple[g.Op | None, str, str]:
    """The op behind a diagnostic in ``low``'s kernels, the kernel's name and the offending
    instruction's text (the portability report, frontend/port.py, groups diagnostics by them)."""
    return _find(err, low, fn)


def blamed(err: PTOError, low: Lowered, *, run: bool, fn: g.Function | None = None) -> PTOError:
    """``err`` at the source line of the op that made the offending instruction: FRONT_LEGAL
    when building (``run`` False), its own code when running. Unchanged when no op is found."""
    if isinstance(err, FrontendError):
        return err
    op, kname, text = _find(err, low, fn)
    if op is None or op.loc is None:
        return err
    where: Location = op.loc.location()
    note = f"in the generated kernel {kname}" + (f" at {err.location}" if err.location.line else "") \
        + (f": {text}" if text else "")
    notes = [note, *err.notes]
    if run:
        try:
            return type(err)(err.code, f"{op.name}: {err.message}", location=where,
                             expected=err.expected, actual=err.actual, notes=notes)
        except (TypeError, ValueError):       # a subclass with another constructor
            return PTOError(err.code, f"{op.name}: {err.message}", location=where,
                            expected=err.expected, actual=err.actual, notes=notes)
    return front_error("FRONT_LEGAL", f"{op.name} cannot be built for this profile: {err.code}: "
                       f"{err.message}", location=where, expected=err.expected, actual=err.actual,
                       notes=notes)
