"""Tiling: tensor graph -> tile graph (tile shapes, grids, edge tiles, broadcasts, reductions,
default tiles, views and assembles resolved into places, errors)."""
import pytest

from frontend_graphs import Builder, softmax
from openpto.frontend import graph as g
from openpto.frontend.options import Options
from openpto.frontend.tiling import TileLoop, broadcast_mode, matrix, pick_tile, tile_function
from openpto.isa import PTOError
from openpto.isa.dtypes import F16, F32


def test_softmax_tiles_rows_and_columns_with_partial_edges():
    tg = tile_function(softmax(70, 100), "cpu")
    nodes = list(tg.nodes())
    assert [n.name for n in nodes] == ["amax", "sub", "exp", "sum", "div"]
    for n in nodes:
        assert n.tile == (32, 32)
        assert n.grid == (3, 4)          # 70 rows in 32-row tiles, 100 cols in 32-col tiles
    text = str(tg)
    assert "last tile holds 6 of 32" in text and "last tile holds 4 of 32" in text
    assert "partial max per tile, combined over the 4 column tiles" in text
    assert nodes[1].inputs[1].mode == "row"          # sub(input, rowmax): per-row broadcast
    assert tg.tile_count() == 5 * 12


def test_n_d_tensors_are_rows_of_their_leading_dims():
    assert matrix((2, 3, 4, 5)) == (24, 5)
    assert matrix((7,)) == (1, 7)
    assert matrix(()) == (1, 1)
    (tr, tc), why = pick_tile((1, 32, 1, 256), F32, (1, 4, 1, 64), 65536, None)
    assert (tr, tc) == (4, 64) and "vec tile" in why


def test_tile_is_clamped_to_the_tensor():
    (tr, tc), _ = pick_tile((5, 3), F32, (32, 32), 65536, None)
    assert (tr, tc) == (5, 3)


def test_default_tile_from_the_profile_budget_whole_rows():
    """No tile shape set: whole rows when they fit, as many rows as the budget allows."""
    b = Builder("f")
    x = b.tensor("x", (256, 1024))
    b.ret(b.op("exp", x, out="y"))
    tg = tile_function(b.function(), "a3")
    (n,) = tg.nodes()
    # a3: 192 KB of UB, a quarter (48 KB) per tile: 12 rows of 4 KB, rounded down to 8
    assert n.tile == (8, 1024) and "default tile" in n.why
    tg = tile_function(b.function(), "cpu", Options(tile_budget=1 << 20))
    (n,) = tg.nodes()
    assert n.tile == (256, 1024)


def test_default_tile_for_very_wide_rows_splits_columns():
    b = Builder("f")
    x = b.tensor("x", (4, 1 << 20), F16)
    b.ret(b.op("abs", x, out="y"))
    (n,) = tile_function(b.function(), "a3").nodes()
    assert n.tile[1] == 1024 and n.tile[0] >= 1


def test_broadcast_modes_and_scalars():
    b = Builder("f")
    x = b.tensor("x", (8, 16))
    r = b.tensor("r", (8, 1))
    c = b.tensor("c", (16,))
    y = b.op("add", x, r)
    z = b.op("mul", y, c)
    w = b.op("sub", 2.0, z)
    b.ret(w)
    n1, n2, n3 = tile_function(b.function(), "cpu").nodes()
    assert [a.mode for a in n1.inputs] == ["tile", "row"]
    assert [a.mode for a in n2.inputs] == ["tile", "col"]
    assert [a.mode for a in n3.inputs] == ["scalar", "tile"]


def test_n_d_broadcast_is_a_loop_over_groups():
    """[4, 8, 16] + [4, 1, 16]: the leading dim is iterated; in a group y is one row (<col>)."""
    b = Builder("f")
    x = b.tensor("x", (4, 8, 16))
    y = b.tensor("y", (4, 1, 16))
    b.ret(b.op("add", x, y))
    tg = tile_function(b.function(), "cpu")
    (lp,) = tg.items
    assert isinstance(lp, TileLoop) and lp.loop.stop == 4
    (n,) = lp.body
    assert (n.rows, n.cols) == (8, 16)
    assert [a.mode for a in n.inputs] == ["tile", "col"]
    # the classifier alone still has no 2-D form for it: the batch pass is what makes one
    with pytest.raises(PTOError) as e:
        broadcast_mode((4, 1, 16), (4, 8, 16), n.op)
    assert e.value.code == "FRONT_TILE_BROADCAST"


