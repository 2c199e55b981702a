"""Static checks of manual synchronisation (``ORDER_*``): flags must balance.

Flags are counting semaphores keyed by (src pipe, dst pipe, event id). Functional backends
run a kernel in program order (docs/architecture.md, "Synchronisation is explicit"), so in that order every ``wait_flag``
must find its flag set, a loop body must leave every count as it found it (or iteration
two differs from iteration one), both arms of an ``if`` must leave the same counts, and a
kernel must end with no flag still set (the next kernel would inherit it). Flags whose event
id is a run-time value are not tracked.
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable

from ..isa.diagnostics import Location, OrderError, PTOError
from .ir import For, If, Kernel, Lit, PipeLit, Stmt, TileOp

Key = tuple[str, str, int]
SIGN = {"SET_FLAG": 1, "WAIT_FLAG": -1}


def _key(s: TileOp) -> Key | None:
    src, dst, ev = (s.args.get(n) for n in ("src_pipe", "dst_pipe", "event_id"))
    if isinstance(src, PipeLit) and isinstance(dst, PipeLit) and isinstance(ev, Lit) \
            and isinstance(ev.value, int) and not isinstance(ev.value, bool):
        return (src.pipe.value, dst.pipe.value, ev.value)
    return None


def _spell(k: Key) -> str:
    return f"({k[0]} -> {k[1]}, id {k[2]})"


class _Walk:
    def __init__(self, kernel: Kernel) -> None:
        self.k = kernel
        self.errors: list[PTOError] = []
        self.last_set: dict[Key, Stmt] = {}

    def where(self, s: Stmt | None) -> Location:
        loc = getattr(s, "loc", None) if s is not None else self.k.loc
        return loc or Location(kernel=self.k.name)

    def body(self, stmts: Iterable[Stmt], counts: Counter) -> Counter:
        for s in stmts:
            if isinstance(s, TileOp) and s.instr.mnemonic in SIGN:
                key = _key(s)
                if key is None:
                    continue
                counts[key] += SIGN[s.instr.mnemonic]
                if SIGN[s.instr.mnemonic] > 0:
                    self.last_set[key] = s
                if counts[key] < 0:
                    self.errors.append(OrderError(
                        "ORDER_WAIT_UNSET", f"wait_flag {_spell(key)} has no set_flag before it in program "
                        "order: run in order, it waits forever", location=self.where(s),
                        expected="a set_flag with the same pipes and id earlier", actual="none pending"))
                    counts[key] = 0
            elif isinstance(s, For):
                before = Counter(counts)
                after = self.body(s.body, Counter(counts))
                changed = sorted(k for k in set(before) | set(after) if before[k] != after[k])
                if changed:
                    self.errors.append(OrderError(
                        "ORDER_LOOP_UNBALANCED", "a loop body changes flag counts, so its iterations "
                        "synchronise differently: " + ", ".join(f"{_spell(k)} {after[k] - before[k]:+d}"
                                                                 for k in changed),
                        location=self.where(s), expected="as many set_flag as wait_flag per flag in the body",
                        actual=f"{len(changed)} flag(s) unbalanced"))
                counts = after
            elif isinstance(s, If):
                then = self.body(s.then_body, Counter(counts))
                other = self.body(s.else_body, Counter(counts))
                differ = sorted(k for k in set(then) | set(other) if then[k] != other[k])
                if differ:
                    self.errors.append(OrderError(
                        "ORDER_BRANCH_UNBALANCED", "the branches of an if leave different flag counts: "
                        + ", ".join(f"{_spell(k)} then {then[k]} / else {other[k]}" for k in differ),
                        location=self.where(s), expected="equal counts after both branches",
                        actual=f"{len(differ)} flag(s) differ"))
                counts = Counter({k: max(then[k], other[k]) for k in set(then) | set(other)})
        return counts

    def run(self) -> list[PTOError]:
        end = self.body(self.k.body, Counter())
        left = sorted(k for k, n in end.items() if n > 0)
        if left:
            self.errors.append(OrderError(
                "ORDER_FLAG_PENDING", f"kernel @{self.k.name} ends with flags still set: "
                + ", ".join(f"{_spell(k)} x{end[k]}" for k in left), location=self.where(self.last_set.get(left[0])),
                expected="every set_flag consumed by a wait_flag", actual=f"{sum(end[k] for k in left)} pending"))
        return self.errors


def check_order(kernel: Kernel) -> list[PTOError]:
    """Every ORDER_* diagnostic of ``kernel``'s set_flag / wait_flag use."""
    return _Walk(kernel).run()
