"""Every example in ``examples/`` (and the benchmark kernels) gives the same results on the
llvm backend as on the reference backend, within the programs' error budgets, on one block
and on several blocks run side by side, and executes every instruction as many times."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

import openpto as pto
from openpto.backends.compare import compare, error_budget

ROOT = pathlib.Path(__file__).resolve().parent.parent
rng = np.random.default_rng(7)


def _f32(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


#: file -> (arguments by name, blocks); arrays are copied per run
CASES = {
    "examples/vector_add.pto": (lambda: dict(a=_f32(70, 1024), b=_f32(70, 1024), c=np.zeros((70, 1024), np.float32),
                                             rows=70), 1),
    "examples/softmax.pto": (lambda: dict(x=_f32(96, 1024, scale=4), y=np.zeros((96, 1024), np.float32), rows=96), 2),
    "examples/layernorm.pto": (lambda: dict(x=_f32(48, 1024, scale=3), gamma=_f32(1024), beta=_f32(1024),
                                            y=np.zeros((48, 1024), np.float32), eps=1e-5, rows=48), 1),
    "examples/gemm.pto": (lambda: dict(a=_f32(128, 256).astype(np.float16), b=_f32(256, 128).astype(np.float16),
                                       c=np.zeros((128, 128), np.float32), m=128, n=128, k=256), 2),
    "examples/flash_attention.pto": (lambda: dict(q=_f32(128, 64), kt=np.asfortranarray(_f32(64, 256)),
                                                  v=_f32(256, 64), o=np.zeros((128, 64), np.float32),
                                                  sq=128, skv=256, scale=0.125), 1),
    "examples/double_buffer_copy.pto": (lambda: dict(src=_f32(64, 512), dst=np.zeros((64, 512), np.float32),
                                                     rows=64), 1),
    "benchmarks/kernels/rmsnorm.pto": (lambda: dict(x=_f32(64, 1024), gamma=_f32(1024),
                                                    y=np.zeros((64, 1024), np.float32), eps=1e-5, rows=64), 2),
    "benchmarks/kernels/chain.pto": (lambda: dict(a=_f32(32, 1024), b=_f32(32, 1024), c=_f32(32, 1024),
                                                  y=np.zeros((32, 1024), np.float32), rows=32), 2),
}


def test_every_example_has_a_case() -> None:
    assert {f"examples/{p.name}" for p in (ROOT / "examples").glob("*.pto")} <= set(CASES)


@pytest.mark.parametrize("path", sorted(CASES))
def test_llvm_matches_reference(path: str, tmp_path: pathlib.Path) -> None:
    module = pto.load(ROOT / path)
    make, blocks = CASES[path]
    args = make()
    kernel = module.kernels[0]
    outs, counts = {}, {}
    for backend, options in (("reference", {}), ("llvm", {"cache_dir": tmp_path})):
        mine = {k: (v.copy(order="K") if isinstance(v, np.ndarray) else v) for k, v in args.items()}
        exe = pto.compile(module, backend, "cpu", **options)
        res = exe.run(kernel.name, block_num=blocks, **mine)
        outs[backend], counts[backend] = res.outputs, res.counters
    assert outs["llvm"].keys() == outs["reference"].keys() and outs["llvm"]
    # the same instructions ran as often (loops, branches and every block counted)
    assert counts["llvm"] == counts["reference"] and counts["llvm"]["instructions"] > 0
    budget = error_budget(kernel)
    for name, want in outs["reference"].items():
        d = compare(name, outs["llvm"][name], want, budget)
        assert d.ok, d
