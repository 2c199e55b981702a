"""Open a program file by content, not by name: bytecode starts with the magic bytes,
anything else is PTO-AS text. File-system and encoding problems become diagnostics too."""
from __future__ import annotations

import os

from ..isa.diagnostics import Location, ParseError, PTOError
from .ir import Module

MAGIC = b"PTOBC\0"


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise PTOError("PTO_FILE", f"cannot read {os.fspath(path)}: {e.strerror or e}",
                       location=Location(file=os.fspath(path))) from None


def parse_bytes(data: bytes, filename: str | None = None) -> Module:
    """A module from a file's bytes: bytecode when it carries the magic, UTF-8 text otherwise."""
    from .bytecode import load_bytes
    from .parser import parse

    if data.startswith(MAGIC):
        return load_bytes(data, filename)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise ParseError("PARSE_ENCODING", "the file is neither PTO bytecode nor UTF-8 text",
                         location=Location(file=filename, line=line),
                         expected="UTF-8", actual=f"byte 0x{data[e.start]:02x} at offset {e.start}") from None
    return parse(text, filename=filename)


def load(path: str | os.PathLike[str]) -> Module:
    """Read a ``.pto`` (text) or ``.ptobc`` (bytecode) file into a Module."""
    return parse_bytes(read_bytes(path), os.fspath(path))
