"""Every spelling the public PTO pages print parses, checks, prints canonically and round-trips.

Each corpus entry is a statement (or a short program) in a public spelling next to the same
program written by hand in openpto's canonical form: the two must parse to one module, the
module must pass the verifier, ``parse(print(m)) == m`` and ``load(dump(m)) == m``. The
runnable ones also run on the reference and llvm backends with the canonical spelling's
results. Bad input in each new grammar path is a located PARSE_*/STRUCT_* diagnostic.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import openpto as pto
from openpto.assembler import dump, load_bytes
from openpto.isa.diagnostics import PTOError

T = "!pto.tile<16x16xf32>"
M = "!pto.tile<16x16xi1>"
G = "!pto.memref<16x16xf32>"
ARGS = f".arg %a : {T}\n.arg %b : {T}\n.arg %s : f32\n"

# (name, public spelling, canonical spelling): both bodies follow the same prelude.
CORPUS = [
    ("destination first, one type", "tadd %d, %a, %b : !pto.tile<f32, 16, 16>",
     f"%d = tadd %a, %b : ({T}, {T}) -> {T}"),
    ("destination first, no space in type", "tadd %d, %a, %b : !pto.tile<f32,16,16>",
     f"%d = tadd %a, %b : ({T}, {T}) -> {T}"),
    ("destination first, pto. prefix, full list", f"pto.tsub %d, %a, %b : ({T}, {T}, {T}) -> {T}",
     f"%d = tsub %a, %b : ({T}, {T}) -> {T}"),
    ("SSA, bare input list", f"%d = pto.tmul %a, %b : {T}, {T} -> {T}",
     f"%d = tmul %a, %b : ({T}, {T}) -> {T}"),
    ("SSA, bare operand types without result", f".tile %d : {T}\n%d = tadds %a, %s : {T}, f32",
     f".tile %d : {T}\n%d = tadds %a, %s : ({T}, f32) -> {T}"),
    ("SSA, input list shorter than the operands", f"%d = tcmps %a, %s {{cmpMode = #pto.cmp<GE>}} : {T} -> {M}",
     f"%d = tcmps %a, %s {{cmpMode = #pto.cmp<GE>}} : ({T}, f32) -> {M}"),
    ("hex immediate is the float's bit pattern", "tadds %d, %a, 0x3F800000 : !pto.tile<f32, 16, 16>",
     f"%d = tadds %a, 1.0 : ({T}, f32) -> {T}"),
    ("#attr=value after the operands", "tcmps %d, %a, 0.0 #cmp=gt : !pto.tile<16x16xi1>",
     f"%d = tcmps %a, 0.0 {{cmpMode = #pto.cmp<GT>}} : ({T}, f32) -> {M}"),
    ("#attr=value after the signature", "tcmps %d, %a, %s : !pto.tile<16x16xi1> #cmp=le",
     f"%d = tcmps %a, %s {{cmpMode = #pto.cmp<LE>}} : ({T}, f32) -> {M}"),
    ("quoted attribute value under the public name", f'%d = pto.tcmp %a, %b {{cmp = "lt"}} : ({T}, {T}) -> {M}',
     f"%d = tcmp %a, %b {{cmpMode = #pto.cmp<LT>}} : ({T}, {T}) -> {M}"),
    ("quoted value under the declared name", f'%d = tcmp %a, %b {{cmpMode = "ne"}} : ({T}, {T}) -> {M}',
     f"%d = tcmp %a, %b {{cmpMode = #pto.cmp<NE>}} : ({T}, {T}) -> {M}"),
    ("#pto<cmp xx> generic attribute", f"%d = tcmp %a, %b{{cmpMode = #pto<cmp EQ>}}: ({T}, {T}) -> {M}",
     f"%d = tcmp %a, %b {{cmpMode = #pto.cmp<EQ>}} : ({T}, {T}) -> {M}"),
    ("round_mode kind with a CAST_ member", "%h = tcvt %a {rmode = #pto.round_mode<CAST_RINT>} : "
     f"{T} -> !pto.tile<16x16xf16>",
     f"%h = tcvt %a {{roundMode = #pto.round<RINT>}} : ({T}) -> !pto.tile<16x16xf16>"),
    ("#pto<round_mode xx> and rnd = \"rz\"", f'%i = tcvt %a{{rmode = #pto<round_mode CAST_FLOOR>}}: {T} -> '
     '!pto.tile<16x16xi32>\n%j = tcvt %a {rnd = "rz"} : ' + f"{T} -> !pto.tile<16x16xi32>",
     f"%i = tcvt %a {{roundMode = #pto.round<FLOOR>}} : ({T}) -> !pto.tile<16x16xi32>\n"
     f"%j = tcvt %a {{roundMode = #pto.round<TRUNC>}} : ({T}) -> !pto.tile<16x16xi32>"),
    ("DPS, attribute dict inside ins", "pto.tcmp ins(%a, %b {cmpMode = #pto.cmp<EQ>}: !pto.tile_buf<f32, 16, 16>, "
     "!pto.tile_buf<f32, 16, 16>) outs(%d : !pto.tile_buf<vec, i1, 16, 16, 16, 16>)",
     f"%d = tcmp %a, %b {{cmpMode = #pto.cmp<EQ>}} : ({T}, {T}) -> {M}"),
    ("DPS, dict after a comma inside ins", "pto.tcmps ins(%a, %s, {cmpMode = #pto<cmp GT>} : "
     "!pto.tile_buf<f32, 16, 16>, f32) outs(%d : !pto.tile<16x16xi1>)",
     f"%d = tcmps %a, %s {{cmpMode = #pto.cmp<GT>}} : ({T}, f32) -> {M}"),
    ("DPS, parenthesised type list", "pto.tadd ins(%a, %b : (!pto.tile_buf<f32, 16, 16>, !pto.tile_buf<f32, 16, 16>)) "
     "outs(%d : !pto.tile_buf<f32, 16, 16>)", f"%d = tadd %a, %b : ({T}, {T}) -> {T}"),
    ("DPS, a type after each item", "pto.tmax ins(%a : !pto.tile_buf<f32, 16, 16>, %b : !pto.tile_buf<f32, 16, 16>) "
     "outs(%d : !pto.tile_buf<f32, 16, 16>)", f"%d = tmax %a, %b : ({T}, {T}) -> {T}"),
    ("DPS, scalar operand typed dtype", "pto.tmuls ins(%a, %s : !pto.tile_buf<f32, 16, 16>, f32) "
     "outs(%d : !pto.tile_buf<f32, 16, 16>)", f"%d = tmuls %a, %s : ({T}, f32) -> {T}"),
    ("positional tile type with every field",
     "%d = tabs %a : !pto.tile<loc=vec, f32, 16, 16, RowMajor, NoneBox, None, Null> -> "
     "!pto.tile_buf<loc=vec, f32, 16, 16, RowMajor, NoneBox, None, Zero>",
     f"%d = tabs %a : ({T}) -> !pto.tile<16x16xf32, pad=zero>"),
    ("tile_buf with location and compact shape", "%d = texp %a : !pto.tile_buf<vec, 16x16xf32> -> "
     "!pto.tile_buf<vec, 16x16xf32, valid=16x8>",
     f"%d = texp %a : ({T}) -> !pto.tile<16x16xf32, valid=16x8>"),
    ("C++ element type names", ".arg %q : !pto.tile_buf<loc=vec, int32, 16, 16, RowMajor, NoneBox>\n"
     "%d = tcvt %q : !pto.tile<int32, 16, 16> -> !pto.tile_buf<vec, half, 16, 16>",
     ".arg %q : !pto.tile<16x16xi32>\n%d = tcvt %q : (!pto.tile<16x16xi32>) -> !pto.tile<16x16xf16>"),
    ("multi-result with vector<> and bare lists", ".arg %l0 : !pto.tile<1x64xf32>\n.arg %l1 : !pto.tile<1x64xf32>\n"
     "%o, %e = tmrgsort %l0, %l1 {exhausted = false} : !pto.tile<1x64xf32>, !pto.tile<1x64xf32> -> "
     "(!pto.tile<1x128xf32>, vector<4xu16>)",
     ".arg %l0 : !pto.tile<1x64xf32>\n.arg %l1 : !pto.tile<1x64xf32>\n"
     "%o, %e = tmrgsort %l0, %l1 {exhausted = false} : (!pto.tile<1x64xf32>, !pto.tile<1x64xf32>) -> "
     "(!pto.tile<1x128xf32>, !pto.tile<1x4xu16>)"),
    ("tassign with @tile(ADDR)", f".tile %t : {T}\npto.tassign %t, @tile(0x1000)",
     f".tile %t : {T}\n%t = tassign 4096 : (index) -> {T}"),
    ("set_flag / wait_flag with operation classes", "set_flag[TLOAD, TADD, 0]\nwait_flag[TLOAD, TADD, 0]",
     "set_flag #pto.pipe<MTE2>, #pto.pipe<V>, 0\nwait_flag #pto.pipe<MTE2>, #pto.pipe<V>, 0"),
    ("record_event / wait_event with instruction names", "pto.record_event[TLOAD, TADD, 1]\n"
     "pto.wait_event[TLOAD, TADD, 1]\npto.record_event[TMATMUL, TSTORE_ACC, 2]\npto.wait_event[TMATMUL, TSTORE_ACC, 2]",
     "set_flag #pto.pipe<MTE2>, #pto.pipe<V>, 1\nwait_flag #pto.pipe<MTE2>, #pto.pipe<V>, 1\n"
     "set_flag #pto.pipe<M>, #pto.pipe<FIX>, 2\nwait_flag #pto.pipe<M>, #pto.pipe<FIX>, 2"),
    ("tsync #pto.op<...> and barrier(INSTR)", "tsync #pto.op<TADD>\ntsync #pto<op TLOAD>\npto.barrier(TMATMUL)",
     "tsync #pto.pipe<V>\ntsync #pto.pipe<MTE2>\npipe_barrier #pto.pipe<M>"),
    ("global as partition_tensor_view / ptr", ".arg %pv : !pto.partition_tensor_view<1x1x1x16x16xf32>\n"
     ".arg %p : !pto.ptr<f32, gm>\n.arg %row : !pto.tile<f32, 1, 16>\n%t = pto.tload %pv[0, 0, 0, 0, 0] : !pto.partition_tensor_view<1x1x1x16x16xf32> "
     "-> !pto.tile_buf<loc=vec, f32, 16, 16, RowMajor, NoneBox, None, Zero>\npto.tstore ins(%row : !pto.tile<f32, 1, 16, "
     "RowMajor, NoneBox>) outs(%p[0] : !pto.ptr<f32, gm>)",
     ".arg %pv : !pto.memref<1x1x1x16x16xf32>\n.arg %p : !pto.memref<?xf32>\n.arg %row : !pto.tile<1x16xf32>\n"
     "%t = tload %pv[0, 0, 0, 0, 0] : (!pto.memref<1x1x1x16x16xf32>) -> !pto.tile<16x16xf32, pad=zero>\n"
     "tstore %p[0], %row : (!pto.memref<?xf32>, !pto.tile<1x16xf32>)"),
    ("public arith ops", ".arg %x : f32\n.arg %n : i32\n%r = arith.remf %x, %s : f32\n%u = arith.maxnumf %x, %s\n"
     "%v = arith.minnumf %x, %s : f32\n%w = arith.ceildivui %n, %n : i32\n%bx = arith.bitcast %x : f32 to i32\n"
     "%ix = arith.index_castui %n : i32 to index",
     ".arg %x : f32\n.arg %n : i32\n%r = arith.remf %x, %s : f32\n%u = arith.maxnumf %x, %s : f32\n"
     "%v = arith.minnumf %x, %s : f32\n%w = arith.ceildivui %n, %n : i32\n%bx = arith.bitcast %x : f32 to i32\n"
     "%ix = arith.index_castui %n : i32 to index"),
    ("statement continued by its signature line", ".arg %l0 : !pto.tile<1x64xf32>\n.arg %l1 : !pto.tile<1x64xf32>\n"
     "%o, %e = tmrgsort %l0, %l1 {exhausted = false}\n    : !pto.tile<1x64xf32>, !pto.tile<1x64xf32>\n"
     "    -> (!pto.tile<1x128xf32>, vector<4xu16>)\n"
     f"%d = tadd %a, %b\n: {T}, {T} -> {T}",
     ".arg %l0 : !pto.tile<1x64xf32>\n.arg %l1 : !pto.tile<1x64xf32>\n"
     "%o, %e = tmrgsort %l0, %l1 {exhausted = false} : (!pto.tile<1x64xf32>, !pto.tile<1x64xf32>) -> "
     f"(!pto.tile<1x128xf32>, !pto.tile<1x4xu16>)\n%d = tadd %a, %b : ({T}, {T}) -> {T}"),
    ("DPS continued by its outs line", ".arg %l0 : !pto.tile<1x64xf32>\n.arg %l1 : !pto.tile<1x64xf32>\n"
     "pto.tmrgsort ins(%l0, %l1 {exhausted = false} : !pto.tile_buf<vec, 1x64xf32>, !pto.tile_buf<vec, 1x64xf32>)\n"
     "outs(%o, %e : !pto.tile_buf<vec, 1x128xf32>, vector<4xu16>)\n"
     f"pto.tmul outs(%d : {T})\n  ins(%a, %b)",
     ".arg %l0 : !pto.tile<1x64xf32>\n.arg %l1 : !pto.tile<1x64xf32>\n"
     "%o, %e = tmrgsort %l0, %l1 {exhausted = false} : (!pto.tile<1x64xf32>, !pto.tile<1x64xf32>) -> "
     f"(!pto.tile<1x128xf32>, !pto.tile<1x4xu16>)\n%d = tmul %a, %b : ({T}, {T}) -> {T}"),
    ("alloc_tile continued by its type line", ".arg %r : index\n%q = pto.alloc_tile valid_row = %r\n"
     "    : !pto.tile_buf<vec, 32x32xf16, valid=?x32>\n.const %c = 0\n  : i32",
     ".arg %r : index\n.tile %q valid_row = %r : !pto.tile<32x32xf16, valid=?x32>\n.const %c = 0 : i32"),
    ("pto.subset as the public page writes it", ".arg %i : index\n.arg %j : index\n"
     "%q = pto.alloc_tile : !pto.tile_buf<vec, 64x64xf16>\n"
     "%sub = pto.subset %q[%i, %j] sizes [32, 32]\n     : !pto.tile_buf<vec, 64x64xf16>",
     ".arg %i : index\n.arg %j : index\n.tile %q : !pto.tile<64x64xf16>\n"
     "%sub = subset %q[%i, %j] sizes [32, 32] : !pto.tile<64x64xf16> -> !pto.tile<32x32xf16, valid=?x?>"),
    ("make_tensor_view with a layout attribute", ".arg %p : !pto.ptr<f32, gm>\n.arg %m : index\n"
     "%tv = pto.make_tensor_view %p, shape = [%m, 16], strides = [1, %m] {layout = #pto.layout<dn>}\n"
     "    : !pto.tensor_view<?x16xf32>",
     ".arg %p : !pto.memref<?xf32>\n.arg %m : index\n"
     "%tv = pto.make_tensor_view %p, shape = [%m, 16], strides = [1, %m] : !pto.memref<?x16xf32, layout=DN>"),
]


def _round_trips(m: pto.Module) -> None:
    pto.check(m, profile="cpu")
    text = m.to_text()
    again = pto.parse(text)
    assert again == m and again.to_text() == text
    assert load_bytes(dump(m)) == m


@pytest.mark.parametrize("name, public, canonical", CORPUS, ids=[c[0] for c in CORPUS])
def test_public_spelling_is_the_canonical_program(name: str, public: str, canonical: str) -> None:
    m = pto.parse(ARGS + public)
    assert m == pto.parse(ARGS + canonical), m.to_text()
    _round_trips(m)


# ------------------------------------------------------------------ runnable kernels

def _kernel(body: str) -> str:
    return (f"kernel @k(%ga : {G}, %gb : {G}, %gc : {G}, %gm : !pto.memref<16x16xi32>, %x : f32) {{\n"
            + body + "\n}\n")


RUN = [
    ("PTO-AS destination first, #attr, hex immediate", _kernel(
        "tload %a, %ga[0, 0] : (!pto.tile<f32,16,16>, !pto.partition_tensor_view<16x16xf32>) -> !pto.tile<f32,16,16>\n"
        "pto.tload ins(%gb[0, 0] : !pto.tensor_view<16x16xf32>) outs(%b : !pto.tile_buf<loc=vec, f32, 16, 16, "
        "RowMajor, NoneBox, None, Null>)\n"
        "tadd %c, %a, %b : !pto.tile<f32, 16, 16>\n"
        "tadds %c, %c, 0x40000000 : !pto.tile<f32, 16, 16>\n"
        "tmuls %c, %c, %x : !pto.tile<f32, 16, 16>\n"
        "tstore %gc[0, 0], %c #atomic=add"),
     _kernel(
        f"%a = tload %ga[0, 0] : ({G}) -> {T}\n%b = tload %gb[0, 0] : ({G}) -> {T}\n"
        f"%c = tadd %a, %b : ({T}, {T}) -> {T}\n%c = tadds %c, 2.0 : ({T}, f32) -> {T}\n"
        f"%c = tmuls %c, %x : ({T}, f32) -> {T}\n"
        f"tstore %gc[0, 0], %c {{atomic = #pto.atomic<ADD>}} : ({G}, {T})")),
    ("SSA and DPS with public attributes and events", _kernel(
        "%a = pto.tload %ga[0, 0] : !pto.memref<16x16xf32> -> !pto.tile_buf<vec, 16x16xf32>\n"
        "%b = pto.tload %gb[0, 0] : !pto.memref<16x16xf32> -> !pto.tile<f32, 16, 16>\n"
        "set_flag[TLOAD, TSUB, 0]\nwait_flag[TLOAD, TSUB, 0]\n"
        "%c = pto.tsub %a, %b : !pto.tile<f32, 16, 16>, !pto.tile<f32, 16, 16> -> !pto.tile_buf<vec, f32, 16, 16, 16, 16>\n"
        "%c = pto.tmuls %c, 0x41200000 : !pto.tile<f32, 16, 16> -> !pto.tile<f32, 16, 16>\n"
        '%m = pto.tcvt %c {rnd = "rm"} : !pto.tile<f32, 16, 16> -> !pto.tile_buf<vec, int32, 16, 16, 16, 16>\n'
        "pto.tsync #pto.op<TCVT>\n"
        "pto.tstore ins(%m : !pto.tile<int32, 16, 16>) outs(%gm[0, 0] : !pto.memref<16x16xi32>)"),
     _kernel(
        f"%a = tload %ga[0, 0] : ({G}) -> {T}\n%b = tload %gb[0, 0] : ({G}) -> {T}\n"
        "set_flag #pto.pipe<MTE2>, #pto.pipe<V>, 0\nwait_flag #pto.pipe<MTE2>, #pto.pipe<V>, 0\n"
        f"%c = tsub %a, %b : ({T}, {T}) -> {T}\n%c = tmuls %c, 10.0 : ({T}, f32) -> {T}\n"
        f"%m = tcvt %c {{roundMode = #pto.round<FLOOR>}} : ({T}) -> !pto.tile<16x16xi32>\n"
        "tsync #pto.pipe<V>\n"
        "tstore %gm[0, 0], %m : (!pto.memref<16x16xi32>, !pto.tile<16x16xi32>)")),
]


def _inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(14)
    return {"ga": rng.standard_normal((16, 16)).astype(np.float32),
            "gb": rng.standard_normal((16, 16)).astype(np.float32),
            "gc": np.full((16, 16), 0.5, np.float32), "gm": np.zeros((16, 16), np.int32)}


def _run(m: pto.Module, backend: str) -> dict[str, np.ndarray]:
    args = _inputs()
    pto.compile(m, backend).run("k", args["ga"], args["gb"], args["gc"], args["gm"], 3.0)
    return args


@pytest.mark.parametrize("name, public, canonical", RUN, ids=[r[0] for r in RUN])
@pytest.mark.parametrize("backend", ["reference", "llvm"])
def test_public_kernel_runs_as_its_canonical_spelling(name: str, public: str, canonical: str, backend: str) -> None:
    m = pto.parse(public)
    assert m == pto.parse(canonical)
    _round_trips(m)
    got, want = _run(m, backend), _run(pto.parse(canonical), "reference")
    for k in got:
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)


def test_public_kernel_values_by_hand() -> None:
    """The first kernel's numbers, from numpy written here: gc += ((a + b) + 2) * 3 (atomic add);
    the second: gm = floor((a - b) * 10)."""
    inp = _inputs()
    want_c = inp["gc"] + ((inp["ga"] + inp["gb"]) + np.float32(2.0)) * np.float32(3.0)
    got = _run(pto.parse(RUN[0][1]), "llvm")
    np.testing.assert_allclose(got["gc"], want_c, rtol=1e-6)
    got = _run(pto.parse(RUN[1][1]), "llvm")
    np.testing.assert_array_equal(got["gm"], np.floor((inp["ga"] - inp["gb"]) * np.float32(10)).astype(np.int32))


ARITH = """
kernel @k(%g : !pto.memref<1x8xf32>, %h : !pto.memref<1x8xi32>, %x : f32, %y : f32, %a : i32, %b : i32, %sel : index) {
  %r0 = arith.remf %x, %y : f32
  %r1 = arith.maxnumf %x, %y : f32
  %r2 = arith.minnumf %x, %y : f32
  %xi = arith.bitcast %x : f32 to i32
  %hx = arith.truncf %x : f32 to f16
  %hb = arith.bitcast %hx : f16 to i16
  %hi = arith.extsi %hb : i16 to i32
  %bf = arith.truncf %y : f32 to bf16
  %bb = arith.bitcast %bf : bf16 to i16
  %bi = arith.extui %bb : i16 to i32
  %q = arith.ceildivui %a, %b : i32
  %w = arith.index_castui %a : i32 to index
  %w1 = arith.shrui %w, %sel : index
  %wi = arith.index_cast %w1 : index to i32
  %back = arith.bitcast %xi : i32 to f32
  %t0 = texpands %r0 : (f32) -> !pto.tile<1x1xf32>
  tstore %g[0, 0], %t0
  %t1 = texpands %r1 : (f32) -> !pto.tile<1x1xf32>
  tstore %g[0, 1], %t1
  %t2 = texpands %r2 : (f32) -> !pto.tile<1x1xf32>
  tstore %g[0, 2], %t2
  %t3 = texpands %back : (f32) -> !pto.tile<1x1xf32>
  tstore %g[0, 3], %t3
  %u0 = texpands %xi : (i32) -> !pto.tile<1x1xi32>
  tstore %h[0, 0], %u0
  %u1 = texpands %hi : (i32) -> !pto.tile<1x1xi32>
  tstore %h[0, 1], %u1
  %u2 = texpands %bi : (i32) -> !pto.tile<1x1xi32>
  tstore %h[0, 2], %u2
  %u3 = texpands %q : (i32) -> !pto.tile<1x1xi32>
  tstore %h[0, 3], %u3
  %u4 = texpands %wi : (i32) -> !pto.tile<1x1xi32>
  tstore %h[0, 4], %u4
}
"""


@pytest.mark.parametrize("backend", ["reference", "llvm"])
@pytest.mark.parametrize("x, y, a, b, want_f, want_i", [
    # fmod keeps the dividend's sign; maxnum/minnum ignore NaN; f32 -7.5 = 0xC0F00000, f16 -7.5 =
    # 0xC780 (sign-extended), 1.5 = 0x3FC00000 / f16 0x3E00; bf16 2.0 = 0x4000, NaN 0x7FC0 (zero-extended); ceil(0xFFFFFFFF / 3) unsigned; 0xFFFFFFFF >> 4.
    (-7.5, 2.0, -1, 3, [-1.5, 2.0, -7.5, -7.5], [-1058013184, 0xC780 - 0x10000, 0x4000, 1431655765, 0x0FFFFFFF]),
    (1.5, math.nan, 7, 2, [math.nan, 1.5, 1.5, 1.5], [0x3FC00000, 0x3E00, 0x7FC0, 4, 0]),
])
def test_public_arith_ops_by_hand(backend: str, x: float, y: float, a: int, b: int,
                                  want_f: list[float], want_i: list[int]) -> None:
    m = pto.parse(ARITH)
    _round_trips(m)
    g, h = np.zeros((1, 8), np.float32), np.zeros((1, 8), np.int32)
    pto.compile(m, backend).run("k", g, h, x, y, a, b, 4)
    np.testing.assert_array_equal(g[0, :4], np.array(want_f, np.float32))
    np.testing.assert_array_equal(h[0, :5], np.array(want_i, np.int32))


# ------------------------------------------------------------------ diagnostics

BAD = [
    ("ambiguous destination-first split", ".arg %src : !pto.tile<16x16xf32>\n"
     "trowargmax %v, %i, %src : !pto.tile<16x1xf32>", "PARSE_ARITY", 2),
    ("per-item types mixed with a list", f"pto.tadd ins(%a : {T}, %b, %s : {T}, f32) outs(%d : {T})",
     "PARSE_SIGNATURE", 1),
    ("a written operand typed twice differently", f"tload %t, %g[0, 0] : ({T}, {G}) -> !pto.tile<16x16xf16>",
     "PARSE_SIGNATURE", 1),
    ("unknown quoted value", f'%d = tcmp %a, %b {{cmp = "below"}} : ({T}, {T}) -> {M}', "PARSE_ATTR", 1),
    ("quoted value for a boolean attribute", '.arg %l : !pto.tile<1x64xf32>\n%o, %e = tmrgsort %l, %l '
     '{exhausted = "no"} : (!pto.tile<1x64xf32>, !pto.tile<1x64xf32>) -> (!pto.tile<1x128xf32>, '
     '!pto.tile<1x4xu16>)', "PARSE_ATTR", 2),
    ("#attr naming nothing declared", "tadd %d, %a, %b #cmp=lt : !pto.tile<f32, 16, 16>", "STRUCT_UNKNOWN_ATTR", 1),
    ("operation class whose pipe depends on operands", "tsync #pto.op<TSTORE>", "PARSE_ATTR", 1),
    ("unknown operation class in set_flag[...]", "set_flag[TLOAD, TNOPE, 0]", "PARSE_ATTR", 1),
    ("hex NaN with a payload", "tadds %d, %a, 0x7FC00001 : !pto.tile<f32, 16, 16>", "PARSE_LITERAL", 1),
    ("hex pattern wider than the float", "tadds %d, %a, 0x1FFFFFFFF : !pto.tile<f32, 16, 16>", "PARSE_LITERAL", 1),
    ("@tile without an integer", ".tile %t : !pto.tile<16x16xf32>\npto.tassign %t, @tile(%s)", "PARSE_TOKEN", 2),
    ("ub pointer has no openpto type", ".arg %p : !pto.ptr<f32, ub>", "PARSE_TYPE", 1),
    ("PadValue Invalid", ".arg %p : !pto.tile<loc=vec, f32, 16, 16, RowMajor, NoneBox, None, Invalid>",
     "PARSE_TYPE", 1),
    ("bitcast changing the width", ".arg %x : f32\n%y = arith.bitcast %x : f32 to i16", "STRUCT_SCALAR_TYPE", 2),
    ("a signature line with no statement before it", ".arg %q : index\n\n: f32", "PARSE_TOKEN", 3),
    ("an outs line that does not fit the statement", f"%d = tadd %a, %b\n  outs(%d : {T})", "PARSE_TOKEN", 2),
    ("tile_buf_addr outside pto.vecscope", ".tile %t : !pto.tile<16x16xf32>\n"
     "%p = pto.tile_buf_addr %t : !pto.tile_buf<vec, 16x16xf32> -> !pto.ptr<f32, ub>", "PARSE_VECSCOPE", 2),
    ("subset sizes given as values", ".arg %i : index\n.tile %t : !pto.tile<16x16xf32>\n"
     "%c = pto.subset %t[0, 0] sizes [%i, 8] : !pto.tile<16x16xf32>", "PARSE_TOKEN", 3),
    ("layout hint against the strides", ".arg %p : !pto.ptr<f32, gm>\n"
     "%tv = pto.make_tensor_view %p, shape = [4, 4], strides = [4, 1], layout = dn : !pto.tensor_view<4x4xf32>",
     "PARSE_ATTR", 2),
]


def _assert_located(text: str, code: str, line: int) -> None:
    """Checking ``text`` on cpu fails with ``code`` at ``line``, saying what it expected or got."""
    with pytest.raises(PTOError) as info:
        pto.check(pto.parse(text), profile="cpu")
    err = info.value
    assert err.code == code, err.render()
    assert err.location is not None and err.location.line == line, err.render()
    assert err.expected is not None or err.actual is not None


@pytest.mark.parametrize("name, text, code, line", BAD, ids=[b[0] for b in BAD])
def test_bad_public_spelling_is_a_located_diagnostic(name: str, text: str, code: str, line: int) -> None:
    _assert_located(ARGS + f".arg %g : {G}\n" + text, code, 4 + line)


# ------------------------------------------------------------------ continuation lines

# Linear parse time of long continuation lines: tests/test_assembler_linear.py (its cases are
# benchmarks/bench_parse_linear.py's "continuation: ..." rows).


def test_continued_statement_reports_on_its_own_lines() -> None:
    """A diagnostic inside a continuation line points at that line, and the statement after
    the continued one parses as usual."""
    src = ARGS + f"%d = tadd %a, %b\n    : {T}, f16 -> {T}\n%e = tsub %a, %b : ({T}, {T}) -> {T}\n%e = tmul %e, %zz"
    with pytest.raises(PTOError) as info:
        pto.parse(src)
    errs = getattr(info.value, "errors", [info.value])
    assert [(e.code, e.location.line) for e in errs] == [("STRUCT_TYPE_MISMATCH", 5), ("STRUCT_UNDEFINED", 7)]


# ------------------------------------------------------------------ two-result arith ops

def _extended_by_hand(op: str, a: int, b: int, bits: int, signed: bool) -> tuple[int, int]:
    """MLIR arith: the operands' bits read as unsigned (addui, mului) or signed (mulsi); the
    low half of the exact result, and its high half or the carry out (0/1). Both halves are
    returned as the type's natural value (two's complement when ``signed``)."""
    mask = (1 << bits) - 1
    pa, pb = a & mask, b & mask
    if op == "mulsi_extended":
        sa = pa - (1 << bits) if pa >> (bits - 1) else pa
        sb = pb - (1 << bits) if pb >> (bits - 1) else pb
        full = sa * sb
    else:
        full = pa + pb if op == "addui_extended" else pa * pb
    lo, hi = full & mask, (full >> bits) & mask

    def natural(p: int) -> int:
        return p - (1 << bits) if signed and p >> (bits - 1) else p
    return natural(lo), (hi if op == "addui_extended" else natural(hi))


EXT_TYPES = [("i8", 8, True, np.int8), ("u8", 8, False, np.uint8), ("i16", 16, True, np.int16),
             ("i32", 32, True, np.int32), ("u32", 32, False, np.uint32), ("i64", 64, True, np.int64),
             ("u64", 64, False, np.uint64)]


def _edge_pairs(bits: int, signed: bool) -> list[tuple[int, int]]:
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    vals = sorted({lo, lo + 1, -1 if signed else 1, 0, 1, 3, hi - 1, hi})
    return [(x, y) for x in vals for y in vals]


def _extended_kernel(t: str) -> str:
    """The five values (sum, signed low/high, unsigned low/high) to %g[0, 0..4] and the carry to
    %c. TEXPANDS has no 64-bit form, so a 64-bit value goes out as two 32-bit halves (low at
    2k, high at 2k + 1 of a 32-bit %g)."""
    wide = t in ("i64", "u64")
    half = {"i64": "i32", "u64": "u32"}.get(t, t)
    g = f"!pto.memref<1x10x{half}>" if wide else f"!pto.memref<1x5x{t}>"
    lines = [f"kernel @k(%g : {g}, %c : !pto.memref<1x1xi32>, %a : {t}, %b : {t}) {{",
             f"  %s, %o = arith.addui_extended %a, %b : {t}, i1",
             f"  %l, %h = arith.mulsi_extended %a, %b : {t}",
             f"  %ul, %uh = mului_extended %a, %b : {t}",
             "  %oi = arith.extui %o : i1 to i32",
             "  %to = texpands %oi : (i32) -> !pto.tile<1x1xi32>",
             "  tstore %c[0, 0], %to",
             f"  .const %c32 = 32 : {t}"]
    for k, v in enumerate(["s", "l", "h", "ul", "uh"]):
        if not wide:
            lines += [f"  %t{k} = texpands %{v} : ({t}) -> !pto.tile<1x1x{t}>", f"  tstore %g[0, {k}], %t{k}"]
            continue
        lines += [f"  %lo{k} = arith.trunci %{v} : {t} to {half}", f"  %sh{k} = arith.shrui %{v}, %c32 : {t}",
                  f"  %hi{k} = arith.trunci %sh{k} : {t} to {half}",
                  f"  %p{k} = texpands %lo{k} : ({half}) -> !pto.tile<1x1x{half}>", f"  tstore %g[0, {2 * k}], %p{k}",
                  f"  %q{k} = texpands %hi{k} : ({half}) -> !pto.tile<1x1x{half}>",
                  f"  tstore %g[0, {2 * k + 1}], %q{k}"]
    return "\n".join(lines + ["}"])


def _read_back(g: np.ndarray, bits: int, signed: bool) -> list[int]:
    if bits < 64:
        return [int(x) for x in g[0, :5]]
    out = []
    for k in range(5):
        p = (int(g[0, 2 * k + 1]) & 0xFFFFFFFF) << 32 | (int(g[0, 2 * k]) & 0xFFFFFFFF)
        out.append(p - (1 << 64) if signed and p >> 63 else p)
    return out


@pytest.mark.parametrize("backend", ["reference", "llvm"])
@pytest.mark.parametrize("t, bits, signed, np_t", EXT_TYPES, ids=[e[0] for e in EXT_TYPES])
def test_extended_arith_ops_by_hand(backend: str, t: str, bits: int, signed: bool, np_t: type) -> None:
    m = pto.parse(_extended_kernel(t))
    _round_trips(m)
    k = pto.compile(m, backend)
    for a, b in _edge_pairs(bits, signed):
        g = np.zeros((1, 10), np.int32 if signed else np.uint32) if bits == 64 else np.zeros((1, 5), np_t)
        c = np.zeros((1, 1), np.int32)
        k.run("k", g, c, a, b)
        s, carry = _extended_by_hand("addui_extended", a, b, bits, signed)
        want = [s, *_extended_by_hand("mulsi_extended", a, b, bits, signed),
                *_extended_by_hand("mului_extended", a, b, bits, signed)]
        assert _read_back(g, bits, signed) == want, (t, a, b)
        assert int(c[0, 0]) == carry, (t, a, b)


def test_extended_arith_ops_hand_cases() -> None:
    """A few results written out: 0xFFFFFFFF * 3 = 0x2_FFFFFFFD; -1 * -2 = 2 (signed: high 0,
    unsigned: 0xFFFFFFFF * 0xFFFFFFFE = 0xFFFFFFFD_00000002); 0x7FFFFFFF + 1 carries nothing,
    0xFFFFFFFF + 1 carries one."""
    assert _extended_by_hand("mului_extended", 0xFFFFFFFF, 3, 32, False) == (0xFFFFFFFD, 2)
    assert _extended_by_hand("mulsi_extended", -1, -2, 32, True) == (2, 0)
    assert _extended_by_hand("mului_extended", -1, -2, 32, True) == (2, -3)
    assert _extended_by_hand("addui_extended", 0x7FFFFFFF, 1, 32, True) == (-(1 << 31), 0)
    assert _extended_by_hand("addui_extended", -1, 1, 32, True) == (0, 1)
    m = pto.parse(_extended_kernel("i32"))
    for backend in ("reference", "llvm"):
        g, c = np.zeros((1, 5), np.int32), np.zeros((1, 1), np.int32)
        pto.compile(m, backend).run("k", g, c, -1, -2)
        assert g[0, :5].tolist() == [-3, 2, 0, 2, -3] and c[0, 0] == 1, backend


EXT_BAD = [
    ("one result", ".arg %x : i32\n%l = arith.mulsi_extended %x, %x : i32", "PARSE_ARITY", 2),
    ("three results", ".arg %x : i32\n%l, %h, %z = arith.mului_extended %x, %x", "PARSE_ARITY", 2),
    ("a literal operand", ".arg %x : i32\n%l, %h = arith.mulsi_extended %x, 3 : i32", "PARSE_TOKEN", 2),
    ("index operands", ".arg %x : index\n%l, %h = arith.mulsi_extended %x, %x : index", "STRUCT_SCALAR_TYPE", 2),
    ("i1 operands", ".arg %x : i1\n%l, %h = arith.addui_extended %x, %x", "STRUCT_SCALAR_TYPE", 2),
    ("float operands", ".arg %x : f32\n%l, %h = arith.mului_extended %x, %x", "STRUCT_SCALAR_TYPE", 2),
    ("operands of two types", ".arg %x : i32\n.arg %y : u32\n%l, %h = arith.mului_extended %x, %y", "STRUCT_SCALAR_TYPE", 3),
    ("carry typed as the sum", ".arg %x : i32\n%l, %h = arith.addui_extended %x, %x : i32, i32",
     "STRUCT_TYPE_MISMATCH", 2),
    ("operand type written wrong", ".arg %x : i32\n%l, %h = arith.mulsi_extended %x, %x : i16",
     "STRUCT_TYPE_MISMATCH", 2),
]


@pytest.mark.parametrize("name, text, code, line", EXT_BAD, ids=[b[0] for b in EXT_BAD])
def test_bad_extended_arith_is_a_located_diagnostic(name: str, text: str, code: str, line: int) -> None:
    _assert_located(text, code, line)


# ------------------------------------------------------------------ pto.set_validshape

SETVALID = """
kernel @k(%g : !pto.memref<16x16xf32>, %o : !pto.memref<16x16xf32>, %r : index, %c : index) {
  .const %c16 = 16 : index
  %t = pto.alloc_tile valid_row = %c16 valid_col = %c16
      : !pto.tile_buf<vec, 16x16xf32, valid=?x?>
  pto.tload ins(%g[0, 0] : !pto.memref<16x16xf32>) outs(%t : !pto.tile_buf<vec, 16x16xf32, valid=?x?>)
  RESHAPE
  %t = tadds %t, 1.0
  tstore %o[0, 0], %t
}
"""
SV_TYPE = "!pto.tile_buf<vec, 16x16xf32, valid=?x?>"
SV_KEPT = SETVALID.replace("RESHAPE", f"pto.set_validshape %t, %r, %c : {SV_TYPE}")


@pytest.mark.parametrize("backend", ["reference", "llvm"])
@pytest.mark.parametrize("rows, cols", [(5, 3), (16, 16), (0, 7), (1, 16)])
def test_set_validshape_keeps_the_contents_and_narrows_the_region(backend: str, rows: int, cols: int) -> None:
    m = pto.parse(SV_KEPT)
    _round_trips(m)
    assert "pto.set_validshape %t, %r, %c : !pto.tile<16x16xf32, valid=?x?>" in m.to_text()
    g = np.arange(256, dtype=np.float32).reshape(16, 16)
    o = np.full((16, 16), -7.0, np.float32)
    pto.compile(m, backend).run("k", g, o, rows, cols)
    want = np.full((16, 16), -7.0, np.float32)
    want[:rows, :cols] = g[:rows, :cols] + np.float32(1.0)
    np.testing.assert_array_equal(o, want)


SETVALID_PARAM = """
kernel @k(%t : !pto.tile<8x16xf32, valid=?x?>, %y : !pto.memref<8x16xf32>, %r : index, %c : index) {
  pto.set_validshape %t, %r, %c
  tstore %y[0, 0], %t
}
"""


@pytest.mark.parametrize("backend", ["reference", "llvm"])
@pytest.mark.parametrize("rows, cols", [(3, 5), (8, 16), (0, 0)])
def test_set_validshape_on_a_tile_parameter(backend: str, rows: int, cols: int) -> None:
    """A kernel parameter's region moves too (llvm used to keep the whole tile)."""
    t = np.arange(1, 129, dtype=np.float32).reshape(8, 16)
    y = np.zeros((8, 16), np.float32)
    pto.compile(pto.parse(SETVALID_PARAM), backend)(t=t, y=y, r=rows, c=cols)
    want = np.zeros((8, 16), np.float32)
    want[:rows, :cols] = t[:rows, :cols]
    np.testing.assert_array_equal(y, want)


