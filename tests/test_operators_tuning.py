"""The simulator tuning loop (operators/tuning.py) at a tiny shape on a3: the per-stage table is
consistent with the simulated run it describes, and each documented tuning step is faster in
simulated time than the variant before it, with the same outputs."""
import numpy as np
import pytest

from openpto.isa.machines import MACHINES
from openpto.operators import tuning as tu

VARIANTS = tu.tuning_variants("tiny")


@pytest.fixture(scope="module")
def sims() -> dict:
    return {name: tu.simulate(v, "a3") for name, v in VARIANTS.items()}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_table_is_consistent_with_the_run(sims: dict, name: str) -> None:
    sim = sims[name]
    rows = tu.stage_table(sim)
    rec = sim.record
    kernels = {t.kernel for t in rec.graph.tasks if t.exe is not None}
    assert {r.stage for r in rows} == kernels            # every stage once
    assert {r.core for r in rows} == {"cube", "vector"}  # both kinds of core run tasks
    clock = MACHINES["a3"].clock_mhz
    for r in rows:
        tasks = [t for t in rec.graph.tasks if t.kernel == r.stage]
        assert r.tasks == len(tasks)
        # the bound is the pipe with the most busy cycles (S, the scalar unit, is never one)
        assert r.bound_cycles == max(c for p, c in r.busy.items() if p != "S")
        # the simulated span holds the stage's work, which holds the bound pipe's ideal time
        assert r.simulated_us >= r.theoretical_us > 0 or r.bound_cycles == 0, r
        assert r.task_us >= r.bound_cycles / clock - 1e-9, r
        # the summed task time is what the executor gave those tasks
        got = sum(rec.runs[t.id].end - rec.runs[t.id].start for t in tasks) / 1e3
        assert r.task_us == pytest.approx(got)
        assert r.work > 0 or r.bound_cycles == 0


def test_theoretical_is_work_at_peak_rate() -> None:
    """A transfer of cycles read back as bytes on its curve, then timed at the path's peak, is
    never slower than the transfer itself, and equal where the curve is flat (large sizes)."""
    m = MACHINES["a3"]
    for nbytes in (1024, 8192, 65536, 1 << 20):
        cyc = m.transfer_cycles("GM->UB", nbytes)
        got = tu._bytes_moved(m, "GM->UB", cyc)
        assert got == pytest.approx(nbytes, rel=1e-6)
    big = m.transfer_cycles("GM->UB", 1 << 20)
    assert (1 << 20) / tu._peak_bytes_per_cycle(m, "GM->UB") == pytest.approx(big, rel=1e-6)


@pytest.mark.parametrize("title,before,after", tu.STEPS)
def test_tuning_step_is_faster_with_the_same_outputs(sims: dict, title: str, before: str, after: str) -> None:
    a, b = sims[before], sims[after]
    assert b.makespan_us < a.makespan_us, (title, a.makespan_us, b.makespan_us)
    for x, y in zip(a.outputs, b.outputs):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
