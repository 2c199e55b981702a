"""@jit: argument binding and its errors, dynamic sizes, result allocation, the compile cache,
torch interop, and the pipeline behind it (results against numpy)."""
from __future__ import annotations

import importlib
import importlib.util
import pathlib
import sys

import numpy as np
import pytest

import openpto.frontend as pto
from openpto.isa.diagnostics import FrontendError

jit_module = importlib.import_module("openpto.frontend.jit")

THIS = pathlib.Path(__file__)
RNG = np.random.default_rng(3)
HAVE_TORCH = importlib.util.find_spec("torch") is not None
SCALE = 2.0


def line_of(marker: str) -> int:
    hits = [i for i, t in enumerate(THIS.read_text().splitlines(), 1) if t.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, marker
    return hits[0]


def np_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x.astype(np.float64) - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pto.jit(backend="reference")
def scaled(x: pto.Tensor((pto.dynamic("R"), 16), pto.DT_FP32), y: pto.Tensor((pto.dynamic("R"), 16), pto.DT_FP32)):
    return x * SCALE + y


class Counter:
    """Counts captures and compiles by wrapping the functions jit calls."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.captures = self.compiles = 0
        real_capture, real_compile = jit_module.capture, jit_module._compile

        def capture(*a, **k):  # noqa: ANN002, ANN003, ANN202
            self.captures += 1
            return real_capture(*a, **k)

        def compile_(*a, **k):  # noqa: ANN002, ANN003, ANN202
            self.compiles += 1
            return real_compile(*a, **k)
        monkeypatch.setattr(jit_module, "capture", capture)
        monkeypatch.setattr(jit_module, "_compile", compile_)


@pytest.mark.parametrize("backend", ["reference", "llvm"])
def test_returned_results_are_allocated_and_computed(backend: str) -> None:
    @pto.jit(backend=backend)
    def softmax(x: pto.Tensor((pto.DYNAMIC, 40), pto.DT_FP32)) -> pto.Tensor((pto.DYNAMIC, 40), pto.DT_FP32):
        pto.set_vec_tile_shapes(16, 40)
        e = pto.exp(x - pto.amax(x, -1, True))
        return e / pto.sum(e, -1, True)

    for rows in (1, 5, 33):
        x = RNG.standard_normal((rows, 40)).astype(np.float32)
        y = softmax(x)
        assert isinstance(y, np.ndarray) and y.shape == (rows, 40) and y.dtype == np.float32
        np.testing.assert_allclose(y, np_softmax(x), rtol=1e-5, atol=1e-6)


def test_outputs_written_in_place_and_several_results() -> None:
    @pto.jit(backend="reference")
    def f(x: pto.Tensor((8, 16), pto.DT_FP32), out: pto.Tensor((8, 16), pto.DT_FP32)):
        out[:] = x + 1
        return pto.sum(x, 1), pto.amax(x, 0, True)

    x = RNG.standard_normal((8, 16)).astype(np.float32)
    out = np.zeros_like(x)
    s, m = f(x, out)
    np.testing.assert_allclose(out, x + 1, rtol=1e-6)
    np.testing.assert_allclose(s, x.sum(1), rtol=1e-5)
    np.testing.assert_array_equal(m, x.max(0, keepdims=True))


def test_named_dynamic_dims_bind_from_the_arrays() -> None:
    for rows in (1, 7):
        x = RNG.standard_normal((rows, 16)).astype(np.float32)
        y = RNG.standard_normal((rows, 16)).astype(np.float32)
        np.testing.assert_allclose(scaled(x, y), x * 2 + y, rtol=1e-6)
    assert scaled.graph(x, y).symbols == {"R": ("x", 0)}


def test_argument_errors_point_at_the_call() -> None:
    x = np.zeros((3, 16), np.float32)
    cases = [
        ("FRONT_ARG_COUNT", lambda: scaled(x)),                                     # arg-count
        ("FRONT_ARG_COUNT", lambda: scaled(x, x, z=1)),                             # arg-extra
        ("FRONT_ARG_TYPE", lambda: scaled(x, [[0.0] * 16] * 3)),                    # arg-type
        ("FRONT_ARG_SHAPE", lambda: scaled(x, np.zeros((3, 8), np.float32))),       # arg-static
        ("FRONT_ARG_SHAPE", lambda: scaled(x, np.zeros((16,), np.float32))),        # arg-rank
        ("FRONT_ARG_SHAPE", lambda: scaled(x, np.zeros((4, 16), np.float32))),      # arg-dynamic
        ("FRONT_ARG_DTYPE", lambda: scaled(x, np.zeros((3, 16), np.float16))),      # arg-dtype
    ]
    markers = ["arg-count", "arg-extra", "arg-type", "arg-static", "arg-rank", "arg-dynamic", "arg-dtype"]
    for (code, call), marker in zip(cases, markers):
        with pytest.raises(FrontendError) as e:
            call()
        assert e.value.code == code, e.value.render()
        assert (e.value.location.file, e.value.location.line) == (str(THIS), line_of(marker))
        assert e.value.expected is not None and e.value.actual is not None


def test_one_compile_per_static_signature_and_warm_calls_do_no_capture(monkeypatch: pytest.MonkeyPatch) -> None:
    counter = Counter(monkeypatch)

    @pto.jit(backend="reference")
    def f(x: pto.Tensor(), k: int = 1):
        return x * k

    a = np.ones((4, 8), np.float32)
    f(a)
    f(a * 2)
    assert (counter.captures, counter.compiles) == (1, 1)
    f(np.ones((4, 16), np.float32))             # another static shape
    f(np.ones((4, 8), np.int32))                # another dtype
    np.testing.assert_array_equal(f(a, 3), a * 3)   # another compile-time argument
    assert (counter.captures, counter.compiles) == (4, 4)
    f(a, 3)
    assert counter.compiles == 4
    g = f.with_options(backend="llvm")
    np.testing.assert_array_equal(g(a, 3), a * 3)
    assert counter.compiles == 5


def test_dynamic_sizes_share_one_compile(monkeypatch: pytest.MonkeyPatch) -> None:
    counter = Counter(monkeypatch)

    @pto.jit(backend="reference")
    def f(x: pto.Tensor((pto.DYNAMIC, 8), pto.DT_FP32)):
        return x + 1

    for rows in (1, 3, 17):
        np.testing.assert_array_equal(f(np.zeros((rows, 8), np.float32)), np.ones((rows, 8), np.float32))
    assert counter.compiles == 1


def test_a_changed_global_is_a_new_compile(monkeypatch: pytest.MonkeyPatch) -> None:
    counter = Counter(monkeypatch)
    x = np.ones((2, 16), np.float32)
    y = np.zeros((2, 16), np.float32)
    np.testing.assert_array_equal(scaled(x, y), 2 * x)
    before = counter.compiles
    monkeypatch.setattr(sys.modules[__name__], "SCALE", 5.0)
    np.testing.assert_array_equal(scaled(x, y), 5 * x)
    assert counter.compiles == before + 1


FACTOR = 2.0
CONFIG = {"factor": 2.0}


def times_factor(a):  # noqa: ANN001, ANN201 - a plain helper reading a global
    return a * FACTOR


@pto.jit(backend="reference")
def through_helper(x: pto.Tensor((2, 8), pto.DT_FP32)):
    return times_factor(x)


@pto.jit(backend="reference")
def in_comprehension(x: pto.Tensor((2, 8), pto.DT_FP32)):
    return [x * FACTOR for _ in range(1)][0]


@pto.jit(backend="reference")
def in_inner_def(x: pto.Tensor((2, 8), pto.DT_FP32)):
    def inner(a):  # noqa: ANN001, ANN202
        return a + FACTOR
    return inner(x)


@pto.jit(backend="reference")
def from_a_dict(x: pto.Tensor((2, 8), pto.DT_FP32)):
    return x * CONFIG["factor"]


@pytest.mark.parametrize("fn, expect", [
    (through_helper, lambda x, k: x * k), (in_comprehension, lambda x, k: x * k),
    (in_inner_def, lambda x, k: x + k)])
def test_globals_read_by_helpers_and_nested_code_are_keyed(monkeypatch: pytest.MonkeyPatch, fn, expect) -> None:
    x = RNG.standard_normal((2, 8)).astype(np.float32)
    np.testing.assert_array_equal(fn(x), expect(x, np.float32(2)))
    monkeypatch.setattr(sys.modules[__name__], "FACTOR", 5.0)
    np.testing.assert_array_equal(fn(x), expect(x, np.float32(5)))


def test_a_closure_helper_rebound_is_a_new_compile() -> None:
    def make(helper):  # noqa: ANN001, ANN202
        @pto.jit(backend="reference")
        def f(x: pto.Tensor((2, 8), pto.DT_FP32)):
            return helper(x)
        return f

    x = np.ones((2, 8), np.float32)
    np.testing.assert_array_equal(make(lambda a: a + 1.0)(x), x + 1)
    np.testing.assert_array_equal(make(lambda a: a + 7.0)(x), x + 7)


def test_container_contents_are_not_keyed_and_clear_cache_recompiles(monkeypatch: pytest.MonkeyPatch) -> None:
    x = np.ones((2, 8), np.float32)
    monkeypatch.setitem(CONFIG, "factor", 2.0)
    np.testing.assert_array_equal(from_a_dict(x), x * 2)
    CONFIG["factor"] = 3.0
    np.testing.assert_array_equal(from_a_dict(x), x * 2)     # documented: contents are not keyed
    from_a_dict.clear_cache()
    np.testing.assert_array_equal(from_a_dict(x), x * 3)


def test_an_unhashable_global_keys_by_identity_and_stays_alive(monkeypatch: pytest.MonkeyPatch) -> None:
    counter = Counter(monkeypatch)
    x = np.ones((2, 8), np.float32)
    monkeypatch.setitem(CONFIG, "factor", 2.0)
    from_a_dict.clear_cache()
    np.testing.assert_array_equal(from_a_dict(x), x * 2)
    np.testing.assert_array_equal(from_a_dict(x), x * 2)
    assert counter.captures == 1
    monkeypatch.setattr(sys.modules[__name__], "CONFIG", {"factor": 4.0})   # another dict: recompiled
    np.testing.assert_array_equal(from_a_dict(x), x * 4)
    assert counter.captures == 2


def test_two_lambdas_on_one_line_compile_apart() -> None:
    x = RNG.standard_normal((4, 8)).astype(np.float32)
    double, triple = pto.jit(lambda a: a * 2.0, backend="reference"), pto.jit(lambda a: a * 3.0, backend="reference")
    np.testing.assert_array_equal(double(x), x * np.float32(2))
    np.testing.assert_array_equal(triple(x), x * np.float32(3))
    np.testing.assert_array_equal(double(x), x * np.float32(2))


def test_functions_without_source_compile_apart() -> None:
    x = RNG.standard_normal((4, 8)).astype(np.float32)
    spaces: list[dict] = [{"pto": pto}, {"pto": pto}]
    exec("f = pto.jit(lambda a: a * 2.0, backend='reference')", spaces[0])  # noqa: S102
    exec("f = pto.jit(lambda a: a * 3.0, backend='reference')", spaces[1])  # noqa: S102
    np.testing.assert_array_equal(spaces[0]["f"](x), x * np.float32(2))
    np.testing.assert_array_equal(spaces[1]["f"](x), x * np.float32(3))
    cells = [{}, {}]
    for body, space in zip(("a + 1.0", "a - 1.0"), cells):
        text = f"import openpto.frontend as pto\n@pto.jit(backend='reference')\ndef k(a):\n    return {body}\n"
        exec(compile(text, "<cell>", "exec"), space)  # noqa: S102
    np.testing.assert_array_equal(cells[0]["k"](x), x + np.float32(1))
    np.testing.assert_array_equal(cells[1]["k"](x), x - np.float32(1))


def test_the_same_function_decorated_twice_shares_its_compile(monkeypatch: pytest.MonkeyPatch) -> None:
    counter = Counter(monkeypatch)

    def f(a: pto.Tensor((2, 8), pto.DT_FP32)):
        return a + 4.0

    x = np.ones((2, 8), np.float32)
    np.testing.assert_array_equal(pto.jit(f, backend="reference")(x), x + 4)
    np.testing.assert_array_equal(pto.jit(f, backend="reference")(x), x + 4)
    assert counter.compiles == 1


def test_a_result_empty_at_run_time_is_refused_at_the_call() -> None:
    @pto.jit(backend="reference")
    def f(x: pto.Tensor((pto.DYNAMIC, 16), pto.DT_FP32)):
        return pto.view(x, [x.shape[0] - 6, 16]) + 1.0  # empty-view

    for rows in (5, 6):         # a negative size, then zero
        for run in (f, f.interpret):
            with pytest.raises(FrontendError) as e:
                run(np.ones((rows, 16), np.float32))  # empty-call
            assert e.value.code == "FRONT_BOUNDS" and e.value.location.line == line_of("empty-call")
            assert any(f":{line_of('empty-view')}" in n for n in e.value.notes), e.value.render()
    np.testing.assert_array_equal(f(np.ones((8, 16), np.float32)), np.full((2, 16), 2, np.float32))


def test_bad_options_are_refused_at_the_decorator() -> None:
    with pytest.raises(FrontendError) as e:
        @pto.jit(fusee=True)  # bad-option
        def f(x):  # noqa: ANN001, ANN202
            return x + 1.0
    assert e.value.code == "FRONT_OPTION" and e.value.location.line == line_of("bad-option")
    with pytest.raises(FrontendError) as e:
        scaled.with_options(blocks=0)  # bad-option-value
    assert e.value.code == "FRONT_OPTION" and e.value.location.line == line_of("bad-option-value")


def test_two_unrelated_dynamic_sizes_get_a_note_naming_pto_dynamic() -> None:
    @pto.jit
    def f(x: pto.Tensor((pto.DYNAMIC, 16), pto.DT_FP32), y: pto.Tensor((pto.DYNAMIC, 16), pto.DT_FP32)):
        return x + y

    with pytest.raises(FrontendError) as e:
        f.graph_from_annotations()
    assert e.value.code == "FRONT_BROADCAST" and 'pto.dynamic("B")' in e.value.render()

    @pto.jit
    def g(a: pto.Tensor((8, pto.DYNAMIC), pto.DT_FP32), b: pto.Tensor((pto.DYNAMIC, 8), pto.DT_FP32)):
        return a @ b

    with pytest.raises(FrontendError) as e:
        g.graph_from_annotations()
    assert e.value.code == "FRONT_SHAPE" and 'pto.dynamic("B")' in e.value.render()


def test_non_contiguous_arrays_are_read_and_written() -> None:
    @pto.jit(backend="reference")
    def f(x: pto.Tensor((4, 8), pto.DT_FP32), out: pto.Tensor((4, 8), pto.DT_FP32)):
        out[:] = x * 3

    base = RNG.standard_normal((8, 4)).astype(np.float32)
    out_base = np.zeros((8, 4), np.float32)
    f(base.T, out_base.T)
    np.testing.assert_allclose(out_base.T, base.T * 3, rtol=1e-6)


def test_a_missing_pipeline_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openpto.frontend.pipeline", None)

    @pto.jit(backend="reference")
    def f(x: pto.Tensor((2, 2), pto.DT_FP32)):  # no-pipeline
        return x + 1

    with pytest.raises(FrontendError) as e:
        f(np.zeros((2, 2), np.float32))
    assert e.value.code == "FRONT_PIPELINE" and e.value.location.line == line_of("no-pipeline")
    np.testing.assert_array_equal(f.interpret(np.zeros((2, 2), np.float32)), np.ones((2, 2)))


def test_stages_from_the_annotations_alone() -> None:
    st = scaled.stages()
    assert "mul" in st.stage("tensor") and st.stage("kernels").strip()


@pytest.mark.skipif(not HAVE_TORCH, reason="torch not installed")
def test_torch_cpu_tensors_in_and_out() -> None:
    import torch

    @pto.jit(backend="reference")
    def f(x: pto.Tensor((4, 8), pto.DT_FP32), out: pto.Tensor((4, 8), pto.DT_FP32)):
        out[:] = x * 2
        return pto.exp(x)

    x = torch.randn(4, 8)
    out = torch.zeros(4, 8)
    y = f(x, out)
    assert isinstance(y, torch.Tensor)
    torch.testing.assert_close(y, torch.exp(x))
    torch.testing.assert_close(out, x * 2)


@pytest.mark.skipif(not HAVE_TORCH, reason="torch not installed")
def test_torch_bf16_tensors() -> None:
    import torch

    @pto.jit(backend="reference")
    def f(x: pto.Tensor((4, 8), pto.DT_BF16)):
        return x + x

    x = torch.randn(4, 8).to(torch.bfloat16)
    y = f(x)
    assert y.dtype == torch.bfloat16
    torch.testing.assert_close(y, x + x)


@pytest.mark.skipif(not HAVE_TORCH, reason="torch not installed")
def test_a_torch_output_that_requires_grad_is_refused() -> None:
    import torch

    @pto.jit(backend="reference")
    def f(x: pto.Tensor((4, 8), pto.DT_FP32), out: pto.Tensor((4, 8), pto.DT_FP32)):
        out[:] = x + 1.0

    x, leaf = torch.ones(4, 8), torch.zeros(4, 8, requires_grad=True)
    with pytest.raises(FrontendError) as e:
        f(x, leaf)  # grad-out
    assert e.value.code == "FRONT_ARG_TYPE" and e.value.location.line == line_of("grad-out")
    assert torch.equal(leaf.detach(), torch.zeros(4, 8))
    with torch.no_grad():           # what torch allows (an optimizer's update)
        f(x, leaf)
    torch.testing.assert_close(leaf.detach(), torch.full((4, 8), 2.0))
    y = f.interpret(torch.ones(4, 8, requires_grad=True), torch.zeros(4, 8))   # read-only: fine
    assert y is None


def test_an_output_sharing_memory_with_another_argument_is_refused() -> None:
    @pto.jit(backend="reference")
    def f(x: pto.Tensor((8, 8), pto.DT_FP32), out: pto.Tensor((8, 8), pto.DT_FP32)):
        out[:] = pto.transpose(x)

    a = RNG.standard_normal((8, 8)).astype(np.float32)
    before = a.copy()
    for run in (f, f.interpret):
        with pytest.raises(FrontendError) as e:
            run(a, a)  # alias-call
        assert e.value.code == "FRONT_ARG_ALIAS" and e.value.location.line == line_of("alias-call")
        assert "x" in e.value.message and "out" in e.value.message
    np.testing.assert_array_equal(a, before)
    big = np.zeros((16, 8), np.float32)
    with pytest.raises(FrontendError, match="share"):
        f(big[4:12], big[8:16])     # windows of one buffer that overlap in rows 8..11
    f(big[0:8], big[8:16])          # disjoint windows of one buffer are fine
    np.testing.assert_array_equal(big[8:16], big[0:8].T)
    strided = np.zeros((8, 16), np.float32)
    f(np.ascontiguousarray(a), strided[:, 0::2])
    f(strided[:, 0::2], strided[:, 1::2])      # interleaved columns: no shared element
    np.testing.assert_array_equal(strided[:, 1::2], a)    # (a.T).T

    @pto.jit(backend="reference")
    def g(x: pto.Tensor((8, 8), pto.DT_FP32), y: pto.Tensor((8, 8), pto.DT_FP32)):
        return x + y
    np.testing.assert_array_equal(g(a, a), a + a)      # two read-only aliases are fine


# --------------------------------------------------------------------------------------------
# pto frontend FILE.py: any stage of a file's @jit function

PROGRAM = '''
import openpto.frontend as pto
N = 64


@pto.jit
def rows(x: pto.Tensor((pto.dynamic("B"), N), pto.DT_FP32), y: pto.Tensor((pto.dynamic("B"), N), pto.DT_FP32)):
    pto.set_semantic_label("scale")
    y[:] = pto.exp(x) * 2


@pto.jit
def other(x: pto.Tensor((4, 4), pto.DT_FP32)):
    return x + 1


@pto.jit
def broken(x: pto.Tensor((4, 4), pto.DT_FP32), out: pto.Tensor((4, 4), pto.DT_FP32)):
    out[:] = x
    out = x


if __name__ == "__main__":
    raise SystemExit("the command must not run this")
'''


def run_cli(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    from openpto.cli import main
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli_prints_each_stage(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM)
    rc, out, _ = run_cli(capsys, "frontend", str(path), "--function", "rows")
    assert rc == 0
    assert out.startswith("func rows(x: input f32[B, 64], y: output f32[B, 64])")
    assert "= exp(%x)" in out and "label='scale'" in out
    assert f"{path}:{PROGRAM.splitlines().index('    y[:] = pto.exp(x) * 2') + 1}" in out
    rc, out, _ = run_cli(capsys, "frontend", str(path), "--function", "rows", "--stage", "pto", "--profile", "a3")
    assert rc == 0 and "kernel @" in out and "scale" in out
    rc, out, _ = run_cli(capsys, "frontend", str(path), "--function", "rows", "--stage", "tasks",
                         "--dim", "B=3")
    assert rc == 0 and "launch @" in out
    rc, out, _ = run_cli(capsys, "frontend", str(path), "--function", "other", "--stage", "all")
    assert rc == 0 and all(f"== {s} ==" in out for s in ("tensor", "tile", "partition", "kernels", "tasks"))


def test_cli_errors(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM)
    rc, _, err = run_cli(capsys, "frontend", str(path))
    assert rc == 2 and "PTO_ARG" in err and "--function" in err
    rc, _, err = run_cli(capsys, "frontend", str(path), "--function", "rows", "--dim", "b=3")
    assert rc == 2 and "PTO_ARG" in err and "one of B and" in err
    rc, _, err = run_cli(capsys, "frontend", str(path), "--function", "broken")
    rebind_line = PROGRAM.splitlines().index("    out = x") + 1
    assert rc == 2 and "FRONT_OUTPUT_REBIND" in err and f"{path}:{rebind_line}:" in err
    rc, _, err = run_cli(capsys, "frontend", str(tmp_path / "missing.py"))
    assert rc == 2 and "PTO_FILE" in err
    bad = tmp_path / "bad.py"
    bad.write_text("raise ValueError('boom')\n")
    rc, _, err = run_cli(capsys, "frontend", str(bad))
    assert rc == 2 and "PTO_FILE" in err and "boom" in err


@pytest.mark.parametrize("backend", ["reference", "llvm"])
def test_a_run_time_valid_shape_larger_than_its_view_is_clamped_to_the_view(backend):
    """valid_shape=[b, 16] on a 4-row view with b = 6 covers the view's 4 rows, never rows 4 and 5."""
    @pto.jit(backend=backend)
    def f(x: pto.Tensor((pto.DYNAMIC, 16), pto.DT_FP32)):
        b = x.shape[0]
        v = pto.view(x, [4, 16], [0, 0], valid_shape=[b, 16])
        return pto.sum(v, 0), v * 2.0

    for rows, used in ((6, 4), (3, 3)):
        x = np.random.default_rng(rows).random((rows, 16)).astype(np.float32)
        s, d = f(x)
        np.testing.assert_allclose(s, x[:used].sum(0), rtol=1e-6)
        np.testing.assert_array_equal(d, x[:used] * 2)
