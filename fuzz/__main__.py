"""``python -m openpto.fuzz [CAMPAIGN ...] --count N --seed S [--timeout-per-input T]
[--json out.json] [--out DIR]``: run fuzz campaigns, print a progress line and a final
table, write findings' reproducers to DIR. Exit status 1 when any campaign had a finding."""
from __future__ import annotations

import argparse
import json
import sys

from .campaigns import CAMPAIGNS
from .harness import run_campaign, stderr_progress
from .outcome import table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m openpto.fuzz", description=__doc__.split("\n")[0])
    ap.add_argument("campaigns", nargs="*", metavar="CAMPAIGN",
                    help=f"which to run (default: all): {', '.join(CAMPAIGNS)}")
    ap.add_argument("--count", type=int, default=1000, help="inputs per campaign (default 1000)")
    ap.add_argument("--seed", type=int, default=0, help="campaign seed (default 0)")
    ap.add_argument("--timeout-per-input", type=float, default=None, metavar="T",
                    help="seconds before an input counts as a hang (default: the campaign's)")
    ap.add_argument("--runs-per-program", type=int, default=100,
                    help="programs campaign: argument sets per compiled program (default 100)")
    ap.add_argument("--json", metavar="FILE", help="write the reports as JSON")
    ap.add_argument("--out", metavar="DIR", default="fuzz-findings", help="reproducers of findings")
    ns = ap.parse_args(argv)
    names = ns.campaigns or list(CAMPAIGNS)
    unknown = [n for n in names if n not in CAMPAIGNS]
    if unknown or ns.count < 0:
        ap.error(f"unknown campaign {unknown[0]!r}; choose from {', '.join(CAMPAIGNS)}" if unknown
                 else "--count must be >= 0")
    reports = []
    for name in names:
        campaign = CAMPAIGNS[name](ns.runs_per_program) if name == "programs" else CAMPAIGNS[name]()
        reports.append(run_campaign(campaign, ns.count, ns.seed, timeout=ns.timeout_per_input,
                                    out_dir=ns.out, progress=stderr_progress))
        if ns.json:     # rewritten after each campaign, so a long run's partial results survive
            with open(ns.json, "w") as f:
                json.dump([r.to_json() for r in reports], f, indent=1)
    print(table(reports))
    for r in reports:
        for f in r.findings[:20]:
            print(f"{r.campaign} #{f.index} {f.kind}: {f.detail.splitlines()[0] if f.detail else ''}"
                  + (f" -> {f.reproducer[0]}" if f.reproducer else ""))
    return 1 if any(r.findings for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