def test_set_validshape_is_not_a_fresh_declaration() -> None:
    """Re-declaring the tile (``.tile``) would start it afresh, so the read after it faults on
    the reference; ``pto.set_validshape`` keeps the loaded data, and the never-written analysis
    sees the same tile."""
    from openpto.assembler.initialisation import uninitialised_reads
    kept = pto.parse(SV_KEPT)
    fresh = pto.parse(SETVALID.replace("RESHAPE", f".tile %t valid_row = %r valid_col = %c : {SV_TYPE}"))
    assert uninitialised_reads(kept.kernel()) == []
    g, o = np.ones((16, 16), np.float32), np.zeros((16, 16), np.float32)
    pto.compile(kept, "reference").run("k", g, o, 4, 4)
    with pytest.raises(PTOError) as info:
        pto.compile(fresh, "reference").run("k", g, o, 4, 4)
    assert info.value.code == "RUNTIME_UNINIT_READ"
    # a static-region tile written, then declared again, is reported before it runs; the same
    # program with set_validshape cannot name such a tile (its region must be ?x?)
    static = ("kernel @k(%g : !pto.memref<16x16xf32>) {\n  %t = tload %g[0, 0] : (!pto.memref<16x16xf32>) -> "
              "!pto.tile<16x16xf32>\n  .tile %t : !pto.tile<16x16xf32>\n  %u = tabs %t : (!pto.tile<16x16xf32>) -> "
              "!pto.tile<16x16xf32>\n}")
    assert [e.code for e in uninitialised_reads(pto.parse(static).kernel())] == ["STRUCT_UNINIT_READ"]


