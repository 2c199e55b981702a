"""The tuning loop of issue 20's operators on the simulator: the quantised Lightning Indexer and
Indexer Prolog (operators/tuning.py's variants) on the MPMD runtime's simulated executor for a3
and a5; for every tuning step, its before and after runs. Writes each run's swimlane PNG
(docs/img/ops_<variant>_<profile>.png), its Chrome trace (--trace-dir) and prints the Markdown
of docs/operators.md's "Tuning on the simulator" numbers: a summary line and the per-stage
roofline table of each run.

    python benchmarks/operators_tuning.py [--png-dir docs/img] [--trace-dir DIR] [--profiles a3,a5]
                                          [--scale doc|tiny]
"""
from __future__ import annotations

import argparse
import pathlib
import sys

from openpto.operators import tuning as tu
from openpto.runtime.traces import write_chrome, write_swimlane_png

ROOT = pathlib.Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--png-dir", default=str(ROOT / "docs" / "img"))
    ap.add_argument("--trace-dir", help="write each run's Chrome / Perfetto JSON here")
    ap.add_argument("--profiles", default="a3,a5")
    ap.add_argument("--scale", default="doc", choices=("doc", "tiny"))
    a = ap.parse_args(argv)
    variants = tu.tuning_variants(a.scale)
    png_dir = pathlib.Path(a.png_dir)
    for title, before, after in tu.STEPS:
        print(f"### {title}\n")
        for profile in a.profiles.split(","):
            sims = [tu.simulate(variants[name], profile) for name in (before, after)]
            for sim in sims:
                v = sim.variant
                png = png_dir / f"ops_{v.name}_{profile}.png"
                write_swimlane_png(str(png), sim.record, f"{v.name} ({v.note}) simulated on {profile}: "
                                                         f"{sim.makespan_us:.1f} us")
                if a.trace_dir:
                    pathlib.Path(a.trace_dir).mkdir(parents=True, exist_ok=True)
                    write_chrome(str(pathlib.Path(a.trace_dir) / f"ops_{v.name}_{profile}.json"), sim.record)
                print(f"{tu.summary_line(sim)} ({v.note}); swimlane {png.relative_to(ROOT) if png.is_relative_to(ROOT) else png}\n")
                print(tu.format_table(tu.stage_table(sim)) + "\n")
            print(f"{profile}: {sims[0].makespan_us:.1f} us -> {sims[1].makespan_us:.1f} us\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
