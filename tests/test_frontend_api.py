"""Every op of the table through the API: captured under its canonical name and interpreted,
against numpy written here."""
from __future__ import annotations

import numpy as np
import pytest

import openpto.frontend as pto
from openpto.frontend import ops as op_table
from openpto.isa import dtypes as dt

RNG = np.random.default_rng(7)


def f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def names(jf, *args) -> list[str]:  # noqa: ANN001
    return [o.name for o in jf.graph(*args).walk()]


def test_the_package_spells_pypto_names() -> None:
    assert pto.frontend is pto and pto.frontend.jit is pto.jit
    assert (pto.DT_FP32, pto.DT_FP16, pto.DT_BF16, pto.DT_INT8, pto.DT_INT32, pto.DT_BOOL) == \
        (dt.F32, dt.F16, dt.BF16, dt.I8, dt.I32, dt.I1)
    assert set(op_table.KINDS) == {o.kind for o in op_table.OPS.values()}
    assert op_table.names_of("reduce") == ("sum", "amax", "amin", "mean")


BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
          "maximum": np.maximum, "minimum": np.minimum}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_ops_broadcast_and_take_scalars_on_either_side(name: str) -> None:
    f = getattr(pto, name)

    @pto.jit
    def k(a: pto.Tensor((4, 6), pto.DT_FP32), row: pto.Tensor((1, 6), pto.DT_FP32),
          col: pto.Tensor((4, 1), pto.DT_FP32)):
        return f(a, row), f(col, a), f(a, 1.5), f(2, a), f(col, row)

    a, row, col = f32(4, 6), f32(1, 6), f32(4, 1) + 3
    assert names(k) == [name] * 5
    got = k.interpret(a, row, col)
    want = (BINARY[name](a, row), BINARY[name](col, a), BINARY[name](a, np.float32(1.5)),
            BINARY[name](np.float32(2), a), BINARY[name](col, row))
    for g_, w in zip(got, want):
        assert g_.shape == w.shape and g_.dtype == np.float32
        np.testing.assert_allclose(g_, w, rtol=1e-6)


def test_integer_arithmetic_wraps_and_divides_toward_zero() -> None:
    @pto.jit
    def k(a: pto.Tensor((6,), pto.DT_INT32), b: pto.Tensor((6,), pto.DT_INT32)):
        return a / b, a * b, a + 2147483647

    a = np.array([7, -7, 7, -7, 5, 2**31 - 1], np.int32)
    b = np.array([2, 2, -2, -2, 0, 2], np.int32)
    q, p, s = k.interpret(a, b)
    np.testing.assert_array_equal(q, [3, -3, -3, 3, -1, 1073741823])
    np.testing.assert_array_equal(p, [14, -14, -14, 14, 0, -2])          # (2^31 - 1) * 2 wraps to -2
    np.testing.assert_array_equal(s, (a.astype(np.int64) + 2147483647).astype(np.int32))


def test_operators_record_the_same_ops() -> None:
    @pto.jit
    def k(a: pto.Tensor((3, 4), pto.DT_FP32), b: pto.Tensor((4, 5), pto.DT_FP32)):
        c = (a + 1) * 2 - a / 4
        return c @ b, -a, abs(a), 1 - a, 3 / (a * a + 1)

    a, b = f32(3, 4), f32(4, 5)
    assert names(k) == ["add", "mul", "div", "sub", "matmul", "neg", "abs", "sub", "mul", "add", "div"]
    mm, n, ab, r, d = k.interpret(a, b)
    c = (a + 1) * 2 - a / 4
    np.testing.assert_allclose(mm, c.astype(np.float64) @ b, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(n, -a)
    np.testing.assert_array_equal(ab, np.abs(a))
    np.testing.assert_allclose(r, 1 - a, rtol=1e-6)
    np.testing.assert_allclose(d, 3 / (a * a + 1), rtol=1e-6)


UNARY = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
         "abs": np.abs, "neg": np.negative, "relu": lambda x: np.maximum(x, 0), "reciprocal": lambda x: 1 / x}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_ops(name: str) -> None:
    f = getattr(pto, name)

    @pto.jit
    def k(x: pto.Tensor((5, 8), pto.DT_FP32)):
        return f(x)

    x = np.abs(f32(5, 8)) + 0.25 if name in ("log", "sqrt", "rsqrt") else f32(5, 8)
    assert names(k) == [name]
    np.testing.assert_allclose(k.interpret(x), UNARY[name](x.astype(np.float64)), rtol=1e-6)


