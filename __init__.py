"""openpto: a portable implementation of the PTO (Parallel Tile Operation) virtual ISA."""
from .isa import PTOError  # noqa: F401

__version__ = "0.1.0"
