"""Every stage of one compile, printable and checkable: tensor graph, tile graph, partition,
PTO-AS kernels, task list; ``draw`` pictures the tile graph and partition with matplotlib.

``check`` runs the compiled function on random inputs and compares every output with the
tensor-graph interpreter (the oracle), so a wrong tiling, partition or lowering shows up as a
``FRONT_CHECK`` error naming the tensor and the worst element.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ..isa.diagnostics import FrontendError
from . import graph as g
from .lower import Lowered
from .partition import Partition
from .tiling import Buffer, TileGraph

if TYPE_CHECKING:
    from .pipeline import CompiledFunction, TaskList

#: stage name -> attribute, in pipeline order (the CLI's --stage takes these names)
STAGES = ("tensor", "tile", "partition", "kernels", "tasks")


@dataclass
class Stages:
    tensor_graph: g.Function
    tile_graph: TileGraph
    partition: Partition
    lowered: Lowered
    tasks: "TaskList"
    compiled: "CompiledFunction"

    @property
    def kernels(self) -> str:
        """The PTO-AS module text (every distinct kernel)."""
        return self.lowered.text

    def stage(self, name: str) -> str:
        texts = {"tensor": lambda: str(self.tensor_graph), "tile": lambda: str(self.tile_graph),
                 "partition": lambda: str(self.partition), "kernels": lambda: self.kernels,
                 "tasks": lambda: str(self.tasks)}
        if name not in texts:
            raise FrontendError("FRONT_OPTION", f"unknown stage {name!r}", expected=", ".join(STAGES),
                                actual=name)
        return texts[name]()

    def __str__(self) -> str:
        return "\n\n".join(f"== {name} ==\n{self.stage(name)}" for name in STAGES)

    def buffer_of(self, t: g.TensorValue) -> Buffer:
        return self.tile_graph.places[t].buffer.base

    # checking ------------------------------------------------------------------------------
    def random_inputs(self, symbols: dict[str, int] | None = None, seed: int = 0) -> dict[str, np.ndarray]:
        """Random arrays for every tensor parameter and result (dims from ``symbols``)."""
        rng = np.random.default_rng(seed)
        env = dict(symbols or {})
        out: dict[str, np.ndarray] = {}
        tensors = [(p.name, p.tensor) for p in self.tensor_graph.params if p.tensor is not None]
        tensors += [(r.name, r) for r in self.tensor_graph.results]
        for name, t in tensors:
            shape = tuple(d if isinstance(d, int) else d.evaluate(env) for d in t.shape)
            dt = t.dtype
            if dt.is_float:
                a = rng.standard_normal(shape).astype(dt.np_dtype)
            elif dt.kind == "bool":
                a = rng.integers(0, 2, shape).astype(bool)
            else:
                a = rng.integers(-8, 9, shape).astype(dt.np_dtype)
            out[name] = a
        return out

    def check(self, symbols: dict[str, int] | None = None, oracle: Callable[..., Any] | None = None,
              stages: tuple[str, ...] = ("tile", "kernels"), rtol: float = 1e-4, atol: float = 1e-5,
              seed: int = 0) -> None:
        """Compare stages with the tensor-graph interpreter (``oracle(fn, arrays, symbols)``
        returning {name: array}) on random inputs: ``tile`` runs the tile graph tile by tile in
        numpy (frontend/tilecheck.py), ``kernels`` runs the compiled kernels. ``FRONT_CHECK``
        names the stage, the tensor and the worst element on a mismatch."""
        if oracle is None:
            from .interpret import interpret as oracle
        arrays = self.random_inputs(symbols, seed)
        expected = oracle(self.tensor_graph, {k: v.copy() for k, v in arrays.items()}, dict(symbols or {}))
        outs = [p.name for p in self.tensor_graph.params
                if p.tensor is not None and p.tensor.kind in ("output", "inout")]
        outs += [r.name for r in self.tensor_graph.results]
        for stage in stages:
            if stage == "tile":
                from .tilecheck import evaluate
                got = evaluate(self.tile_graph, arrays, symbols)
            elif stage == "kernels":
                got = {k: v.copy() for k, v in arrays.items()}
                self.compiled(got, dict(symbols or {}))
            else:
                raise FrontendError("FRONT_OPTION", f"no check for stage {stage!r}",
                                    expected="tile, kernels", actual=stage)
            for name in outs:
                _compare(stage, name, np.asarray(expected[name]), got[name], rtol, atol,
                         f"profile {self.tile_graph.profile}, backend {self.compiled.backend}")

    # pictures ------------------------------------------------------------------------------
    def draw(self, path: str) -> None:
        """A picture of the tile graph (each op's tile grid) coloured by kernel."""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Rectangle

        kernels = list(self.partition.kernels())
        owner = {id(n): k for k in kernels for n in k.nodes}
        nodes = list(self.tile_graph.nodes())
        cmap = plt.get_cmap("tab10")
        fig, ax = plt.subplots(figsize=(max(6, 2.2 * len(nodes)), 4))
        for x, n in enumerate(nodes):
            nr, nc = n.grid
            nr_i = nr if isinstance(nr, int) else 4
            nc_i = nc if isinstance(nc, int) else 4
            k = owner.get(id(n))
            colour = cmap((k.index if k else 0) % 10)
            w = 1.6 / max(nc_i, 1)
            h = 2.4 / max(nr_i, 1)
            for i in range(nr_i):
                for j in range(nc_i):
                    ax.add_patch(Rectangle((x * 2.2 + j * w, 3 - (i + 1) * h), w * 0.92, h * 0.92,
                                           color=colour, alpha=0.75))
            ax.text(x * 2.2 + 0.8, 3.15, f"{n.out.name} = {n.name}", ha="center", fontsize=8)
            ax.text(x * 2.2 + 0.8, 0.35, f"{nr} x {nc} tiles\n{k.name if k else ''}", ha="center", fontsize=7)
        ax.set_xlim(-0.2, 2.2 * len(nodes))
        ax.set_ylim(0, 3.5)
        ax.axis("off")
        ax.set_title(f"{self.tensor_graph.name}: tile graph, coloured by kernel "
                     f"({len(kernels)} kernels, profile {self.tile_graph.profile})", fontsize=9)
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)


def _compare(stage: str, name: str, want: np.ndarray, got: np.ndarray, rtol: float, atol: float,
             where_: str) -> None:
    w, gt = want.astype(np.float64), got.astype(np.float64)
    if np.allclose(gt, w, rtol=rtol, atol=atol, equal_nan=True):
        return
    diff = np.abs(gt - w)
    diff[np.isnan(diff)] = np.inf
    at = np.unravel_index(int(np.argmax(diff)), diff.shape) if diff.size else ()
    raise FrontendError("FRONT_CHECK", f"{stage} stage: {name} disagrees with the tensor graph",
                        expected=f"{want[at]!r} at {at}", actual=f"{got[at]!r}", notes=[where_])
