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
from itertools import accumulate
from typing import Any, Protocol

import numpy as np

from ...isa.machines import Machine

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


def _mean_stretch(s: np.ndarray, e: np.ndarray, rate: np.ndarray, hbm: float) -> np.ndarray:
    """Per transfer [s, e) asking ``rate`` bytes per cycle: the mean over its interval of
    max(1, demand / hbm), demand being the rates of the transfers overlapping it."""
    e = np.maximum(e, s + 1e-9)
    cuts = np.unique(np.concatenate([s, e]))
    delta = np.zeros(len(cuts) + 1)
    np.add.at(delta, np.searchsorted(cuts, s), rate)
    np.add.at(delta, np.searchsorted(cuts, e), -rate)
    demand = np.cumsum(delta)[: len(cuts) - 1]
    f = np.maximum(1.0, demand / hbm)
    area = np.concatenate([[0.0], np.cumsum(f * np.diff(cuts))])
    return (area[np.searchsorted(cuts, e)] - area[np.searchsorted(cuts, s)]) / (e - s)


def stretches(transfers: list[tuple[float, float, int, int]], asked: dict[int, float], hbm: float) -> dict[int, float]:
    """Per transfer (by op key): the mean over its interval of max(1, demand / hbm), demand
    being the rates (bytes per cycle) the overlapping transfers ask for; only those above 1."""
    if not transfers:
        return {}
    mean = _mean_stretch(np.array([t[0] for t in transfers]), np.array([t[1] for t in transfers]),
                         np.array([asked[t[3]] for t in transfers]), hbm)
    return {t[3]: float(m) for t, m in zip(transfers, mean) if m > 1.0 + 1e-9}


def stretch_factors(s: np.ndarray, e: np.ndarray, rate: np.ndarray, hbm: float) -> np.ndarray:
    """``stretches`` over arrays, in their order: each transfer's factor, 1.0 where it is not
    stretched."""
    if not len(s):
        return np.ones(0)
    mean = _mean_stretch(s, e, rate, hbm)
    return np.where(mean > 1.0 + 1e-9, mean, 1.0)


@dataclass
class Launch:
    """The outcome: each block's engine (started at its place) and core name."""

    engines: list[Any]
    cores: list[str]
    kind: str


class Retimer(Protocol):
    """What ``schedule`` re-times the blocks with (``replay.Replayer``, ``replay.EachBlock``)."""

    def round(self, starts: list[float], cores: list[str], factors: np.ndarray,
              offsets: list[int]) -> tuple[list[Any], np.ndarray, np.ndarray]:
        """Every block ``b`` re-timed from ``starts[b]`` on ``cores[b]``, its transfers (in the
        order its engine ran them) stretched by ``factors[offsets[b]:offsets[b + 1]]``: the
        timed blocks and all their transfers' start and end cycles, block after block."""
        ...


def schedule(machine: Machine, kind: str, first: list[Any], replay: Retimer) -> Launch:
    """Place the blocks (``first``: each timed alone from cycle 0, its ops recorded) and share
    HBM among them, re-timing the blocks with ``replay`` until their durations settle. The
    transfers are kept as arrays, block after block (each block's in the order its engine ran
    them), so a round costs a few array operations besides the distinct replays."""
    n = slots(machine, kind)
    hbm = machine.hbm_gbps / machine.cycles_per_ns            # bytes per cycle
    counts = [len(eng.transfers) for eng in first]
    offsets = list(accumulate(counts, initial=0))
    flat = [t for eng in first for t in eng.transfers]
    t0 = np.array([t[0] for t in flat], dtype=float)
    t1 = np.array([t[1] for t in flat], dtype=float)
    rate = np.array([t[2] for t in flat], dtype=float) / np.maximum(t1 - t0, 1e-9)   # each asks its lone rate
    engines = first
    durations = [eng.cycles() - eng.start for eng in engines]
    names: list[str] = []
    for rounds in range(1, ROUNDS + 1):
        where = place(durations, n)
        starts = [t for _, t in where]
        if rounds == 1 and all(t == 0.0 for t in starts) and not (stretch_factors(t0, t1, rate, hbm) > 1.0).any():
            return Launch(engines, [core_name(kind, s) for s, _ in where], kind)
        new_start = np.repeat(np.array(starts, dtype=float), counts)
        old_start = np.repeat(np.array([eng.start for eng in engines], dtype=float), counts)
        factors = stretch_factors(t0 + new_start - old_start, t1 + new_start - old_start, rate, hbm)
        names = [core_name(kind, s) for s, _ in where]
        engines, t0, t1 = replay.round(starts, names, factors, offsets)
        new = [eng.cycles() - eng.start for eng in engines]
        settled = all(abs(x - y) <= TOLERANCE * max(y, 1.0) for x, y in zip(new, durations))
        durations = new
        if settled:
            break
    return Launch(engines, names, kind)
