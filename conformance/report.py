"""Conformance reports: JSON for tools, Markdown for people, and for every failure a
runnable reproducer (``.pto`` plus one ``NAME.<dtype>.npy`` per array input)."""
from __future__ import annotations

import json
import os
import pathlib
import shlex
from collections import defaultdict
from typing import Any

import numpy as np

from ..assembler.parser import parse
from ..backends import arrayfiles
from ..isa import SPEC_VERSION
from ..isa.diagnostics import PTOError
from ..isa.types import ScalarType
from . import coverage
from .outcome import Outcome
from .runner import Report

STATUSES = ("pass", "fail", "unsupported", "skipped")


def write_reproducers(report: Report, directory: str | os.PathLike[str]) -> dict[int, str]:
    """One ``.pto`` per failure, with a header whose ``// run:`` line re-runs it as written from
    any directory, and its array inputs as ``.<dtype>.npy`` files (``backends/arrayfiles``);
    returns id(outcome) -> path of the program. See docs/conformance/reproducers.md."""
    root = pathlib.Path(directory).resolve()     # absolute: the run line works from any cwd
    paths: dict[int, str] = {}
    for profile, o in report.failures():
        f = o.failure
        if f is None or f.program is None:
            continue
        stem = f"{o.instruction}_{o.dtypes.replace(',', '-')}_L{o.level}".replace(":", "_")
        base = root / profile / stem
        try:
            base.parent.mkdir(parents=True, exist_ok=True)
            args = []
            for name, value in f.inputs.items():
                if isinstance(value, np.ndarray) and arrayfiles.is_strided(value):   # keeps its layout
                    path = arrayfiles.file_name(f"{base}.{name}", value.dtype)[:-len(".npy")] + ".npz"
                    arrayfiles.save_view(path, value)
                    args.append(f"--arg {name}={shlex.quote(path)}")
                elif isinstance(value, np.ndarray):
                    path = arrayfiles.file_name(f"{base}.{name}", value.dtype)
                    arrayfiles.save(path, value)
                    args.append(f"--arg {name}={shlex.quote(path)}")
                else:
                    args.append(f"--arg {name}={scalar_literal(value)}")
            if not f.inputs:
                args += _zero_scalars(f.program, f.kernel) + ["--zeros"]
            head = [f"// conformance failure: {o.instruction} [{o.dtypes}] level {o.level} on {report.backend} "
                    f"(profile {profile}, seed {report.seed})", f"// {f.message}"]
            if f.difference is not None:
                d = f.difference
                head.append(f"// first difference: {d.operand}{list(d.index)} expected {d.expected} "
                            f"actual {d.actual}")
            head.append("// the run line exits 1 while the outputs still differ from the reference beyond the "
                        "error budget, 2 on a diagnostic")
            head.append(" ".join(["// run: pto run", shlex.quote(str(base.with_suffix(".pto"))),
                                  "--backend", shlex.quote(report.spec or report.backend), "--profile", profile,
                                  "--kernel", shlex.quote(f.kernel), *args, "--compare-with reference"]))
            base.with_suffix(".pto").write_text("\n".join(head) + "\n" + f.program)
        except OSError as e:
            raise PTOError("PTO_FILE", f"cannot write reproducers under {root}: {e.strerror or e}") from None
        paths[id(o)] = str(base.with_suffix(".pto"))
    return paths


