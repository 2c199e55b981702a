"""Open a program file by content, not by name: bytecode starts with the magic bytes,
anything else is PTO-AS text. File-system and encoding problems become diagnostics too."""
from __future__ import annotations

import codecs
import os

from ..isa.diagnostics import Location, ParseError, PTOError
from .bytecode import MAGIC, load_bytes
from .ir import Module
from .parser import parse


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except (OSError, ValueError) as e:   # ValueError: a NUL byte in the path
        raise PTOError("PTO_FILE", f"cannot read {os.fspath(path)}: {getattr(e, 'strerror', None) or e}",
                       location=Location(file=os.fspath(path))) from None


def is_bytecode(data: bytes) -> bool:
    return data.startswith(MAGIC)


def decode_text(data: bytes, filename: str | None = None) -> str:
    """PTO-AS source from bytes: UTF-8, a leading byte-order mark dropped (editors add one)."""
    body = data[len(codecs.BOM_UTF8):] if data.startswith(codecs.BOM_UTF8) else data
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as e:
        start = body.rfind(b"\n", 0, e.start) + 1
        end = body.find(b"\n", e.start)
        line = body[start:end if end >= 0 else len(body)]
        raise ParseError("PARSE_ENCODING", "the file is neither PTO bytecode nor UTF-8 text",
                         location=Location(file=filename, line=body.count(b"\n", 0, e.start) + 1,
                                           col=len(body[start:e.start].decode("utf-8")) + 1,
                                           source_line=line.decode("utf-8", "replace").rstrip("\r")),
                         expected="UTF-8",
                         actual=f"byte 0x{body[e.start]:02x} at offset {e.start + len(data) - len(body)}") from None


def parse_bytes(data: bytes, filename: str | None = None) -> Module:
    """A module from a file's bytes: bytecode when it carries the magic, UTF-8 text otherwise."""
    if is_bytecode(data):
        return load_bytes(data, filename)
    return parse(decode_text(data, filename), filename=filename)


def load(path: str | os.PathLike[str]) -> Module:
    """Read a ``.pto`` (text) or ``.ptobc`` (bytecode) file into a Module."""
    return parse_bytes(read_bytes(path), os.fspath(path))
