"""ascend_sim launches over several cores: blocks placed on AIV / AIC cores (waves when there are
more blocks than cores), HBM shared among them, and the timing-only mode. The expectations are
independent: numpy for values, the machine's published core counts and HBM parameter, and the
308 TFLOPS measured for a 6144^3 fp16 GEMM on 24 A3 cube cores (pto-isa's GEMM README)."""
from __future__ import annotations

import numpy as np
import pytest

import openpto as pto
from openpto.backends.ascend_sim.multicore import core_kind, place, slots, stretches
from openpto.isa import machines as M

VADD = """kernel @vadd(%a : !pto.memref<?x1024xf32>, %b : !pto.memref<?x1024xf32>, %c : !pto.memref<?x1024xf32>,
                   %per : index) {
  .const %c0 = 0 : index
  .const %c32 = 32 : index
  .const %c256 = 256 : index
  .const %c1024 = 1024 : index
  .tile %ta : !pto.tile<32x256xf32>
  .tile %tb : !pto.tile<32x256xf32>
  .tile %tc : !pto.tile<32x256xf32>
  %blk = pto.get_block_idx
  %r0 = arith.muli %blk, %per : index
  %r1 = arith.addi %r0, %per : index
  scf.for %r = %r0 to %r1 step %c32 {
    scf.for %j = %c0 to %c1024 step %c256 {
      %ta = tload %a[%r, %j] : (!pto.memref<?x1024xf32>) -> !pto.tile<32x256xf32>
      %tb = tload %b[%r, %j] : (!pto.memref<?x1024xf32>) -> !pto.tile<32x256xf32>
      %tc = tadd %ta, %tb : (!pto.tile<32x256xf32>, !pto.tile<32x256xf32>) -> !pto.tile<32x256xf32>
      tstore %c[%r, %j], %tc : (!pto.memref<?x1024xf32>, !pto.tile<32x256xf32>)
    }
  }
}"""


def gemm_text(bm: int = 128, bn: int = 256, bk: int = 64, kp: int = 512) -> str:
    """C = A @ B, one (sm x sn) block of C per launched block on a gm x gn grid; per C tile
    (bm x bn) the K dimension in L1 panels of kp, the cube fed bk at a time. No flags: the pipes
    overlap as far as their queues allow (an ideally double-buffered kernel's timing)."""
    a, b = f"!pto.tile<{bm}x{kp}xf16, loc=mat, layout=NZ>", f"!pto.tile<{kp}x{bn}xf16, loc=mat, layout=NZ>"
    left, right = f"!pto.tile<{bm}x{bk}xf16, loc=left, layout=NZ>", f"!pto.tile<{bk}x{bn}xf16, loc=right, layout=ZN>"
    acc, g16, g32 = f"!pto.tile<{bm}x{bn}xf32, loc=acc, layout=NZ>", "!pto.memref<?x?xf16>", "!pto.memref<?x?xf32>"
    return f"""kernel @gemm(%a : {g16}, %b : {g16}, %c : {g32}, %k : index, %sm : index, %sn : index, %gn : index) {{
  .const %c0 = 0 : index
  .const %bm = {bm} : index
  .const %bn = {bn} : index
  .const %bk = {bk} : index
  .const %kp = {kp} : index
  .tile %amat : {a}
  .tile %bmat : {b}
  .tile %left : {left}
  .tile %right : {right}
  .tile %acc : {acc}
  %blk = pto.get_block_idx
  %bi = arith.divsi %blk, %gn : index
  %bj = arith.remsi %blk, %gn : index
  %m0 = arith.muli %bi, %sm : index
  %n0 = arith.muli %bj, %sn : index
  %m1 = arith.addi %m0, %sm : index
  %n1 = arith.addi %n0, %sn : index
  scf.for %i = %m0 to %m1 step %bm {{
    scf.for %j = %n0 to %n1 step %bn {{
      scf.for %k0 = %c0 to %k step %kp {{
        %amat = tload %a[%i, %k0] : ({g16}) -> {a}
        %bmat = tload %b[%k0, %j] : ({g16}) -> {b}
        scf.for %kk = %c0 to %kp step %bk {{
          %left = textract %amat, %c0, %kk : ({a}, index, index) -> {left}
          %right = textract %bmat, %kk, %c0 : ({b}, index, index) -> {right}
          %kabs = arith.addi %k0, %kk : index
          %fresh = arith.cmpi eq, %kabs, %c0 : index
          scf.if %fresh {{
            %acc = tmatmul %left, %right : ({left}, {right}) -> {acc}
          }} else {{
            %acc = tmatmul_acc %acc, %left, %right : ({acc}, {left}, {right}) -> {acc}
          }}
        }}
      }}
      tstore %c[%i, %j], %acc : ({g32}, {acc})
    }}
  }}
}}"""


