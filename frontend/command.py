"""``pto frontend FILE.py``: print any stage of a @jit function defined in a Python file.

The file runs as a module (not as ``__main__``, so its own command-line code stays idle); the
function is captured from its annotations, with ``--dim NAME=VALUE`` fixing dynamic sizes.
"""
from __future__ import annotations

import argparse
import runpy

from ..isa.diagnostics import PTOError
from .jit import JitFunction

#: the stages that can be printed; "pto" is another name for the kernels' PTO-AS
STAGE_NAMES = ("tensor", "tile", "partition", "kernels", "pto", "tasks", "all")


def run_file(path: str) -> dict:
    """The namespace of the file run as a module (not ``__main__``); PTO_FILE if it fails."""
    try:
        return runpy.run_path(path, run_name="__pto_frontend__")
    except PTOError:
        raise
    except OSError as e:
        raise PTOError("PTO_FILE", f"cannot read {path}: {e.strerror or e}") from None
    except BaseException as e:  # noqa: BLE001 - anything the user's file raises while it runs
        raise PTOError("PTO_FILE", f"running {path} failed", expected="a file that runs",
                       actual=f"{type(e).__name__}: {e}") from None


def load_function(path: str, name: str | None) -> JitFunction:
    """The @jit function ``name`` of the file (or its only one)."""
    namespace = run_file(path)
    found = {k: v for k, v in namespace.items() if isinstance(v, JitFunction)}
    if name is not None:
        picked = found.get(name) or next((v for v in found.values() if v.fn.__name__ == name), None)
        if picked is None:
            raise PTOError("PTO_ARG", f"{path} has no @jit function {name!r}",
                           expected=", ".join(found) or "a @jit function", actual=name)
        return picked
    if len(found) != 1:
        raise PTOError("PTO_ARG", f"{path} defines {len(found)} @jit functions: say which with --function",
                       expected="--function NAME", actual=", ".join(found) or "none")
    return next(iter(found.values()))


def parse_dims(items: list[str], known: list[str]) -> dict[str, int]:
    dims: dict[str, int] = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not value.strip().isdigit() or int(value) < 1 or name not in known:
            raise PTOError("PTO_ARG", f"bad --dim {item!r}",
                           expected=f"NAME=VALUE with NAME one of {', '.join(known) or '(no dynamic sizes)'} "
                                    "and VALUE a positive int", actual=item)
        dims[name] = int(value)
    return dims


def frontend_command(args: argparse.Namespace) -> int:
    jf = load_function(args.file, args.function)
    jf = jf.with_options(backend=args.backend, profile=args.profile)
    dims = parse_dims(args.dim, jf.dynamic_dims())
    if args.stage == "tensor" and not args.draw:
        print(jf.graph_from_annotations(dims))
        return 0
    stages = jf.stages_from_annotations(dims)
    if args.stage == "all":
        print(stages)
    else:
        print(stages.stage("kernels" if args.stage == "pto" else args.stage))
    if args.draw:
        stages.draw(args.draw)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    fe = sub.add_parser("frontend", help="print a stage of a @jit function in a Python file")
    fe.add_argument("file", help="a Python file defining @jit functions")
    fe.add_argument("--function", help="which @jit function (default: the file's only one)")
    fe.add_argument("--stage", choices=STAGE_NAMES, default="tensor",
                    help="tensor (default), tile, partition, kernels (or pto: the PTO-AS), tasks, or all")
    fe.add_argument("--backend", default="reference", help="the backend compiled for (default reference)")
    fe.add_argument("--profile", default="cpu", help="the profile tiled and compiled for (default cpu)")
    fe.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE",
                    help="fix a dynamic size (named as the tensor graph names it) to VALUE")
    fe.add_argument("--draw", metavar="FILE.png", help="also draw the tile graph and partition")
    fe.set_defaults(run=frontend_command)
