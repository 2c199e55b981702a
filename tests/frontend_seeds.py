"""The two seed programs (examples/frontend/softmax.py and softmax_dynamic.py), loaded as
modules of their own with other sizes: the line marked ``# sizes`` is replaced, the rest of the
file runs verbatim, so capture reads the program's real source. Shared by the tests and
benchmarks/bench_frontend.py."""
from __future__ import annotations

import importlib.util
import itertools
import pathlib
import re
import tempfile
from types import ModuleType

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "frontend"
SIZES_LINE = re.compile(r"^.*# sizes\b.*$", re.M)
_count = itertools.count()


def seed_source(name: str) -> str:
    """The example's text (``softmax`` or ``softmax_dynamic``)."""
    return (EXAMPLES / f"{name}.py").read_text(encoding="utf-8")


def load_seed(name: str, directory: pathlib.Path | None = None, **sizes: int) -> ModuleType:
    """The example as a fresh module whose sizes line sets ``sizes`` instead."""
    text = seed_source(name)
    assert len(SIZES_LINE.findall(text)) == 1, f"{name}: one '# sizes' line expected"
    text = SIZES_LINE.sub(lambda _: "; ".join(f"{k} = {v}" for k, v in sizes.items()), text)
    directory = directory or pathlib.Path(tempfile.mkdtemp(prefix="pto-seed-"))
    mod_name = f"seed_{name}_{next(_count)}"
    path = directory / f"{mod_name}.py"
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(mod_name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
