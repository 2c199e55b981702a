"""Lowering: kernels -> PTO-AS modules that are check-clean for the target profile and
readable (the user's tensor names, semantic labels, source lines), with run-time sizes as
index parameters and loops as scf.for; the ascend_sim backend runs them too."""
import numpy as np
import pytest

import openpto as pto
from frontend_graphs import Builder, np_softmax, softmax
from openpto.frontend import graph as g
from openpto.frontend.lower import lower
from openpto.frontend.partition import partition
from openpto.frontend.pipeline import compile_function
from openpto.frontend.tiling import tile_function
from openpto.isa.dtypes import I32
from test_frontend_programs import layernorm, mlp, seed2

PROGRAMS = {"softmax": lambda: softmax(70, 100), "layernorm": lambda: layernorm(50, 300),
            "mlp": lambda: mlp(64, 96, 48), "seed2": lambda: seed2(8, 2, 64)}


@pytest.mark.parametrize("profile", ["cpu", "a2", "a3", "a5"])
@pytest.mark.parametrize("program", list(PROGRAMS))
def test_kernels_are_check_clean(profile, program):
    text = lower(partition(tile_function(PROGRAMS[program](), profile))).text
    pto.check(pto.parse(text), profile)


def test_a3_tiles_are_padded_to_whole_32_byte_rows():
    """a3 needs 32-byte rows: a 100-column f32 tile is 104 wide with 100 valid columns, a
    per-row vector 8 wide with one valid column; cpu keeps the exact widths."""
    a3 = lower(partition(tile_function(softmax(70, 100), "a3"))).text
    assert "!pto.tile<32x104xf32, valid=?x100>" in a3 and "!pto.tile<32x8xf32, valid=?x1>" in a3
    cpu = lower(partition(tile_function(softmax(70, 100), "cpu"))).text
    assert "!pto.tile<32x100xf32, valid=?x100>" in cpu and "!pto.tile<32x1xf32, valid=?x1>" in cpu


def test_names_labels_and_source_lines_are_in_the_kernel():
    b = Builder("named")
    x = b.tensor("activations", (32, 64))
    b.label = "SCALE"
    y = b.op("mul", x, 2.0, out="scaled")
    b.label = None
    b.ret(b.op("exp", y, out="result"))
    fn = b.function()
    fn.body[0].loc = g.SourceLoc("model.py", 12)
    text = lower(partition(tile_function(fn, "cpu"))).text
    assert "kernel @k0_SCALE_result(%activations : !pto.memref<32x64xf32>, %result :" in text
    # the input tile is dead after the mul: written in place, the line names the tensor
    assert "%t_activations = tmuls %t_activations, 2.0  // %scaled" in text
    assert "//   %scaled = mul  (model.py:12)" in text


def test_dynamic_sizes_are_index_parameters_with_arith():
    n = g.Sym.var("n")
    b = Builder("dyn")
    x = b.tensor("x", (n, 48))
    b.vec = (16, 48)
    b.ret(b.op("abs", x, out="y"))
    cf = compile_function(b.function(), backend="reference", profile="cpu")
    text = cf.stages.kernels
    assert "%x : !pto.memref<?x48xf32>" in text and "%n : index" in text
    assert "arith.minsi" in text and "valid_row = %vr" in text         # the last row block
    for rows in (1, 16, 37):
        xa = np.random.default_rng(rows).standard_normal((rows, 48)).astype(np.float32)
        ya = np.empty_like(xa)
        cf({"x": xa, "y": ya}, {"n": rows})
        np.testing.assert_array_equal(ya, np.abs(xa))


def test_loop_index_arithmetic_is_inside_the_kernel_loop():
    text = lower(partition(tile_function(seed2(8, 2, 64), "cpu"))).text
    head, body = text.split("scf.for %idx", 1)
    assert "arith.muli %idx" in body and "arith.muli %idx" not in head


@pytest.mark.parametrize("profile", ["a3", "a5"])
def test_ascend_sim_runs_the_kernels(profile):
    x = np.random.default_rng(0).standard_normal((70, 100)).astype(np.float32)
    out = np.empty_like(x)
    compile_function(softmax(70, 100), backend="ascend_sim", profile=profile)({"input": x, "output": out}, {})
    np.testing.assert_allclose(out, np_softmax(x), rtol=1e-5, atol=1e-7)
    q, w = (np.random.default_rng(i).standard_normal(s).astype(np.float32) for i, s in ((1, (64, 96)), (2, (96, 48))))
    bias, y = np.ones(48, np.float32), np.empty((64, 48), np.float32)
    compile_function(mlp(64, 96, 48), backend="ascend_sim", profile=profile)({"x": q, "w": w, "bias": bias, "y": y}, {})
    np.testing.assert_allclose(y, np.maximum(q.astype(np.float64) @ w + 1, 0), rtol=1e-4, atol=1e-4)


def test_stage_printouts_and_picture(tmp_path):
    cf = compile_function(softmax(70, 100), backend="reference", profile="cpu")
    text = str(cf.stages)
    for head in ("== tensor ==", "== tile ==", "== partition ==", "== kernels ==", "== tasks =="):
        assert head in text
    path = tmp_path / "tiles.png"
    cf.stages.draw(str(path))
    assert path.stat().st_size > 1000 and path.read_bytes()[:4] == b"\x89PNG"


def test_every_op_of_the_table_has_a_rule_or_a_clear_error():
    """The pipeline keys its rules by the op table's kinds: each kind is tiled or placed; a shape
    a rule cannot lower (topk over a leading axis) is refused with FRONT_UNSUPPORTED_OP."""
    from openpto.frontend.ops import OPS
    from openpto.frontend import emit as lw
    handled = {"binary": lw.BINARY, "unary": lw.UNARY, "compare": lw.COMPARE}
    for name, spec in OPS.items():
        if spec.kind in handled:
            assert name in handled[spec.kind], name
        else:
            assert spec.kind in ("select", "reduce", "cast", "matmul", "transpose", "reshape", "view",
                                 "assemble", "topk", "full", "gather"), spec.kind
    b = Builder("tk")
    x = b.tensor("x", (8, 16))
    v, i = g.TensorValue("v", (4, 16), x.dtype), g.TensorValue("i", (4, 16), I32)
    b.op("topk", x, outputs=(v, i), k=4, axis=0, largest=True)
    b.ret(v, i)
    with pytest.raises(pto.PTOError) as e:
        tile_function(b.function(), "cpu")
    assert e.value.code == "FRONT_UNSUPPORTED_OP"


@pytest.mark.parametrize("backend", ["reference", "llvm"])
def test_stages_check_against_the_tensor_graph_interpreter(backend):
    from test_frontend_programs import seed2
    for fn, symbols in ((softmax(70, 100), {}), (layernorm(50, 300), {}), (seed2(8, 2, 64), {"b": 3})):
        cf = compile_function(fn, backend=backend, profile="cpu")
        cf.stages.check(symbols)


def test_stages_check_reports_a_wrong_kernel():
    cf = compile_function(softmax(16, 32), backend="reference", profile="cpu")

    def wrong(fn, arrays, symbols):
        from openpto.frontend.interpret import interpret
        out = interpret(fn, arrays, symbols)
        out["output"] = out["output"] * 1.01
        return out
    with pytest.raises(pto.PTOError) as e:
        cf.stages.check(oracle=wrong)
    assert e.value.code == "FRONT_CHECK"
