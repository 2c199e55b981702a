"""Capture: the seed programs become the expected tensor graphs (ops, shapes, names, symbols,
loops, tile shapes, labels, source lines) and the interpreter runs them like numpy softmax."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

import openpto.frontend as pto
from frontend_seeds import load_seed
from openpto.frontend import graph as g
from openpto.frontend.interpret import interpret
from openpto.isa import dtypes as dt

THIS = pathlib.Path(__file__)
M, N = 40, 72
N1, N2, DIM = 2, 4, 64


def line_of(marker: str) -> int:
    """The line of this file carrying ``# <marker>``."""
    hits = [i for i, text in enumerate(THIS.read_text().splitlines(), 1) if text.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, marker
    return hits[0]


def np_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x.astype(np.float64) - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


#: the seed programs themselves (examples/frontend/), loaded with these sizes
SEED1 = load_seed("softmax", M=M, N=N)
SEED2 = load_seed("softmax_dynamic", N1=N1, N2=N2, DIM=DIM)
seed_softmax, seed_batch = SEED1.test_softmax, SEED2.softmax


def seed_line(mod, text: str) -> int:
    """The line of the loaded seed ``mod`` holding ``text`` (exactly one)."""
    hits = [i for i, t in enumerate(pathlib.Path(mod.__file__).read_text().splitlines(), 1) if text in t]
    assert len(hits) == 1, text
    return hits[0]


def test_seed1_graph_ops_shapes_names_tiles_and_lines() -> None:
    fn = seed_softmax.graph()
    assert fn.name == "test_softmax"
    ops = list(fn.walk())
    assert [o.name for o in ops] == ["amax", "sub", "exp", "sum", "div"]
    assert [o.outputs[0].name for o in ops] == ["rowmax", "sub_res", "exp_res", "esum", "output"]
    assert [o.outputs[0].shape for o in ops] == [(M, 1), (M, N), (M, N), (M, 1), (M, N)]
    assert ops[0].attrs == {"axis": 1, "keepdim": True}
    assert all(o.tiles == g.TileConfig((32, 32), None) for o in ops)
    assert ops[0].loc.line == seed_line(SEED1, "pypto.amax(") and ops[-1].loc.line == seed_line(SEED1, "pypto.div(")
    assert ops[0].loc.file == SEED1.__file__ and "pypto.amax(input, -1, True)" in ops[0].loc.text
    assert [p.name for p in fn.params] == ["input"] and fn.params[0].tensor.kind == "input"
    assert fn.results == [ops[-1].outputs[0]] and fn.results[0].kind == "output"
    text = str(fn)
    assert "%rowmax: f32[40, 1] = amax(%input, axis=1, keepdim=True)" in text
    assert f"{pathlib.Path(SEED1.__file__).name}:{seed_line(SEED1, 'pypto.amax(')}" in text
    assert text.rstrip().endswith("return %output")


def test_seed1_interpreted_equals_numpy_softmax() -> None:
    x = np.random.default_rng(1).standard_normal((M, N)).astype(np.float32) * 4
    y = seed_softmax.interpret(x)
    assert y.shape == (M, N) and y.dtype == np.float32
    np.testing.assert_allclose(y, np_softmax(x), rtol=1e-6, atol=1e-7)
    # the interpreter on the graph itself, result array given by name and filled in place
    out = np.zeros((M, N), np.float32)
    interpret(seed_softmax.graph(), {"input": x, "output": out})
    np.testing.assert_allclose(out, np_softmax(x), rtol=1e-6, atol=1e-7)


def test_seed2_graph_loop_symbols_view_local_and_outputs() -> None:
    fn = seed_batch.graph()
    assert fn.name == "SOFTMAX"
    assert fn.symbols == {"input_tensor_dim0": ("input_tensor", 0), "output_tensor_dim0": ("output_tensor", 0),
                          "idx": None}
    kinds = {p.name: p.tensor.kind for p in fn.params}
    assert kinds == {"input_tensor": "input", "output_tensor": "output"}
    (lp,) = fn.body
    assert isinstance(lp, g.Loop) and lp.name == "LOOP_L0_bIdx" and lp.index.name == "idx"
    assert (lp.start, str(lp.stop), lp.step) == (0, "input_tensor_dim0", 1)
    assert lp.loc.line == seed_line(SEED2, "pto.loop(")
    names = [o.name for o in lp.body]
    assert names == ["view", "amax", "sub", "exp", "sum", "div", "assemble", "assemble"]
    view, rowmax = lp.body[0], lp.body[1]
    assert view.attrs["shape"] == (1, N1, N2, DIM) and str(view.attrs["offsets"][0]) == "idx"
    assert rowmax.attrs == {"axis": 3, "keepdim": True} and rowmax.outputs[0].shape == (1, N1, N2, 1)
    assert rowmax.loc.line == seed_line(SEED2, "pto.row_max_single(")      # the helper's own line, inlined
    move, store = lp.body[-2], lp.body[-1]
    assert move.attrs["spelling"] == "move" and move.outputs[0].kind == "local"
    assert move.outputs[0].name == "softmax_out" and move.loc.line == seed_line(SEED2, "softmax_out[:] =")
    assert store.outputs[0] is fn.params[1].tensor and store.loc.line == seed_line(SEED2, "pto.assemble(")
    assert all(o.tiles.vec == (1, 4, 1, 64) for o in lp.body)
    assert "for idx in loop(0, input_tensor_dim0, 1)  # LOOP_L0_bIdx" in str(fn)


@pytest.mark.parametrize("b", [1, 3, 17])
def test_seed2_interpreted_equals_numpy_softmax_for_each_batch(b: int) -> None:
    x = np.random.default_rng(b).standard_normal((b, N1, N2, DIM)).astype(np.float32)
    out = np.full_like(x, np.nan)
    assert seed_batch.interpret(x, out) is None
    np.testing.assert_allclose(out, np_softmax(x), rtol=1e-6, atol=1e-7)


def test_one_capture_serves_every_batch_size() -> None:
    fns = set()
    for b in (1, 3, 17):
        x = np.zeros((b, N1, N2, DIM), np.float32)
        fns.add(id(seed_batch.graph(x, np.zeros_like(x))))
    assert len(fns) == 1


def test_labels_and_scoped_tiles_are_stamped_on_the_ops_recorded_under_them() -> None:
    @pto.jit
    def f(a: pto.Tensor((8, 16), pto.DT_FP32), b: pto.Tensor((16, 4), pto.DT_FP32)):
        pto.set_vec_tile_shapes(8, 16)
        pto.set_semantic_label("scale")
        s = a * 2.0
        pto.set_semantic_label(None)
        with pto.vec_tile_shapes(4, 8), pto.semantic_label("shift"):
            t = s + 1
        with pto.cube_tile_shapes([8, 8], [16, 16], 4):
            c = pto.matmul(t, b)
        u = s - 1
        return c, u

    fn = f.graph()
    ops = {o.outputs[0].name: o for o in fn.walk()}
    assert (ops["s"].label, ops["s"].tiles.vec) == ("scale", (8, 16))
    assert (ops["t"].label, ops["t"].tiles.vec) == ("shift", (4, 8))
    assert ops["c"].tiles.cube == g.CubeTiles((8, 8), (16, 16), (4, 4)) and ops["c"].label is None
    assert (ops["u"].label, ops["u"].tiles.vec, ops["u"].tiles.cube) == (None, (8, 16), None)
    assert [r.name for r in fn.results] == ["c", "u"]
    assert "label='scale'" in str(fn) and "cube_tile=(m=(8, 8), k=(16, 16), n=(4, 4))" in str(fn)


def test_static_python_loops_unroll_and_names_stay_unique() -> None:
    @pto.jit
    def f(x: pto.Tensor((4, 8), pto.DT_FP32)):
        acc = x
        for _ in range(3):
            acc = acc + x
        return acc

    fn = f.graph()
    assert [o.name for o in fn.walk()] == ["add"] * 3
    assert [o.outputs[0].name for o in fn.walk()] == ["acc", "acc_1", "acc_2"]
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    np.testing.assert_array_equal(f.interpret(x), 4 * x)


def test_returning_a_parameter_or_a_view_copies_it_into_a_new_result() -> None:
    @pto.jit
    def f(x: pto.Tensor((4, 8), pto.DT_INT32)):
        return x, x[1:3, 2:6]

    fn = f.graph()
    assert [r.name for r in fn.results] == ["result0", "result1"]
    assert [o.attrs.get("spelling") for o in fn.walk() if o.name == "assemble"] == ["move", "move"]
    x = np.arange(32, dtype=np.int32).reshape(4, 8)
    a, b = f.interpret(x)
    np.testing.assert_array_equal(a, x)
    np.testing.assert_array_equal(b, x[1:3, 2:6])


def test_nested_pto_loops_with_dynamic_bounds() -> None:
    @pto.jit
    def f(x: pto.Tensor((pto.dynamic("R"), 8), pto.DT_FP32), y: pto.Tensor((pto.dynamic("R"), 8), pto.DT_FP32)):
        r = x.shape[0]
        for i in pto.loop(r, idx_name="i"):
            for j in pto.loop(0, 8, 4, idx_name="j"):
                y[i:i + 1, j:j + 4] = x[i:i + 1, j:j + 4] * (i + j)

    fn = f.graph()
    assert fn.symbols == {"R": ("x", 0), "i": None, "j": None}
    outer = fn.body[0]
    assert isinstance(outer, g.Loop) and isinstance(outer.body[0], g.Loop)
    x = np.random.default_rng(0).standard_normal((5, 8)).astype(np.float32)
    y = np.zeros_like(x)
    f.interpret(x, y)
    want = x * (np.arange(5)[:, None] + (np.arange(8) // 4 * 4)[None, :])
    np.testing.assert_allclose(y, want.astype(np.float32), rtol=1e-6)


def test_interpreter_checks_a_run_time_window() -> None:
    @pto.jit
    def f(x: pto.Tensor((pto.DYNAMIC, 4), pto.DT_FP32)):
        return pto.view(x, [2, 4], [x.shape[0] - 1, 0])     # runtime-window

    from openpto.isa.diagnostics import FrontendError
    with pytest.raises(FrontendError) as e:
        f.interpret(np.zeros((3, 4), np.float32))
    assert e.value.code == "FRONT_BOUNDS" and e.value.location.line == line_of("runtime-window")


def test_dtype_of_temps_follow_the_table() -> None:
    @pto.jit
    def f(x: pto.Tensor((4, 4), pto.DT_FP16), i: pto.Tensor((4, 4), pto.DT_INT8)):
        return x > 0, pto.matmul(x, x), pto.matmul(i, i), pto.cast(x, pto.DT_INT32), x * 3
    fn = f.graph()
    assert [r.dtype for r in fn.results] == [dt.I1, dt.F32, dt.I32, dt.I32, dt.F16]


# --------------------------------------------------------------------------------------------
# every capture-time error: its code, at the user's line

from openpto.isa.diagnostics import FrontendError  # noqa: E402


def expect(code: str, marker: str, call) -> FrontendError:  # noqa: ANN001
    with pytest.raises(FrontendError) as e:
        call()
    err = e.value
    assert err.code == code, err.render()
    assert (err.location.file, err.location.line) == (str(THIS), line_of(marker)), err.render()
    assert err.expected is not None and err.actual is not None
    assert code in err.render() and f":{line_of(marker)}:" in err.render()
    return err


def test_rebinding_a_written_output_is_an_error_at_the_assignment() -> None:
    @pto.jit
    def f(x: pto.Tensor((4, 4), pto.DT_FP32), out: pto.Tensor((4, 4), pto.DT_FP32)):
        out[:] = x + 1
        out = x * 2  # rebind-written
        return out

    err = expect("FRONT_OUTPUT_REBIND", "rebind-written", f.graph)
    assert "out[:] = value" in err.expected


def test_rebinding_an_output_the_function_never_writes_is_caught_too() -> None:
    @pto.jit
    def f(x: pto.Tensor((4, 4), pto.DT_FP32), out: pto.Tensor((4, 4), pto.DT_FP32)):
        out = pto.exp(x)  # rebind-lost

    expect("FRONT_OUTPUT_REBIND", "rebind-lost", f.graph)

    @pto.jit
    def g(x: pto.Tensor((4, 4), pto.DT_FP32), out: pto.Tensor((4, 4), pto.DT_FP32)):
        with pto.function("G", [x], [out]):
            out += x  # rebind-augmented

    expect("FRONT_OUTPUT_REBIND", "rebind-augmented", g.graph)


def test_a_function_with_no_output_is_an_error() -> None:
    @pto.jit
    def f(x: pto.Tensor((4, 4), pto.DT_FP32)):  # no-output
        pto.exp(x)

    expect("FRONT_NO_OUTPUT", "no-output", f.graph)


def test_branching_on_run_time_values() -> None:
    @pto.jit
    def f(x: pto.Tensor((pto.DYNAMIC, 4), pto.DT_FP32)):
        if x.shape[0] > 4:  # branch-dim
            return x + 1
        return x

    expect("FRONT_SYMBOLIC_BRANCH", "branch-dim", f.graph)

    @pto.jit
    def g(x: pto.Tensor((4, 4), pto.DT_FP32)):
        return x + 1 if pto.amax(x, 0) else x  # branch-tensor

    expect("FRONT_SYMBOLIC_BRANCH", "branch-tensor", g.graph)

    @pto.jit
    def h(x: pto.Tensor((pto.DYNAMIC, 4), pto.DT_FP32)):
        for _ in range(x.shape[0]):  # branch-range
            x = x + 1
        return x

    expect("FRONT_SYMBOLIC_BRANCH", "branch-range", h.graph)


def test_dtype_errors() -> None:
    @pto.jit
    def f(x: pto.Tensor((4, 4), pto.DT_FP32), y: pto.Tensor((4, 4), pto.DT_FP16)):
        return pto.add(x, y)  # dtype-mix

    err = expect("FRONT_DTYPE", "dtype-mix", f.graph)
    assert "pto.cast" in err.render()

    @pto.jit
    def g(i: pto.Tensor((4, 4), pto.DT_INT32)):
        return pto.exp(i)  # dtype-exp-int

    expect("FRONT_DTYPE", "dtype-exp-int", g.graph)

    @pto.jit
    def h(i: pto.Tensor((4, 4), pto.DT_INT32)):
        return i * 0.5  # dtype-scalar

    expect("FRONT_DTYPE", "dtype-scalar", h.graph)

    @pto.jit
    def w(i: pto.Tensor((4, 4), pto.DT_INT32)):
        return pto.where(i, i, 0)  # dtype-where

    expect("FRONT_DTYPE", "dtype-where", w.graph)


def test_integer_scalars_out_of_the_tensor_dtype_range() -> None:
    @pto.jit
    def add8(x: pto.Tensor((4, 8), pto.DT_INT8)):
        return x + 300  # scalar-i8

    err = expect("FRONT_DTYPE", "scalar-i8", add8.graph)
    assert "-128, 127" in str(err.expected)
    x8 = np.ones((4, 8), np.int8)
    expect("FRONT_DTYPE", "scalar-i8", lambda: add8.interpret(x8))   # the interpreter agrees

    @pto.jit
    def mul32(x: pto.Tensor((4, 8), pto.DT_INT32)):
        return x * 3000000000  # scalar-i32
    expect("FRONT_DTYPE", "scalar-i32", mul32.graph)

    @pto.jit
    def sub_u8(x: pto.Tensor((4, 8), pto.DT_UINT8)):
        return pto.maximum(x, -1)  # scalar-u8
    expect("FRONT_DTYPE", "scalar-u8", sub_u8.graph)

    @pto.jit
    def fill8(x: pto.Tensor((4, 8), pto.DT_INT8)):
        return x + pto.full([4, 8], 300, pto.DT_INT8)  # full-i8
    expect("FRONT_DTYPE", "full-i8", fill8.graph)

    @pto.jit
    def set8(x: pto.Tensor((4, 8), pto.DT_INT8)):
        x[0:2, :] = -129  # setitem-i8
    expect("FRONT_DTYPE", "setitem-i8", set8.graph)

    @pto.jit
    def edges(x: pto.Tensor((4, 8), pto.DT_INT8)):
        return pto.minimum(pto.maximum(x + 127, -128), 127.0)
    got = edges.interpret(np.full((4, 8), -3, np.int8))
    np.testing.assert_array_equal(got, np.full((4, 8), 124, np.int8))


def test_shapes_that_do_not_broadcast() -> None:
    @pto.jit
    def f(x: pto.Tensor((4, 6), pto.DT_FP32), y: pto.Tensor((4, 5), pto.DT_FP32)):
        return x - y  # broadcast-static

    expect("FRONT_BROADCAST", "broadcast-static", f.graph)

    @pto.jit
    def g(x: pto.Tensor((pto.DYNAMIC, 4), pto.DT_FP32), y: pto.Tensor((3, 4), pto.DT_FP32)):
        return x * y  # broadcast-dynamic

    expect("FRONT_BROADCAST", "broadcast-dynamic", g.graph)


def test_tile_shape_errors() -> None:
    @pto.jit
    def f(x: pto.Tensor((2, 4, 8), pto.DT_FP32)):
        pto.set_vec_tile_shapes(32, 32)
        return pto.exp(x)  # tile-rank

    err = expect("FRONT_TILE_RANK", "tile-rank", f.graph)
    assert any("set at" in n for n in err.notes)

    @pto.jit
    def g(x: pto.Tensor((4, 8), pto.DT_FP32)):
        pto.set_vec_tile_shapes(0, 32)  # tile-zero
        return x + 1

    expect("FRONT_TILE_SHAPE", "tile-zero", g.graph)

    @pto.jit
    def h(x: pto.Tensor((4, 8), pto.DT_FP32)):
        pto.set_cube_tile_shapes([16, 32], [16], 16)  # tile-cube
        return x @ pto.transpose(x)

    expect("FRONT_TILE_SHAPE", "tile-cube", h.graph)


def test_reading_a_local_never_written() -> None:
    @pto.jit
    def f(x: pto.Tensor((4, 8), pto.DT_FP32)):
        t = pto.tensor([4, 8], pto.DT_FP32, "t")
        return x + t  # unwritten

    err = expect("FRONT_UNWRITTEN_READ", "unwritten", f.graph)
    assert "t" in err.message


def test_unknown_dtypes_and_bad_annotations() -> None:
    def bad_annotation():  # noqa: ANN202
        return pto.Tensor((4, 4), "float128")  # dtype-unknown
    expect("FRONT_DTYPE_UNKNOWN", "dtype-unknown", bad_annotation)

    def bad_dims():  # noqa: ANN202
        return pto.Tensor((4, 0), pto.DT_FP32)  # annotation-zero
    expect("FRONT_ANNOTATION", "annotation-zero", bad_dims)

    @pto.jit
    def f(x: pto.Tensor((4, 8), pto.DT_FP32)):
        return pto.cast(x, "f33")  # cast-unknown

    expect("FRONT_DTYPE_UNKNOWN", "cast-unknown", f.graph)


def test_axes_shapes_bounds_and_operands() -> None:
    @pto.jit
    def axis(x: pto.Tensor((4, 8), pto.DT_FP32)):
        return pto.sum(x, 2)  # bad-axis
    expect("FRONT_AXIS", "bad-axis", axis.graph)

    @pto.jit
    def reshape(x: pto.Tensor((4, 8), pto.DT_FP32)):
        return pto.reshape(x, [5, 6])  # bad-reshape
    expect("FRONT_SHAPE", "bad-reshape", reshape.graph)

    @pto.jit
    def mm(x: pto.Tensor((4, 8), pto.DT_FP32)):
        return x @ x  # bad-matmul
    expect("FRONT_SHAPE", "bad-matmul", mm.graph)

    @pto.jit
    def move(x: pto.Tensor((4, 8), pto.DT_FP32), y: pto.Tensor((4, 4), pto.DT_FP32)):
        y[:] = x  # bad-move
    expect("FRONT_SHAPE", "bad-move", move.graph)

    @pto.jit
    def window(x: pto.Tensor((4, 8), pto.DT_FP32)):
        return pto.view(x, [2, 4], [3, 0])  # bad-view
    expect("FRONT_BOUNDS", "bad-view", window.graph)

    @pto.jit
    def operand(x: pto.Tensor((4, 8), pto.DT_FP32)):
        return pto.add(x, "1")  # bad-operand
    expect("FRONT_OPERAND", "bad-operand", operand.graph)

    @pto.jit
    def k_too_big(x: pto.Tensor((4, 8), pto.DT_FP32)):
        return pto.topk(x, 9)  # bad-k
    expect("FRONT_OPERAND", "bad-k", k_too_big.graph)


def test_ops_outside_a_jit_function() -> None:
    x = np.zeros((2, 2), np.float32)
    expect("FRONT_OUTSIDE", "outside", lambda: pto.exp(x))  # outside


def test_unsupported_python() -> None:
    counter = 0

    @pto.jit
    def f(x: pto.Tensor((4, 8), pto.DT_FP32)):
        nonlocal counter  # unsupported-nonlocal
        counter += 1
        return x

    expect("FRONT_UNSUPPORTED", "unsupported-nonlocal", f.graph)

    @pto.jit
    def g(x: pto.Tensor((4, 8), pto.DT_FP32)):
        yield x  # unsupported-yield

    expect("FRONT_UNSUPPORTED", "unsupported-yield", g.graph)


def test_function_and_loop_misuse() -> None:
    @pto.jit
    def unwritten(x: pto.Tensor((4, 8), pto.DT_FP32), y: pto.Tensor((4, 8), pto.DT_FP32)):
        with pto.function("F", [x], [y]):  # declared-unwritten
            pass
        return x + 1

    expect("FRONT_FUNCTION", "declared-unwritten", unwritten.graph)

    @pto.jit
    def twice(x: pto.Tensor((4, 8), pto.DT_FP32)):
        with pto.function("A", [x], []):
            with pto.function("B", [x], []):  # function-twice
                return x + 1

    expect("FRONT_FUNCTION", "function-twice", twice.graph)

    @pto.jit
    def step(x: pto.Tensor((4, 8), pto.DT_FP32), y: pto.Tensor((4, 8), pto.DT_FP32)):
        for i in pto.loop(0, 4, 0):  # loop-step
            y[i:i + 1, :] = x[i:i + 1, :]

    expect("FRONT_LOOP", "loop-step", step.graph)

    @pto.jit
    def unroll(x: pto.Tensor((4, 8), pto.DT_FP32), y: pto.Tensor((4, 8), pto.DT_FP32)):
        for i in pto.loop(0, 4, 1, unroll_list=[4, 1]):  # loop-unroll
            y[i:i + 1, :] = x[i:i + 1, :]

    expect("FRONT_LOOP", "loop-unroll", unroll.graph)


def test_results_that_are_not_tensors_or_differ_from_the_annotation() -> None:
    @pto.jit
    def f(x: pto.Tensor((4, 8), pto.DT_FP32)):  # result-int
        return 3

    expect("FRONT_RESULT", "result-int", f.graph)

    @pto.jit
    def g(x: pto.Tensor((4, 8), pto.DT_FP32)) -> pto.Tensor((4, 8), pto.DT_FP16):  # result-annotation
        return x + 1

    expect("FRONT_RESULT", "result-annotation", g.graph)


def test_the_docs_program_prints_the_graph_the_docs_show(tmp_path: pathlib.Path) -> None:
    import re
    import runpy
    doc = (THIS.parent.parent / "docs" / "frontend.md").read_text()
    program = re.search(r"## Writing a program\n\n```python\n(.*?)```", doc, re.S).group(1)
    shown = re.search(r"## Capture\n.*?```text\n(.*?)```", doc, re.S).group(1)
    path = tmp_path / "prog.py"
    path.write_text(program.replace("print(softmax.graph())", ""))
    ns = runpy.run_path(str(path))
    assert str(ns["softmax"].graph()).replace(str(path), "prog.py") == shown.rstrip("\n")