def _vadd(blocks: int, per: int = 128, **options: object):  # noqa: ANN202
    rng = np.random.default_rng(1)
    a = rng.random((blocks * per, 1024), dtype=np.float32)
    b = rng.random((blocks * per, 1024), dtype=np.float32)
    c = np.zeros_like(a)
    exe = pto.compile(pto.parse(VADD), "ascend_sim", "a3", hazards="off", **options)
    return exe.run("vadd", a, b, c, per, block_num=blocks), a, b, c


def test_memory_bound_kernel_reaches_but_does_not_exceed_hbm() -> None:
    """96 blocks of vector add on a3's 48 AIV cores: each core alone draws ~78 GB/s from GM, 48
    of them ask for ~3.7 TB/s, so the shared 1.6 TB/s HBM is the limit, reached, not exceeded."""
    res, a, b, c = _vadd(96)
    np.testing.assert_array_equal(c, a + b)
    hbm = M.get("a3").hbm_gbps
    assert 3 * a.nbytes == res.hbm_bytes                      # two reads and a write, each byte once
    assert res.hbm_bytes / (res.time_us * 1e3) == pytest.approx(res.hbm_gbps)
    assert 0.95 * hbm <= res.hbm_gbps <= hbm * 1.001
    assert res.bound == "MTE2" and res.core_kind == "AIV"


def test_blocks_beyond_the_cores_run_in_waves() -> None:
    res, *_ = _vadd(96, per=32)
    assert len(res.core_cycles) == 48 and set(res.core_cycles) == {f"AIV{i}" for i in range(48)}
    by_block = {b: (core, start, end) for b, core, start, end in res.blocks}
    assert [by_block[b][1] for b in range(48)] == [0.0] * 48
    for b in range(48, 96):                                   # the second wave: on a core once it is free
        core, start, _ = by_block[b]
        first_end = min(end for _, c, _, end in res.blocks[:48] if c == core)
        assert start > 0 and start == pytest.approx(first_end, rel=2e-3)   # placed by the settled durations
    assert res.cycles == pytest.approx(max(end for *_, end in res.blocks))
    one, *_ = _vadd(1, per=32)
    assert res.cycles > 1.9 * one.cycles                       # two waves, each no faster than a lone block


def test_the_timing_only_mode_times_the_same_and_computes_nothing() -> None:
    timed, *_ = _vadd(8, values=False)
    full, a, b, c = _vadd(8)
    assert timed.outputs == {} and full.outputs
    assert timed.cycles == full.cycles and timed.busy == full.busy
    assert timed.counters["instructions"] == full.counters["instructions"]
    _, a2, b2, c2 = _vadd(2, values=False)
    assert not c2.any()                                       # nothing was written
    with pytest.raises(pto.PTOError) as e:
        pto.compile(pto.parse(VADD), "ascend_sim", "a3", values="no")
    assert e.value.code == "PTO_OPTION"


