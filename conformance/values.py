"""Input values for conformance runs: arrays that mostly hold ordinary numbers with a
sprinkle of the values backends get wrong.

Hypothesis draws only a *recipe* per array (a mode and a seed); numpy builds the array from
it. That keeps a 64x64 tile as cheap as a scalar and lets shrinking work on the recipe:
the mode shrinks toward the first (plainest) one and the seed toward 0. Modes:

* floats: ``ordinary`` (scaled normal samples), ``specials`` (ordinary plus NaNs with several
  payloads, ±inf, ±0, denormals, ±max, ±smallest normal), ``boundary`` (ties: values exactly
  half-way between neighbours of every narrower float type and of the integers, which is
  where round-to-nearest-even and ties-away part), ``integral`` (small integers and halves,
  ±0), ``extreme`` (log-uniform magnitudes over the whole range, denormals included);
* integers: ``small`` (in ``[0, bound)``, so index operands stay in range), ``mid`` (around
  the middle of the range: exponent codes such as E8M0 scales near 1), ``ordinary``,
  ``specials`` (min, max, -1, 0, 1 sprinkled in), ``boundary`` (integers half-way between
  neighbouring floats: int -> float ties), ``full`` (uniform over the whole range);
* masks: ``random``, ``sparse``, ``dense``, ``constant``.

Global tensors are sometimes passed as a strided view (a column slice of a wider array, a
step-2 slice of a longer vector), so a backend that assumes contiguous memory is caught.
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any, Callable

import ml_dtypes
import numpy as np
from hypothesis import strategies as st

from ..isa import dtypes as dt
from ..isa.spec import Kind
from ..isa.types import GlobalType, ScalarType, TileType
from .cases import Case

SEEDS = st.integers(0, 2**32 - 1)

#: the unsigned integer type of each element size, for looking at bit patterns
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def modes(d: dt.DType) -> tuple[str, ...]:
    """The recipe modes of ``d``'s kind, plainest first (shrinking goes there)."""
    return tuple(_BUILDERS[_kind(d)])


# --------------------------------------------------------------------------- special values

@functools.lru_cache(maxsize=None)
def float_specials(d: dt.DType) -> np.ndarray:
    """Every special value ``d`` can hold, in ``d``: NaNs (quiet, quiet with payload,
    signalling, all-ones mantissa, both signs; whichever of these patterns ``d`` decodes as NaN),
    ±inf where ``d`` has them, ±0, ±max, ±smallest normal, ±smallest and largest denormal, ±1."""
    f = ml_dtypes.finfo(d.np_dtype)
    u = UINT[d.itemsize]
    m, w = int(f.nmant), d.bits
    exp_all = ((1 << int(f.nexp)) - 1) << m
    sign = 1 << (w - 1)
    mantissas = dict.fromkeys((1 << (m - 1), (1 << (m - 1)) | 1, 1, (1 << m) - 1, 0))
    patterns = [exp_all | mant for mant in mantissas]
    patterns += [p | sign for p in patterns]
    coded = np.array(patterns, dtype=u).view(d.np_dtype)
    wide = coded.astype(np.float32)
    coded = coded[np.isnan(wide) | np.isinf(wide)]          # NaN payloads and infinities d really has
    tiny, sub = float(f.smallest_normal), float(f.smallest_subnormal)
    finite = [0.0, float(f.max), tiny, sub, tiny - sub, 1.0]
    values = np.array(finite + [-v for v in finite], dtype=np.float64).astype(d.np_dtype)
    return np.concatenate([coded, values])


