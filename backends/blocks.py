"""Running the blocks of a ``block_num`` launch lazily, shared by every backend.

A launch may name millions of blocks; submitting them all up front would hold a future (and a
result) per block before the first one finishes. ``run_blocks`` keeps at most ``2 * workers``
blocks in flight and hands results back in block order, so memory stays bounded by the number
of workers whatever ``block_num`` is.
"""
from __future__ import annotations

import collections
import operator
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Iterator, TypeVar

from ..isa.diagnostics import PTOError
from .arrays import describe

R = TypeVar("R")

#: The most blocks one launch may have: block ids stay below 2^31, so a kernel that casts
#: ``pto.get_block_idx`` to i32 never wraps (CUDA's grid limit, for the same reason).
MAX_BLOCK_NUM = (1 << 31) - 1


def check_block_num(block_num: Any) -> int:
    """``block_num`` as an int in [1, MAX_BLOCK_NUM], else PTO_BLOCK_NUM."""
    value: int | None = None
    if not isinstance(block_num, bool):
        try:
            value = operator.index(block_num)     # int and numpy integers; not floats or bools
        except Exception:                        # noqa: BLE001 - a foreign __index__ may raise anything
            value = None
    if value is None or not 1 <= value <= MAX_BLOCK_NUM:
        shown = describe(block_num) if value is None else str(value)
        raise PTOError("PTO_BLOCK_NUM", "block_num must be an integer from 1 to MAX_BLOCK_NUM",
                       expected=f"an int in [1, {MAX_BLOCK_NUM}]", actual=shown[:80])
    return value


def run_blocks(block: Callable[[int], R], block_num: int, workers: int,
               failed: Callable[[R], bool] = lambda r: False) -> Iterator[R]:
    """``block(b)`` for b in ``range(block_num)``, yielded in block order; stops after the first
    result ``failed`` accepts (or the first exception, re-raised). With ``workers > 1`` blocks
    run on a thread pool, at most ``2 * workers`` submitted ahead of the one being yielded."""
    if workers <= 1:
        for b in range(block_num):
            r = block(b)
            yield r
            if failed(r):
                return
        return
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="pto-block") as pool:
        pending: collections.deque[Future[R]] = collections.deque()
        submitted = 0
        try:
            while submitted < block_num or pending:
                while submitted < block_num and len(pending) < 2 * workers:
                    pending.append(pool.submit(block, submitted))
                    submitted += 1
                r = pending.popleft().result()
                yield r
                if failed(r):
                    return
        finally:
            for f in pending:
                f.cancel()


def run_world_blocks(block: Callable[[int], R], block_num: int, world: Any) -> list[R]:
    """The blocks of one rank whose other ranks run elsewhere (``run(..., world=w)``, the MPI
    execution; docs/comm.md "MPI execution"). When ``world.concurrent_blocks`` every block runs on
    a thread of its own, so a block may wait on a signal another block of its rank notifies; else
    in block order. A failing block calls ``world.abort()`` at once, so no rank (nor block) waits
    for it for ever; the error raised is the first block's that is not RUNTIME_COMM_ABORTED (the
    consequence of a failure, not its cause), else the first block's."""
    if not getattr(world, "concurrent_blocks", False) or block_num == 1:
        out: list[R] = []
        for b in range(block_num):
            try:
                out.append(block(b))
            except BaseException:
                world.abort()
                raise
        return out
    results: list[Any] = [None] * block_num
    errors: list[BaseException | None] = [None] * block_num

    def one(b: int) -> None:
        try:
            results[b] = block(b)
        except BaseException as e:     # noqa: BLE001 - reported below, after every block ended
            errors[b] = e
            world.abort()

    threads = [threading.Thread(target=one, args=(b,), name=f"pto-world-block{b}", daemon=True)
               for b in range(block_num)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    failed = [e for e in errors if e is not None]
    if failed:
        cause = [e for e in failed if getattr(e, "code", None) != "RUNTIME_COMM_ABORTED"]
        raise (cause or failed)[0]
    return results
