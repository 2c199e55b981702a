"""Run the conformance levels against one backend and collect a report.

Per profile, every instruction x legal dtype tuple goes through L0 (program format), L1
(illegal uses rejected), L2 (results within the numerics contract), stopping at the first
level that fails; L3 (whole programs, sync scenarios) runs once per profile. Skip and xfail
lists take ``fnmatch`` patterns over ``MNEMONIC`` or ``MNEMONIC:dtypes``.
"""
from __future__ import annotations

import fnmatch
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, TextIO

from ..backends import Backend, get
from ..isa import dtypes as dt
from ..isa.diagnostics import PTOError
from . import cases as C
from .outcome import Outcome

DEFAULT_EXAMPLES = {0: 5, 1: 5, 2: 25, 3: 25}


@dataclass
class Patterns:
    """``TADD``, ``TROW*``, ``TCVT:f32,f16``: one pattern per line, or several separated by
    commas (a comma followed by a lower-case dtype continues a dtype tuple)."""

    items: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> "Patterns":
        items = []
        for line in text.splitlines():
            line = line.split("#", 1)[0].strip()
            for piece in (p.strip() for p in line.split(",")):
                if piece and items and ":" in items[-1] and _is_dtype(piece):
                    items[-1] += "," + piece          # continues a dtype tuple (TCVT:f32,f16)
                elif piece:
                    items.append(piece)
        return cls(tuple(items))

    def match(self, mnemonic: str, dtypes: str | None = None) -> bool:
        """Does a pattern name ``mnemonic`` (and, when given, this dtype key)?"""
        for p in self.items:
            name, _, dts = p.partition(":")
            if fnmatch.fnmatchcase(mnemonic, name.upper()) and (
                    dtypes is None or not dts or fnmatch.fnmatchcase(dtypes, dts)):
                return True
        return False


def _is_dtype(piece: str) -> bool:
    return any(fnmatch.fnmatchcase(d.name, piece) for d in dt.ALL)


@dataclass
class Report:
    backend: str
    seed: int
    levels: tuple[int, ...]
    outcomes: dict[str, list[Outcome]] = field(default_factory=dict)     # profile -> outcomes
    seconds: float = 0.0
    spec: str = ""      # how ``pto --backend`` names the backend again (reproducers' run lines)

    def failures(self) -> list[tuple[str, Outcome]]:
        return [(p, o) for p, os in self.outcomes.items() for o in os if o.status == "fail"]

    @property
    def ok(self) -> bool:
        return not self.failures()


def backend_spec(b: Backend) -> str:
    """``package.module:Class`` of a Backend object, so that ``pto run --backend`` can build it
    again (with its default options); its name when its class cannot be imported by name."""
    cls = type(b)
    if cls.__module__ == "__main__" or "<locals>" in cls.__qualname__:
        return b.name
    return f"{cls.__module__}:{cls.__qualname__}"


def _level_fns() -> dict[int, Callable[..., Any]]:
    from .level0 import run_level0
    from .level1 import run_level1
    from .level2 import run_level2
    return {0: run_level0, 1: run_level1, 2: run_level2}


def _guard(fn: Callable[..., Outcome], level: int, mnemonic: str, key: str, *args: Any, **kw: Any) -> Outcome:
    """A level must report, not crash: anything escaping it becomes a failed outcome."""
    try:
        return fn(*args, **kw)
    except PTOError as e:
        return Outcome(level, mnemonic, key, "fail", reason=f"{e.code}: {e.message}")
    except Exception as e:  # noqa: BLE001 - a broken backend must not stop the suite
        return Outcome(level, mnemonic, key, "fail", reason=f"{type(e).__name__}: {e}")


def run(backend: str | Backend, profiles: Iterable[str] = ("cpu",), levels: Iterable[int] = (0, 1, 2, 3),
        only: Patterns | None = None, skips: Patterns | None = None, xfails: Patterns | None = None,
        max_examples: int | None = None, seed: int = 0, progress: TextIO | None = sys.stderr) -> Report:
    b = get(backend)
    levels = tuple(sorted(set(levels)))
    report = Report(b.name, seed, levels, spec=backend if isinstance(backend, str) else backend_spec(b))
    fns = _level_fns()
    start = time.perf_counter()
    for profile in profiles:
        outs: list[Outcome] = []
        instrs = [i for i in C.instructions(profile) if only is None or not only.items or only.match(i.mnemonic)]
        for n, instr in enumerate(instrs, 1):
            line: list[str] = []
            for dtypes, base in C.base_cases(instr, profile).items():
                key = C.dtype_key(dtypes)
                if only is not None and only.items and not only.match(instr.mnemonic, key):
                    continue
                if skips and skips.match(instr.mnemonic, key):
                    outs.append(Outcome(min(levels), instr.mnemonic, key, "skipped", reason="in the skip list"))
                    line.append("s")
                    continue
                if base is not None and b.unsupported(instr, base.types, profile):
                    outs.append(Outcome(min(levels), instr.mnemonic, key, "unsupported",
                                        reason=b.unsupported(instr, base.types, profile) or ""))
                    line.append("u")
                    continue
                mark = "."
                for level in (lv for lv in levels if lv in fns):
                    ex = max_examples or DEFAULT_EXAMPLES[level]
                    o = _guard(fns[level], level, instr.mnemonic, key, b, profile, instr, dtypes,
                               max_examples=ex, seed=seed)
                    if o.status == "fail" and xfails and xfails.match(instr.mnemonic, key):
                        o.status, o.reason = "skipped", "expected failure (xfail list): " + (o.reason or "")
                    outs.append(o)
                    if o.status == "fail":
                        mark = "F"
                        break
                    if o.status == "skipped" and mark == ".":
                        mark = "-"
                line.append(mark)
            if progress is not None:
                progress.write(f"[{profile} {n:>3}/{len(instrs)}] {instr.mnemonic:<18} {''.join(line)}\n")
                progress.flush()
        if 3 in levels:
            from .level3 import run_level3
            try:
                l3 = run_level3(b, profile, max_examples or DEFAULT_EXAMPLES[3], seed)
            except Exception as e:  # noqa: BLE001 - reported, not raised
                l3 = [Outcome(3, "L3", "mixed", "fail", reason=f"{type(e).__name__}: {e}")]
            outs += l3
            if progress is not None:
                progress.write(f"[{profile} L3] " + " ".join(f"{o.instruction}:{o.status}" for o in l3) + "\n")
        report.outcomes[profile] = outs
    report.seconds = time.perf_counter() - start
    return report
