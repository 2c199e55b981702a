"""``arguments``: random run-time arguments to small kernels on reference and llvm.

Each input is one call: per parameter a right or a wrong argument (wrong type, rank,
shape, dtype; strides that are byte-sized, negative, zero or column-skipping; read-only
outputs; lists, None, strings; objects whose ``__array_interface__`` or ``__dlpack__`` is
broken; huge, negative or non-integer scalars), a random call form (by position, by name,
with an unknown or a missing argument) and a random ``block_num``. Both backends get their
own copy, built from the same description, as views inside canary buffers. Findings: an
escaping non-PTOError, a changed canary byte, the two backends disagreeing (one runs, the
other raises; different codes; results beyond the numerics contract), or a call whose
every argument is right (any row count, incl. 0) rejected by both.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...assembler import parse
from ...backends import get
from ...backends.compare import error_budget
from ...conformance.level3 import _errors_agree, first_difference
from ...isa import dtypes as dt
from ...isa.diagnostics import PTOError
from ...isa.types import GlobalType, ScalarType, TileType
from ..canary import Canary
from ..harness import Campaign, Input
from ..outcome import Verdict

BACKENDS = ("reference", "llvm")

_ROWLOOP = """kernel @add(%a : !pto.memref<?x16xf32>, %b : !pto.memref<?x16xf32>, %c : !pto.memref<?x16xf32>, %rows : index) {
  .const %c0 = 0 : index
  .const %c16 = 16 : index
  scf.for %r = %c0 to %rows step %c16 iter_args(%left = %rows) -> (index) {
    %vr = arith.minsi %left, %c16 : index
    .tile %ta valid_row = %vr : !pto.tile<16x16xf32, valid=?x16>
    .tile %tb valid_row = %vr : !pto.tile<16x16xf32, valid=?x16>
    %ta = tload %a[%r, %c0]
    %tb = tload %b[%r, %c0]
    %tb = tadd %ta, %tb
    tstore %c[%r, %c0], %tb
    %rest = arith.subi %left, %c16 : index
    scf.yield %rest : index
  }
}
"""
_SCALARS = """kernel @scale(%x : !pto.memref<16x16xi32>, %y : !pto.memref<16x16xi32>, %s : i32,
                    %h : !pto.memref<16x16xf16>, %g : !pto.memref<16x16xf16>, %f : f16) {
  .const %c0 = 0 : index
  .tile %t : !pto.tile<16x16xi32>
  .tile %u : !pto.tile<16x16xf16>
  %t = tload %x[%c0, %c0]
  %t = tadds %t, %s
  tstore %y[%c0, %c0], %t
  %u = tload %h[%c0, %c0]
  %u = tmuls %u, %f
  tstore %g[%c0, %c0], %u
}
"""
_BLOCKS = """kernel @per_block(%x : !pto.memref<?x16xf32>, %y : !pto.memref<?x16xf32>, %rows : index) {
  .const %c0 = 0 : index
  .const %c16 = 16 : index
  %blk = pto.get_block_idx
  %r = arith.muli %blk, %c16 : index
  %in = arith.cmpi slt, %r, %rows : index
  scf.if %in {
    .tile %t : !pto.tile<16x16xf32>
    %t = tload %x[%r, %c0]
    %t = texp %t
    tstore %y[%r, %c0], %t
  }
}
"""
_TILEPARAM = """kernel @from_tile(%t : !pto.tile<16x16xf32>, %o : !pto.memref<16x16xf32>) {
  .const %c0 = 0 : index
  tstore %o[%c0, %c0], %t
}
"""
KERNELS = (_ROWLOOP, _SCALARS, _BLOCKS, _TILEPARAM)

BAD_INDEX = (-1, -16, 2**31, 2**63 - 1, 2**63, -2**63, -2**63 - 1, 2**64, 10**30, 1.5, float("nan"),
             True, "3", None, np.int64(5), np.uint64(2**64 - 1), np.array(3), np.array([3]), [3])
BAD_NUMBER = (2**31, -2**31 - 1, 2**63, -2**64, 10**400, 1e300, -1e300, float("inf"), float("nan"), -0.0,
              True, "1", None, np.float64(1e10), np.int8(-128), np.array(2.5), 1 + 2j)
BLOCK_NUMS = (0, -1, True, 2.0, None, "2", np.int64(2), 2**31, 2**63)


class _RaisingInterface:
    """An object whose ``__array_interface__`` raises."""

    @property
    def __array_interface__(self) -> dict:
        raise RuntimeError("broken __array_interface__")


class _Interface:
    """An object exposing a hand-made ``__array_interface__`` dict (possibly nonsense)."""

    def __init__(self, iface: dict) -> None:
        self.__array_interface__ = iface


class _BadDlpack:
    """An object whose ``__dlpack__`` raises something unexpected."""

    def __init__(self, exc: type[BaseException]) -> None:
        self.exc = exc

    def __dlpack__(self, *a: Any, **k: Any) -> Any:
        raise self.exc("broken __dlpack__")

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


@dataclass(frozen=True)
class Arg:
    """How to build one argument: ``how`` names the variant, ``dims``/``dtype`` the array."""

    how: str
    dims: tuple[int, ...] = ()
    dtype: str = ""
    value: Any = None


def _array_arg(t: GlobalType | TileType, rows: int, rng: random.Random, bad: float) -> Arg:
    shape = tuple(rows if d is None else d for d in t.shape)
    d = t.dtype.np_dtype.name
    if rng.random() >= bad:
        return Arg(rng.choice(("c", "c", "c", "rowskip", "neg", "fortran")), shape, d)
    how = rng.choice(("zero", "bytes", "dtype", "rank1", "rank3", "cols", "short", "long", "readonly",
                      "list", "none", "str", "scalar0d", "iface_raise", "iface_null", "iface_bad",
                      "iface_neg", "dlpack_key", "dlpack_attr"))
    return Arg(how, shape, d)


def _scalar_arg(t: ScalarType, good: Any, rng: random.Random, bad: float) -> Arg:
    if rng.random() >= bad:
        return Arg("value", value=good)
    return Arg("value", value=rng.choice(BAD_INDEX if t.name == "index" else BAD_NUMBER))


def _values(shape: tuple[int, ...], dtype: str, nrng: np.random.Generator) -> np.ndarray:
    d = dt.get({"float32": "f32", "float16": "f16", "int32": "i32"}.get(dtype, dtype))
    from ...conformance.programs import random_values
    return random_values(shape, d, nrng)


def build(name: str, a: Arg, nrng: np.random.Generator, canary: Canary) -> Any:
    """The argument object ``a`` describes (arrays inside ``canary`` buffers)."""
    if a.how == "value":
        return a.value
    shape, dtype = a.dims, a.dtype
    base = _values(shape, dtype, nrng)
    item = base.dtype.itemsize
    if a.how == "c":
        return canary.view(name, base)
    if a.how == "rowskip":           # every other column of a twice-as-wide buffer
        return canary.view(name, base, (shape[1] * 2 * item, 2 * item)) if len(shape) == 2 else canary.view(name, base)
    if a.how == "neg":
        return canary.view(name, base, tuple(-s for s in base.strides))
    if a.how == "fortran":
        return canary.view(name, base, tuple(int(s) for s in np.asfortranarray(base).strides))
    if a.how == "zero":
        return canary.view(name, base, (0,) + base.strides[1:]) if shape and shape[0] else canary.view(name, base)
    if a.how == "bytes":             # a row stride that is not a multiple of the element size
        return canary.view(name, base, (base.strides[0] + 1,) + base.strides[1:]) if len(shape) == 2 \
            else canary.view(name, base)
    if a.how == "dtype":
        return canary.view(name, base.astype(np.float64 if base.dtype != np.float64 else np.float32))
    if a.how == "rank1":
        return canary.view(name, base.ravel())
    if a.how == "rank3":
        return canary.view(name, base[None])
    if a.how == "cols":
        return canary.view(name, np.zeros((shape[0], shape[-1] + 1), base.dtype) if len(shape) == 2 else base)
    if a.how == "short":
        return canary.view(name, base[: max(shape[0] - 1 - shape[0] // 2, 0)])
    if a.how == "long":
        return canary.view(name, np.concatenate([base, base[:7]]) if base.size else base)
    if a.how == "readonly":
        v = canary.view(name, base)
        v.flags.writeable = False
        return v
    if a.how == "list":
        return base.tolist()
    if a.how == "none":
        return None
    if a.how == "str":
        return "x" * 16
    if a.how == "scalar0d":
        return np.array(base.flat[0]) if base.size else np.array(0.0)
    if a.how == "iface_raise":
        return _RaisingInterface()
    if a.how == "iface_null":       # a data pointer of 0 with a real shape
        return _Interface({"shape": shape, "typestr": base.dtype.str, "data": (0, False), "version": 3})
    if a.how == "iface_bad":
        return _Interface({"shape": "nonsense", "typestr": 42, "data": None, "version": 3})
    if a.how == "iface_neg":
        return _Interface({"shape": (-5, 16), "typestr": base.dtype.str, "data": (0, False), "version": 3})
    if a.how == "dlpack_key":
        return _BadDlpack(KeyError)
    if a.how == "dlpack_attr":
        return _BadDlpack(AttributeError)
    raise AssertionError(a.how)  # pragma: no cover


@dataclass(frozen=True)
class Call:
    """One input: a kernel (index into KERNELS), its argument descriptions, the call form."""

    kernel: int
    args: tuple[tuple[str, Arg], ...]
    form: str                        # "pos" | "kw" | "unknown" | "missing"
    block_num: Any
    seed: int
    valid: bool = False              # every argument right: the call must run on both backends

    def make(self, canary: Canary) -> tuple[list[Any], dict[str, Any]]:
        nrng = np.random.default_rng(self.seed)
        built = [(n, build(n, a, nrng, canary)) for n, a in self.args]
        if self.form == "pos":
            return [v for _, v in built], {}
        kw = dict(built)
        if self.form == "unknown":
            kw["not_a_param"] = 1
        elif self.form == "missing" and kw:
            kw.pop(next(iter(kw)))
        return [], kw


def _call(kernel_no: int, rng: random.Random) -> Call:
    k = _modules()[kernel_no].kernels[0]
    # the per-block kernel loads whole 16-row tiles: other row counts are legitimately out of bounds
    rows = rng.choice((0, 16, 48) if KERNELS[kernel_no] is _BLOCKS else (0, 1, 15, 16, 17, 33, 48))
    bad = 0.0 if rng.random() < 0.4 else 0.25       # many calls are right, to reach the kernels
    args = []
    for p in k.params:
        t = p.type
        if isinstance(t, (GlobalType, TileType)):
            args.append((p.name, _array_arg(t, rows, rng, bad)))
        else:
            good = rows if t.name == "index" else (rng.randint(-5, 5) if not t.is_float else rng.uniform(-2, 2))
            args.append((p.name, _scalar_arg(t, good, rng, bad)))
    form = rng.choice(("pos", "kw", "unknown", "missing")) if rng.random() < bad else rng.choice(("pos", "kw"))
    block_num = rng.choice((1, 1, 2, 3)) if rng.random() >= bad / 2 else rng.choice(BLOCK_NUMS)
    return Call(kernel_no, tuple(args), form, block_num, rng.randrange(2**32), valid=bad == 0.0)


_MODULES: list[Any] = []


def _modules() -> list[Any]:
    if not _MODULES:
        _MODULES.extend(parse(t) for t in KERNELS)
    return _MODULES


class ArgumentsCampaign(Campaign):
    name = "arguments"
    timeout = 20.0
    setup_timeout = 240.0            # the first input of a worker compiles the kernels

    def __init__(self) -> None:
        self._exes: dict[tuple[str, int], Any] = {}

    def __getstate__(self) -> dict:
        return {}

    def __setstate__(self, state: dict) -> None:
        self._exes = {}

    def group_of(self, index: int) -> int:
        return 0

    def make(self, seed: int, index: int) -> Input:
        rng = random.Random(f"arguments:{seed}:{index}")
        return Input(index, _call(rng.randrange(len(KERNELS)), rng), group=0, seed=seed)

    def exe(self, backend: str, kernel: int) -> Any:
        key = (backend, kernel)
        if key not in self._exes:
            opts = {"cache": False, "threads": 2} if backend == "llvm" else {}
            self._exes[key] = get(backend).compile(_modules()[kernel], "cpu", **opts)
        return self._exes[key]

    def _one(self, backend: str, call: Call) -> tuple[PTOError | None, dict[str, Any], str | None]:
        canary = Canary()
        args, kwargs = call.make(canary)
        exe = self.exe(backend, call.kernel)
        err = None
        try:
            exe.run(exe.kernels[0], *args, block_num=call.block_num, **kwargs)
        except PTOError as e:
            e.render()
            err = e
        except BaseException as e:
            e.add_note(f"raised by the {backend} backend")
            raise
        named = dict(zip([n for n, _ in call.args], args)) if args else kwargs
        return err, named, canary.check()

    def execute(self, inp: Input) -> Verdict | None:
        call: Call = inp.payload
        runs = {b: self._one(b, call) for b in BACKENDS}
        for b, (_, _, oob) in runs.items():
            if oob:
                return Verdict("oob", detail=f"{b}: {oob}")
        (want_err, want, _), (got_err, got, _) = runs["reference"], runs["llvm"]
        why = _errors_agree(got_err, want_err)
        if why is not None:
            return Verdict("mismatch", detail=f"llvm {why}")
        if want_err is not None and call.valid:
            return Verdict("mismatch", detail=f"a call with every argument right raised {want_err.code} "
                                              f"on both backends: {want_err.message} ({want_err.actual})")
        if want_err is not None:
            raise want_err
        arrays = {n: v for n, v in want.items() if isinstance(v, np.ndarray) and n in ("c", "y", "g", "o")}
        diff = first_difference({n: got[n] for n in arrays}, arrays,
                                error_budget(_modules()[call.kernel].kernels[0]))
        if diff is not None:
            return Verdict("mismatch", detail=f"llvm result differs from the reference: {diff}")
        return None

    def reproduce(self, inp: Input) -> dict[str, str | bytes]:
        call: Call = inp.payload
        return {".pto": KERNELS[call.kernel],
                ".py": ("# replays the input through the campaign's own code (needs the same openpto)\n"
                        "from openpto.fuzz.campaigns.arguments import ArgumentsCampaign\n"
                        "from openpto.fuzz.harness import classify\n"
                        f"print(classify(ArgumentsCampaign(), {inp.seed}, {inp.index}))\n"
                        f"# call: {call!r}\n")}
