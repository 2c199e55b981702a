"""Call arguments on both backends: every bad object, scalar, layout or block count is a
PTOError with the same code on reference and llvm, raised before any block runs (the caller's
arrays untouched); what both accept gives the same numbers. Ends with a seeded fuzz loop."""
from __future__ import annotations

import random
import sys
import threading
import tracemalloc
from typing import Any, Callable

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import openpto as pto
from openpto.assembler.bytecode import load_bytes
from openpto.backends.blocks import MAX_BLOCK_NUM, run_blocks
from openpto.isa import PTOError

BACKENDS = ("reference", "llvm")
T = "!pto.tile<4x8xf32>"
G = "!pto.memref<?x8xf32>"

# a tile kernel: %b = %a + %s
TILE_K = f"""
kernel @k(%a : {T}, %b : {T}, %s : f32) {{
  %b = tadds %a, %s : ({T}, f32) -> {T}
}}
"""

# a global kernel over %n rows (4 at a time): y = x * 2 + 1
GLOBAL_K = f"""
kernel @g(%x : {G}, %y : {G}, %n : index) {{
  .tile %t : {T}
  scf.for %i = 0 to %n step 4 {{
    %t = tload %x[%i, 0] : ({G}) -> {T}
    %t = tmuls %t, 2.0 : ({T}, f32) -> {T}
    %t = tadds %t, 1.0 : ({T}, f32) -> {T}
    tstore %y[%i, 0], %t : ({G}, {T})
  }}
}}
"""

# writes the global %y first, then the tile %b: a half-run would leave %y written
TWO_OUTPUTS_K = f"""
kernel @two(%x : {G}, %y : {G}, %a : {T}, %b : {T}) {{
  .tile %t : {T}
  %t = tload %x[0, 0] : ({G}) -> {T}
  tstore %y[0, 0], %t : ({G}, {T})
  %b = tadds %a, 1.0 : ({T}, f32) -> {T}
}}
"""

_EXES: dict[tuple[str, str, int], Any] = {}


def exe(text: str, backend: str, threads: int = 1) -> Any:
    key = (text, backend, threads)
    if key not in _EXES:
        _EXES[key] = pto.compile(pto.parse(text, filename="t.pto"), backend, "cpu", threads=threads)
    return _EXES[key]


def outcome(text: str, backend: str, make_args: Callable[[], tuple[tuple, dict]],
            threads: int = 1) -> tuple[str | None, Any]:
    """(code, None) when the run raises a PTOError, else (None, the arrays it wrote)."""
    args, kw = make_args()
    try:
        res = exe(text, backend, threads).run(text.split("@")[1].split("(")[0], *args, **kw)
    except PTOError as e:
        return e.code, None
    return None, {n: np.array(v) for n, v in res.outputs.items()}


def same_code(text: str, make_args: Callable[[], tuple[tuple, dict]]) -> str:
    codes = {b: outcome(text, b, make_args)[0] for b in BACKENDS}
    assert codes["reference"] == codes["llvm"], codes
    assert codes["reference"] is not None
    return codes["reference"]


def tile_args(a: Any, b: Any = None, s: Any = 1.0, **kw: Any) -> Callable[[], tuple[tuple, dict]]:
    return lambda: ((a, np.zeros((4, 8), np.float32) if b is None else b, s), kw)


# ------------------------------------------------------------------ read-only inputs and outputs

@pytest.mark.parametrize("backend", BACKENDS)
def test_read_only_non_contiguous_input_tile_is_not_written_back(backend: str) -> None:
    base = np.arange(64, dtype=np.float32).reshape(8, 8)
    a = base[::2]                              # (4, 8), not contiguous
    a.flags.writeable = False
    b = np.zeros((4, 8), np.float32)
    exe(TILE_K, backend)(a, b, 0.5)
    np.testing.assert_array_equal(b, base[::2] + np.float32(0.5))
    np.testing.assert_array_equal(base, np.arange(64, dtype=np.float32).reshape(8, 8))


@pytest.mark.parametrize("backend", BACKENDS)
def test_written_non_contiguous_tile_is_written_back(backend: str) -> None:
    out = np.zeros((8, 8), np.float32)
    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    exe(TILE_K, backend)(a, out[::2], 1.0)
    np.testing.assert_array_equal(out[::2], a + 1)
    assert not out[1::2].any()


