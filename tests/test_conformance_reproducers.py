"""Reproducers re-run as written: the ``// run:`` line of a failure from a backend named
``package.module:attr`` reproduces it in a fresh process from another directory, and array
inputs of every PTO dtype come back from the saved files bit-exact (``backends/arrayfiles``)."""
from __future__ import annotations

import math
import os
import pathlib
import shlex
import struct
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

from openpto.backends import arrayfiles
from openpto.backends.inputs import literal
from openpto.cli import main
from openpto.conformance import report as R
from openpto.conformance.outcome import Failure, Outcome
from openpto.conformance.runner import Patterns, Report, backend_spec, run
from openpto.isa import PTOError
from openpto.isa import dtypes as dt
from openpto.tests.reproducer_backends import RowSumSkipsLastColumn

SPEC = "openpto.tests.reproducer_backends:RowSumSkipsLastColumn"


def run_line(program: pathlib.Path) -> list[str]:
    """The ``// run:`` line of a reproducer, split as a shell would."""
    lines = [line for line in program.read_text().splitlines() if line.startswith("// run: ")]
    assert len(lines) == 1, program.read_text()
    return shlex.split(lines[0][len("// run: "):])


def bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


def test_run_line_reproduces_the_failure_as_written(tmp_path: pathlib.Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    result = run(SPEC, ["cpu"], (2,), only=Patterns(("TROWSUM:bf16", "TROWSUM:i8")), max_examples=2,
                 progress=None)
    monkeypatch.chdir(tmp_path)
    paths = R.write_reproducers(result, "repro")         # a relative directory, as the CLI's default
    assert len(paths) == 2 and result.spec == SPEC
    bf16 = pathlib.Path(next(p for p in paths.values() if "bf16" in p))
    argv = run_line(bf16)
    assert bf16.is_absolute() and argv[:3] == ["pto", "run", str(bf16)]
    assert argv[argv.index("--backend") + 1] == SPEC
    inputs = [a.split("=", 1)[1] for a in argv if a.startswith(("src=", "dst=", "tmp="))]
    assert inputs and all(os.path.isabs(p) and p.endswith(".bf16.npy") for p in inputs)
    # exactly as written, in a fresh process, from a directory that is not the reproducer's
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    r = subprocess.run(argv, cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "dst (bfloat16): DIFFERS" in r.stdout
    # the same line on a backend without the bug passes: the line reproduces this bug, not any run
    argv[argv.index("--backend") + 1] = "reference"
    assert main(argv[1:]) == 0


def test_a_backend_object_is_named_by_its_importable_class() -> None:
    assert backend_spec(RowSumSkipsLastColumn()) == SPEC
    local = type("Local", (RowSumSkipsLastColumn,), {"__qualname__": "f.<locals>.Local", "name": "local"})
    assert backend_spec(local()) == "local"          # not importable by name: its name


def special_values(d: dt.DType) -> np.ndarray:
    """Bit patterns that a lossy encoding would change: for floats NaN payloads, -0,
    subnormals, ±inf, the largest values, then random bits; integer extremes; both i1 values."""
    rng = np.random.default_rng(13)
    n = 16 * 32
    if d is dt.I1:
        return (np.arange(n).reshape(16, 32) % 3 == 0)
    width = d.np_dtype.itemsize
    if d.is_float:
        raw = np.unique(rng.integers(0, 2 ** (8 * width), 4 * n, dtype=np.uint64))
        raw = raw.astype(f"u{width}")
        if width == 1:
            raw = np.arange(256, dtype=np.uint8)           # every fp8 bit pattern
        pad = np.resize(raw, n)
        return pad.view(d.np_dtype).reshape(16, 32)
    info = np.iinfo(d.np_dtype)
    edges = np.array([info.min, info.max, 0, 1, info.min + 1, info.max - 1], dtype=d.np_dtype)
    body = rng.integers(info.min, info.max, n, dtype=d.np_dtype, endpoint=True)
    body[:len(edges)] = edges
    return body.reshape(16, 32)


def test_inputs_of_every_dtype_round_trip_through_pto_run(tmp_path: pathlib.Path) -> None:
    params = ", ".join(f"%{d.name} : !pto.tile<16x32x{d.name}>" for d in dt.ALL)
    inputs = {d.name: special_values(d) for d in dt.ALL}
    assert inputs["bf16"].dtype == ml_dtypes.bfloat16 and inputs["f8e5m2"].dtype == ml_dtypes.float8_e5m2
    failure = Failure("every dtype", program=f"kernel @k({params}) {{\n}}\n", inputs=inputs, kernel="k")
    report = Report("reference", 0, (2,), {"cpu": [Outcome(2, "ALL", "every", "fail", failure=failure)]},
                    spec="reference")
    (program,) = R.write_reproducers(report, tmp_path).values()
    argv = run_line(pathlib.Path(program))
    files = dict(a.split("=", 1) for a in argv if "=" in a and a.endswith(".npy"))
    assert sorted(files) == sorted(inputs)
    for name, path in files.items():
        assert path.endswith(f".{name}.npy")
        loaded = literal(path)                          # what pto run --arg does
        assert loaded.dtype == inputs[name].dtype and loaded.shape == inputs[name].shape
        assert bits(loaded) == bits(inputs[name]), name
        stored = np.load(path, allow_pickle=False)      # a plain .npy any numpy reads
        assert stored.dtype == arrayfiles.STORED[name]
    # and through the command itself: run on the loaded arrays, save them with --out, compare bits
    outs = [f"--out={n}={tmp_path / f'out.{n}.npy'}" for n in inputs]
    assert main(argv[1:] + outs) == 0
    for name, want in inputs.items():
        assert bits(arrayfiles.load(str(tmp_path / f"out.{name}.npy"))) == bits(want), name


@pytest.mark.parametrize("value", [0.0, -0.0, math.inf, -math.inf, math.nan, 1e-45, 0.1, 65504.0, -6.0e-8])
@pytest.mark.parametrize("np_type", [np.float32, np.float16, ml_dtypes.bfloat16, float])
def test_float_scalars_are_spelled_exactly(value: float, np_type: type) -> None:
    want = np_type(value)
    back = literal(R.scalar_literal(want))
    assert isinstance(back, float)
    assert struct.pack("<d", back) == struct.pack("<d", float(want)) or (math.isnan(back) and math.isnan(want))
    assert np_type(back) == want or math.isnan(want)      # the parameter's type gets the same value


def test_integer_and_bool_scalars_are_spelled_exactly() -> None:
    for v in (np.int64(-2 ** 63), np.uint64(2 ** 64 - 1), 0, -1, np.int8(-128)):
        assert literal(R.scalar_literal(v)) == int(v)
    assert literal(R.scalar_literal(True)) is True and literal(R.scalar_literal(np.bool_(False))) is False


def test_array_files_refuse_what_would_not_load_back(tmp_path: pathlib.Path) -> None:
    a = np.ones((2, 2), ml_dtypes.bfloat16)
    with pytest.raises(PTOError) as e:
        arrayfiles.save(str(tmp_path / "x.npy"), a)                    # bits without a dtype name
    assert e.value.code == "PTO_ARG" and "x.bf16.npy" not in str(tmp_path) and "NAME.bf16.npy" in e.value.render()
    with pytest.raises(PTOError) as e:
        arrayfiles.save(str(tmp_path / "x.f16.npy"), a)                # a name that lies
    assert e.value.code == "PTO_ARG"
    np.save(tmp_path / "y.bf16.npy", np.ones(3, np.float32))           # 4-byte elements named bf16
    with pytest.raises(PTOError) as e:
        literal(str(tmp_path / "y.bf16.npy"))
    assert e.value.code == "PTO_ARG" and "uint16" in e.value.render() and "float32" in e.value.render()
    np.save(tmp_path / "z.npy", np.arange(3, dtype=np.int16))          # no dtype in the name: as saved
    assert literal(str(tmp_path / "z.npy")).dtype == np.int16
    with pytest.raises(PTOError) as e:
        literal(str(tmp_path / "missing.f32.npy"))
    assert e.value.code == "PTO_FILE"


def strided(d: dt.DType, shape: tuple[int, int], step: int) -> tuple[np.ndarray, np.ndarray]:
    """A view of every ``step``-th column of a larger array of special values, and that array."""
    parent = special_values(d).reshape(-1)[:shape[0] * shape[1] * step].copy()
    raw = parent.view(np.uint8 if d is dt.I1 else np.dtype(f"u{d.np_dtype.itemsize}"))
    item = parent.itemsize
    view = np.lib.stride_tricks.as_strided(raw, shape, (shape[1] * step * item, step * item))
    return view.view(d.np_dtype), parent


def test_a_strided_global_keeps_its_layout(tmp_path: pathlib.Path) -> None:
    views = {"g": strided(dt.BF16, (4, 8), 3), "m": strided(dt.I1, (4, 8), 2),
             "w": strided(dt.F8E5M2, (4, 8), 5)}
    params = ", ".join(f"%{n} : !pto.memref<4x8x{dt.of_numpy(v.dtype).name}>" for n, (v, _) in views.items())
    failure = Failure("strided", program=f"kernel @k({params}) {{\n}}\n", kernel="k",
                      inputs={n: v for n, (v, _) in views.items()})
    report = Report("reference", 0, (2,), {"cpu": [Outcome(2, "VIEW", "mixed", "fail", failure=failure)]})
    (program,) = R.write_reproducers(report, tmp_path).values()
    argv = run_line(pathlib.Path(program))
    assert argv[argv.index("--backend") + 1] == "reference"      # no spec recorded: the backend's name
    files = dict(a.split("=", 1) for a in argv if a.endswith(".npz"))
    assert sorted(files) == ["g", "m", "w"] and files["g"].endswith(".g.bf16.npz")
    for name, (view, parent) in views.items():
        loaded = literal(files[name])
        assert loaded.dtype == view.dtype and loaded.shape == view.shape and loaded.strides == view.strides
        assert bits(loaded) == bits(view), name
        u = np.dtype(np.uint8 if view.dtype == np.bool_ else f"u{view.itemsize}")
        n = 1 + sum((k - 1) * st // view.itemsize for k, st in zip(view.shape, view.strides))
        span = np.lib.stride_tricks.as_strided(loaded.view(u), (n,), (view.itemsize,))
        assert bits(span) == bits(parent[:span.size]), name          # the gaps between rows too
    assert main(argv[1:]) == 0                                       # pto run takes the views


def test_a_compile_time_failure_runs_with_zeros(tmp_path: pathlib.Path) -> None:
    program = ("kernel @k(%t : !pto.tile<16x32xf32>, %n : index, %x : f32, %flag : i1) {\n}\n")
    failure = Failure("an illegal program compiled", program=program, kernel="k")      # L1: no inputs
    report = Report("reference", 0, (1,), {"cpu": [Outcome(1, "ANY", "f32", "fail", failure=failure)]})
    (path,) = R.write_reproducers(report, tmp_path).values()
    argv = run_line(pathlib.Path(path))
    assert argv[argv.index("--kernel") + 2:] == ["--arg", "n=0", "--arg", "x=0.0", "--arg", "flag=false",
                                                 "--zeros", "--compare-with", "reference"]
    assert main(argv[1:]) == 0                       # it gets past the arguments to the compile and the run