@functools.lru_cache(maxsize=None)
def int_specials(d: dt.DType) -> np.ndarray:
    """The integer extremes and the values next to them, -1, 0 and 1."""
    lo, hi = int(d.min), int(d.max)
    vals = {lo, lo + 1, hi, hi - 1, 0, 1, hi // 2 + 1, lo // 2}
    if lo < 0:
        vals.add(-1)
    return np.array(sorted(vals), dtype=d.np_dtype)


# --------------------------------------------------------------------------- arrays

def build(d: dt.DType, shape: tuple[int, ...], mode: str, seed: int, bound: int = 16) -> np.ndarray:
    """The array a recipe stands for (deterministic in ``mode`` and ``seed``)."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape, dtype=np.int64))
    kind = _kind(d)
    with np.errstate(all="ignore"):      # overflow to inf and NaN casts are wanted
        flat = _coded(rng, d, n) if d in dt.CODED else _BUILDERS[kind][mode](rng, d, n, bound)
    return np.ascontiguousarray(flat.reshape(shape))


def _sprinkle(rng: np.random.Generator, base: np.ndarray, pool: np.ndarray, density: float) -> np.ndarray:
    hit = rng.random(base.size) < density
    base[hit] = pool[rng.integers(0, pool.size, int(hit.sum()))]
    return base


def _float_ordinary(rng: np.random.Generator, d: dt.DType, n: int, bound: int = 0) -> np.ndarray:
    scale = min(float(rng.choice([1.0, 4.0, 100.0])), float(ml_dtypes.finfo(d.np_dtype).max) / 64)
    return (rng.standard_normal(n) * scale).astype(d.np_dtype)


def _float_specials(rng: np.random.Generator, d: dt.DType, n: int, bound: int = 0) -> np.ndarray:
    density = float(rng.choice([1 / 64, 1 / 16, 1 / 4]))
    return _sprinkle(rng, _float_ordinary(rng, d, n), float_specials(d), density)


def _float_boundary(rng: np.random.Generator, d: dt.DType, n: int, bound: int = 0) -> np.ndarray:
    """Values of ``d`` exactly half-way between two neighbours of a coarser grid: each narrower
    float type's (keep its mantissa bits, then a 1 and zeros) or the integers' (k + 0.5)."""
    f = ml_dtypes.finfo(d.np_dtype)
    m = int(f.nmant)
    u = UINT[d.itemsize]
    bits = _float_ordinary(rng, d, n).view(u).copy()
    choices = [bits]
    for other in dt.ALL:
        if other.is_float and int(ml_dtypes.finfo(other.np_dtype).nmant) < m:
            drop = m - int(ml_dtypes.finfo(other.np_dtype).nmant)
            choices.append((bits & u(~((1 << drop) - 1) & ((1 << d.bits) - 1))) | u(1 << (drop - 1)))
    reach = min(1 << m, 1 << 12)
    halves = (rng.integers(-reach, reach, n) + 0.5).astype(d.np_dtype).view(u)
    choices.append(halves)
    pick = rng.integers(0, len(choices), n)
    return np.choose(pick, choices).astype(u).view(d.np_dtype)


def _float_integral(rng: np.random.Generator, d: dt.DType, n: int, bound: int = 0) -> np.ndarray:
    v = rng.integers(-8, 9, n) + rng.choice([0.0, 0.5], n)
    v = np.where(v == 0, rng.choice([0.0, -0.0], n), v)
    return v.astype(d.np_dtype)


def _float_extreme(rng: np.random.Generator, d: dt.DType, n: int, bound: int = 0) -> np.ndarray:
    f = ml_dtypes.finfo(d.np_dtype)
    lo, hi = np.log2(float(f.smallest_subnormal)), np.log2(float(f.max))
    v = np.exp2(rng.uniform(lo, hi, n)) * rng.choice([-1.0, 1.0], n)
    return np.clip(v, -float(f.max), float(f.max)).astype(d.np_dtype)


def _int_range(d: dt.DType, lo: int, hi: int) -> tuple[int, int]:
    return max(int(d.min), lo), min(int(d.max), hi)


def _int_uniform(rng: np.random.Generator, d: dt.DType, n: int, lo: int, hi: int) -> np.ndarray:
    lo, hi = _int_range(d, lo, hi)
    wide = np.uint64 if hi > np.iinfo(np.int64).max else np.int64
    return rng.integers(lo, hi, n, endpoint=True, dtype=wide).astype(d.np_dtype)


def _int_small(rng: np.random.Generator, d: dt.DType, n: int, bound: int = 16) -> np.ndarray:
    return _int_uniform(rng, d, n, 0, max(bound, 1) - 1)


def _int_mid(rng: np.random.Generator, d: dt.DType, n: int, bound: int = 0) -> np.ndarray:
    """Around the middle of the range: 127 +- 8 for u8 (an E8M0 scale near 1), -1 +- 8 for i8."""
    mid = (int(d.min) + int(d.max)) // 2
    return _int_uniform(rng, d, n, mid - 8, mid + 8)


def _int_ordinary(rng: np.random.Generator, d: dt.DType, n: int, bound: int = 0) -> np.ndarray:
    return _int_uniform(rng, d, n, -100, 100)


def _int_specials(rng: np.random.Generator, d: dt.DType, n: int, bound: int = 0) -> np.ndarray:
    density = float(rng.choice([1 / 64, 1 / 16, 1 / 4]))
    return _sprinkle(rng, _int_ordinary(rng, d, n), int_specials(d), density)


def _int_full(rng: np.random.Generator, d: dt.DType, n: int, bound: int = 0) -> np.ndarray:
    raw = rng.integers(0, 256, n * d.itemsize, dtype=np.uint8)
    return raw.view(d.np_dtype).copy()


def _int_boundary(rng: np.random.Generator, d: dt.DType, n: int, bound: int = 0) -> np.ndarray:
    """Integers half-way between two neighbouring values of a float type that cannot hold
    them all (i32 -> f32, i16 -> f8 ...): (p+1)-bit significand, then a 1, then zeros."""
    width = d.bits - (1 if d.kind == "int" else 0)
    out = _int_ordinary(rng, d, n).astype(np.uint64)
    for f in dt.ALL:
        if not f.is_float:
            continue
        p = int(ml_dtypes.finfo(f.np_dtype).nmant)
        if width <= p + 1:
            continue
        shift = rng.integers(1, width - p, n).astype(np.uint64)
        sig = rng.integers(1 << p, 1 << (p + 1), n).astype(np.uint64)
        ties = (sig << shift) | (np.uint64(1) << (shift - np.uint64(1)))
        take = rng.random(n) < 0.5
        out[take] = ties[take]
    if d.kind == "int":
        neg = rng.random(n) < 0.5
        out = np.where(neg, (~out + np.uint64(1)), out)      # two's complement negation
    return out.astype(d.np_dtype)


def _bool(p_choices: tuple[float, ...]) -> Callable[..., np.ndarray]:
    def make(rng: np.random.Generator, d: dt.DType, n: int, bound: int = 0) -> np.ndarray:
        return rng.random(n) < float(rng.choice(p_choices))
    return make


def _coded(rng: np.random.Generator, d: dt.DType, n: int, bound: int = 0) -> np.ndarray:
    """A float type held as codes (``dt.CODED``, e.g. hifloat8): any code, NaN and ±inf included."""
    return rng.integers(0, 1 << d.bits, n).astype(d.np_dtype)


_BUILDERS: dict[str, dict[str, Callable[..., np.ndarray]]] = {
    "float": {"ordinary": _float_ordinary, "specials": _float_specials, "boundary": _float_boundary,
              "integral": _float_integral, "extreme": _float_extreme},
    "int": {"small": _int_small, "mid": _int_mid, "ordinary": _int_ordinary, "specials": _int_specials,
            "boundary": _int_boundary, "full": _int_full},
    "bool": {"random": _bool((0.5,)), "sparse": _bool((0.05, 0.2)), "dense": _bool((0.8, 0.95)),
             "constant": _bool((0.0, 1.0))},
}


def _kind(d: dt.DType) -> str:
    return "float" if d.is_float else "int" if d.is_int else "bool"


#: one recipe strategy per kind of dtype, built once: constructing strategies per draw costs
#: more than building the arrays
_RECIPES = {k: st.tuples(st.sampled_from(tuple(b)), SEEDS) for k, b in _BUILDERS.items()}
_SMALL = st.tuples(st.just("small"), SEEDS)


def draw_array(draw: st.DrawFn, d: dt.DType, shape: tuple[int, ...], bound: int = 16,
               in_range: bool = False) -> np.ndarray:
    """Draw a recipe and build it; ``in_range`` keeps integers in the ``small`` mode."""
    mode, seed = draw(_SMALL if in_range and d.is_int else _RECIPES[_kind(d)])
    return build(d, shape, mode, seed, bound)


def arrays(d: dt.DType, shape: tuple[int, ...], bound: int = 16) -> st.SearchStrategy[np.ndarray]:
    """Arrays of ``d`` and ``shape``; integer ``small`` values lie in ``[0, bound)``."""
    return st.composite(lambda draw: draw_array(draw, d, shape, bound))()


# --------------------------------------------------------------------------- global tensors

@dataclass(frozen=True)
class GlobalArg:
    """A global tensor argument: a view (``shape``, element ``strides``, ``offset``) into a
    flat ``parent`` buffer. Each run gets ``fresh()`` copies, so both sides start equal and
    writes outside the view stay detectable."""

    parent: np.ndarray
    offset: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]

    def over(self, parent: np.ndarray) -> np.ndarray:
        item = parent.itemsize         # as_strided cannot describe ml_dtypes: stride raw bits
        raw = parent.view(np.uint8 if parent.dtype == np.bool_ else UINT[item])
        byte_strides = tuple(s * item for s in self.strides)
        view = np.lib.stride_tricks.as_strided(raw[self.offset:], self.shape, byte_strides)
        return view.view(parent.dtype)

    @property
    def view(self) -> np.ndarray:
        return self.over(self.parent)

    def fresh(self) -> "GlobalArg":
        return dataclasses.replace(self, parent=self.parent.copy())

    @property
    def contiguous(self) -> bool:
        return self.strides == _row_major(self.shape)


def _row_major(shape: tuple[int, ...]) -> tuple[int, ...]:
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= s
    return tuple(reversed(out))


def _layout(t: GlobalType, shape: tuple[int, ...], padding: int) -> tuple[tuple[int, ...], int]:
    """Element strides for ``t`` (its declared ones, else row-major with ``padding`` extra
    elements per row, i.e. a column slice of a wider array) and the buffer size they need."""
    if t.strides is not None:
        strides, acc = [], 1
        for s, n in zip(reversed(t.strides), reversed(shape)):
            strides.append(acc if s is None else s)
            acc = (acc if s is None else s) * n
        st_ = tuple(reversed(strides))
    elif len(shape) == 1:
        st_ = (1 + (padding > 0),)
    else:
        wide = shape[:-1] + (shape[-1] + padding,)
        st_ = _row_major(wide)
    size = 1 + sum((n - 1) * s for n, s in zip(shape, st_)) if all(shape) else 0
    return st_, size


_PADDING = st.sampled_from((0, 0, 1, 5, 16))


def draw_global(draw: st.DrawFn, t: GlobalType, bound: int = 16, in_range: bool = False) -> GlobalArg:
    """A global tensor of type ``t``: contiguous, or a view with padded rows (a column slice
    of a wider array; a step-2 slice of a vector)."""
    shape = tuple(s if s is not None else 64 for s in t.shape)
    padding = draw(_PADDING)
    offset = draw(st.integers(0, padding)) if padding else 0
    strides, size = _layout(t, shape, padding)
    parent = draw_array(draw, t.dtype, (offset + size + padding,), bound, in_range)
    return GlobalArg(parent, offset, shape, strides)


# --------------------------------------------------------------------------- scalars

def _wrap_int(v: int, d: dt.DType) -> int:
    lo, hi = int(d.min), int(d.max)
    return (int(v) - lo) % (hi - lo + 1) + lo


@functools.lru_cache(maxsize=None)
def _float_pool(d: dt.DType) -> list[float]:
    """``d``'s special values as Python floats (a scalar operand is converted by the semantics)."""
    vals = [float(v) for v in float_specials(d).astype(np.float32)]
    return [float("nan")] + [v for v in dict.fromkeys(vals) if v == v]


def example_scalar(t: ScalarType, example: Any) -> Any:
    """The case's example value as a valid argument of type ``t`` (4080 on i8 wraps to -16)."""
    ex = example if isinstance(example, (int, float, bool)) else 1
    if t.name == "i1":
        return bool(ex)
    if t.is_float:
        return float(ex)
    return int(ex) if t.name == "index" else _wrap_int(int(ex), t.dtype)


@functools.lru_cache(maxsize=None)
def scalars(t: ScalarType, example: Any) -> st.SearchStrategy[Any]:
    """A scalar operand: the case's example first, then small values and the type's
    special values."""
    ex = example_scalar(t, example)
    if t.name == "i1":
        return st.sampled_from([ex, not ex])
    if t.name == "index":
        return st.one_of(st.just(ex), st.integers(-2, 64))
    d = t.dtype
    if d.is_float:
        return st.one_of(st.just(ex), st.floats(-100, 100, width=32), st.sampled_from(_float_pool(d)))
    lo, hi = _int_range(d, -8, 64)
    return st.one_of(st.just(ex), st.integers(lo, hi), st.sampled_from([int(v) for v in int_specials(d)]))


# --------------------------------------------------------------------------- whole cases

def index_bound(case: Case) -> int:
    """An upper bound for integer ``small`` values that is in range for every index operand:
    the smallest valid row count of any tile and row count of any global (1 for a vector)."""
    extents = [t.valid_rows for t in case.types.values() if isinstance(t, TileType) and t.valid_rows]
    extents += [(t.shape[-2] if t.rank > 1 else 1) or 1
                for t in case.types.values() if isinstance(t, GlobalType)]
    return max(min(extents, default=16), 1)


def draw_index_literals(draw: st.DrawFn, case: Case) -> Case:
    """The case, or (sometimes) the case with other values for its literal index operands
    (offsets, diagonals, ids): near the example, so mostly still in range."""
    names = [op.name for op in case.instr.operands
             if op.kind is Kind.INDEX and isinstance(case.scalars.get(op.name), int)
             and not isinstance(case.scalars.get(op.name), bool)]
    if not names or not draw(st.booleans()):
        return case
    new = dict(case.scalars)
    for n in names:
        v = int(case.scalars[n])
        if draw(st.booleans()):
            new[n] = draw(st.integers(min(v, 0) - 1, max(2 * v, 4)))
    return dataclasses.replace(case, scalars=new)


def literal(case: Case, name: str) -> bool:
    """Whether operand ``name`` is a literal of ``case.module()`` (an index operand whose
    value the case fixes) rather than a kernel parameter."""
    return case.instr.operand(name).kind is Kind.INDEX and isinstance(case.types.get(name), ScalarType) \
        and isinstance(case.scalars.get(name), int) and name not in case.runtime


def _parameters(case: Case, array: Callable[[dt.DType, tuple[int, ...]], np.ndarray],
                global_arg: Callable[[GlobalType], GlobalArg], scalar: Callable[[ScalarType, Any], Any]
                ) -> dict[str, Any]:
    """A value for every parameter of ``case.module()``, each made by the matching callback."""
    out: dict[str, Any] = {}
    for op in case.instr.operands:
        t = case.types.get(op.name)
        if t is None or op.kind is Kind.PIPE or op.name in case.aliases:
            continue
        if isinstance(t, TileType):
            out[op.name] = array(t.dtype, t.shape)
        elif isinstance(t, GlobalType):
            out[op.name] = global_arg(t)
        elif isinstance(t, ScalarType):
            if not literal(case, op.name):
                out[op.name] = scalar(t, case.scalars.get(op.name, 1))
        else:
            out[op.name] = None                            # event tokens carry no value
    for name, target in case.aliases.items():   # in place: the same contents (arguments() passes one)
        out[name] = out[target]
    return out


def draw_inputs(draw: st.DrawFn, case: Case, in_range: bool = False) -> dict[str, Any]:
    """Tile contents (output tiles too: their initial contents), global tensors
    (``GlobalArg``) and scalars for ``case``. ``in_range``: integer arrays only in the
    ``small`` mode, so index operands are valid."""
    bound = index_bound(case)
    return _parameters(case, lambda d, shape: draw_array(draw, d, shape, bound, in_range),
                       lambda t: draw_global(draw, t, bound, in_range),
                       lambda t, ex: draw(scalars(t, ex)))


def inputs(case: Case, in_range: bool = False) -> st.SearchStrategy[dict[str, Any]]:
    return st.composite(lambda draw: draw_inputs(draw, case, in_range))()


def recipe_inputs(case: Case, float_mode: str, int_mode: str, bool_mode: str, seed: int,
                  strided: bool) -> dict[str, Any]:
    """Fixed inputs (no hypothesis): every array of a kind built with the same mode, globals
    strided or not, scalars at the example's value. For deterministic sweeps."""
    bound = index_bound(case)
    pick = {"float": float_mode, "int": int_mode, "bool": bool_mode}
    count = iter(range(seed, seed + 1000))

    def array(d: dt.DType, shape: tuple[int, ...]) -> np.ndarray:
        return build(d, shape, pick[_kind(d)], next(count), bound)

    def global_arg(t: GlobalType) -> GlobalArg:
        shape = tuple(s if s is not None else 64 for s in t.shape)
        padding = 5 if strided else 0
        strides, size = _layout(t, shape, padding)
        return GlobalArg(array(t.dtype, (1 + size + padding,)), int(strided), shape, strides)

    return _parameters(case, array, global_arg, example_scalar)


# --------------------------------------------------------------------------- situation recipes

#: (first operand, second operand) float pairs placed at the same position of two operands
JOINT_PAIRS = ((0.0, -0.0), (-0.0, 0.0), (np.nan, np.nan), (np.nan, 1.5), (1.5, np.nan), (np.inf, np.inf),
               (np.inf, -np.inf), (-np.inf, np.inf), (-0.0, -0.0), ("max", "max"), ("-max", 2.0),
               ("sub", "-sub"), (1.0, 1.0), (-2.5, 3.0))


def _joint_floats(d: dt.DType, n: int, k: int) -> np.ndarray:
    """Operand ``k``'s side of ``JOINT_PAIRS``, cycled over ``n`` elements (operand 2 and on
    repeat operand 0's side, so three operands meet the same specials too)."""
    f = ml_dtypes.finfo(d.np_dtype)
    named = {"max": float(f.max), "-max": -float(f.max), "sub": float(f.smallest_subnormal),
             "-sub": -float(f.smallest_subnormal)}
    side = [named.get(p[k % 2], p[k % 2]) if isinstance(p[k % 2], str) else p[k % 2] for p in JOINT_PAIRS]
    with np.errstate(all="ignore"):
        pool = np.array(side, dtype=np.float64).astype(d.np_dtype)   # inf -> NaN where d has no inf
    return pool[np.arange(n) % pool.size]


def _extremes(d: dt.DType, n: int, k: int) -> np.ndarray:
    """The integer specials cycled, operand ``k`` shifted by one more every ``size**k``
    elements, so every pair of extremes meets within ``size**2`` elements."""
    pool = int_specials(d)
    i = np.arange(n)
    return pool[(i + (i // pool.size ** k if k else 0)) % pool.size]


def _overflowing(d: dt.DType, n: int, k: int) -> np.ndarray:
    """+a, +a, -a, -a with a = 3/4 of ``d``'s max: a partial sum in ``d`` overflows, the exact
    sum (and one in f32) stays finite."""
    a = 0.75 * float(ml_dtypes.finfo(d.np_dtype).max)
    return np.array([a, a, -a, -a], dtype=np.float64)[np.arange(n) % 4].astype(d.np_dtype)


def situation_inputs(case: Case, situation: str, seed: int = 7) -> dict[str, Any]:
    """Fixed inputs for one value situation of ``coverage.VALUE_SITUATIONS``: ``joint-specials``
    (float operands meet +0/-0, NaN/NaN, NaN/number ... at the same positions), ``ties``
    (float and integer rounding ties), ``int-extremes`` (integer extremes in every operand),
    ``overflow`` (sums that overflow the input type). Arrays the situation says nothing about
    are ordinary; globals are strided views."""
    bound = index_bound(case)
    count = iter(range(seed, seed + 1000))
    position = iter(range(1000))

    def array(d: dt.DType, shape: tuple[int, ...]) -> np.ndarray:
        k, s = next(position), next(count)
        n = int(np.prod(shape, dtype=np.int64))
        if d in dt.CODED:            # raw codes (every code, NaN and ±inf among them) in any situation
            return build(d, shape, "ordinary", s, bound)
        if situation == "joint-specials" and d.is_float:
            flat = _joint_floats(d, n, k)
        elif situation == "int-extremes" and d.is_int:
            flat = _extremes(d, n, k)
        elif situation == "overflow" and d.is_float:
            flat = _overflowing(d, n, k)
        else:
            mode = {"float": "boundary" if situation == "ties" else "ordinary",
                    "int": "boundary" if situation == "ties" else "small", "bool": "random"}[_kind(d)]
            return build(d, shape, mode, s, bound)
        return np.ascontiguousarray(flat.reshape(shape))

    def global_arg(t: GlobalType) -> GlobalArg:
        shape = tuple(s if s is not None else 64 for s in t.shape)
        strides, size = _layout(t, shape, 3)
        return GlobalArg(array(t.dtype, (1 + size + 3,)), 1, shape, strides)

    def scalar(t: ScalarType, example: Any) -> Any:      # a NaN scalar meets the NaNs in the tiles
        return float("nan") if situation == "joint-specials" and t.is_float else example_scalar(t, example)

    return _parameters(case, array, global_arg, scalar)
