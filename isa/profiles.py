"""Target profiles: what a target allows (legality) and what it is (capacities, pipes, timing).

A backend executes; a profile decides legality. Per-instruction dtype and value narrowing lives
in each declaration (``Instruction.profile_dtypes``, ``Instruction.profile_values``); this module
holds the target-wide facts.
Numbers for a2/a3/a5 are the public PTO ISA's buffer limits and clocks; a6, kirin9030 and
kirinX90 come from include/pto/common/buffer_limits.hpp of the snapshot named in isa/targets.py,
whose implementation table decides their legality.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from . import dtypes as dt
from .diagnostics import SpecError
from .suggest import did_you_mean
from .types import GlobalLayout, Layout, Location, Pipe

KB = 1024
#: the element types a location holds, where it restricts them (every profile): the MX scale
#: buffers hold one-byte scale codes, u8 or float8_e8m0, which TMATMUL_MX / TMATMUL_HIF4 read
#: (decision 'Scale tile element types')
LOCATION_DTYPES: Mapping[Location, tuple[dt.DType, ...]] = {Location.SCALE_LEFT: dt.SCALE_CODES,
                                                            Location.SCALE_RIGHT: dt.SCALE_CODES}

_ALL_LAYOUTS = tuple(Layout)
#: global layouts every target's DMA reads and writes; a5 adds the MX scale layouts, a6 also the
#: HiF4 ones (TLoad.hpp's TLoadMxCubeCheck per target); cpu takes every spelling
_PLAIN_GLOBALS = (GlobalLayout.ND, GlobalLayout.DN, GlobalLayout.NZ)
_MX_GLOBALS = _PLAIN_GLOBALS + (GlobalLayout.MX_A_ND, GlobalLayout.MX_A_DN, GlobalLayout.MX_A_ZZ,
                                GlobalLayout.MX_B_ND, GlobalLayout.MX_B_DN, GlobalLayout.MX_B_NN)
_HIF4_GLOBALS = _MX_GLOBALS + (GlobalLayout.HIF4_A_ZZ, GlobalLayout.HIF4_B_NN)
#: convolution layouts a TLOAD reads per target (CheckConvTileData's same-layout pairs): a2/a3
#: NC1HWC0, NDC1HWC0, FRACTAL_Z, FRACTAL_Z_3D; a5, a6 and kirin9030 NC1HWC0 and FRACTAL_Z;
#: kirinX90 none. Only the a2/a3 acc TSTORE writes one (NC1HWC0, NDC1HWC0), so the others list
#: it in ``global_layouts`` but not in ``stored_layouts``.
_CONV_A2 = (GlobalLayout.NC1HWC0, GlobalLayout.NDC1HWC0, GlobalLayout.FRACTAL_Z, GlobalLayout.FRACTAL_Z_3D)
_CONV_A5 = (GlobalLayout.NC1HWC0, GlobalLayout.FRACTAL_Z)
_NPU_PIPES = (Pipe.S, Pipe.V, Pipe.M, Pipe.MTE1, Pipe.MTE2, Pipe.MTE3, Pipe.FIX, Pipe.ALL)


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    capacity: Mapping[Location, int]          # bytes of on-chip memory per location
    layouts: Mapping[Location, tuple[Layout, ...]]
    global_layouts: tuple[GlobalLayout, ...] = _PLAIN_GLOBALS   # layouts of the global tensors it moves
    stored_layouts: tuple[GlobalLayout, ...] | None = None      # those a store writes (None: the same)
    alignment: int = 32                       # byte alignment of every on-chip buffer
    enforce_row_alignment: bool = True        # unboxed rows (cols for DN) are multiples of `alignment` bytes
    pipes: tuple[Pipe, ...] = _NPU_PIPES
    event_ids: int = 8                        # flag ids per (src, dst) pipe pair
    max_matmul_dim: int = 4095                # m, k, n limit of TMATMUL
    clock_mhz: int | None = None
    cube_cores: int | None = None
    vector_cores_per_cube: int | None = None
    vector_repeat_bytes: int = 256
    cube_shape: tuple[int, int, int] = (16, 16, 16)
    notes: tuple[str, ...] = field(default_factory=tuple)
    #: byte alignment a placed tile's address needs per location (PTO_*_ALIGN_BYTES of
    #: buffer_limits.hpp: 32 for every buffer); TASSIGN's semantics fault on the same rule on
    #: every profile, so cpu keeps it although its row rule (``alignment``) is off
    address_alignment: Mapping[Location, int] = field(default_factory=lambda: {loc: 32 for loc in Location})
    #: element types per location where the location restricts them (``LOCATION_DTYPES``)
    location_dtypes: Mapping[Location, tuple[dt.DType, ...]] = field(default_factory=lambda: dict(LOCATION_DTYPES))

    def flag_ids(self, src: Pipe, dst: Pipe) -> int | None:
        """How many flag ids the ordered pipe pair (src, dst) has: ``event_ids`` (EVENT_ID_MAX of
        the public event.hpp: EVENT_ID0..7, counted per <SrcPipe, DstPipe> pair, on every
        target) for two different single pipes; None for a pair no flag joins (one pipe twice,
        ALL), which the flag semantics refuse with their own codes."""
        if src is dst or Pipe.ALL in (src, dst):
            return None
        return self.event_ids

    def layout_error(self, loc: Location, layout: Layout) -> str | None:
        """Why tiles in ``loc`` cannot have ``layout`` on this profile (naming the layouts
        the location takes), or None. A property of the tile's type alone."""
        allowed = self.layouts.get(loc, ())
        if layout in allowed:
            return None
        if not allowed:
            return f"{self.name} has no {loc.value} tiles"
        take = " or ".join(f"{l.value} ({l.describe})" for l in allowed)
        return f"{loc.value} tiles on {self.name} take layout {take}; got {layout.value}"

    def dtype_error(self, loc: Location, dtype: dt.DType) -> str | None:
        """Why tiles in ``loc`` cannot hold ``dtype`` elements on this profile, or None."""
        allowed = self.location_dtypes.get(loc)
        if allowed is None or dtype in allowed:
            return None
        return (f"{loc.value} tiles on {self.name} hold {' or '.join(d.name for d in allowed)} elements; "
                f"got {dtype.name}")

    def row_alignment_error(self, rows: int, cols: int, itemsize: float, layout: Layout,
                            loc: Location) -> str | None:
        """Why a tile's static shape breaks this profile's alignment rule, or None. ``itemsize``
        is the element's memory size in bytes: 0.5 for the 4-bit types (``dt.memory_bits``)."""
        if not self.enforce_row_alignment or loc in _NO_ROW_RULE:
            return None
        if layout is Layout.ND and (cols * itemsize) % self.alignment:
            return f"row of {cols} x {itemsize} B is not a multiple of {self.alignment} B"
        if layout is Layout.DN and (rows * itemsize) % self.alignment:
            return f"column of {rows} x {itemsize} B is not a multiple of {self.alignment} B"
        if layout.boxed:
            ir, ic = fractal_box(layout, itemsize, loc)
            # the public Tile exempts the scale boxes' rows (SFractalSize fractalMxSize), as vec's
            free_rows = loc is Location.VEC or rows == 1 or layout.scale_box is not None
            if cols % ic or (rows % ir and not free_rows):
                return f"{rows}x{cols} is not a whole number of {ir}x{ic} fractal boxes"
        return None


