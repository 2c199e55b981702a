"""Machine models of the Ascend AI core, as data: what the ``ascend_sim`` backend times programs with.

A profile (``profiles.py``) says what a target allows and how big its buffers are; a ``Machine``
adds how fast it is: clock, core counts, cycles per vector repeat, cube MACs per cycle, and the
latency and bandwidth of every data path. Capacities, flag ids, clock and core counts are read
from the profile (never copied here); the numbers below are the ones the profile does not hold.

Sources (every number names one of these):

* [msKPP] MindStudio Kernel Performance Prediction (Huawei, open source: ``Ascend/mskpp``),
  its measured 910B1 tables: ``resource910b.cpp`` (vector cycles per repeat count, mmad
  OPs/cycle against m, k, n, transfer bandwidth against size) and ``TheoreticalBandwidth``
  (bytes/cycle per path where nothing was measured).
* [HC19] Huawei's Ascend 910 presentation at Hot Chips 31 (2019): the Da Vinci cube does
  16x16x16 = 4096 fp16 MACs and 8192 int8 MACs per cycle; the vector unit is 2048 bits wide.
* [ACAPI] Ascend C API reference (hiascend.com): a vector repeat is 8 blocks x 32 bytes.
* [PTO] hw-native-sys/pto-isa: ``include/pto/common/buffer_limits.hpp`` (capacities, in
  ``profiles.py``), the dhrystone report's clocks (in ``profiles.py``) and the A3 GEMM
  report (24 cores, 308 TFLOPS on a 6144^3 fp16 GEMM).
* [HBM] published HBM figures for 910B/910C (0.4-1.6 TB/s across secondary sources) and
  Huawei Connect 2025 for 950 (HiBL 1.0: 1.6 TB/s): a parameter, not a measurement.

Where no source gives a number it is marked ``assumption`` and docs/ascend_sim.md lists it.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Mapping

from . import profiles as P
from .diagnostics import SpecError
from .spec import Family, Instruction
from .types import Location, Pipe

#: the pipes an AI core runs concurrently (ALL is a barrier operand, not a pipe)
PIPES: tuple[Pipe, ...] = (Pipe.S, Pipe.V, Pipe.M, Pipe.MTE1, Pipe.MTE2, Pipe.MTE3, Pipe.FIX)

#: what limits a kernel, by the pipe with the most busy cycles (msprof's "bound" column names)
BOUND_NAMES: dict[Pipe, str] = {Pipe.S: "Scalar", Pipe.V: "Vector", Pipe.M: "Cube", Pipe.MTE1: "MTE1",
                                Pipe.MTE2: "MTE2", Pipe.MTE3: "MTE3", Pipe.FIX: "FIX"}


@dataclass(frozen=True)
class VectorCost:
    """cycles = startup + repeats x per_repeat, a repeat being 256 bytes of the widest operand."""

    startup: float
    per_repeat: float


@dataclass(frozen=True)
class TransferPath:
    """One data path of the MTE / FIX engines. ``curve``: measured single-core effective
    bandwidth (bytes, GB/s) points, linearly interpolated and flat beyond the ends; the
    measurement already contains the path's latency, so ``latency`` is 0 there. Without a
    curve: ``latency`` cycles plus bytes at ``bytes_per_cycle``."""

    name: str
    latency: float = 0.0
    bytes_per_cycle: float | None = None
    curve: tuple[tuple[int, float], ...] = ()
    hbm: bool = False                      # the bytes cross HBM (shared by all cores)

    def gbps(self, nbytes: int) -> float | None:
        """The measured effective bandwidth at this size (GB/s = bytes/ns), or None."""
        c = self.curve
        if not c:
            return None
        if nbytes <= c[0][0]:
            return c[0][1]
        if nbytes >= c[-1][0]:
            return c[-1][1]
        i = bisect.bisect_right([x for x, _ in c], nbytes)
        (x0, y0), (x1, y1) = c[i - 1], c[i]
        return y0 + (y1 - y0) * (nbytes - x0) / (x1 - x0)


#: Vector cost per op class [msKPP 910B1 tables, total cycles against repeat count]. VADD f32:
#: 3.09 cycles at 1 repeat, 26.0 at 13, a straight line: (26.0 - 3.09) / 12 = 1.91 per repeat,
#: 3.09 - 1.91 = 1.18 startup; f16 plateaus at the same 128 B/cycle, so per repeat (256 B) the
#: cost is the same for every dtype. VEXP f32 has the same shape [msKPP]. VCADD f32 (a
#: reduction) plateaus at ~85 B/cycle: 256 / 85 = 3.0 cycles per repeat [msKPP].
VECTOR_COSTS: dict[str, VectorCost] = {
    "vec_binary": VectorCost(1.18, 1.91),          # [msKPP] VADD
    # [msKPP] VEXP: the same line as VADD; the class's other ops (log, sqrt, div, pow ...) at exp's
    # cost is an assumption (no public per-op measurement)
    "vec_transcendental": VectorCost(1.18, 1.91),
    # [msKPP] VCADD's 3.0 per repeat; its startup taken from VADD is an assumption
    "vec_reduce": VectorCost(1.18, 3.0),
    "vec_move": VectorCost(1.18, 1.91),            # assumption: a copy costs what VADD costs
}

#: Cube MACs per cycle by the left operand's element size in bytes [HC19]: fp16/bf16 16x16x16 =
#: 4096, int8 8192 (twice); f32 a quarter of fp16 (assumption: the f32 path is a quarter-rate
#: HF32/TF32 mode on these cores; no public measurement), 4-bit types twice int8 (assumption).
CUBE_MACS_PER_CYCLE: dict[float, int] = {0.5: 16384, 1: 8192, 2: 4096, 4: 1024}

#: Fixed cycles per TMATMUL beside MACs / rate, fitted to [msKPP]'s measured 910B1 mmad fp16
#: OPs/cycle for m=32, k=16: n=16 -> 3370, 64 -> 6686, 128 -> 7258, 208 -> 7591, 1024 -> 8057.
#: cycles = 2mkn / (OPs/cycle); minus mkn / 4096 leaves 2.86, 1.80, 2.06, 2.06, 2.10: about 2.1.
CUBE_ISSUE_CYCLES = 2.1

_GB = 1.0   # GB/s are bytes per ns: curves are written in GB/s

#: Data paths [msKPP]: measured 910B1 single-core curves where they exist (GB/s against bytes),
#: else the theoretical bytes/cycle with an assumed 64-cycle latency (assumption: the order of
#: the small-transfer latency in the measured curves, 1 KB at 7-20 GB/s = 50-150 ns).
_ASSUMED_LATENCY = 64.0
TRANSFER_PATHS: dict[str, TransferPath] = {
    "GM->UB": TransferPath("GM->UB", curve=((1024, 7 * _GB), (16384, 68 * _GB), (65536, 78 * _GB)), hbm=True),
    "GM->L1": TransferPath("GM->L1", curve=((1024, 10 * _GB), (262144, 270 * _GB)), hbm=True),
    "UB->GM": TransferPath("UB->GM", curve=((1024, 11 * _GB), (13312, 80 * _GB)), hbm=True),
    "L1->L0A": TransferPath("L1->L0A", curve=((1024, 287 * _GB), (13312, 424 * _GB))),
    "L0C->GM": TransferPath("L0C->GM", curve=((1024, 21 * _GB), (11264, 200 * _GB)), hbm=True),
    "L1->L0B": TransferPath("L1->L0B", _ASSUMED_LATENCY, 128),      # [msKPP] theoretical 128 B/cycle
    "L1->GM": TransferPath("L1->GM", _ASSUMED_LATENCY, 128, hbm=True),   # [msKPP] theoretical
    "L0C->L1": TransferPath("L0C->L1", _ASSUMED_LATENCY, 256),     # [msKPP] theoretical
    "L1->BT": TransferPath("L1->BT", _ASSUMED_LATENCY, 64),        # [msKPP] theoretical (bias table)
    "L1->FB": TransferPath("L1->FB", _ASSUMED_LATENCY, 64),        # [msKPP] theoretical (fixpipe buffer)
    "UB->UB": TransferPath("UB->UB", _ASSUMED_LATENCY, 128),       # [msKPP] theoretical
    "L0C->UB": TransferPath("L0C->UB", _ASSUMED_LATENCY, 128),     # A5 only [msKPP 910_95 paths]; rate assumed
    "UB->L1": TransferPath("UB->L1", _ASSUMED_LATENCY, 128),       # A5 only [msKPP 910_95 paths]; rate assumed
}

#: The path a transfer takes, by (its pipe, source side, destination side); "gm" is global
#: memory. A pair missing here falls back to the pipe's default path below.
_LOC = {Location.VEC: "UB", Location.MAT: "L1", Location.LEFT: "L0A", Location.RIGHT: "L0B",
        Location.ACC: "L0C", Location.BIAS: "BT", Location.SCALING: "FB", Location.SCALE_LEFT: "L0A",
        Location.SCALE_RIGHT: "L0B"}
PATH_BY_ENDS: dict[tuple[str, str], str] = {
    ("GM", "UB"): "GM->UB", ("GM", "L1"): "GM->L1", ("UB", "GM"): "UB->GM", ("L1", "GM"): "L1->GM",
    ("L0C", "GM"): "L0C->GM", ("L1", "L0A"): "L1->L0A", ("L1", "L0B"): "L1->L0B", ("L0C", "L1"): "L0C->L1",
    ("L1", "BT"): "L1->BT", ("L1", "FB"): "L1->FB", ("UB", "UB"): "UB->UB", ("L0C", "UB"): "L0C->UB",
    ("UB", "L1"): "UB->L1",
}
PIPE_DEFAULT_PATH: dict[Pipe, str] = {Pipe.MTE2: "GM->UB", Pipe.MTE1: "L1->L0A", Pipe.MTE3: "UB->GM",
                                      Pipe.FIX: "L0C->GM"}


def buffer_name(loc: Location | None) -> str:
    """The hardware name of a tile location (UB, L1, L0A ...); None is global memory."""
    return "GM" if loc is None else _LOC[loc]


#: Op classes by mnemonic where the pipe alone does not say it; the sync forms get their hardware
#: meaning from these classes in the simulator.
MNEMONIC_CLASS: dict[str, str] = {
    **{m: "vec_transcendental" for m in ("TEXP", "TLOG", "TSQRT", "TRSQRT", "TRECIP", "TDIV", "TDIVS",
                                         "TROWEXPANDEXPDIF", "TPOW", "TPOWS")},
    **{m: "vec_reduce" for m in ("TROWSUM", "TROWMAX", "TROWMIN", "TROWPROD", "TCOLSUM", "TCOLMAX",
                                 "TCOLMIN", "TCOLPROD", "TROWARGMAX", "TROWARGMIN", "TCOLARGMAX",
                                 "TCOLARGMIN")},
    "SET_FLAG": "flag_set", "WAIT_FLAG": "flag_wait", "PIPE_BARRIER": "barrier", "TSYNC": "tsync",
    "TASSIGN": "assign", "SYNCALL": "barrier",
}
#: then by family (only for instructions on the vector pipe) ...
FAMILY_CLASS: dict[Family, str] = {Family.MOVEMENT: "vec_move"}
#: ... then by pipe
PIPE_CLASS: dict[Pipe, str] = {Pipe.V: "vec_binary", Pipe.M: "cube", Pipe.MTE1: "transfer",
                               Pipe.MTE2: "transfer", Pipe.MTE3: "transfer", Pipe.FIX: "transfer",
                               Pipe.S: "scalar", Pipe.ALL: "scalar"}


def op_class(instr: Instruction, pipe: Pipe) -> str:
    """The cost class of ``instr`` issued on ``pipe`` (``Instruction.pipe_for``): by mnemonic,
    then family (vector pipe only), then pipe."""
    got = MNEMONIC_CLASS.get(instr.mnemonic)
    if got is None and pipe is Pipe.V:
        got = FAMILY_CLASS.get(instr.family)
    return got or PIPE_CLASS[pipe]


@dataclass(frozen=True)
class Machine:
    """One target's AI-core timing model. ``profile`` holds capacities, alignment, flag ids,
    and (where published) clock and core counts; the rest is here."""

    profile: P.Profile
    clock_mhz: int
    cube_cores: int
    vector_cores: int
    hbm_gbps: float                                   # one HBM, shared by every core
    scalar_issue_cycles: float = 1.0                  # assumption: one instruction issued per cycle
    vector: Mapping[str, VectorCost] = field(default_factory=lambda: VECTOR_COSTS)
    cube_macs: Mapping[float, int] = field(default_factory=lambda: CUBE_MACS_PER_CYCLE)
    cube_issue_cycles: float = CUBE_ISSUE_CYCLES
    paths: Mapping[str, TransferPath] = field(default_factory=lambda: TRANSFER_PATHS)
    notes: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.profile.name

    @property
    def capacity(self) -> Mapping[Location, int]:
        return self.profile.capacity

    @property
    def cycles_per_ns(self) -> float:
        return self.clock_mhz / 1000.0

    def vector_cycles(self, cls: str, nbytes: int) -> float:
        """startup + repeats x per-repeat, a repeat covering ``vector_repeat_bytes`` (256 B [ACAPI])."""
        cost = self.vector[cls]
        rep = self.profile.vector_repeat_bytes
        return cost.startup + max(1, -(-nbytes // rep)) * cost.per_repeat

    def cube_cycles(self, m: int, k: int, n: int, itemsize: float) -> float:
        rate = self.cube_macs.get(itemsize, self.cube_macs[2])
        return self.cube_issue_cycles + m * k * n / rate

    def transfer_cycles(self, path: str, nbytes: int) -> float:
        """latency + bytes / bandwidth on ``path``; a path crossing HBM gets at most the HBM
        bandwidth (several cores share it: backends/ascend_sim/multicore.py)."""
        p = self.paths[path]
        gbps = p.gbps(nbytes)
        if gbps is not None:
            bw = gbps / self.cycles_per_ns                    # bytes per cycle
            lat = p.latency
        else:
            bw, lat = float(p.bytes_per_cycle or 1), p.latency
        if p.hbm:
            bw = min(bw, self.hbm_gbps / self.cycles_per_ns)
        return lat + nbytes / bw


def _machine(profile: str, hbm_gbps: float, *, like: P.Profile | None = None, notes: tuple[str, ...] = ()) -> Machine:
    """A machine over ``profile``; clock and core counts from it, or from ``like`` where the
    profile does not publish them (the newer targets borrow A5's: see the notes)."""
    prof = P.PROFILES[profile]
    src = prof if prof.clock_mhz is not None else (like or prof)
    cube = src.cube_cores or 1
    return Machine(profile=prof, clock_mhz=src.clock_mhz or 1000, cube_cores=cube,
                   vector_cores=cube * (src.vector_cores_per_cube or 2), hbm_gbps=hbm_gbps, notes=notes)


_BORROWED = ("Clock, core counts, HBM and every rate are A5's: the public sources give no numbers for "
             "this target; only its capacities (buffer_limits.hpp) are its own.",)
_A5_PROFILE = P.PROFILES["a5"]

#: [HBM] 1.6 TB/s for 910B/910C (the top of the published 0.4-1.6 TB/s range) and for 950PR.
MACHINES: dict[str, Machine] = {
    "a2": _machine("a2", 1600.0, notes=("Rates are [msKPP]'s 910B1 measurements.",)),
    "a3": _machine("a3", 1600.0, notes=("Same AI core as A2 (910B); rates are [msKPP]'s 910B1 measurements.",)),
    "a5": _machine("a5", 1600.0, notes=("Rates are 910B1's (assumption: no public per-instruction numbers "
                                        "for 950 yet); clock 1650 MHz.",)),
    "a6": _machine("a6", 1600.0, like=_A5_PROFILE, notes=_BORROWED),
    "kirin9030": _machine("kirin9030", 1600.0, like=_A5_PROFILE, notes=_BORROWED),
    "kirinX90": _machine("kirinX90", 1600.0, like=_A5_PROFILE, notes=_BORROWED),
}


def get(profile: str) -> Machine:
    """The machine of a profile; SPEC_UNKNOWN_PROFILE for one without a machine (cpu)."""
    try:
        return MACHINES[profile]
    except KeyError:
        raise SpecError("SPEC_UNKNOWN_PROFILE", f"profile {profile!r} has no machine model",
                        expected=", ".join(MACHINES), actual=profile) from None
