"""The cyclic garbage collector paused while the assembler builds or checks a module."""
from __future__ import annotations

import contextlib
import gc
from typing import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """A parse allocates one long-lived object after another (a few per statement) and no
    reference cycles. CPython's cyclic collector would scan the growing heap again and
    again (a full pass each time it grows by a quarter: seconds for a 100,000-statement
    module), then scan the new objects twice more on their way to the oldest generation.
    So the collector rests while the parser runs, and what the parse made is moved to the
    oldest generation at once (``gc.freeze`` + ``gc.unfreeze``, unless the program keeps
    objects frozen itself): scanned by the next full collection, like all old objects. The
    verifier's passes over a module make short-lived objects only, which the young
    generations' collections would scan for nothing, so it pauses the collector too."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            if not gc.get_freeze_count():
                gc.freeze()
                gc.unfreeze()
            gc.enable()