@pytest.mark.parametrize("backend", BACKENDS)
def test_read_only_written_array_refused_before_anything_runs(backend: str) -> None:
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    y = np.zeros((4, 8), np.float32)
    a = np.ones((8, 8), np.float32)[::2]
    b = np.zeros((8, 8), np.float32)[::2]
    b.flags.writeable = False
    with pytest.raises(PTOError) as e:
        exe(TWO_OUTPUTS_K, backend)(x, y, a, b)
    assert e.value.code == "RUNTIME_ARG_READONLY" and "%b" in e.value.message
    assert not y.any()                         # %y, written first by the kernel, untouched


# ------------------------------------------------------------------ objects numpy cannot view

class Interface:
    """An object that offers only the array interface given (``keep``: the array it describes,
    kept alive so the interface's address stays valid)."""

    def __init__(self, keep: np.ndarray | None = None, **iface: Any) -> None:
        self.keep = keep
        self.__array_interface__ = iface


class Raising:
    @property
    def __array_interface__(self) -> dict:
        raise RuntimeError("interface exploded")


class BadDLPack:
    def __dlpack__(self, *a: Any, **k: Any) -> Any:
        raise KeyError("no capsule")

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


class ArrayOnly:
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.zeros((4, 8), np.float32)


def _iface(**over: Any) -> Interface:
    good = {"shape": (4, 8), "typestr": "<f4", "data": (0, False), "version": 3}
    return Interface(**{**good, **over})


