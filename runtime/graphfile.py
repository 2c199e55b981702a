"""Task graphs from a JSON file (``pto graph FILE``): kernels by ``.pto`` path, buffers by
shape and dtype, tasks binding buffers (or row/column windows of them) and scalars.

    {
      "kernels": {"add": {"file": "vector_add.pto", "kernel": "vector_add"}},
      "buffers": {"a": {"shape": [64, 1024], "dtype": "float32", "init": "random"},
                  "c": {"shape": [64, 1024], "dtype": "float32"}},
      "tasks": [
        {"label": "top", "kernel": "add", "args": {"a": "a[0:32]", "b": "a[0:32]", "c": "c[0:32]", "rows": 32}},
        {"label": "all", "kernel": "add", "args": {"a": "c", "b": "c", "c": "a", "rows": 64},
         "after": ["top"], "core": "vector", "regions": {"c": "0:64"}}
      ]
    }

``file`` paths are relative to the graph file. ``kernel`` may be left out for a module with
one kernel; ``backend`` and ``profile`` per kernel override the command line's. A buffer's
``init`` is ``zeros`` (the default), ``ones``, ``random`` (from ``--seed``: uniform [0, 1)
for floating dtypes, integers in [0, 100) for integer ones, True/False for bool) or a
``.npy`` file. An argument string ``name`` or ``name[i:j, k:l]`` (ints and slices) binds a buffer or a view of it; a number is a scalar. ``reads`` / ``writes`` (parameter
names), ``regions`` (parameter -> index text) and ``after`` (labels of earlier tasks) are
optional, as is ``core``. A task with no ``kernel`` and only ``after`` is a join; labels are
unique. A mistake in the file's own structure or values is ``PTO_GRAPH_FILE`` naming where it
is. A graph file that cannot be read is ``PTO_FILE``. Errors of the layers the file hands on to
keep their codes, with a note naming the kernel or task of the file: a ``.pto`` file that
cannot be read or parsed (``PTO_FILE``, ``PARSE_*``, ``BCODE_*``), a backend or profile
``compile`` refuses (``PTO_UNKNOWN_BACKEND``, ...), a task the graph refuses (``PTO_TASK``,
``RUNTIME_ARG_*``); a kernel failing while the graph runs is ``RUNTIME_TASK_FAILED``.
"""
from __future__ import annotations

import contextlib
import json
import pathlib
import re
from typing import Any, Iterator

import numpy as np

from ..isa.diagnostics import Location, PTOError
from .graph import Task, TaskGraph

_BINDING = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\[(.*)\])?\s*$")
_INITS = ("zeros", "ones", "random")


def _error(path: str, where: str, msg: str, expected: object = None, actual: object = None) -> PTOError:
    return PTOError("PTO_GRAPH_FILE", f"{where}: {msg}", location=Location(file=path), expected=expected,
                    actual=actual)


def parse_index(text: str) -> tuple[Any, ...]:
    """``"0:32, :"`` -> ``(slice(0, 32), slice(None))``; ValueError on anything else."""
    out: list[Any] = []
    for part in text.split(","):
        part = part.strip()
        if ":" in part:
            bits = part.split(":")
            if len(bits) > 3:
                raise ValueError(part)
            out.append(slice(*(int(b) if b.strip() else None for b in bits)))
        else:
            out.append(int(part))
    return tuple(out)


class GraphFile:
    """A loaded graph file: the ``TaskGraph`` and its buffers by name."""

    def __init__(self, graph: TaskGraph, buffers: dict[str, np.ndarray]) -> None:
        self.graph, self.buffers = graph, buffers


