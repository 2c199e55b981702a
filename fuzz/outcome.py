"""How one input ended, and a campaign's tally of them (table, JSON, findings).

Outcome classes: ``ok``; ``pto_error`` (the input was rejected properly, counted by code);
and the findings, each a defect: ``exception`` (anything but a PTOError escaped),
``hang`` (the watchdog fired), ``crash`` (the worker died, e.g. of a signal), ``oob``
(a canary byte around an argument array changed) and ``mismatch`` (the llvm backend
disagreed with the reference beyond the numerics contract).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

OK, PTO_ERROR = "ok", "pto_error"
FINDINGS = ("exception", "hang", "crash", "oob", "mismatch")


@dataclass(frozen=True)
class Verdict:
    """One input's outcome: ``kind`` is ok, pto_error or a finding; ``code`` the PTOError's
    code; ``detail`` what a finding saw (repr, traceback tail, signal, changed bytes)."""

    kind: str
    code: str = ""
    detail: str = ""

    @property
    def is_finding(self) -> bool:
        return self.kind in FINDINGS


@dataclass
class Finding:
    """A finding with the input that produced it and where its reproducer was written."""

    campaign: str
    index: int
    kind: str
    detail: str
    reproducer: list[str] = field(default_factory=list)


@dataclass
class Report:
    """One campaign's tally."""

    campaign: str
    seed: int
    inputs: int = 0
    ok: int = 0
    codes: Counter = field(default_factory=Counter)
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0
    workers: int = 0

    def add(self, index: int, v: Verdict) -> Finding | None:
        self.inputs += 1
        if v.kind == OK:
            self.ok += 1
        elif v.kind == PTO_ERROR:
            self.codes[v.code] += 1
        else:
            f = Finding(self.campaign, index, v.kind, v.detail)
            self.findings.append(f)
            return f
        return None

    def count(self, kind: str) -> int:
        return sum(1 for f in self.findings if f.kind == kind)

    @property
    def clean(self) -> bool:
        return not self.findings

    def to_json(self) -> dict[str, Any]:
        return {"campaign": self.campaign, "seed": self.seed, "inputs": self.inputs, "ok": self.ok,
                "pto_errors": dict(sorted(self.codes.items())), "seconds": round(self.seconds, 2),
                "workers_started": self.workers,
                "findings": {k: self.count(k) for k in FINDINGS},
                "finding_list": [{"index": f.index, "kind": f.kind, "detail": f.detail,
                                  "reproducer": f.reproducer} for f in self.findings]}


def table(reports: list[Report]) -> str:
    """The final summary: one row per campaign, then the PTOError codes seen."""
    head = ["campaign", "inputs", "ok", "PTOError", *FINDINGS, "seconds"]
    rows = [[r.campaign, r.inputs, r.ok, sum(r.codes.values()), *(r.count(k) for k in FINDINGS),
             f"{r.seconds:.1f}"] for r in reports]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    lines = ["  ".join(str(x).rjust(w) for x, w in zip(row, widths)) for row in [head, *rows]]
    for r in reports:
        if r.codes:
            codes = ", ".join(f"{c} {n}" for c, n in r.codes.most_common())
            lines.append(f"{r.campaign} PTOError codes: {codes}")
    return "\n".join(lines)