def fractal_box(layout: Layout, itemsize: float, loc: Location) -> tuple[int, int]:
    """Inner box (rows, cols) of a boxed layout: 16x16 for 1024-byte acc fractals, else
    16 x (32 / itemsize) when the box is row-major inside, (32 / itemsize) x 16 when col-major;
    the scale layouts' 32-byte boxes are 16x2 (ZZ_MX) or 2x16 (NN_MX) elements anywhere."""
    if layout.scale_box is not None:
        return layout.scale_box
    if loc is Location.ACC:
        return (16, 16)
    c0 = max(int(32 / itemsize), 1)             # 64 four-bit elements fill 32 bytes
    return (c0, 16) if layout is Layout.ZN else (16, c0)


_CPU = Profile(
    name="cpu",
    description="Generic permissive profile: every instruction and every architecture-wide dtype, "
                "any layout in any location, no alignment rule; capacities large enough for tests.",
    capacity={loc: 64 * 1024 * KB for loc in Location},
    layouts={loc: _ALL_LAYOUTS for loc in Location},
    global_layouts=tuple(GlobalLayout),
    enforce_row_alignment=False,
    alignment=1,
    max_matmul_dim=1 << 20,
)

_NPU_LAYOUTS_A2 = {
    Location.VEC: (Layout.ND, Layout.DN),
    Location.MAT: (Layout.ND, Layout.DN, Layout.NZ, Layout.ZN),
    Location.LEFT: (Layout.ZZ, Layout.NZ),
    Location.RIGHT: (Layout.ZN,),
    Location.ACC: (Layout.NZ, Layout.ND),
    Location.BIAS: (Layout.ND,),
    Location.SCALING: (Layout.ND,),
}
# MX scale tiles (A5 family only): ScaleLeft is row-major, ScaleRight column-major (their public
# tile aliases), unboxed or in the public 32-byte scale boxes (ZZ_MX / NN_MX), which mat tiles
# holding scales take too (TLoadMxCubeCheck's L1 scale tiles).
_NPU_LAYOUTS_A5 = {**_NPU_LAYOUTS_A2, Location.LEFT: (Layout.NZ,),
                   Location.MAT: _NPU_LAYOUTS_A2[Location.MAT] + (Layout.ZZ_MX, Layout.NN_MX),
                   Location.SCALE_LEFT: (Layout.ND, Layout.ZZ_MX), Location.SCALE_RIGHT: (Layout.DN, Layout.NN_MX)}