def load_graph(path: str, backend: str = "reference", profile: str | None = None, seed: int = 0) -> GraphFile:
    import openpto as pto
    try:
        doc = json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise PTOError("PTO_FILE", f"cannot read {path}: {e.strerror or e}") from None
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise _error(path, "the file", "is not JSON (or nests too deeply)", expected="a JSON object",
                     actual=str(e)[:200]) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("tasks"), list):
        raise _error(path, "the file", "needs an object with a list of tasks",
                     expected='{"kernels": {...}, "buffers": {...}, "tasks": [...]}', actual=type(doc).__name__)
    unknown = set(doc) - {"kernels", "buffers", "tasks"}
    if unknown:
        raise _error(path, "the file", "has unknown keys", expected="kernels, buffers, tasks", actual=sorted(unknown))
    here = pathlib.Path(path).resolve().parent
    rng = np.random.default_rng(seed)
    kernels: dict[str, tuple[Any, str | None]] = {}
    for name, spec in _mapping(path, "kernels", doc.get("kernels", {})).items():
        spec = _mapping(path, f"kernel {name!r}", spec)
        if "file" not in spec:
            raise _error(path, f"kernel {name!r}", "needs a file", expected='"file": "k.pto"', actual=sorted(spec))
        for key in ("file", "kernel", "backend", "profile"):
            if key in spec and not isinstance(spec[key], str):
                raise _error(path, f"kernel {name!r} {key}", "must be a string", actual=repr(spec[key]))
        extra = set(spec) - {"file", "kernel", "backend", "profile"}
        if extra:
            raise _error(path, f"kernel {name!r}", "has unknown keys", expected="file, kernel, backend, profile",
                         actual=sorted(extra))
        with _noted(path, f"kernel {name!r}"):
            module = pto.load(str(here / spec["file"]))
        kname = spec.get("kernel")
        names = [k.name for k in module.kernels]
        if kname is not None and kname not in names:
            raise _error(path, f"kernel {name!r}", f"names kernel {kname!r}, which {spec['file']} does not define",
                         expected=", ".join(names), actual=kname)
        with _noted(path, f"kernel {name!r}"):
            exe = pto.compile(module, backend=spec.get("backend", backend), profile=spec.get("profile", profile))
        kernels[name] = (exe, kname)
    buffers: dict[str, np.ndarray] = {}
    for name, spec in _mapping(path, "buffers", doc.get("buffers", {})).items():
        buffers[name] = _buffer(path, name, _mapping(path, f"buffer {name!r}", spec), here, rng)
    g = TaskGraph()
    labels: dict[str, Task] = {}
    for i, spec in enumerate(doc["tasks"]):
        where = f"task {i}"
        spec = _mapping(path, where, spec)
        extra = set(spec) - {"label", "kernel", "args", "after", "core", "reads", "writes", "regions"}
        if extra:
            raise _error(path, where, "has unknown keys", expected="label, kernel, args, after, core, reads, writes, "
                         "regions", actual=sorted(extra))
        for key in ("label", "kernel", "core"):
            if key in spec and not isinstance(spec[key], str):
                raise _error(path, f"{where} {key}", "must be a string", actual=repr(spec[key]))
        for key in ("after", "reads", "writes"):
            if key in spec and not (isinstance(spec[key], list) and all(isinstance(x, str) for x in spec[key])):
                raise _error(path, f"{where} {key}", "must be a list of strings", expected='["name", ...]',
                             actual=repr(spec[key])[:100])
        if spec.get("label") in labels:
            raise _error(path, f"{where} label", "is the label of an earlier task; labels name one task each",
                         expected="a new label", actual=spec["label"])
        after = []
        for lab in spec.get("after", []):
            if lab not in labels:
                raise _error(path, where, f"names {lab!r} in after, not the label of an earlier task",
                             expected=", ".join(labels) or "no earlier task", actual=lab)
            after.append(labels[lab])
        label = spec.get("label")
        if "kernel" not in spec:
            if set(spec) - {"label", "after"}:
                raise _error(path, where, "has no kernel: only a join (label, after) may leave it out",
                             actual=sorted(spec))
            task = g.join(after=after, label=label)
        else:
            if spec["kernel"] not in kernels:
                raise _error(path, where, f"uses kernel {spec['kernel']!r}, which is not declared",
                             expected=", ".join(kernels) or "a declared kernel", actual=spec["kernel"])
            exe, kname = kernels[spec["kernel"]]
            args = {k: _bind(path, f"{where} argument {k!r}", v, buffers)
                    for k, v in _mapping(path, f"{where} args", spec.get("args", {})).items()}
            regions = {}
            for k, v in _mapping(path, f"{where} regions", spec.get("regions", {})).items():
                try:
                    regions[k] = parse_index(str(v))
                except ValueError:
                    raise _error(path, f"{where} region {k!r}", "is not an index", expected='"0:32, :"',
                                 actual=v) from None
            with _noted(path, where):
                task = g.task(exe, kname, args, label=label, core=spec.get("core"), reads=spec.get("reads"),
                              writes=spec.get("writes"), regions=regions, after=after)
        labels[task.label] = task
    return GraphFile(g, buffers)


