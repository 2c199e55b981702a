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
``init`` is ``zeros`` (the default), ``ones``, ``random`` (uniform [0, 1) from ``--seed``)
or a ``.npy`` file. An argument string ``name`` or ``name[i:j, k:l]`` (ints and slices)
binds a buffer or a view of it; a number is a scalar. ``reads`` / ``writes`` (parameter
names), ``regions`` (parameter -> index text) and ``after`` (labels of earlier tasks) are
optional, as is ``core``. A task with no ``kernel`` and only ``after`` is a join.
Every mistake is ``PTO_GRAPH_FILE`` naming where it is.
"""
from __future__ import annotations

import json
import pathlib
import re
from typing import Any

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
    except (ValueError, UnicodeDecodeError) as e:
        raise _error(path, "the file", "is not JSON", expected="a JSON object", actual=str(e)) from None
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
        module = pto.load(str(here / str(spec["file"])))
        exe = pto.compile(module, backend=str(spec.get("backend", backend)), profile=spec.get("profile", profile))
        kernels[name] = (exe, spec.get("kernel"))
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
            task = g.task(exe, kname, args, label=label, core=spec.get("core"), reads=spec.get("reads"),
                          writes=spec.get("writes"), regions=regions, after=after)
        labels[task.label] = task
    return GraphFile(g, buffers)


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
    try:
        shape = tuple(int(n) for n in spec["shape"])
        dtype = np.dtype(spec.get("dtype", "float32"))
    except (KeyError, TypeError, ValueError) as e:
        raise _error(path, f"buffer {name!r}", "needs a shape (a list of ints) and a numpy dtype",
                     expected='"shape": [64, 1024], "dtype": "float32"', actual=str(e)) from None
    if init not in _INITS:
        raise _error(path, f"buffer {name!r}", "has an unknown init", expected=" | ".join(_INITS) + " | FILE.npy",
                     actual=init)
    if init == "random":
        return rng.random(shape).astype(dtype)
    return (np.ones if init == "ones" else np.zeros)(shape, dtype)


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
