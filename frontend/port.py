"""The portability report: one frontend function compiled for every profile, and per profile
what keeps it from being legal there, told at the user's lines, with tile shapes that would fit.

Nothing here decides legality. Each profile's verdict is the verifier's (``diagnose`` of
assembler/verifier.py, whose rules come from the declarations and isa/profiles.py) on the
kernels the compile pipeline lowers for that profile (``pipeline.lower_function``, the text
``compile_function`` checks). This module groups those diagnostics into blockers, finds the op
and source line behind each (frontend/blame.py), and asks the same compile again with other tile
shapes for capacity blockers (frontend/portfit.py). Rendering is frontend/portview.py.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from ..isa import profiles as isa_profiles
from ..isa.diagnostics import FrontendError, PTOError
from ..isa.suggest import did_you_mean
from ..isa.types import TileType
from . import graph as g
from .blame import origin
from .lower import Lowered
from .options import Options
from .partition import Partition

#: the blocker kind a verifier code is reported as (other codes: the code's tail, lower case)
KIND_OF_CODE: Mapping[str, str] = {
    "LEGAL_UNSUPPORTED_INSTRUCTION": "instruction",
    "LEGAL_DTYPE": "dtype",
    "LEGAL_CAPACITY": "capacity",
    "LEGAL_ALIGNMENT": "alignment",
    "LEGAL_LAYOUT": "layout",
    "LEGAL_LOCATION": "location",
    "LEGAL_ATTR": "attribute",
    "LEGAL_MODE": "mode",
}
_OPERAND = re.compile(r"operand '([A-Za-z0-9_]+)'")
_BYTES = re.compile(r"(\d+) bytes")
_KERNEL_BUFFER = re.compile(r"the \d+ ([a-z_]+) tile\(s\) of kernel")
_TILE = re.compile(r"^t_([A-Za-z0-9_]+?)(?:_(\d+))?$")


@dataclass(frozen=True)
class TileUse:
    """One on-chip tile of a kernel: its buffer, size, and the tensor and line it holds."""

    tile: str
    tensor: str
    rows: int
    cols: int
    dtype: str
    nbytes: int
    where: g.SourceLoc | None = None


@dataclass
class Blocker:
    """One reason a profile refuses the function: a verifier diagnostic (or several of one
    kind at one line), with what it is about and the user's line. ``instruction`` and
    ``dtypes`` for instruction and dtype blockers; ``buffer``, ``needed``, ``capacity`` and
    ``tiles`` for capacity blockers; ``code`` FRONT_* when the frontend itself refused."""

    kind: str
    code: str
    message: str
    profile: str
    kernel: str | None = None
    instruction: str | None = None
    dtypes: tuple[tuple[str, str], ...] = ()
    where: g.SourceLoc | None = None
    op: str | None = None
    buffer: str | None = None
    needed: int | None = None
    capacity: int | None = None
    tiles: tuple[TileUse, ...] = ()
    count: int = 1

    def key(self) -> tuple:
        """What makes two diagnostics one blocker (and a blocker 'the same' after a change)."""
        at = (self.where.file, self.where.line) if self.where is not None else None
        if self.kind == "capacity":
            return (self.kind, self.kernel, self.buffer)
        return (self.kind, self.code, self.instruction, self.dtypes, at,
                self.message if self.instruction is None else None)

    def what(self) -> str:
        """One line saying what is missing or too big."""
        if self.kind == "capacity":
            return (f"{self.buffer} buffer of kernel {self.kernel}: {self.needed} bytes needed, "
                    f"{self.capacity} available")
        if self.kind in ("instruction", "dtype") and self.instruction:
            types = ", ".join(f"{n}={d}" for n, d in self.dtypes)
            if self.kind == "instruction":
                return f"{self.instruction} ({types}) does not exist on {self.profile}"
            return f"{self.instruction} does not take ({types}) on {self.profile}"
        return f"{self.code}: {self.message}"


@dataclass
class Verdict:
    """One compile for one profile: its blockers and, per generated kernel, the tiled ops it
    runs (their ops, and the tile shapes the pipeline gave them)."""

    profile: str
    blockers: list[Blocker]
    kernel_nodes: dict[str, list[Any]] = field(default_factory=dict)      # tiling.TileNode

    def ops(self, kernel: str | None) -> list[g.Op]:
        return [n.op for n in self.kernel_nodes.get(kernel or "", [])]

    @property
    def legal(self) -> bool:
        return not self.blockers


@dataclass
class ProfileReport:
    """The verdict for one profile, and tile shapes that clear its capacity blockers."""

    profile: str
    blockers: list[Blocker]
    fits: list[Any] = field(default_factory=list)       # portfit.Fit

    @property
    def legal(self) -> bool:
        return not self.blockers


@dataclass
class PortReport:
    """``report``'s result: per profile legal or not, the blockers and the fits."""

    function: str
    file: str | None
    sizes: dict[str, int]
    profiles: list[ProfileReport]
    label: str | None = None          # how the function was made (a factory call), if given

    def get(self, profile: str) -> ProfileReport:
        for p in self.profiles:
            if p.profile == profile:
                return p
        raise KeyError(profile)

    def __str__(self) -> str:
        from .portview import text
        return text(self)

    def markdown(self, heading_level: int = 3) -> str:
        from .portview import markdown
        return markdown(self, heading_level)