def scalar_literal(value: Any) -> str:
    """A scalar input as ``pto run --arg`` reads it back exactly: true/false, an integer, or
    a float's shortest round-tripping spelling (nan, inf, -0.0 included)."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return repr(float(value))


def _zero_scalars(program: str, kernel: str) -> list[str]:
    """``--arg`` zeros for the scalar parameters of a failure that recorded no inputs (a
    compile-time failure), so that its run line gets as far as compiling; none when the
    program does not parse (an L0 failure shows there)."""
    try:
        k = next(k for k in parse(program).kernels if k.name == kernel)
    except (PTOError, StopIteration):
        return []
    zero = {"i1": "false"}
    return [f"--arg {p.name}={zero.get(p.type.dtype.name, '0.0' if p.type.dtype.is_float else '0')}"
            for p in k.params if isinstance(p.type, ScalarType)]


def to_json(report: Report, reproducers: dict[int, str] | None = None) -> dict[str, Any]:
    reproducers = reproducers or {}
    out: dict[str, Any] = {"backend": report.backend, "spec_version": SPEC_VERSION, "seed": report.seed,
                           "levels": list(report.levels), "seconds": round(report.seconds, 2), "profiles": {}}
    for profile, outcomes in report.outcomes.items():
        rows = []
        for o in outcomes:
            row = o.to_json()
            if id(o) in reproducers:
                row["reproducer"] = reproducers[id(o)]
            rows.append(row)
        out["profiles"][profile] = {"summary": _counts(outcomes), "outcomes": rows,
                                    "level_reached": _reached(outcomes, report.levels)}
    return out


def _counts(outcomes: list[Outcome]) -> dict[str, int]:
    final = _final(outcomes)
    return {s: sum(1 for o in final.values() if o.status == s) for s in STATUSES}


def _final(outcomes: list[Outcome]) -> dict[tuple[str, str], Outcome]:
    """The deciding outcome per instruction x dtypes: its first failure, else its last level."""
    out: dict[tuple[str, str], Outcome] = {}
    for o in outcomes:
        key = (o.instruction, o.dtypes)
        if key not in out or out[key].status != "fail":
            out[key] = o
    return out


def _reached(outcomes: list[Outcome], levels: tuple[int, ...]) -> dict[str, int]:
    """Per instruction: the highest level every dtype tuple passed (-1: none)."""
    by: dict[str, dict[str, dict[int, str]]] = defaultdict(lambda: defaultdict(dict))
    for o in outcomes:
        by[o.instruction][o.dtypes][o.level] = o.status
    reached = {}
    for instr, per_dtype in by.items():
        best = []
        for statuses in per_dtype.values():
            lv = -1
            for level in sorted(statuses):
                if statuses[level] != "pass":
                    break
                lv = level
            if all(s in ("unsupported", "skipped") for s in statuses.values()):
                continue
            best.append(lv)
        reached[instr] = min(best) if best else -1
    return reached


def to_markdown(report: Report, reproducers: dict[int, str] | None = None) -> str:
    reproducers = reproducers or {}
    lines = [f"# Conformance report: backend `{report.backend}`", "",
             f"Spec {SPEC_VERSION}; levels {', '.join(f'L{lv}' for lv in report.levels)}; seed {report.seed}; "
             f"{report.seconds:.0f} s. Each instruction x dtype tuple counts once, by its deciding outcome "
             "(its first failure, else its highest level).", "",
             "| profile | pass | fail | unsupported | skipped |", "|---|---:|---:|---:|---:|"]
    for profile, outcomes in report.outcomes.items():
        c = _counts(outcomes)
        lines.append(f"| {profile} | {c['pass']} | {c['fail']} | {c['unsupported']} | {c['skipped']} |")
    for profile, outcomes in report.outcomes.items():
        reached = _reached(outcomes, report.levels)
        lines += ["", f"## Profile `{profile}`", "",
                  "| instruction | dtype tuples | pass | fail | unsupported | skipped | level reached |",
                  "|---|---:|---:|---:|---:|---:|---|"]
        final = _final(outcomes)
        per: dict[str, list[Outcome]] = defaultdict(list)
        for (instr, _), o in final.items():
            per[instr].append(o)
        for instr, os_ in per.items():
            c = {s: sum(1 for o in os_ if o.status == s) for s in STATUSES}
            lv = reached.get(instr, -1)
            lines.append(f"| {instr} | {len(os_)} | {c['pass']} | {c['fail']} | {c['unsupported']} | "
                         f"{c['skipped']} | {'L' + str(lv) if lv >= 0 else '-'} |")
        fails = [o for o in outcomes if o.status == "fail"]
        if fails:
            lines += ["", "### Failures", ""]
            for o in fails:
                text = f"- **{o.instruction}** `{o.dtypes}` at L{o.level}: {o.reason or (o.failure.message if o.failure else '')}"
                if o.failure and o.failure.difference:
                    d = o.failure.difference
                    text += f"; first difference {d.operand}{list(d.index)}: expected `{d.expected}`, actual `{d.actual}`"
                if id(o) in reproducers:
                    text += f"; reproducer `{reproducers[id(o)]}`"
                lines.append(text)
        if any(o.coverage for o in outcomes):
            lines += ["", "### Situations reached (L2 coverage, docs/conformance/coverage.md)", "",
                      coverage.markdown(outcomes).rstrip("\n")]
        skipped = [o for o in outcomes if o.status == "skipped" and o.reason]
        if skipped:
            lines += ["", "<details><summary>Skipped, with reasons</summary>", ""]
            lines += [f"- {o.instruction} `{o.dtypes}` L{o.level}: {o.reason}" for o in skipped]
            lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


def write(report: Report, json_path: str | None = None, markdown_path: str | None = None,
          reproducer_dir: str | None = None) -> None:
    repro = write_reproducers(report, reproducer_dir) if reproducer_dir else {}
    try:
        if json_path:
            pathlib.Path(json_path).write_text(json.dumps(to_json(report, repro), indent=1, default=str))
        if markdown_path:
            pathlib.Path(markdown_path).write_text(to_markdown(report, repro))
    except OSError as e:
        raise PTOError("PTO_FILE", f"cannot write the report: {e.strerror or e}") from None
