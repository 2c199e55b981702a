"""``pto port FILE.py[:function]``: the portability report of a @jit function in a Python file.

The file runs as a module (as for ``pto frontend``); the function is captured from its
annotations (``--size NAME=VALUE`` fixes dynamic sizes) and compiled for every profile, or
those named with ``--profile``. The command succeeds (exit 0) whether or not the function is
legal everywhere: the report says where it is not. Bad arguments are PTO_ARG.
"""
from __future__ import annotations

import argparse
import os
import re

from ..isa.diagnostics import PTOError
from .command import load_function
from .port import check_profiles

_TARGET = re.compile(r"^(?P<file>.+?\.py)(?::(?P<fn>[A-Za-z_][A-Za-z0-9_]*))?$")


def split_target(target: str) -> tuple[str, str | None]:
    """``FILE.py`` or ``FILE.py:function`` -> (file, function or None)."""
    m = _TARGET.match(target)
    if m is None:
        raise PTOError("PTO_ARG", f"bad target {target!r}", expected="FILE.py or FILE.py:function",
                       actual=target)
    return m.group("file"), m.group("fn")


def parse_sizes(items: list[str]) -> dict[str, int]:
    """``--size NAME=VALUE`` items; the names are checked against the function's by ``report``."""
    sizes: dict[str, int] = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not name or not value.strip().isdigit() or int(value) < 1:
            raise PTOError("PTO_ARG", f"bad --size {item!r}", expected="NAME=VALUE with VALUE a positive int",
                           actual=item)
        sizes[name] = int(value)
    return sizes


def port_command(args: argparse.Namespace) -> int:
    from .port import report
    path, name = split_target(args.target)
    profiles = check_profiles(args.profile) or None
    if not os.path.isfile(path):
        raise PTOError("PTO_FILE", f"cannot read {path}: no such file", expected="a Python file", actual=path)
    jf = load_function(path, name)
    sizes = parse_sizes(args.size)
    r = report(jf, profiles=profiles, sizes=sizes, fit=not args.no_fit)
    print(r.markdown() if args.markdown else r, end="" if args.markdown else "\n")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("port", help="portability report: a frontend function compiled for every profile")
    p.add_argument("target", metavar="FILE.py[:function]",
                   help="a Python file defining @jit functions, and which one (default: its only one)")
    p.add_argument("--profile", action="append", default=[], metavar="P",
                   help="a profile to report on (repeatable; default: every profile)")
    p.add_argument("--size", action="append", default=[], metavar="NAME=VALUE",
                   help="fix a dynamic size (named as the tensor graph names it) to VALUE")
    p.add_argument("--markdown", action="store_true", help="print Markdown (for docs) instead of text")
    p.add_argument("--no-fit", action="store_true",
                   help="skip the search for tile shapes that clear capacity blockers")
    p.set_defaults(run=port_command)