@contextlib.contextmanager
def _noted(path: str, where: str) -> Iterator[None]:
    """A loader's, compiler's or the graph's own error keeps its code; a note says where in the
    graph file it came from."""
    try:
        yield
    except PTOError as e:
        e.notes.append(f"in {path}, {where}")
        raise


def _mapping(path: str, where: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _error(path, where, "must be an object", expected="{...}", actual=type(value).__name__)
    return value


def _buffer(path: str, name: str, spec: dict[str, Any], here: pathlib.Path, rng: np.random.Generator) -> np.ndarray:
    init = spec.get("init", "zeros")
    if isinstance(init, str) and init.endswith(".npy"):
        try:
            return np.load(here / init)
        except (OSError, ValueError) as e:
            raise _error(path, f"buffer {name!r}", f"cannot read {init}", actual=str(e)) from None
    shape, dtype = spec.get("shape"), spec.get("dtype", "float32")
    if not (isinstance(shape, list) and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape)):
        raise _error(path, f"buffer {name!r} shape", "must be a list of non-negative integers",
                     expected='"shape": [64, 1024]', actual=repr(shape)[:100])
    try:
        dtype = np.dtype(dtype) if isinstance(dtype, str) else None
    except TypeError:
        dtype = None
    if dtype is None or dtype.kind not in "biufc":
        raise _error(path, f"buffer {name!r} dtype", "is not a numpy number or bool dtype name",
                     expected='"float32", "int8", "bool", ...', actual=repr(spec.get("dtype")))
    if init not in _INITS:
        raise _error(path, f"buffer {name!r}", "has an unknown init", expected=" | ".join(_INITS) + " | FILE.npy",
                     actual=init)
    try:
        if init == "random":
            return _random(rng, shape, dtype)
        return (np.ones if init == "ones" else np.zeros)(shape, dtype)
    except (MemoryError, ValueError) as e:             # too large to allocate
        raise _error(path, f"buffer {name!r}", f"cannot be allocated ({dtype}, shape {shape})",
                     actual=f"{type(e).__name__}: {e}"[:200]) from None


def _random(rng: np.random.Generator, shape: list[int], dtype: np.dtype) -> np.ndarray:
    """``init: random``: uniform [0, 1) for floating and complex dtypes, uniform integers in
    [0, 100) (within the dtype's range) for integer ones, True or False for bool."""
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(0, min(100, int(np.iinfo(dtype).max) + 1), shape, dtype=dtype)
    return rng.random(shape).astype(dtype)


def _bind(path: str, where: str, value: Any, buffers: dict[str, np.ndarray]) -> Any:
    if isinstance(value, (bool, int, float)):
        return value
    m = _BINDING.match(value) if isinstance(value, str) else None
    if m is None or m.group(1) not in buffers:
        raise _error(path, where, "is neither a number nor a buffer (name or name[i:j, ...])",
                     expected=", ".join(buffers) or "a declared buffer", actual=value)
    buf = buffers[m.group(1)]
    if m.group(2) is None:
        return buf
    try:
        view = buf[parse_index(m.group(2))]
    except (ValueError, IndexError) as e:
        raise _error(path, where, f"is not a window of {m.group(1)} {buf.shape}", actual=f"{value}: {e}") from None
    return view
