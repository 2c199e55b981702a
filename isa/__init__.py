"""The PTO instruction set as one machine-readable, executable specification.

Importing this package registers every instruction declaration; ``get`` looks one up.
This package imports nothing else of openpto.
"""
from . import dtypes, types, attrs  # noqa: F401
from .diagnostics import (BytecodeError, LegalityError, Location, OrderError, ParseError, PTOError,
                          PTOErrorGroup, RuntimeFault, SpecError, StructError, FrontendError)
from .registry import all_instructions, by_family, get, lookup
from .spec import Attr, Domain, Family, Instruction, Kind, Numerics, Operand, Role
from .values import GlobalRef, Tile
from . import families  # noqa: F401,E402  (registers the declarations)

SPEC_VERSION = "1.0"

__all__ = [
    "Attr", "BytecodeError", "Domain", "Family", "FrontendError", "GlobalRef", "Instruction", "Kind", "LegalityError",
    "Location", "Numerics", "Operand", "OrderError", "PTOError", "PTOErrorGroup", "ParseError", "Role",
    "RuntimeFault", "SPEC_VERSION", "SpecError", "StructError", "Tile", "all_instructions", "by_family",
    "get", "lookup",
]