#: locations exempt from the unboxed row rule: a row of MX scales is a few bytes (16 x 2 for 64 K)
_NO_ROW_RULE = (Location.SCALE_LEFT, Location.SCALE_RIGHT)
#: the Kirin parts have the a5 fractals but no scale buffers (and no MX, so no scale boxes)
_NPU_LAYOUTS_KIRIN = {**{k: v for k, v in _NPU_LAYOUTS_A5.items() if k not in _NO_ROW_RULE},
                      Location.MAT: _NPU_LAYOUTS_A2[Location.MAT]}


def _buffer_limits(*, ub: int, cbuf: int, l0ab: int, l0c: int, bias: int, fbuf: int,
                   scale: int = 0) -> dict[Location, int]:
    """On-chip capacities in bytes from buffer_limits.hpp's per-architecture KB figures
    (PTO_UBUF, CBUF, L0A = L0B, L0C, BIAS, FBUF, SCALELEFT = SCALERIGHT _SIZE_BYTES); the scale
    buffers are 4 KB on A5 and A6 and absent (0) elsewhere."""
    return {Location.VEC: ub * KB, Location.MAT: cbuf * KB, Location.LEFT: l0ab * KB,
            Location.RIGHT: l0ab * KB, Location.ACC: l0c * KB, Location.BIAS: bias * KB,
            Location.SCALING: fbuf * KB, Location.SCALE_LEFT: scale * KB,
            Location.SCALE_RIGHT: scale * KB}


_A2 = Profile(
    name="a2",
    description="Ascend 910B (A2): 192 KB UB, 512 KB L1, 64 KB L0A/L0B, 128 KB L0C; 1800 MHz.",
    capacity=_buffer_limits(ub=192, cbuf=512, l0ab=64, l0c=128, bias=1, fbuf=2),
    layouts=_NPU_LAYOUTS_A2,
    global_layouts=_PLAIN_GLOBALS + _CONV_A2,
    clock_mhz=1800, cube_cores=24, vector_cores_per_cube=2,
    notes=("The last 8 KB of UB (from 184 KB) is scratch for some vendor ops; openpto does not reserve it.",),
)
_A3 = Profile(**{**_A2.__dict__, "name": "a3",
                 "description": "Ascend 910C (A3): same core as A2 (identical legality tables and capacities)."})
_A5 = Profile(
    name="a5",
    description="Ascend 950 (A5): 256 KB UB, 512 KB L1, 64 KB L0A/L0B, 256 KB L0C; 1650 MHz.",
    capacity=_buffer_limits(ub=256, cbuf=512, l0ab=64, l0c=256, bias=4, fbuf=4, scale=4),
    layouts=_NPU_LAYOUTS_A5,
    global_layouts=_MX_GLOBALS + _CONV_A5,
    stored_layouts=_MX_GLOBALS,
    clock_mhz=1650, cube_cores=32, vector_cores_per_cube=2,
)

