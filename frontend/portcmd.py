"""``pto port TARGET``: the portability report of a @jit function, from the command line.

TARGET is ``FILE.py[:name]`` (the file runs as a module, as for ``pto frontend``) or
``package.module:name`` (imported). ``name`` is a @jit function, or a factory returning one
(an operator's ``build``), called with the ``--arg NAME=VALUE`` keywords (a Python literal, else
the text). The function is captured from its annotations (``--size NAME=VALUE`` fixes dynamic
sizes) and compiled for every profile, or those named with ``--profile``. The command succeeds
(exit 0) whether or not the function is legal everywhere: the report says where it is not. Bad
arguments are PTO_ARG, a file that cannot be read or run PTO_FILE.
"""
from __future__ import annotations

import argparse
import ast
import importlib
import os
import re
from typing import Any

from ..isa.diagnostics import PTOError
from .command import run_file
from .jit import JitFunction
from .port import check_profiles

_FILE = re.compile(r"^(?P<file>.+?\.py)(?::(?P<name>[A-Za-z_][A-Za-z0-9_]*))?$")
_MODULE = re.compile(r"^(?P<module>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*):(?P<name>[A-Za-z_][A-Za-z0-9_]*)$")
_TARGET_FORMS = "FILE.py, FILE.py:name or package.module:name"


def split_target(target: str) -> tuple[str | None, str | None, str | None]:
    """(file, module, name): one of file / module is set; ``name`` may be None for a file."""
    m = _FILE.match(target)
    if m is not None:
        return m.group("file"), None, m.group("name")
    m = _MODULE.match(target)
    if m is not None:
        return None, m.group("module"), m.group("name")
    raise PTOError("PTO_ARG", f"bad target {target!r}", expected=_TARGET_FORMS, actual=target)


def parse_pairs(items: list[str], flag: str, *, literal: bool) -> dict[str, Any]:
    """``NAME=VALUE`` items: positive ints (``literal`` False) or Python literals / text."""
    out: dict[str, Any] = {}
    for item in items:
        name, eq, value = item.partition("=")
        if literal:
            if not eq or not name.isidentifier():
                raise PTOError("PTO_ARG", f"bad {flag} {item!r}", expected="NAME=VALUE with NAME an identifier",
                               actual=item)
            try:
                out[name] = ast.literal_eval(value)
            except (ValueError, SyntaxError):
                out[name] = value
        else:
            if not eq or not name or not value.strip().isdigit() or int(value) < 1:
                raise PTOError("PTO_ARG", f"bad {flag} {item!r}", expected="NAME=VALUE with VALUE a positive int",
                               actual=item)
            out[name] = int(value)
    return out


def _namespace(file: str | None, module: str | None) -> tuple[dict, str]:
    if file is not None:
        if not os.path.isfile(file):
            raise PTOError("PTO_FILE", f"cannot read {file}: no such file", expected="a Python file", actual=file)
        return run_file(file), file
    assert module is not None
    try:
        mod = importlib.import_module(module)
    except ImportError as e:
        raise PTOError("PTO_ARG", f"cannot import {module}", expected="an importable module",
                       actual=f"{type(e).__name__}: {e}") from None
    return vars(mod), module


def load_target(target: str, args: dict[str, Any]) -> tuple[JitFunction, str | None]:
    """The @jit function TARGET names (a factory's, called with ``args``) and, for a factory,
    the call that made it (the report's label)."""
    file, module, name = split_target(target)
    ns, where = _namespace(file, module)
    if name is None:
        found = [v for v in ns.values() if isinstance(v, JitFunction)]
        if len(found) != 1 or args:
            raise PTOError("PTO_ARG", f"{where} defines {len(found)} @jit functions: say which with FILE.py:name",
                           expected="FILE.py:name", actual=", ".join(v.fn.__name__ for v in found) or "none")
        return found[0], None
    obj = ns.get(name)
    if isinstance(obj, JitFunction):
        if args:
            raise PTOError("PTO_ARG", f"{name} is a @jit function: --arg is for a factory returning one",
                           expected="no --arg", actual=", ".join(args))
        return obj, None
    if obj is None or not callable(obj):
        jits = [k for k, v in ns.items() if isinstance(v, JitFunction)]
        raise PTOError("PTO_ARG", f"{where} has no @jit function or factory {name!r}",
                       expected=", ".join(jits) or "a @jit function or a factory returning one", actual=name)
    label = f"{name}({', '.join(f'{k}={v!r}' for k, v in args.items())})"
    try:
        made = obj(**args)
    except PTOError:
        raise
    except Exception as e:  # noqa: BLE001 - a factory refusing its arguments
        raise PTOError("PTO_ARG", f"{label} failed", expected="arguments the factory takes",
                       actual=f"{type(e).__name__}: {e}") from None
    if not isinstance(made, JitFunction):
        raise PTOError("PTO_ARG", f"{label} did not return a @jit function", expected="a JitFunction",
                       actual=type(made).__name__)
    return made, label


def port_command(args: argparse.Namespace) -> int:
    from .port import report
    profiles = check_profiles(args.profile) or None
    sizes = parse_pairs(args.size, "--size", literal=False)
    fargs = parse_pairs(args.arg, "--arg", literal=True)
    jf, label = load_target(args.target, fargs)
    r = report(jf, profiles=profiles, sizes=sizes, fit=not args.no_fit, label=label)
    print(r.markdown() if args.markdown else r, end="" if args.markdown else "\n")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("port", help="portability report: a frontend function compiled for every profile")
    p.add_argument("target", metavar="TARGET",
                   help="FILE.py[:name] or package.module:name: a @jit function or a factory returning one "
                        "(default: the file's only @jit function)")
    p.add_argument("--arg", action="append", default=[], metavar="NAME=VALUE",
                   help="a keyword argument of the factory (a Python literal, else text; repeatable)")
    p.add_argument("--profile", action="append", default=[], metavar="P",
                   help="a profile to report on (repeatable; default: every profile)")
    p.add_argument("--size", action="append", default=[], metavar="NAME=VALUE",
                   help="fix a dynamic size (named as the tensor graph names it) to VALUE")
    p.add_argument("--markdown", action="store_true", help="print Markdown (for docs) instead of text")
    p.add_argument("--no-fit", action="store_true",
                   help="skip the search for tile shapes that clear capacity blockers")
    p.set_defaults(run=port_command)