@pytest.mark.parametrize("backend", ["reference", "llvm"])
def test_set_validshape_beyond_the_tile_faults(backend: str) -> None:
    m = pto.parse(SV_KEPT)
    g, o = np.ones((16, 16), np.float32), np.zeros((16, 16), np.float32)
    with pytest.raises(PTOError) as info:
        pto.compile(m, backend).run("k", g, o, 17, 2)
    assert info.value.code == "RUNTIME_VALID_REGION"


SV_BAD = [
    ("static valid region", ".arg %n : index\n.tile %t : !pto.tile<16x16xf32>\npto.set_validshape %t, %n, %n",
     "STRUCT_VALID_REGION", 3),
    ("one dynamic extent", ".arg %n : index\n.tile %t valid_row = %n : !pto.tile<16x16xf32, valid=?x16>\n"
     "pto.set_validshape %t, %n, %n", "STRUCT_VALID_REGION", 3),
    ("float extent", ".arg %n : index\n.arg %x : f32\n.tile %t valid_row = %n valid_col = %n : "
     "!pto.tile<16x16xf32, valid=?x?>\npto.set_validshape %t, %x, %n", "STRUCT_INDEX", 4),
    ("undeclared tile", ".arg %n : index\npto.set_validshape %t, %n, %n", "STRUCT_UNDEFINED", 2),
    ("a result", ".arg %n : index\n.tile %t valid_row = %n valid_col = %n : !pto.tile<16x16xf32, valid=?x?>\n"
     "%u = pto.set_validshape %t, %n, %n", "PARSE_ARITY", 3),
    ("another type written", ".arg %n : index\n.tile %t valid_row = %n valid_col = %n : "
     "!pto.tile<16x16xf32, valid=?x?>\npto.set_validshape %t, %n, %n : !pto.tile<16x16xf16, valid=?x?>",
     "STRUCT_TYPE_MISMATCH", 3),
]


@pytest.mark.parametrize("name, text, code, line", SV_BAD, ids=[b[0] for b in SV_BAD])
def test_bad_set_validshape_is_a_located_diagnostic(name: str, text: str, code: str, line: int) -> None:
    _assert_located(text, code, line)