# The newer targets of the public repository. Capacities: include/pto/common/buffer_limits.hpp
# (PTO_*_SIZE_BYTES per PTO_NPU_ARCH_*; docs/isa/TASSIGN.md tabulates the same for the Kirin
# parts); alignment 32 B everywhere (PTO_*_ALIGN_BYTES). Layouts: their TMatmul headers assert the
# a5 fractals (left NZ, right ZN, acc NZ). Clocks and core counts are not published: None.
# Legality is the implementation table in isa/targets.py. Snapshot: targets.SNAPSHOT.
_A6 = Profile(
    name="a6",
    description="A6 (__NPU_ARCH__ 9201): a5-sized buffers (256 KB UB, 512 KB L1, 64 KB L0A/L0B, "
                "256 KB L0C); a bring-up target implementing sync, TADD, TLOAD/TSTORE, TEXTRACT, "
                "TRESHAPE, TQUANT and the matrix instructions.",
    capacity=_buffer_limits(ub=256, cbuf=512, l0ab=64, l0c=256, bias=4, fbuf=4, scale=4),
    layouts=_NPU_LAYOUTS_A5,
    global_layouts=_HIF4_GLOBALS + _CONV_A5,
    stored_layouts=_HIF4_GLOBALS,
    notes=("Header set include/pto/npu/a6/header.hpp; not yet wired into pto_instr_impl.hpp.",),
)


def _kirin(name: str, arch: int, *, cbuf: int, l0ab: int, l0c: int, fbuf: int,
           conv: tuple[GlobalLayout, ...] = ()) -> Profile:
    """A Kirin part: 128 KB UB, 1 KB bias table, no scale buffers, the a5 fractals without MX;
    the parts differ only in their L1, L0 and FBuffer sizes and the convolution layouts they load."""
    return Profile(
        name=name,
        description=f"{name[0].upper()}{name[1:]} (__NPU_ARCH__ {arch}): 128 KB UB, {cbuf} KB L1, "
                    f"{l0ab} KB L0A/L0B, {l0c} KB L0C, {fbuf} KB FBuffer; no bf16 or fp8, f16 or "
                    "i32 accumulators.",
        capacity=_buffer_limits(ub=128, cbuf=cbuf, l0ab=l0ab, l0c=l0c, bias=1, fbuf=fbuf),
        layouts=_NPU_LAYOUTS_KIRIN,
        global_layouts=_PLAIN_GLOBALS + conv,
        stored_layouts=_PLAIN_GLOBALS,
    )


_KIRIN9030 = _kirin("kirin9030", 3113, cbuf=512, l0ab=32, l0c=64, fbuf=7, conv=_CONV_A5)
_KIRINX90 = _kirin("kirinX90", 3003, cbuf=1024, l0ab=64, l0c=128, fbuf=6)

# NVIDIA GPUs (the cupy backend): a thread block's tiles share one shared memory, so every location
# may hold up to the block's opt-in maximum, 227 KB on compute capability 9.0 (H100) - the CUDA C++
# Programming Guide's "Technical Specifications per Compute Capability" table (maximum amount of
# shared memory per thread block); the backend checks the kernel's total. Tiles are row-major
# buffers in every location, so any layout goes anywhere; 16-byte alignment (one 128-bit access).
# Legality is the architecture-wide dtype set (every declaration's default rule, as on cpu).
_CUDA = Profile(
    name="cuda",
    description="NVIDIA GPU (cupy backend): one thread block per block, tiles in shared memory "
                "(227 KB per block on H100), any layout in any location, plain global layouts.",
    capacity={loc: 227 * KB for loc in Location},
    layouts={loc: _ALL_LAYOUTS for loc in Location},
    global_layouts=_PLAIN_GLOBALS,
    enforce_row_alignment=False,
    alignment=16,
    max_matmul_dim=1 << 20,
)

PROFILES: dict[str, Profile] = {p.name: p for p in (_CPU, _A2, _A3, _A5, _A6, _KIRIN9030, _KIRINX90, _CUDA)}


def get(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise SpecError("SPEC_UNKNOWN_PROFILE", f"unknown profile '{name}'{did_you_mean(name, PROFILES)}",
                        expected=", ".join(PROFILES), actual=name) from None
