"""PTO-AS assembler: text -> ``Module`` (``parse``), checks (``verify``), canonical text
(``print_module`` / ``Module.to_text``), bytecode (``dump`` / ``load_bytes``)."""
from . import ir
from .ir import (Const, For, If, Kernel, Lit, MemRef, Module, PipeLit, ScalarOp, TileDecl, TileOp, Value,
                 Yield)
from .bytecode import dump, load_bytes
from .parser import parse
from .printer import print_module
from .verifier import diagnose, verify

ir.WRITERS.update(text=print_module, bytes=dump)

__all__ = ["Const", "For", "If", "Kernel", "Lit", "MemRef", "Module", "PipeLit", "ScalarOp", "TileDecl",
           "TileOp", "Value", "Yield", "diagnose", "dump", "load_bytes", "parse", "print_module", "verify"]
