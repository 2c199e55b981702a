"""Long-running fuzz campaigns: every input classified as ok, a ``PTOError`` (by code) or a
finding (another exception, a hang, a crash, an out-of-bounds write, a backend mismatch).

Inputs run in a worker subprocess behind a per-input watchdog, so a hang or a crash is
recorded and the campaign goes on in a fresh worker. ``python -m openpto.fuzz`` runs the
campaigns; ``tests/test_fuzz_campaigns.py`` runs each with a small count and a fixed seed.
See docs/fuzzing.md.
"""
from __future__ import annotations

from .harness import Campaign, Input, run_campaign
from .outcome import FINDINGS, Report

__all__ = ["FINDINGS", "Campaign", "Input", "Report", "run_campaign"]
