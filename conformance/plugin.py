"""The conformance suite as a pytest plugin (registered under ``pytest11``):

    pytest --pyargs openpto.conformance --pto-backend NAME [--pto-profile a3] [--pto-level 2]

collects ``openpto/conformance/test_conformance.py``: one test per instruction x dtype tuple
and profile, plus the L3 program scenarios. Without ``--pto-backend`` nothing is added."""
from __future__ import annotations

from typing import Any


def pytest_addoption(parser: Any) -> None:
    g = parser.getgroup("openpto conformance")
    g.addoption("--pto-backend", default=None, help="backend to test (name or package.module:attr)")
    g.addoption("--pto-profile", action="append", default=None, help="profile(s) to test (default cpu)")
    g.addoption("--pto-level", type=int, default=3, help="highest conformance level (0-3)")
    g.addoption("--pto-max-examples", type=int, default=None, help="hypothesis examples per check")
    g.addoption("--pto-seed", type=int, default=0)
    g.addoption("--pto-only", default="", help="comma-separated instruction patterns")
