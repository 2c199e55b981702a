"""Diagnostics shared by every layer: one exception family with stable codes.

Lives in ``isa/`` because the ISA imports nothing of the project while every other
layer raises these.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Location:
    """Where a diagnostic points: a source position or an instruction in a kernel."""

    file: str | None = None
    line: int | None = None
    col: int | None = None
    kernel: str | None = None
    index: int | None = None
    source_line: str | None = None

    def __str__(self) -> str:
        if self.line is not None:
            parts = [self.file or "<input>", str(self.line)]
            if self.col is not None:
                parts.append(str(self.col))
            return ":".join(parts)
        if self.index is not None:
            return f"{self.kernel or '<kernel>'}#{self.index}"
        if self.kernel is not None:
            return f"@{self.kernel}"
        return self.file or "<unknown>"

    def snippet(self) -> str:
        if self.source_line is None or self.col is None:
            return ""
        return f"  {self.source_line}\n  {' ' * max(self.col - 1, 0)}^"


class PTOError(Exception):
    """Base of every user-facing error; ``code`` is stable across patch releases."""

    prefix = "PTO"

    def __init__(self, code: str, message: str, *, location: Location | None = None,
                 expected: object = None, actual: object = None,
                 notes: list[str] | None = None) -> None:
        if not code.startswith(self.prefix + "_") and self.prefix != "PTO":
            raise ValueError(f"code {code!r} does not belong to {type(self).__name__}")
        self.code = code
        self.message = message
        self.location = location or Location()
        self.expected = expected
        self.actual = actual
        self.notes = list(notes or [])
        super().__init__(self.render())

    def render(self) -> str:
        where = str(self.location)
        head = f"{self.code}: {self.message}" if where == "<unknown>" else f"{where}: {self.code}: {self.message}"
        lines = [head]
        if self.expected is not None:
            lines.append(f"  expected: {self.expected}")
        if self.actual is not None:
            lines.append(f"  actual:   {self.actual}")
        lines.extend(f"  note: {n}" for n in self.notes)
        snip = self.location.snippet()
        if snip:
            lines.append(snip)
        return "\n".join(lines)


class ParseError(PTOError):
    prefix = "PARSE"


class StructError(PTOError):
    prefix = "STRUCT"


class LegalityError(PTOError):
    prefix = "LEGAL"


class OrderError(PTOError):
    prefix = "ORDER"


class BytecodeError(PTOError):
    prefix = "BCODE"


class RuntimeFault(PTOError):
    prefix = "RUNTIME"


class FrontendError(PTOError):
    """Tensor code the frontend cannot compile; the location is the Python source line."""

    prefix = "FRONT"


class SpecError(PTOError):
    """A semantics function was called with operands its declaration forbids."""

    prefix = "SPEC"


class PTOErrorGroup(PTOError):
    """Several diagnostics found in one pass; ``errors`` holds each of them."""

    prefix = "PTO"

    def __init__(self, errors: list[PTOError]) -> None:
        self.errors = list(errors)
        first = self.errors[0]
        super().__init__(first.code, f"{len(self.errors)} error(s)", location=first.location)

    def render(self) -> str:
        return "\n".join(e.render() for e in self.errors)