def test_view_and_assemble_are_places_not_copies():
    """The seed-2 shape: a view of the input, the result assembled into the output window."""
    B = g.Sym.var("b")
    b = Builder("softmax")
    x = b.tensor("input_tensor", (B, 8, 1, 64))
    o = b.tensor("output_tensor", (B, 8, 1, 64), kind="output")
    idx = b.loop("LOOP_L0_bIdx", 0, B, 1)
    v = b.op("view", x, shape=(1, 8, 1, 64), out="input_view", offsets=(idx, 0, 0, 0))
    y = b.op("exp", v, out="y")
    loc = g.TensorValue("softmax_out", (1, 8, 1, 64), F32, "local")
    b.op("assemble", y, outputs=(loc,), offsets=(0, 0, 0, 0), spelling="move")
    b.op("assemble", loc, outputs=(o,), offsets=(idx, 0, 0, 0))
    b.end_loop()
    tg = tile_function(b.function(), "cpu")
    (n,) = tg.nodes()                       # only the exp: no copy node
    assert n.name == "exp"
    pv, py = tg.places[v], tg.places[y]
    assert pv.buffer.name == "input_tensor" and py.buffer.name == "output_tensor"
    assert str(pv.row0) == "(idx * 8)" and str(py.row0) == "(idx * 8)"


def test_window_with_non_consecutive_rows_is_refused():
    b = Builder("f")
    x = b.tensor("x", (4, 8, 16))
    v = b.op("view", x, shape=(2, 4, 16), out="v", offsets=(0, 0, 0))
    b.ret(b.op("exp", v))
    with pytest.raises(PTOError) as e:
        tile_function(b.function(), "cpu")
    assert e.value.code == "FRONT_VIEW"


def test_reduction_over_a_middle_axis_is_groups_of_column_reductions():
    b = Builder("f")
    x = b.tensor("x", (4, 8, 16))
    b.ret(b.op("sum", x, shape=(4, 16), axis=1, keepdim=False))
    (node,) = tile_function(b.function(), "cpu").nodes()
    assert node.reduce_axis == "col" and node.extra["groups"] == 4
    assert (node.rows, node.cols) == (8, 16)                       # one group: 8 rows of 16
    assert (node.extra["src_place"].rows, node.extra["out_place"].rows) == (32, 4)


def test_bad_options_are_refused():
    with pytest.raises(PTOError) as e:
        Options.from_dict({"merge_limit": 2})
    assert e.value.code == "FRONT_OPTION"
    with pytest.raises(PTOError):
        Options.from_dict({"merge": 0})
    assert Options.from_dict({"merge": 2, "fuse": False}) == Options(merge=2, fuse=False)


def _programs():
    from test_frontend_programs import layernorm, mlp, seed2
    yield softmax(70, 100), {}
    yield softmax(g.Sym.var("m"), 40, tile=(8, 16)), {"m": 19}
    yield layernorm(50, 300), {}
    yield mlp(40, 70, 50, cube=g.CubeTiles((16, 16), (32, 32), (32, 32))), {}
    yield seed2(8, 2, 64), {"b": 3}


@pytest.mark.parametrize("index", range(5))
def test_tile_graph_evaluated_tile_by_tile_matches_the_interpreter(index):
    """Stages.check('tile'): the tile graph run tile by tile in numpy (partials combined,
    edge tiles, broadcasts, places) equals the tensor-graph interpreter."""
    from openpto.frontend.pipeline import compile_function
    fn, symbols = list(_programs())[index]
    cf = compile_function(fn, backend="reference", profile="cpu")
    cf.stages.check(symbols, stages=("tile",))


def test_a_wrong_tiling_is_caught_by_the_tile_check():
    from openpto.frontend.pipeline import compile_function
    from openpto.frontend.tiling import Access
    cf = compile_function(softmax(16, 16), backend="reference", profile="cpu")
    div = list(cf.stages.tile_graph.nodes())[4]
    div.inputs[1] = Access(div.inputs[1].value, "col")        # the row sums read as one row
    with pytest.raises(PTOError) as e:
        cf.stages.check(stages=("tile",))
    assert e.value.code == "FRONT_CHECK" and "tile stage" in e.value.message
