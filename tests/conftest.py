"""Hypothesis profiles: 'ci' (default) is derandomised with a modest example count; the
``mpiexec`` fixture of the MPI tests."""
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=60, derandomize=True, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=300, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def mpiexec() -> str:
    """mpiexec, once it has started two processes here; skip (with the reason) only when it
    cannot. A missing mpi4py (the `mpi` extra) is PTO_MPI: an error, not a skip."""
    from openpto.runtime import mpi

    exe = mpi.find_mpiexec()
    try:
        done = subprocess.run([exe, "-n", "2", sys.executable, "-c",
                               "from mpi4py import MPI; print(MPI.COMM_WORLD.Get_rank())"],
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        pytest.skip(f"mpiexec cannot start processes on this machine: {e}")
    if done.returncode != 0 or sorted("".join(done.stdout.split())) != ["0", "1"]:
        pytest.skip(f"mpiexec cannot start processes on this machine: exit {done.returncode}, "
                    f"{(done.stdout + done.stderr)[-300:]}")
    return exe
