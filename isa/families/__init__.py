"""One module per instruction family; importing this package registers every declaration."""
from . import (complex, convert, elementwise, matrix, memory, movement, reduce_expand,  # noqa: F401
               sync, tile_scalar)