def test_unary_in_half_precision_rounds_once_to_the_dtype() -> None:
    @pto.jit
    def k(x: pto.Tensor((64,), pto.DT_BF16)):
        return pto.exp(x)

    x = np.linspace(-3, 3, 64).astype(dt.BF16.np_dtype)
    y = k.interpret(x)
    assert y.dtype == dt.BF16.np_dtype
    np.testing.assert_array_equal(y, np.exp(x.astype(np.float64)).astype(np.float32).astype(dt.BF16.np_dtype))


@pytest.mark.parametrize("name,f", [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
                                    ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal)])
def test_compares_give_masks_and_where_selects(name: str, f) -> None:  # noqa: ANN001
    op = getattr(pto, name)

    @pto.jit
    def k(a: pto.Tensor((4, 6), pto.DT_INT32), b: pto.Tensor((1, 6), pto.DT_INT32)):
        m = op(a, b)
        return m, pto.where(m, a, b), pto.where(op(a, 0), 1, a)

    a = RNG.integers(-3, 4, (4, 6)).astype(np.int32)
    b = RNG.integers(-3, 4, (1, 6)).astype(np.int32)
    assert names(k) == [name, "where", name, "where"]
    m, w, w2 = k.interpret(a, b)
    assert m.dtype == np.bool_
    np.testing.assert_array_equal(m, f(a, b))
    np.testing.assert_array_equal(w, np.where(f(a, b), a, b))
    np.testing.assert_array_equal(w2, np.where(f(a, 0), 1, a))