# --------------------------------------------------------------------------------------------
# one compile's verdict


def judge(fn: g.Function, profile: str, opts: Options) -> Verdict:
    """Lower ``fn`` for ``profile`` as a compile does and collect every diagnostic the
    verifier reports, grouped into blockers at the user's lines."""
    import openpto
    from ..assembler.verifier import diagnose
    from .pipeline import lower_function
    try:
        _, part, low = lower_function(fn, profile, opts)
    except FrontendError as e:
        return Verdict(profile, [_frontend_blocker(e, profile)])
    module = openpto.parse(low.text, filename=f"<frontend {fn.name}>")
    errors = diagnose(module, profile)
    return Verdict(profile, _blockers(errors, module, low, fn, profile), _kernel_nodes(part, low))


def _frontend_blocker(e: FrontendError, profile: str) -> Blocker:
    loc = e.location
    where = g.SourceLoc(loc.file or "?", loc.line, loc.col or 1, loc.source_line) if loc.line else None
    return Blocker("frontend", e.code, e.message, profile, where=where)


def _kernel_nodes(part: Partition, low: Lowered) -> dict[str, list[Any]]:
    """Generated kernel name -> the tiled ops of every partition kernel running its code."""
    out: dict[str, list[Any]] = {}
    for k in part.kernels():
        lk = low.code.get(k.index)
        if lk is not None:
            out.setdefault(lk.name, []).extend(k.nodes)
    return out


def _statements(module: Any) -> dict[tuple[str, int], Any]:
    """(kernel, line in the generated text) -> its tile op."""
    from ..assembler.ir import TileOp
    out: dict[tuple[str, int], Any] = {}
    for k in module.kernels:
        for s in k.walk():
            if isinstance(s, TileOp) and s.loc is not None and s.loc.line is not None:
                out[(k.name, s.loc.line)] = s
    return out


def _where(op: g.Op | None) -> g.SourceLoc | None:
    return op.loc if op is not None else None


def _blockers(errors: Sequence[PTOError], module: Any, low: Lowered, fn: g.Function,
              profile: str) -> list[Blocker]:
    stmts = _statements(module)
    kernels = {k.name: k for k in module.kernels}
    found: dict[tuple, Blocker] = {}
    capacity: dict[tuple[str, str], list[tuple[PTOError, Any]]] = {}
    for err in errors:
        op, kname, _ = origin(err, low, fn)
        kname = kname or err.location.kernel or ""
        stmt = stmts.get((kname, err.location.line or -1))
        if err.code == "LEGAL_CAPACITY":
            loc = _capacity_location(err, stmt, kernels.get(kname))
            capacity.setdefault((kname, loc or "?"), []).append((err, op))
            continue
        instr = stmt.instr.mnemonic if stmt is not None else None
        dtypes = tuple((n, t.dtype.name) for n, t in stmt.types().items()
                       if isinstance(t, TileType)) if stmt is not None else ()
        b = Blocker(KIND_OF_CODE.get(err.code, err.code.split("_", 1)[-1].lower()), err.code, err.message,
                    profile, kname, instr, dtypes, _where(op), op.name if op is not None else None)
        hit = found.get(b.key())
        if hit is not None:
            hit.count += 1
        else:
            found[b.key()] = b
    for (kname, loc), errs in capacity.items():
        b = _capacity_blocker(kname, loc, errs, kernels.get(kname), low, fn, profile)
        found[b.key()] = b
    return list(found.values())


