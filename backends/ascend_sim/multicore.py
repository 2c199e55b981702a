"""A launch's blocks on the machine's cores, with the HBM bandwidth shared among them.

Core kind: a kernel whose work needs only vector units runs each block on an AIV core, only
cube units on an AIC core, both on a MIX group (one AIC with its two AIVs, 1:2). Blocks go in
index order to the core (group) that is free first, the lowest index on a tie, so more blocks
than cores run in waves.

Shared HBM, a fair share over overlapping transfer intervals: every transfer whose bytes
cross HBM asks for its uncontended rate (bytes over its cycles). Where the rates asked at one
moment add up to more than the HBM parameter, each active transfer gets the same fraction
HBM / demand of what it asks, so its time stretches by the mean of max(1, demand / HBM) over
its interval. A stretch delays what follows it on its core, so the recorded ops are replayed
with the stretched times and the placement and stretches recomputed until no block's
duration moves by more than ``TOLERANCE`` (at most ``ROUNDS`` replays).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ...isa.machines import Machine
from .engine import Engine

ROUNDS = 8
TOLERANCE = 1e-3


def core_kind(units: set[str]) -> str:
    """AIV, AIC or MIX from the core kinds a kernel's work needs ({"vector", "cube"})."""
    if "cube" in units:
        return "MIX" if "vector" in units else "AIC"
    return "AIV"


def slots(machine: Machine, kind: str) -> int:
    """How many blocks of this kind run at once: AIV and AIC cores, or MIX groups (1 AIC : 2 AIV)."""
    return {"AIV": machine.vector_cores, "AIC": machine.cube_cores,
            "MIX": min(machine.cube_cores, machine.vector_cores // 2)}[kind]


def core_name(kind: str, slot: int) -> str:
    return f"AIC{slot}+AIV{2 * slot}-{2 * slot + 1}" if kind == "MIX" else f"{kind}{slot}"


def place(durations: list[float], n_slots: int) -> list[tuple[int, float]]:
    """(slot, start cycle) per block: each in turn on the slot free first (waves)."""
    free = [(0.0, s) for s in range(n_slots)]
    out = []
    for d in durations:
        t, s = heapq.heappop(free)
        out.append((s, t))
        heapq.heappush(free, (t + d, s))
    return out


def stretches(transfers: list[tuple[float, float, int, int]], asked: dict[int, float], hbm: float) -> dict[int, float]:
    """Per transfer (by op key): the mean over its interval of max(1, demand / hbm), demand
    being the rates (bytes per cycle) the overlapping transfers ask for."""
    if not transfers:
        return {}
    s = np.array([t[0] for t in transfers])
    e = np.array([max(t[1], t[0] + 1e-9) for t in transfers])
    rate = np.array([asked[t[3]] for t in transfers])
    cuts = np.unique(np.concatenate([s, e]))
    delta = np.zeros(len(cuts) + 1)
    np.add.at(delta, np.searchsorted(cuts, s), rate)
    np.add.at(delta, np.searchsorted(cuts, e), -rate)
    demand = np.cumsum(delta)[: len(cuts) - 1]
    f = np.maximum(1.0, demand / hbm)
    area = np.concatenate([[0.0], np.cumsum(f * np.diff(cuts))])
    mean = (area[np.searchsorted(cuts, e)] - area[np.searchsorted(cuts, s)]) / (e - s)
    return {t[3]: float(m) for t, m in zip(transfers, mean) if m > 1.0 + 1e-9}


@dataclass
class Launch:
    """The outcome: each block's engine (started at its place) and core name."""

    engines: list[Engine]
    cores: list[str]
    kind: str


def schedule(machine: Machine, kind: str, first: list[Engine],
             replay: Callable[[int, float, str, dict[int, float]], Engine]) -> Launch:
    """Place the blocks (``first``: each run alone from cycle 0, its ops recorded) and share
    HBM among them; ``replay(block, start, core, stretch)`` re-times one block's ops."""
    n = slots(machine, kind)
    hbm = machine.hbm_gbps / machine.cycles_per_ns            # bytes per cycle
    asked = {k: nbytes / max(t1 - t0, 1e-9) for eng in first for t0, t1, nbytes, k in eng.transfers}
    engines = first
    durations = [eng.cycles() - eng.start for eng in engines]
    stretch: dict[int, float] = {}
    names: list[str] = []
    for rounds in range(1, ROUNDS + 1):
        where = place(durations, n)
        if rounds == 1 and all(t == 0.0 for _, t in where) and not _contended(engines, where, asked, hbm):
            return Launch(engines, [core_name(kind, s) for s, _ in where], kind)
        moved = [(t0 + start - eng.start, t1 + start - eng.start, b, k)
                 for eng, (_, start) in zip(engines, where) for t0, t1, b, k in eng.transfers]
        stretch = stretches(moved, asked, hbm)
        names = [core_name(kind, s) for s, _ in where]
        engines = [replay(b, start, names[b], stretch) for b, (_, start) in enumerate(where)]
        new = [eng.cycles() - eng.start for eng in engines]
        settled = all(abs(x - y) <= TOLERANCE * max(y, 1.0) for x, y in zip(new, durations))
        durations = new
        if settled:
            break
    return Launch(engines, names, kind)


def _contended(engines: list[Engine], where: list[tuple[int, float]], asked: dict[int, float], hbm: float) -> bool:
    moved = [(t0 + start, t1 + start, b, k) for eng, (_, start) in zip(engines, where) for t0, t1, b, k in eng.transfers]
    return bool(stretches(moved, asked, hbm))
