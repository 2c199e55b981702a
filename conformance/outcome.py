"""What one conformance check reports: every level produces ``Outcome`` records, the runner
aggregates them into the report."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Status = Literal["pass", "fail", "unsupported", "skipped"]


@dataclass
class Difference:
    """The first element where a backend and the specification disagree."""

    operand: str
    index: tuple[int, ...]
    expected: str
    actual: str


@dataclass
class Failure:
    """A shrunk counterexample: the program (PTO-AS text), its inputs, what went wrong."""

    message: str
    program: str | None = None
    inputs: dict[str, Any] = field(default_factory=dict)     # name -> numpy array or scalar
    difference: Difference | None = None
    kernel: str = "case"


@dataclass
class Outcome:
    """One instruction x dtype tuple (or one L3 scenario) at one level."""

    level: int
    instruction: str
    dtypes: str
    status: Status
    examples: int = 0
    reason: str = ""
    failure: Failure | None = None
    #: L2: each situation the declaration admits (conformance/coverage.py) -> whether it ran
    coverage: dict[str, bool] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        if self.failure is not None:
            d["failure"]["inputs"] = sorted(self.failure.inputs)
        return d
