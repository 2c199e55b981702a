"""Run a campaign's inputs in a worker subprocess behind a per-input watchdog.

The parent sends input indices over a pipe; the worker builds each input (campaigns are
deterministic in (seed, index)), runs it and sends back a ``Verdict``. No reply within the
time limit is a hang (the worker is killed); a worker that dies mid-input is a crash (its
exit signal is recorded). Either way the campaign goes on in a fresh worker, and the
parent rebuilds the input to write its reproducer.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable

from ..isa.diagnostics import PTOError
from .outcome import OK, PTO_ERROR, Finding, Report, Verdict

STARTUP_TIMEOUT = 300.0      # importing openpto + llvmlite in a fresh worker on a busy machine


@dataclass(frozen=True)
class Input:
    """One fuzz input: ``payload`` is what the campaign runs; inputs sharing a ``group``
    share setup (one compiled program run on many argument sets)."""

    index: int
    payload: Any
    group: int = 0
    label: str = ""
    seed: int = 0


class Campaign:
    """A family of inputs and the target they go through. Subclasses are picklable (the
    worker receives the instance) and deterministic: ``make(seed, i)`` is the same input
    in every process."""

    name = "campaign"
    timeout = 10.0            # seconds per input
    setup_timeout = 0.0       # extra seconds for the first input of a group (compiling)

    def group_of(self, index: int) -> int:
        """The input's group, without building it (the parent's watchdog needs it)."""
        return index

    def make(self, seed: int, index: int) -> Input:
        raise NotImplementedError

    def execute(self, inp: Input) -> Verdict | None:
        """Run one input: return None (ok) or a finding's Verdict (oob, mismatch); a
        PTOError it raises is a proper rejection, anything else it raises a finding."""
        raise NotImplementedError

    def reproduce(self, inp: Input) -> dict[str, str | bytes]:
        """Files (name suffix -> content) that replay ``inp`` outside the harness."""
        return {".txt": repr(inp.payload)}


def classify(campaign: Campaign, seed: int, index: int) -> Verdict:
    """Build and run one input; every outcome becomes a Verdict, nothing escapes."""
    try:
        v = campaign.execute(campaign.make(seed, index))
    except PTOError as e:
        return Verdict(PTO_ERROR, e.code)
    except BaseException as e:  # noqa: BLE001 - an escaping exception is exactly what we look for
        tail = "".join(traceback.format_exception(type(e), e, e.__traceback__)[-4:])
        return Verdict("exception", detail=f"{type(e).__name__}: {str(e)[:300]}\n{tail[-1500:]}")
    return v or Verdict(OK)


def _serve(conn: Any, campaign: Campaign, seed: int) -> None:
    """The worker's loop: index in, Verdict out, until the parent sends None."""
    conn.send("ready")
    while True:
        index = conn.recv()
        if index is None:
            return
        conn.send(classify(campaign, seed, index))


class _Worker:
    def __init__(self, campaign: Campaign, seed: int) -> None:
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child, campaign, seed), daemon=True)
        self.proc.start()
        child.close()
        self.group: int | None = None
        if not self.conn.poll(STARTUP_TIMEOUT):
            self.kill()
            raise RuntimeError(f"fuzz worker did not start within {STARTUP_TIMEOUT:.0f} s")
        if self.conn.recv() != "ready":   # pragma: no cover - protocol error
            raise RuntimeError("fuzz worker sent an unexpected greeting")

    def ask(self, index: int, timeout: float) -> Verdict:
        try:
            self.conn.send(index)
            if self.conn.poll(timeout):
                return self.conn.recv()
        except (EOFError, OSError, BrokenPipeError):
            return self._died()
        if not self.proc.is_alive():
            return self._died()
        self.kill()
        return Verdict("hang", detail=f"no result within {timeout:g} s")

    def _died(self) -> Verdict:
        self.proc.join(5)
        code = self.proc.exitcode
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            detail = f"worker killed by {name}"
        else:
            detail = f"worker exited with status {code}"
        self.proc = None  # type: ignore[assignment]
        return Verdict("crash", detail=detail)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.is_alive()

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.join(5)
            self.proc = None  # type: ignore[assignment]

    def close(self) -> None:
        if self.alive:
            try:
                self.conn.send(None)
                self.proc.join(10)
            except (OSError, BrokenPipeError):
                pass
        self.kill()


def write_reproducer(campaign: Campaign, seed: int, finding: Finding, out_dir: str) -> None:
    """Rebuild the finding's input here and write its files (plus a .txt with the verdict)."""
    os.makedirs(out_dir, exist_ok=True)
    stem = os.path.join(out_dir, f"{campaign.name}-s{seed}-{finding.index:07d}-{finding.kind}")
    files: dict[str, str | bytes] = {".txt": ""}
    try:
        files.update(campaign.reproduce(campaign.make(seed, finding.index)))
    except Exception as e:  # noqa: BLE001 - a reproducer problem must not stop the campaign
        files[".txt"] = f"(could not rebuild the input: {type(e).__name__}: {e})\n"
    files[".txt"] = (f"campaign {campaign.name} seed {seed} index {finding.index}: {finding.kind}\n"
                     f"{finding.detail}\n{files['.txt'] if isinstance(files['.txt'], str) else ''}")
    for suffix, content in files.items():
        path = stem + suffix
        with open(path, "wb" if isinstance(content, bytes) else "w") as f:
            f.write(content)
        finding.reproducer.append(path)


def run_campaign(campaign: Campaign, count: int, seed: int = 0, *, timeout: float | None = None,
                 out_dir: str | None = None, progress: Callable[[str], None] | None = None,
                 progress_every: float = 10.0) -> Report:
    """Run inputs ``0..count-1`` of ``campaign`` with ``seed``; findings' reproducers go to
    ``out_dir`` when given. ``timeout`` overrides the campaign's per-input limit."""
    report = Report(campaign.name, seed)
    limit = campaign.timeout if timeout is None else timeout
    start = last = time.perf_counter()
    worker: _Worker | None = None
    try:
        for index in range(count):
            if worker is None or not worker.alive:
                worker = _Worker(campaign, seed)
                report.workers += 1
            group = campaign.group_of(index)
            extra = campaign.setup_timeout if group != worker.group else 0.0
            verdict = worker.ask(index, limit + extra)
            worker.group = group
            if verdict.kind in ("hang", "crash"):
                worker = None
            finding = report.add(index, verdict)
            if finding is not None and out_dir:
                write_reproducer(campaign, seed, finding, out_dir)
            now = time.perf_counter()
            if progress and (now - last >= progress_every or index == count - 1):
                last = now
                progress(f"[{campaign.name}] {index + 1}/{count} ok {report.ok} "
                         f"PTOError {sum(report.codes.values())} findings {len(report.findings)} "
                         f"({(index + 1) / (now - start):.0f} inputs/s)")
    finally:
        if worker is not None:
            worker.close()
        report.seconds = time.perf_counter() - start
    return report


def stderr_progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