def _bytes(text: object) -> int | None:
    m = _BYTES.search(str(text or ""))
    return int(m.group(1)) if m else None


def _tile_types(kernel: Any) -> dict[str, TileType]:
    """The kernel's own tile buffers (windows of another tile take no room of their own)."""
    from ..assembler.ir import Subset
    windows = {s.result.name for s in kernel.walk() if isinstance(s, Subset)}
    return {n: t for n, t in kernel.tiles().items() if n not in windows}


def _capacity_location(err: PTOError, stmt: Any, kernel: Any) -> str | None:
    """Which buffer a capacity diagnostic is about: the operand it names (an instruction's),
    or the buffer it names (a kernel's; else the one whose tiles add up to its bytes)."""
    actual = _bytes(err.actual)
    if stmt is not None:
        m = _OPERAND.search(err.message)
        arg = stmt.args.get(m.group(1)) if m else None
        t = getattr(arg, "type", None)
        if isinstance(t, TileType):
            return t.loc.value
        for t in stmt.types().values():
            if isinstance(t, TileType) and t.nbytes == actual:
                return t.loc.value
        return None
    m = _KERNEL_BUFFER.search(err.message)
    if m:
        return m.group(1)
    if kernel is None:
        return None
    totals: dict[str, int] = {}
    for t in _tile_types(kernel).values():
        totals[t.loc.value] = totals.get(t.loc.value, 0) + t.nbytes
    return next((loc for loc, n in totals.items() if n == actual), None)


def _capacity_blocker(kname: str, loc: str, errs: list[tuple[PTOError, Any]], kernel: Any,
                      low: Lowered, fn: g.Function, profile: str) -> Blocker:
    """One blocker per (kernel, buffer): the bytes the verifier counted, the profile's
    capacity, the kernel's tiles in that buffer (largest first) and the line of the op whose
    tile is largest."""
    prof = isa_profiles.get(profile)
    needed = max((_bytes(e.actual) or 0) for e, _ in errs) or None
    cap = next((_bytes(e.expected) for e, _ in errs if _bytes(e.expected) is not None), None)
    if cap is None:
        cap = next((c for l, c in prof.capacity.items() if l.value == loc), None)
    lk = next((k for k in low.kernels if k.name == kname), None)
    makers = _tile_makers(lk, fn) if lk is not None else {}
    tiles: list[TileUse] = []
    if kernel is not None:
        for name, t in _tile_types(kernel).items():
            if t.loc.value != loc:
                continue
            tensor, op = makers.get(name, (name, None))
            tiles.append(TileUse(name, tensor, t.rows, t.cols, t.dtype.name, t.nbytes, _where(op)))
    tiles.sort(key=lambda u: -u.nbytes)
    blamed_op = next((op for _, op in errs if op is not None), None)
    where = tiles[0].where if tiles and tiles[0].where is not None else _where(blamed_op)
    first = errs[0][0]
    return Blocker("capacity", "LEGAL_CAPACITY", first.message, profile, kname, where=where,
                   op=blamed_op.name if blamed_op is not None else None, buffer=loc, needed=needed,
                   capacity=cap, tiles=tuple(tiles), count=len(errs))