def test_comparison_operators() -> None:
    @pto.jit
    def k(a: pto.Tensor((8,), pto.DT_FP32), b: pto.Tensor((8,), pto.DT_FP32)):
        return a < b, a <= 0, a > b, a >= b, a == b, a != b

    a, b = f32(8), f32(8)
    b[:3] = a[:3]
    assert names(k, a, b) == ["lt", "le", "gt", "ge", "eq", "ne"]
    for got, want in zip(k.interpret(a, b), (a < b, a <= 0, a > b, a >= b, a == b, a != b)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name,f", [("sum", np.sum), ("amax", np.max), ("amin", np.min), ("mean", np.mean)])
@pytest.mark.parametrize("axis", [0, 1, -1, -3])
@pytest.mark.parametrize("keepdim", [False, True])
def test_reductions_along_an_axis(name: str, f, axis: int, keepdim: bool) -> None:  # noqa: ANN001
    op = getattr(pto, name)

    @pto.jit
    def k(x: pto.Tensor((3, 4, 5), pto.DT_FP32)):
        return op(x, axis, keepdim)

    x = f32(3, 4, 5)
    fn = k.graph()
    (o,) = fn.walk()
    assert o.name == name and o.attrs == {"axis": axis % 3, "keepdim": keepdim}
    want = f(x.astype(np.float64), axis=axis, keepdims=keepdim)
    np.testing.assert_allclose(k.interpret(x), want, rtol=1e-6, atol=1e-6)


def test_row_single_aliases_record_last_axis_keepdim() -> None:
    @pto.jit
    def k(x: pto.Tensor((3, 7), pto.DT_INT32)):
        return pto.row_max_single(x), pto.row_sum_single(x), pto.row_min_single(x)

    x = RNG.integers(-50, 50, (3, 7)).astype(np.int32)
    fn = k.graph()
    assert [(o.name, o.attrs["axis"], o.attrs["keepdim"]) for o in fn.walk()] == \
        [("amax", 1, True), ("sum", 1, True), ("amin", 1, True)]
    mx, s, mn = k.interpret(x)
    np.testing.assert_array_equal(mx, x.max(1, keepdims=True))
    np.testing.assert_array_equal(s, x.sum(1, keepdims=True))
    np.testing.assert_array_equal(mn, x.min(1, keepdims=True))


def test_cast_rounds_saturates_and_converts() -> None:
    @pto.jit
    def k(x: pto.Tensor((8,), pto.DT_FP32), i: pto.Tensor((3,), pto.DT_INT32)):
        return (pto.cast(x, pto.DT_INT8), pto.cast(x, "i32", mode="trunc"), pto.cast(x, pto.DT_BOOL),
                pto.cast(i, pto.DT_FP16), pto.cast(i, pto.DT_INT8), x.astype(np.float16))

    x = np.array([1.5, 2.5, -1.5, 300.0, -300.0, np.nan, -0.4, 0.0], np.float32)
    i = np.array([70000, 255, -129], np.int32)
    a, b, c, d, e, h = k.interpret(x, i)
    np.testing.assert_array_equal(a, np.array([2, 2, -2, 127, -128, 0, 0, 0], np.int8))
    np.testing.assert_array_equal(b, np.array([1, 2, -1, 300, -300, 0, 0, 0], np.int32))
    np.testing.assert_array_equal(c, [True, True, True, True, True, True, True, False])
    np.testing.assert_array_equal(d, np.array([np.inf, 255, -129], np.float16))
    np.testing.assert_array_equal(e, np.array([112, -1, 127], np.int8))     # integers wrap
    assert h.dtype == np.float16
    np.testing.assert_array_equal(h, x.astype(np.float16))


@pytest.mark.parametrize("a_trans,b_trans", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_with_transposed_operands(a_trans: bool, b_trans: bool) -> None:
    sa = (6, 4) if a_trans else (4, 6)
    sb = (5, 6) if b_trans else (6, 5)

    @pto.jit
    def k(a: pto.Tensor(sa, pto.DT_FP16), b: pto.Tensor(sb, pto.DT_FP16)):
        return pto.matmul(a, b, a_trans=a_trans, b_trans=b_trans)

    a, b = f32(*sa).astype(np.float16), f32(*sb).astype(np.float16)
    y = k.interpret(a, b)
    aa = a.astype(np.float64).T if a_trans else a.astype(np.float64)
    bb = b.astype(np.float64).T if b_trans else b.astype(np.float64)
    assert y.dtype == np.float32 and y.shape == (4, 5)
    np.testing.assert_allclose(y, aa @ bb, rtol=1e-6, atol=1e-6)


def test_int8_matmul_accumulates_in_int32_and_batches() -> None:
    @pto.jit
    def k(a: pto.Tensor((2, 3, 16), pto.DT_INT8), b: pto.Tensor((2, 16, 4), pto.DT_INT8)):
        return a @ b, pto.matmul(a, b, pto.DT_INT32)

    a = RNG.integers(-128, 128, (2, 3, 16)).astype(np.int8)
    b = RNG.integers(-128, 128, (2, 16, 4)).astype(np.int8)
    y, y2 = k.interpret(a, b)
    want = np.matmul(a.astype(np.int64), b.astype(np.int64))
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, want)
    np.testing.assert_array_equal(y2, want)


def test_transpose_permute_and_reshape() -> None:
    @pto.jit
    def k(x: pto.Tensor((2, 3, 4), pto.DT_FP32)):
        return (pto.transpose(x), pto.transpose(x, 0, 2), pto.permute(x, [1, 2, 0]),
                pto.reshape(x, [6, -1]), x.reshape(4, 6))

    x = f32(2, 3, 4)
    fn = k.graph()
    assert [(o.name, o.attrs.get("perm") or o.attrs.get("shape")) for o in fn.walk()] == \
        [("transpose", (0, 2, 1)), ("transpose", (2, 1, 0)), ("transpose", (1, 2, 0)),
         ("reshape", (6, 4)), ("reshape", (4, 6)), ("assemble", None), ("assemble", None)]
    # a reshape names the parameter's elements: returning one copies it into a new result
    reshapes = [o.outputs[0] for o in fn.walk() if o.name == "reshape"]
    copies = [o for o in fn.walk() if o.name == "assemble"]
    assert [c.inputs[0] for c in copies] == reshapes
    assert [c.outputs[0] for c in copies] == fn.results[3:]
    t1, t2, p, r1, r2 = k.interpret(x)
    np.testing.assert_array_equal(t1, np.swapaxes(x, 1, 2))
    np.testing.assert_array_equal(t2, np.swapaxes(x, 0, 2))
    np.testing.assert_array_equal(p, np.transpose(x, (1, 2, 0)))
    np.testing.assert_array_equal(r1, x.reshape(6, 4))
    np.testing.assert_array_equal(r2, x.reshape(4, 6))


@pytest.mark.parametrize("backend", ["reference", "llvm"])
def test_a_returned_reshape_of_a_parameter_is_copied_into_the_result(backend: str) -> None:
    @pto.jit(backend=backend)
    def k(x: pto.Tensor((4, 8), pto.DT_FP32)):
        return pto.reshape(x, [8, 4])

    x = f32(4, 8)
    np.testing.assert_array_equal(k(x), x.reshape(8, 4))


def test_views_valid_shapes_indexing_and_assemble() -> None:
    @pto.jit
    def k(x: pto.Tensor((6, 8), pto.DT_FP32), out: pto.Tensor((6, 8), pto.DT_FP32)):
        v = pto.view(x, [4, 4], [2, 4], valid_shape=[3, 4])    # the last row is not there
        pto.assemble(v * 2, [0, 0], out)
        out[3:6, :] = x[0:3, :] + 1
        out[0, 4:8] = x[5, 0:4]
        out[1:3, 4:8] = 7.0
        return v, x[..., 1]

    x = f32(6, 8)
    out = np.zeros((6, 8), np.float32)
    fn = k.graph()
    v_op = next(fn.walk())
    assert v_op.attrs["valid_shape"] == (3, 4) and v_op.outputs[0].shape == (3, 4)
    assert {p.name: p.tensor.kind for p in fn.params} == {"x": "input", "out": "output"}
    v, col = k.interpret(x, out)
    want = np.zeros((6, 8), np.float32)
    want[0:3, 0:4] = x[2:5, 4:8] * 2
    want[3:6, :] = x[0:3, :] + 1
    want[0, 4:8] = x[5, 0:4]
    want[1:3, 4:8] = 7.0
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(v, x[2:5, 4:8])
    np.testing.assert_array_equal(col, x[:, 1])


def test_writes_through_a_view_reach_the_parameter() -> None:
    @pto.jit
    def k(x: pto.Tensor((4, 4), pto.DT_FP32), y: pto.Tensor((4, 4), pto.DT_FP32)):
        w = pto.view(y, [2, 4], [2, 0])
        w[:] = pto.view(x, [2, 4], [0, 0])

    x = f32(4, 4)
    y = np.zeros((4, 4), np.float32)
    fn = k.graph()
    assert {p.name: p.tensor.kind for p in fn.params} == {"x": "input", "y": "output"}
    k.interpret(x, y)
    np.testing.assert_array_equal(y[2:], x[:2])
    np.testing.assert_array_equal(y[:2], 0)


def test_topk_orders_values_and_breaks_ties_by_lower_index() -> None:
    @pto.jit
    def k(x: pto.Tensor((2, 6), pto.DT_FP32)):
        v, i = pto.topk(x, 3)
        s, j = pto.topk(x, 2, dim=0, largest=False)
        return v, i, s, j

    x = np.array([[1, 5, 5, 2, 5, 0], [3, 3, -1, 9, 3, 9]], np.float32)
    fn = k.graph()
    assert [o.name for o in fn.walk()] == ["topk", "topk"]
    assert [r.dtype for r in fn.results] == [dt.F32, dt.I32, dt.F32, dt.I32]
    v, i, s, j = k.interpret(x)
    np.testing.assert_array_equal(v, [[5, 5, 5], [9, 9, 3]])
    np.testing.assert_array_equal(i, [[1, 2, 4], [3, 5, 0]])
    np.testing.assert_array_equal(s, [[1, 3, -1, 2, 3, 0], [3, 5, 5, 9, 5, 9]])
    np.testing.assert_array_equal(j, [[0, 1, 1, 0, 1, 0], [1, 0, 0, 1, 0, 1]])


def test_full_zeros_ones_and_scalar_moves() -> None:
    @pto.jit
    def k(x: pto.Tensor((2, 3), pto.DT_INT16)):
        loc = pto.tensor([2, 3], pto.DT_INT16, "loc")
        loc[:] = 5
        return pto.full([2, 3], 4, pto.DT_INT16) + x, pto.zeros([2], pto.DT_FP16), pto.ones([1, 2]), loc + x

    x = np.arange(6, dtype=np.int16).reshape(2, 3)
    a, z, o, l_ = k.interpret(x)
    np.testing.assert_array_equal(a, x + 4)
    assert a.dtype == np.int16 and z.dtype == np.float16 and o.dtype == np.float32
    np.testing.assert_array_equal(z, [0, 0])
    np.testing.assert_array_equal(o, [[1, 1]])
    np.testing.assert_array_equal(l_, x + 5)


def test_run_time_scalars_in_arithmetic_and_sym_helpers() -> None:
    @pto.jit
    def k(x: pto.Tensor((pto.DYNAMIC, 4), pto.DT_FP32)):
        n = x.shape[0]
        return x * n + pto.max(n, 2) - pto.min(n, 3)

    for rows in (1, 5):
        x = f32(rows, 4)
        np.testing.assert_allclose(k.interpret(x), x * rows + max(rows, 2) - min(rows, 3), rtol=1e-6)


def test_unknown_dtype_is_an_attribute_error_and_a_frontend_error() -> None:
    from openpto.isa.diagnostics import FrontendError
    assert not hasattr(pto, "DT_FP128")
    with pytest.raises(FrontendError) as e:
        pto.DT_FP64  # noqa: B018
    assert e.value.code == "FRONT_DTYPE_UNKNOWN" and "DT_FP32" in str(e.value.expected)


# --------------------------------------------------------------------------------------------
# Python spellings with no tensor op, numpy on proxies, negative indices (review C)

def test_squares_and_numpy_ufuncs_record_the_pto_ops() -> None:
    @pto.jit
    def k(x: pto.Tensor((4, 6), pto.DT_FP32)):
        return x ** 2, np.exp(x), np.maximum(x, 0.5), np.float32(3.0) * x, np.negative(x)

    x = f32(4, 6)
    assert names(k, x) == ["mul", "exp", "maximum", "mul", "neg"]
    got = k.interpret(x)
    want = (x * x, np.exp(x.astype(np.float64)), np.maximum(x, 0.5), 3 * x, -x)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_negative_indices_and_slices_count_from_the_end() -> None:
    @pto.jit
    def k(x: pto.Tensor((6, 8), pto.DT_FP32)):
        return x[-1] + 0.0, x[1:-1, -3:] + 0.0, x[-2, 2:-2] + 0.0

    x = f32(6, 8)
    for g, w in zip(k.interpret(x), (x[5], x[1:5, 5:8], x[4, 2:6])):
        np.testing.assert_array_equal(g, w)

    @pto.jit
    def d(x: pto.Tensor((pto.DYNAMIC, 8), pto.DT_FP32)):
        return x[-2:, :-1] + 0.0

    for rows in (2, 5):
        y = f32(rows, 8)
        np.testing.assert_array_equal(d.interpret(y), y[-2:, :-1])


def _refused(body: str, code: str) -> str:
    scope: dict = {"pto": pto, "np": np}
    exec(f"def k(x: pto.Tensor((6, 8), pto.DT_FP32)):\n    return {body}\n", scope)  # noqa: S102
    with pytest.raises(pto.FrontendError) as e:
        pto.jit(scope["k"]).graph()
    assert e.value.code == code, e.value.render()
    assert e.value.location.line == 2 and e.value.expected is not None
    return e.value.render()


@pytest.mark.parametrize("body, code, says", [
    ("x ** 3", "FRONT_UNSUPPORTED", "x * x"), ("2.0 ** x", "FRONT_UNSUPPORTED", "pto.exp"),
    ("x // 2.0", "FRONT_UNSUPPORTED", "floor"), ("x % 2.0", "FRONT_UNSUPPORTED", "floor"),
    ("np.sin(x)", "FRONT_UNSUPPORTED", "pto.exp"), ("np.add.reduce(x)", "FRONT_UNSUPPORTED", "pto"),
    ("x[np.array([0, 2])]", "FRONT_OPERAND", "no arrays"), ("x[[0, 2]]", "FRONT_OPERAND", "no arrays"),
    ("x.foo", "FRONT_ATTRIBUTE", "reshape"), ("x[-7]", "FRONT_BOUNDS", "offset -1"),
    ("x[2:2]", "FRONT_BOUNDS", "empty"), ("x[:, 5:-4]", "FRONT_BOUNDS", "empty"),
])
def test_python_without_a_tensor_op_is_a_located_error(body: str, code: str, says: str) -> None:
    assert says in _refused(body, code)


def test_a_missing_attribute_is_still_an_attribute_error() -> None:
    @pto.jit
    def k(x: pto.Tensor((2, 2), pto.DT_FP32)):
        assert not hasattr(x, "foo") and hasattr(x, "shape")
        with pytest.raises(AttributeError):
            x.__array_interface__  # noqa: B018
        return x + 1.0

    k.graph()
