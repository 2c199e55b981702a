"""One module per instruction family; importing this package registers every declaration."""
from . import (argreduce, comm, complex, convert, elementwise, fused, matrix, memory, movement,  # noqa: F401
               quant, rearrange, reduce_expand, sync, system, tile_scalar)