def _tile_makers(lk: Any, fn: g.Function) -> dict[str, tuple[str, g.Op | None]]:
    """Tile name (``t_<tensor>``, ``_N`` for a second tile of one tensor) -> (tensor, the op
    it is for: the op computing the tensor in this kernel, else the view it is loaded
    through, else the first op of the kernel reading it)."""
    made = {o: op for op in fn.walk() for o in op.outputs}
    by_tensor: dict[str, g.Op | None] = {}
    for n in lk.kernel.nodes:
        by_tensor.setdefault(n.out.name.lstrip("%"), n.op)
    for n in lk.kernel.nodes:
        for t in n.tensor_inputs():
            name = t.name.lstrip("%")
            if name not in by_tensor:
                view = made.get(t)
                by_tensor[name] = view if view is not None and view.name == "view" and view.loc else n.op
    out: dict[str, tuple[str, g.Op | None]] = {}
    for tile in _tile_names(lk.text):
        m = _TILE.match(tile)
        if not m:
            continue
        whole = tile[2:]
        tensor = whole if whole in by_tensor else m.group(1)
        out[tile] = (tensor, by_tensor.get(tensor))
    return out


def _tile_names(text: str) -> Iterable[str]:
    return re.findall(r"\.tile %([A-Za-z0-9_]+)", text)


# --------------------------------------------------------------------------------------------
# the report


def check_profiles(names: Sequence[str]) -> list[str]:
    """The profiles asked for, once each; an unknown name is PTO_ARG naming the known ones."""
    for n in names:
        if n not in isa_profiles.PROFILES:
            raise PTOError("PTO_ARG", f"unknown profile {n!r}{did_you_mean(n, isa_profiles.PROFILES)}",
                           expected=", ".join(isa_profiles.PROFILES), actual=n)
    return list(dict.fromkeys(names))


def report(fn: Any, profiles: Sequence[str] | None = None, sizes: Mapping[str, int] | None = None,
           options: Mapping[str, Any] | None = None, fit: bool = True, label: str | None = None) -> PortReport:
    """The portability report of a ``@jit`` function (captured from its annotations; ``sizes``
    fixes dynamic sizes by the names the tensor graph gives them) or of a captured tensor graph,
    for ``profiles`` (default: every profile of isa/profiles.py), with the pipeline ``options``
    (default: the function's own). ``fit``: search tile shapes that clear capacity blockers;
    ``label`` says how the function was made (an operator factory's call) in the header."""
    from .jit import JitFunction
    from .portfit import fits_for
    names = check_profiles(list(profiles)) if profiles is not None else list(isa_profiles.PROFILES)
    sizes = dict(sizes or {})
    if isinstance(fn, JitFunction):
        known = fn.dynamic_dims()
        bad = [k for k, v in sizes.items() if k not in known or not isinstance(v, int) or v < 1]
        if bad:
            raise PTOError("PTO_ARG", f"bad size {bad[0]}={sizes[bad[0]]!r}",
                           expected=f"NAME=VALUE with NAME one of {', '.join(known) or '(no dynamic sizes)'} "
                                    "and VALUE a positive int", actual=f"{bad[0]}={sizes[bad[0]]!r}")
        opts = Options.from_dict(options if options is not None else fn.options)
        graph = fn.graph_from_annotations(sizes)
        file = getattr(fn.fn, "__code__", None) and fn.fn.__code__.co_filename
    elif isinstance(fn, g.Function):
        if sizes:
            raise PTOError("PTO_ARG", "sizes are fixed when a @jit function is captured, not on a captured graph",
                           expected="no sizes", actual=", ".join(sizes))
        opts, graph, file = Options.from_dict(options), fn, (fn.loc.file if fn.loc else None)
    else:
        raise PTOError("PTO_ARG", "the portability report takes a @jit function or a captured tensor graph",
                       expected="a JitFunction or frontend.graph.Function", actual=type(fn).__name__)
    out: list[ProfileReport] = []
    for p in names:
        v = judge(graph, p, opts)
        pr = ProfileReport(p, v.blockers)
        if fit and any(b.kind == "capacity" for b in v.blockers):
            pr.fits = fits_for(graph, v, opts)
        out.append(pr)
    return PortReport(graph.name, file or None, sizes, out, label)
