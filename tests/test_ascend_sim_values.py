"""The ascend_sim backend computes the reference backend's values (every example, a3 and a5) and
reports its timing in the documented form: cycles, per-pipe busy cycles, the bound, a trace."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

import openpto as pto
from openpto.backends.trace import chrome_trace

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
rng = np.random.default_rng(15)


def _args(name: str) -> dict[str, object]:
    """Inputs for each example (outputs start as NaN so an unwritten element shows)."""
    f32, nan = np.float32, np.nan
    if name == "vector_add.pto":
        return {"a": rng.standard_normal((64, 1024)).astype(f32), "b": rng.standard_normal((64, 1024)).astype(f32),
                "c": np.full((64, 1024), nan, f32), "rows": 64}
    if name == "softmax.pto":
        return {"x": rng.standard_normal((64, 1024)).astype(f32), "y": np.full((64, 1024), nan, f32), "rows": 64}
    if name == "layernorm.pto":
        return {"x": rng.standard_normal((48, 1024)).astype(f32), "gamma": rng.standard_normal(1024).astype(f32),
                "beta": rng.standard_normal(1024).astype(f32), "y": np.full((48, 1024), nan, f32),
                "eps": 1e-5, "rows": 48}
    if name == "gemm.pto":
        return {"a": rng.standard_normal((256, 256)).astype(np.float16),
                "b": rng.standard_normal((256, 128)).astype(np.float16),
                "c": np.full((256, 128), nan, f32), "m": 256, "n": 128, "k": 256}
    if name == "flash_attention.pto":
        k = rng.standard_normal((192, 64)).astype(f32)
        return {"q": rng.standard_normal((128, 64)).astype(f32), "kt": np.ascontiguousarray(k.T),
                "v": rng.standard_normal((192, 64)).astype(f32), "o": np.full((128, 64), nan, f32),
                "sq": 128, "skv": 192, "scale": 0.125}
    assert name == "double_buffer_copy.pto"
    return {"src": rng.standard_normal((96, 512)).astype(f32), "dst": np.full((96, 512), nan, f32), "rows": 96}


def _copy(args: dict[str, object]) -> dict[str, object]:
    return {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()}


@pytest.mark.parametrize("profile", ["a3", "a5"])
@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.pto")))
def test_every_example_gives_the_reference_values(name: str, profile: str) -> None:
    m = pto.load(EXAMPLES / name)
    args = _args(name)
    ours, theirs = _copy(args), _copy(args)
    res = pto.compile(m, "ascend_sim", profile).run(m.kernels[0].name, **ours)
    ref = pto.compile(m, "reference", profile).run(m.kernels[0].name, **theirs)
    assert res.outputs.keys() == ref.outputs.keys()
    for out in res.outputs:
        assert not np.isnan(ours[out]).all()
        np.testing.assert_array_equal(ours[out], theirs[out])      # the same semantics: the same bits
    assert res.counters["instructions"] == ref.counters["instructions"]
    assert res.cycles > 0 and res.time_us == pytest.approx(res.cycles / {"a3": 1800, "a5": 1650}[profile])


def test_a_flagged_pipeline_overlaps_its_pipes_and_is_bound_by_its_busiest() -> None:
    """double_buffer_copy: the total is less than the pipes' busy cycles added up (they ran side by
    side) and at least the busiest pipe's, which is the bound (MTE2: loads are the slowest path)."""
    m = pto.load(EXAMPLES / "double_buffer_copy.pto")
    res = pto.compile(m, "ascend_sim", "a3")(**_args("double_buffer_copy.pto"))
    work = {p: c for p, c in res.busy.items() if p != "S"}
    assert max(work.values()) <= res.cycles < sum(work.values())
    assert res.bound == "MTE2" and res.busy["MTE2"] == max(work.values())
    assert res.hazards == []
    assert res.utilisation["MTE2"] == pytest.approx(res.busy["MTE2"] / res.cycles)


def test_trace_events_are_simulated_times_in_the_common_format() -> None:
    m = pto.load(EXAMPLES / "softmax.pto")
    a = _args("softmax.pto")
    res = pto.compile(m, "ascend_sim", "a3").run("softmax", trace=True, **a)
    assert res.trace and {"name", "pipe", "block", "ts_ns", "dur_ns", "line"} <= res.trace[0].keys()
    per_pipe: dict[str, float] = {}
    for e in res.trace:
        assert e["ts_ns"] >= per_pipe.get(e["pipe"], 0.0) - 1e-9     # a pipe runs one instruction at a time
        per_pipe[e["pipe"]] = e["ts_ns"] + e["dur_ns"]
    assert max(per_pipe.values()) == pytest.approx(res.time_us * 1000)
    doc = chrome_trace(res.trace, "ascend_sim")
    assert {e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "thread_name"} == {"MTE2", "V", "MTE3"}


def test_options_and_profiles() -> None:
    m = pto.load(EXAMPLES / "softmax.pto")
    with pytest.raises(pto.PTOError) as e:
        pto.compile(m, "ascend_sim", "a3", hazard="raise")
    assert e.value.code == "PTO_OPTION"
    with pytest.raises(pto.PTOError) as e:
        pto.compile(m, "ascend_sim", "a3", hazards="loud")
    assert e.value.code == "PTO_OPTION"
    with pytest.raises(pto.PTOError) as e:
        pto.compile(m, "ascend_sim", "cpu")
    assert e.value.code == "LEGAL_PROFILE"
    res = pto.compile(m, "ascend_sim", "a3", hazards="off")(**_args("softmax.pto"))
    assert res.hazards == [] and res.counters["races"] == 0


def test_pto_run_prints_the_simulated_time_bound_and_hazards(capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from openpto.cli import main
    monkeypatch.chdir(EXAMPLES.parent)
    assert main(["run", "examples/double_buffer_copy.pto", "--backend", "ascend_sim", "--profile", "a3",
                 "--random", "--shape", "src=64x512", "--shape", "dst=64x512", "--arg", "rows=64",
                 "--compare-with", "reference"]) == 0
    out = capsys.readouterr().out
    assert "simulated on a3: " in out and "bound MTE2; 0 hazard(s)" in out
    assert main(["run", "examples/softmax.pto", "--backend", "ascend_sim", "--random", "--shape", "x=32x1024",
                 "--shape", "y=32x1024", "--arg", "rows=32"]) == 0
    out = capsys.readouterr().out
    assert "(profile a3)" in out and "ORDER_RACE: TLOAD (MTE2, line 33) writes %t and TROWMAX (V, line 34)" in out