def test_gemm_6144_on_24_cube_cores_is_near_the_measured_308_tflops() -> None:
    """pto-isa's A3 GEMM: 6144^3 fp16 -> f32 on 24 cube cores in 1.506 ms = 308 TFLOPS (its
    README); the model, timing only, within +-25%. Blocks on a 4 x 6 grid: 1536 x 1024 of C each."""
    n, gm, gn = 6144, 4, 6
    exe = pto.compile(pto.parse(gemm_text()), "ascend_sim", "a3", values=False, hazards="off")
    a, b, c = np.empty((n, n), np.float16), np.empty((n, n), np.float16), np.empty((n, n), np.float32)
    res = exe.run("gemm", a, b, c, n, n // gm, n // gn, gn, block_num=gm * gn)
    tflops = 2 * n ** 3 / (res.time_us * 1e-6) / 1e12
    assert tflops == pytest.approx(308, rel=0.25)
    assert res.core_kind == "AIC" and len(res.core_cycles) == 24 and res.bound == "Cube"
    assert res.hbm_gbps <= M.get("a3").hbm_gbps


def test_gemm_values_on_several_cores_equal_numpy() -> None:
    n, gm, gn = 512, 2, 2
    rng = np.random.default_rng(2)
    a = rng.standard_normal((n, n)).astype(np.float16)
    b = rng.standard_normal((n, n)).astype(np.float16)
    c = np.zeros((n, n), np.float32)
    exe = pto.compile(pto.parse(gemm_text(kp=256)), "ascend_sim", "a3", hazards="off")
    res = exe.run("gemm", a, b, c, n, n // gm, n // gn, gn, block_num=gm * gn)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-2)
    assert len(res.core_cycles) == 4


def test_core_kinds_and_slots_follow_the_machine() -> None:
    a3, a5 = M.get("a3"), M.get("a5")
    assert (core_kind({"vector"}), core_kind({"cube"}), core_kind({"cube", "vector"}), core_kind(set())) == \
        ("AIV", "AIC", "MIX", "AIV")
    assert (slots(a3, "AIV"), slots(a3, "AIC"), slots(a3, "MIX")) == (48, 24, 24)
    assert (slots(a5, "AIV"), slots(a5, "AIC"), slots(a5, "MIX")) == (64, 32, 32)
    assert place([5.0, 3.0, 1.0, 1.0], 2) == [(0, 0.0), (1, 0.0), (1, 3.0), (1, 4.0)]
    m = pto.load("examples/flash_attention.pto")
    exe = pto.compile(m, "ascend_sim", "a3")
    assert core_kind(exe._kernels[m.kernels[0].name][1].units) == "MIX"


def test_fair_share_stretches_only_what_overlaps_past_the_limit() -> None:
    """Two transfers asking 3 and 1 bytes/cycle over [0, 10) under a limit of 2: demand 4, each
    stretched by 2 over the common part; a third alone over [20, 30) asking 1.5 is not stretched."""
    got = stretches([(0.0, 10.0, 30, 1), (0.0, 10.0, 10, 2), (20.0, 30.0, 15, 3)], {1: 3.0, 2: 1.0, 3: 1.5}, 2.0)
    assert got == {1: pytest.approx(2.0), 2: pytest.approx(2.0)}
    half = stretches([(0.0, 10.0, 30, 1), (5.0, 15.0, 30, 2)], {1: 3.0, 2: 3.0}, 3.0)
    assert half == {1: pytest.approx(1.5), 2: pytest.approx(1.5)}


def test_trace_has_a_lane_per_core_and_pipe_and_flag_arrows(tmp_path) -> None:  # noqa: ANN001
    """double_buffer_copy on 2 blocks: processes named by core, every flag wait that took a set is
    an "s" on the setting pipe and an "f" (at or after it) on the waiting pipe."""
    from openpto.backends.trace import chrome_trace
    m = pto.load("examples/double_buffer_copy.pto")
    src = np.arange(2 * 96 * 512, dtype=np.float32).reshape(192, 512)
    res = pto.compile(m, "ascend_sim", "a3").run(m.kernels[0].name, src, np.zeros_like(src), 96, block_num=2,
                                                   trace=True)
    doc = chrome_trace(res.trace, "ascend_sim")["traceEvents"]
    names = {e["args"]["name"] for e in doc if e["name"] == "process_name"}
    assert names == {"ascend_sim AIV0", "ascend_sim AIV1"}
    starts = {e["id"]: e for e in doc if e["ph"] == "s"}
    ends = {e["id"]: e for e in doc if e["ph"] == "f"}
    waits = [e for e in res.trace if e.get("flow") == "wait"]
    assert len(starts) == len(ends) == len(waits) > 0
    tid = {e["args"]["name"]: e["tid"] for e in doc if e["name"] == "thread_name"}
    for i, s in starts.items():
        assert ends[i]["ts"] >= s["ts"] and ends[i]["pid"] == s["pid"]
        assert (s["tid"], ends[i]["tid"]) in {(tid["MTE2"], tid["V"]), (tid["V"], tid["MTE3"]),
                                              (tid["V"], tid["MTE2"]), (tid["MTE3"], tid["V"])}


def test_cli_report_prints_the_per_pipe_table(tmp_path, capsys) -> None:  # noqa: ANN001
    from openpto.cli import main
    png = tmp_path / "t.png"
    rc = main(["run", "examples/softmax.pto", "--backend", "ascend_sim", "--profile", "a5", "--random",
               "--shape", "x=64x1024", "--shape", "y=64x1024", "--arg", "rows=64", "--block-num", "2", "--report",
               "--timeline", str(png)])
    out = capsys.readouterr().out
    assert rc == 0 and png.stat().st_size > 0
    assert "| V |" in out and "| MTE2 |" in out and "| bound | Vector |" in out and "| cores | 2 AIV |" in out
    rc = main(["run", "examples/softmax.pto", "--random", "--shape", "x=32x1024", "--shape", "y=32x1024",
               "--arg", "rows=32", "--report"])
    refused = capsys.readouterr()
    assert rc != 0 and "PTO_OPTION" in refused.err
    assert "instruction(s) in" not in refused.out        # refused before the run, not after it
