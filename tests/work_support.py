"""Deterministic work measures for tests: the function calls (Python and built-in) a piece of
code makes, counted with ``sys.setprofile``. Tests that guard against hangs or super-linear
paths count work instead of timing it, so a loaded machine cannot fail them."""
from __future__ import annotations

import sys
from contextlib import contextmanager
from types import FrameType
from typing import Any, Callable, Iterator


class WorkBudgetExceeded(AssertionError):
    """The code under test made more calls than its budget: a hang or a runaway path."""


def calls(fn: Callable[..., Any], *args: Any) -> int:
    """The Python and built-in function calls ``fn(*args)`` makes."""
    count = 0

    def tally(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(tally)
    try:
        fn(*args)
    finally:
        sys.setprofile(None)
    return count


@contextmanager
def call_budget(limit: int, what: str = "the block") -> Iterator[None]:
    """Fail (WorkBudgetExceeded) as soon as the block has made more than ``limit`` calls."""
    count = 0

    def tally(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1
            if count > limit:
                sys.setprofile(None)
                raise WorkBudgetExceeded(f"{what} made more than {limit} calls")

    sys.setprofile(tally)
    try:
        yield
    finally:
        sys.setprofile(None)
