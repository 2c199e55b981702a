"""Regenerates docs/img/softmax_a3_swimlane.png (and the a5 one with ``--profile a5``): the swimlane
of examples/softmax.pto synchronised by auto-sync (what ``pto sync`` prints), 128 x 1024 f32 on one
simulated AIV core, one lane per pipe, as ``pto run --timeline`` draws it. ``--double-buffer``
synchronises it as ``pto sync --double-buffer`` does (a ping and a pong copy of the tiles) and
writes docs/img/softmax_<profile>_double_swimlane.png.

    python benchmarks/softmax_swimlane.py [--profile a3] [--rows 128] [--double-buffer] [-o FILE.png]
"""
from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

import openpto as pto
from openpto.assembler.autosync import autosync
from openpto.backends.ascend_sim.report import report_table
from openpto.backends.timeline import write_timeline_png

ROOT = pathlib.Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="a3")
    ap.add_argument("--rows", type=int, default=128, help="rows of the input, a multiple of 16")
    ap.add_argument("--double-buffer", action="store_true", help="synchronise as pto sync --double-buffer")
    ap.add_argument("-o", "--output", help="the PNG (default docs/img/softmax_<profile>[_double]_swimlane.png)")
    a = ap.parse_args(argv)
    kind = "_double" if a.double_buffer else ""
    out = pathlib.Path(a.output or ROOT / "docs" / "img" / f"softmax_{a.profile}{kind}_swimlane.png")
    synced = autosync(pto.load(ROOT / "examples" / "softmax.pto"), a.profile, double_buffer=a.double_buffer)
    module = pto.parse(synced.to_text())
    x = np.random.default_rng(0).standard_normal((a.rows, 1024)).astype(np.float32)
    res = pto.compile(module, "ascend_sim", a.profile).run("softmax", x, np.zeros_like(x), a.rows, trace=True)
    how = "pto sync --double-buffer" if a.double_buffer else "pto sync"
    write_timeline_png(str(out), res.trace or [], f"@softmax ({how}) on ascend_sim ({a.profile}), "
                                                   f"{a.rows}x1024 f32")
    print(report_table(res, "softmax"))
    print(f"wrote {out} ({out.stat().st_size} bytes); {len(res.hazards)} hazard(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
