"""PTO-AS assembler: text -> ``Module`` (``parse``), checks (``verify``), canonical text
(``print_module`` / ``Module.to_text``)."""
from .ir import (Const, For, If, Kernel, Lit, MemRef, Module, PipeLit, ScalarOp, TileDecl, TileOp, Value,
                 Yield)
from .parser import parse
from .printer import print_module
from .verifier import diagnose, verify

__all__ = ["Const", "For", "If", "Kernel", "Lit", "MemRef", "Module", "PipeLit", "ScalarOp", "TileDecl",
           "TileOp", "Value", "Yield", "diagnose", "parse", "print_module", "verify"]