BROKEN = {
    "null data": _iface(),
    "negative shape": _iface(shape=(-4, 8), data=(np.zeros(32, np.float32).ctypes.data, False)),
    "bad typestr": _iface(typestr="<q9", data=(np.zeros(32, np.float32).ctypes.data, False)),
    "shape not a tuple": _iface(shape="4x8"),
    "no data key": Interface(shape=(4, 8), typestr="<f4", version=3, strides="x"),
    "raising property": Raising(),
    "raising __dlpack__": BadDLPack(),
    "__array__ only": ArrayOnly(),
    "list": [[0.0] * 8] * 4,
    "None": None,
    "string": "x",
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_array_objects_are_type_errors_on_both_backends(name: str) -> None:
    assert same_code(TILE_K, tile_args(BROKEN[name])) == "RUNTIME_ARG_TYPE"
    assert same_code(GLOBAL_K, lambda: ((BROKEN[name], np.zeros((4, 8), np.float32), 4), {})) == "RUNTIME_ARG_TYPE"


def test_wrong_arrays_get_shape_and_dtype_codes() -> None:
    y = np.zeros((4, 8), np.float32)
    cases = {
        "RUNTIME_ARG_SHAPE": [np.float32(1.0) * np.ones(()), np.zeros((4, 9), np.float32)],
        "RUNTIME_ARG_DTYPE": [np.zeros((4, 8), object), np.zeros((4, 8), ">f4"), np.zeros((4, 8), np.float64)],
    }
    for code, objs in cases.items():
        for obj in objs:
            assert same_code(GLOBAL_K, lambda: ((obj, y, 4), {})) == code, obj
    assert same_code(TILE_K, tile_args(np.zeros((4, 8), ">f4"))) == "RUNTIME_ARG_TYPE"


# ------------------------------------------------------------------ scalars

class LyingInt(int):
    def __int__(self) -> int:
        return 0

    def __index__(self) -> int:
        return 0


@pytest.mark.parametrize("value,code", [
    (True, "RUNTIME_ARG_TYPE"), (np.bool_(True), "RUNTIME_ARG_TYPE"), (4.0, "RUNTIME_ARG_TYPE"),
    (float("nan"), "RUNTIME_ARG_TYPE"), (np.float32(4), "RUNTIME_ARG_TYPE"), ("4", "RUNTIME_ARG_TYPE"),
    (None, "RUNTIME_ARG_TYPE"), (4 + 0j, "RUNTIME_ARG_TYPE"), (np.array([4]), "RUNTIME_ARG_TYPE"),
    (1 << 63, "RUNTIME_ARG_VALUE"), (-(1 << 63) - 1, "RUNTIME_ARG_VALUE"), (10 ** 400, "RUNTIME_ARG_VALUE"),
])
def test_bad_index_scalars(value: Any, code: str) -> None:
    x = np.ones((4, 8), np.float32)
    assert same_code(GLOBAL_K, lambda: ((x, np.zeros_like(x), value), {})) == code


def test_scalars_are_taken_by_value_not_through_their_methods() -> None:
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    for backend in BACKENDS:
        for n in (LyingInt(4), np.int64(4), np.array(4, np.int32)):
            y = np.zeros_like(x)
            exe(GLOBAL_K, backend)(x, y, n)
            np.testing.assert_array_equal(y, x * 2 + 1)
    assert same_code(TILE_K, tile_args(np.ones((4, 8), np.float32), s=10 ** 400)) == "RUNTIME_ARG_VALUE"
    assert same_code(TILE_K, tile_args(np.ones((4, 8), np.float32), s=True)) == "RUNTIME_ARG_TYPE"


# ------------------------------------------------------------------ layouts

def _raw_f32(shape: tuple[int, ...], byte_strides: tuple[int, ...], offset: int = 0) -> np.ndarray:
    buf = np.zeros(4096, np.uint8)
    return np.ndarray(shape, np.float32, buf, offset=offset, strides=byte_strides)


def test_layout_mistakes_get_the_same_code_on_both_backends() -> None:
    y = np.zeros((4, 8), np.float32)
    cases = {
        "RUNTIME_ARG_STRIDES": _raw_f32((4, 8), (34, 4)),                 # not whole elements
        "RUNTIME_ARG_ALIGN": _raw_f32((4, 8), (36, 4), offset=1),          # misaligned address
        "RUNTIME_ARG_SHAPE": as_strided(np.zeros(8, np.float32), (4, 8), (1 << 62, 4)),  # span > i64
    }
    for code, x in cases.items():
        assert same_code(GLOBAL_K, lambda: ((x, y, 0), {})) == code, code
    assert same_code(TILE_K, tile_args(_raw_f32((4, 8), (34, 4)))) == "RUNTIME_ARG_STRIDES"


def test_overlapping_outputs_are_refused() -> None:
    x = np.ones((4, 8), np.float32)
    zero_stride = as_strided(np.zeros(8, np.float32), (4, 8), (0, 4))      # writeable, rows alias
    assert same_code(GLOBAL_K, lambda: ((x, zero_stride, 4), {})) == "RUNTIME_ARG_OVERLAP"
    shared = np.zeros((4, 8), np.float32)
    assert same_code(TILE_K, tile_args(shared, shared)) == "RUNTIME_ARG_OVERLAP"
    buf = np.zeros((5, 8), np.float32)
    assert same_code(TILE_K, tile_args(buf[:4], buf[1:])) == "RUNTIME_ARG_OVERLAP"
    assert not zero_stride.any() and not buf.any()


def test_layouts_both_backends_accept_give_equal_results() -> None:
    base = np.arange(400, dtype=np.float32).reshape(20, 20)
    inputs = {
        "negative strides": base[::-1, ::-1][:8, :8],
        "zero strides": as_strided(base, (8, 8), (0, 4)),
        "fortran": np.asfortranarray(base[:8, :8]),
        "strided": base[::2, ::2][:8, :8],
    }
    for name, x in inputs.items():
        for out in (np.zeros((8, 8), np.float32), np.zeros((16, 16), np.float32, order="F")[::-2, ::2]):
            results = {}
            for backend in BACKENDS:
                y = np.array(out) if out.flags.c_contiguous else np.zeros((16, 16), np.float32, order="F")[::-2, ::2]
                exe(GLOBAL_K, backend)(x, y, 8)
                results[backend] = np.array(y)
            np.testing.assert_array_equal(results["reference"], x * 2 + 1, err_msg=name)
            np.testing.assert_array_equal(results["llvm"], results["reference"], err_msg=name)


def test_interleaved_outputs_that_do_not_overlap_are_written() -> None:
    """Strides (2, 5) elements: the sorted-stride rule cannot prove these 32 elements distinct
    (5 < 1 + 3 * 2), but they are, so both backends write them (decided exactly)."""
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    for backend in BACKENDS:
        buf = np.zeros(64, np.float32)
        y = as_strided(buf, (4, 8), (8, 20))
        exe(GLOBAL_K, backend)(x, y, 4)
        np.testing.assert_array_equal(y, x * 2 + 1, err_msg=backend)
        assert np.count_nonzero(buf) == 32
    buf = np.zeros(64, np.float32)
    assert same_code(GLOBAL_K, lambda: ((x, as_strided(buf, (4, 8), (8, 16)), 4), {})) == "RUNTIME_ARG_OVERLAP"


def test_empty_outputs_are_not_overlapping() -> None:
    for backend in BACKENDS:
        x = np.zeros((0, 8), np.float32)
        exe(GLOBAL_K, backend)(x, as_strided(np.zeros(8, np.float32), (0, 8), (0, 0)), 0)


def test_same_global_as_input_and_output_updates_in_place() -> None:
    for backend in BACKENDS:
        x = np.arange(32, dtype=np.float32).reshape(4, 8)
        exe(GLOBAL_K, backend)(x, x, 4)
        np.testing.assert_array_equal(x, np.arange(32, dtype=np.float32).reshape(4, 8) * 2 + 1)


# ------------------------------------------------------------------ block_num

@pytest.mark.parametrize("bad", [0, -1, MAX_BLOCK_NUM + 1, 1 << 70, 2.0, True, "4", None, np.float64(2)])
def test_block_num_outside_the_limit_is_refused(bad: Any) -> None:
    x = np.ones((4, 8), np.float32)
    for backend in BACKENDS:
        y = np.zeros_like(x)
        with pytest.raises(PTOError) as e:
            exe(GLOBAL_K, backend).run("g", x, y, 4, block_num=bad)
        assert e.value.code == "PTO_BLOCK_NUM" and str(MAX_BLOCK_NUM) in str(e.value.expected)
        assert not y.any()


def test_numpy_integer_block_num_is_accepted() -> None:
    x = np.ones((4, 8), np.float32)
    for backend in BACKENDS:
        y = np.zeros_like(x)
        res = exe(GLOBAL_K, backend).run("g", x, y, 4, block_num=np.int32(3))
        assert res.counters["TLOAD"] == 3 and (y == 3).all()


def test_blocks_are_submitted_lazily() -> None:
    lock, state = threading.Lock(), {"started": 0}

    def block(b: int) -> int:
        with lock:
            state["started"] += 1
        return b

    got = list(run_blocks(block, 10 ** 9, workers=2, failed=lambda b: b == 5))
    assert got == [0, 1, 2, 3, 4, 5] and state["started"] <= 6 + 4


def test_many_blocks_take_bounded_memory() -> None:
    x = np.ones((4, 8), np.float32)
    y = np.zeros_like(x)
    for backend, blocks in (("llvm", 40_000), ("reference", 4_000)):
        e = exe(GLOBAL_K, backend, threads=2)
        e.run("g", x, y, 4, block_num=2)     # warm
        tracemalloc.start()
        try:
            res = e.run("g", x, y, 4, block_num=blocks)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert res.counters["TLOAD"] == blocks
        assert peak < 1_000_000, (backend, peak)


# ------------------------------------------------------------------ attributes beyond int64

_I2C_DST, _I2C_SRC = "!pto.tile<4x24xf32, loc=left>", "!pto.tile<16x8xf32, loc=mat, valid=16x5>"
_I2C_ATTRS = {"height": 4, "width": 4, "kernel_h": 3, "kernel_w": 2, "stride_w": 2, "dilation_w": 2,
              "pad_top": 1, "pad_bottom": 1, "pad_left": 2, "pad_right": 1, "pad_value": -7}


def img2col(**over: int) -> str:
    attrs = ", ".join(f"{k} = {v}" for k, v in {**_I2C_ATTRS, **over}.items())
    return (f"kernel @k(%dst : {_I2C_DST}, %src : {_I2C_SRC}) {{\n"
            f"  %dst = timg2col %src, 0, 0 {{{attrs}}} : ({_I2C_SRC}, index, index) -> {_I2C_DST}\n}}\n")


def test_img2col_kernel_runs_as_written() -> None:
    for backend in BACKENDS:
        exe(img2col(), backend)(np.zeros((4, 24), np.float32), np.ones((16, 8), np.float32))


@pytest.mark.parametrize("attr,value,code", [
    ("pad_top", 99999999999999999999999, "STRUCT_ATTR_VALUE"),
    ("pad_value", -(1 << 63) - 1, "STRUCT_ATTR_VALUE"),
    ("pad_value", 1 << 63, "STRUCT_ATTR_VALUE"),
    ("pad_top", 1 << 62, "STRUCT_ATTR"),          # fits i64, its im2col arithmetic does not
    ("stride_h", (1 << 63) - 1, "STRUCT_ATTR"),
])
def test_attribute_values_beyond_int64_are_rejected_for_every_backend(attr: str, value: int, code: str) -> None:
    m = pto.parse(img2col(**{attr: value}), filename="t.pto")
    for module in (m, load_bytes(m.to_bytes())):       # text and bytecode alike
        with pytest.raises(PTOError) as e:
            pto.check(module, profile="cpu")
        assert e.value.code == code
        for backend in BACKENDS:
            with pytest.raises(PTOError) as e:
                pto.compile(module, backend, "cpu")
            assert e.value.code == code


# ------------------------------------------------------------------ seeded fuzz over both backends

def _random_array(rng: random.Random, shape: tuple[int, int]) -> np.ndarray:
    """A float32-ish array of about ``shape`` in one of many layouts and dtypes."""
    if rng.random() < 0.08:
        shape = (shape[0] + rng.choice((-1, 1, 4)), shape[1])
    if rng.random() < 0.08:
        dtype = rng.choice((np.float64, np.int32, np.float16, ">f4", object, np.bool_))
    else:
        dtype = np.float32
    big = np.arange(4 * shape[0] * shape[1] + 64, dtype=np.float64).reshape(-1) % 97 - 40
    kind = rng.choices(("c", "f", "flip", "step", "zero", "bytes", "misaligned", "readonly", "0d"),
                       (8, 2, 2, 2, 1, 1, 1, 1, 1))[0]
    rows, cols = max(shape[0], 0), shape[1]
    if kind == "0d":
        return np.array(1.5, dtype=dtype)
    a = big[: 4 * rows * cols].reshape(2 * rows, 2 * cols).astype(dtype)
    if kind == "c":
        return np.ascontiguousarray(a[:rows, :cols])
    if kind == "f":
        return np.asfortranarray(a[:rows, :cols])
    if kind == "flip":
        return a[::-1, ::-1][:rows, :cols]
    if kind == "step":
        return a[::2, ::2]
    if kind == "zero":
        return as_strided(a, (rows, cols), (0, a.itemsize))
    if kind == "readonly":
        r = np.ascontiguousarray(a[:rows, :cols])
        r.flags.writeable = False
        return r
    raw = np.zeros(a.nbytes * 2 + 16, np.uint8)
    item = a.itemsize
    if kind == "bytes" and item > 1:
        return np.ndarray((rows, cols), a.dtype, raw, strides=(cols * item + 1, item))
    if kind == "misaligned" and item > 1:
        return np.ndarray((rows, cols), a.dtype, raw, offset=1, strides=(cols * item, item))
    return np.ascontiguousarray(a[:rows, :cols])


def _wrap(rng: random.Random, a: np.ndarray) -> Any:
    """The array itself, or an object that hands it (or a broken description of it) over."""
    choice = rng.random()
    if choice < 0.85:
        return a
    if choice < 0.93:
        return Interface(keep=a, **a.__array_interface__)
    return rng.choice(list(BROKEN.values()))


def _random_scalar(rng: random.Random, sensible: Any) -> Any:
    return rng.choice([sensible] * 20 + [True, 1.5, float("nan"), 1 << 63, -1, 10 ** 30, "1",
                                        np.int64(sensible) if isinstance(sensible, int) else np.float32(sensible),
                                        None])


def _snapshot(objs: list[Any]) -> list[tuple[Any, bytes] | None]:
    out = []
    for o in objs:
        if isinstance(o, Interface) and o.keep is not None:
            o = o.keep
        if isinstance(o, np.ndarray) and o.dtype != object:
            base = o
            while isinstance(base.base, np.ndarray):
                base = base.base
            out.append((base, base.tobytes()))
        else:
            out.append(None)
    return out


def _random_case(rng: random.Random) -> tuple[str, list[Any], int]:
    if rng.random() < 0.5:
        a = _wrap(rng, _random_array(rng, (4, 8)))
        b = _wrap(rng, _random_array(rng, (4, 8))) if rng.random() < 0.85 else a
        return TILE_K, [a, b, _random_scalar(rng, 0.25)], 1
    rows = rng.choice((4, 8, 12))
    x = _wrap(rng, _random_array(rng, (rows, 8)))
    y = _wrap(rng, _random_array(rng, (rows, 8))) if rng.random() < 0.85 else x
    blocks = rng.choice([1] * 6 + [2, 3, 0, MAX_BLOCK_NUM + 1, 2.0])
    return GLOBAL_K, [x, y, _random_scalar(rng, rng.choice((rows, rows, rows - 4, rows + 4)))], blocks


def _fresh(objs: list[Any]) -> list[Any]:
    """An independent copy of the argument list (same layouts), so both backends see equal data."""
    memo: dict[int, Any] = {}
    out = []
    for o in objs:
        if id(o) in memo:
            out.append(memo[id(o)])
            continue
        if isinstance(o, Interface) and o.keep is not None:
            c = _fresh([o.keep])[0]
            memo[id(o)] = Interface(keep=c, **c.__array_interface__)
            out.append(memo[id(o)])
        elif isinstance(o, np.ndarray) and o.ndim == 2 and o.dtype != object:
            base = o
            while isinstance(base.base, np.ndarray):
                base = base.base
            root = base.copy()
            off = o.__array_interface__["data"][0] - base.__array_interface__["data"][0]
            c = np.ndarray(o.shape, o.dtype, root, offset=off, strides=o.strides) \
                if isinstance(root, np.ndarray) and root.flags.c_contiguous and off >= 0 else o.copy()
            if not o.flags.writeable:
                c.flags.writeable = False
            memo[id(o)] = c
            out.append(c)
        else:
            out.append(o)
    return out


def test_fuzz_arguments_same_code_or_same_result_on_both_backends() -> None:
    """Random argument objects, layouts, dtypes, scalars and block counts: both backends raise a
    PTOError with the same code, or both succeed with equal outputs; a RUNTIME_ARG_* / PTO_BLOCK_NUM
    refusal leaves every caller array untouched; no other exception escapes."""
    rng = random.Random(20240612)
    seen: dict[str | None, int] = {}
    for case in range(250):
        text, objs, blocks = _random_case(rng)
        kernel = "k" if text is TILE_K else "g"
        results = {}
        for backend in BACKENDS:
            args = _fresh(objs)
            before = _snapshot(args)
            try:
                res = exe(text, backend).run(kernel, *args, block_num=blocks)
                results[backend] = (None, {n: np.array(v) for n, v in res.outputs.items()})
            except PTOError as e:
                results[backend] = (e.code, None)
                if e.code.startswith("RUNTIME_ARG") or e.code == "PTO_BLOCK_NUM":
                    for snap in before:
                        if snap is not None:
                            assert snap[0].tobytes() == snap[1], (case, backend, e.code)
        (ref_code, ref_out), (llvm_code, llvm_out) = results["reference"], results["llvm"]
        assert ref_code == llvm_code, (case, results)
        if ref_code is None:
            for name in ref_out:
                np.testing.assert_array_equal(llvm_out[name], ref_out[name], err_msg=f"case {case}")
        seen[ref_code] = seen.get(ref_code, 0) + 1
    # the loop reaches successes and the main refusals, not one path only
    for code in (None, "RUNTIME_ARG_TYPE", "RUNTIME_ARG_DTYPE", "RUNTIME_ARG_SHAPE", "RUNTIME_ARG_READONLY",
                 "PTO_BLOCK_NUM"):
        assert seen.get(code, 0) > 0, seen
    print(sorted(seen.items(), key=lambda kv: str(kv[0])), file=sys.stderr)


def test_foreign_kernel_names_and_block_counts_are_diagnostics() -> None:
    """An unhashable or array-like kernel name, a block count whose __index__ raises anything:
    PTO_KERNEL / PTO_BLOCK_NUM on both backends, never the foreign exception."""
    class BadIndex:
        def __index__(self) -> int:
            raise ValueError("boom")

        def __repr__(self) -> str:
            raise RuntimeError("no repr either")

    x = np.zeros((4, 8), np.float32)
    for backend in BACKENDS:
        e = exe(TILE_K, backend)
        for name in (np.array(["k", "x"]), ["k"], 3):
            with pytest.raises(pto.PTOError) as info:
                e.run(name, x, x.copy(), 1.0)
            assert info.value.code == "PTO_KERNEL"
        with pytest.raises(pto.PTOError) as info:
            e.run("k", x, x.copy(), 1.0, block_num=BadIndex())
        assert info.value.code == "PTO_BLOCK_NUM"
