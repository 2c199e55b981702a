"""The ``pto`` command: a thin layer over the Python API. Errors print as diagnostics, never
as tracebacks."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Callable, Sequence

from .isa import PTOError
from .isa import docgen, registry
from .isa.render import instruction_json, spec_json


def _cmd_isa(args: argparse.Namespace) -> int:
    if args.write_docs:
        paths = docgen.write(args.write_docs)
        print(f"wrote {len(paths)} pages to {args.write_docs}")
        return 0
    if args.json:
        data = spec_json() if not args.name else instruction_json(registry.get(args.name))
        print(json.dumps(data, indent=2))
        return 0
    if args.name:
        print(docgen.page(registry.get(args.name)))
        return 0
    rows = []
    for ins in registry.all_instructions():
        if args.family and ins.family.name.lower() != args.family.lower():
            continue
        rule = ins.dtypes
        dts = " ".join(sorted({d.name for t in rule.tuples for d in t})) if rule else "-"
        ops = ", ".join(f"{o.name}:{o.kind.value}" + ("" if o.role.value == "in" else f"({o.role.value})")
                        for o in ins.operands)
        rows.append((ins.mnemonic, ins.family.name.lower(), ops, dts))
    w = [max(len(r[i]) for r in rows) for i in range(2)] if rows else [0, 0]
    for r in rows:
        print(f"{r[0]:<{w[0]}}  {r[1]:<{w[1]}}  {r[2]}  [{r[3]}]")
    print(f"{len(rows)} instructions")
    return 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pto", description="openpto: tools for the PTO virtual ISA")
    sub = p.add_subparsers(dest="command", required=True)
    isa = sub.add_parser("isa", help="list, show or export the instruction set")
    isa.add_argument("name", nargs="?", help="one instruction to show (e.g. TROWSUM)")
    isa.add_argument("--json", action="store_true", help="dump the spec (or one instruction) as JSON")
    isa.add_argument("--write-docs", metavar="DIR", help="generate the reference pages into DIR")
    isa.add_argument("--family", help="only list one family (e.g. elementwise)")
    isa.set_defaults(run=_cmd_isa)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except PTOError as e:
        print(e.render(), file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
