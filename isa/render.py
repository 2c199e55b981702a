"""Text views of declarations: a PTO-AS statement for an example, JSON for other tools."""
from __future__ import annotations

import enum
from typing import Any

from . import attrs as A
from .decisions import DECISIONS
from .profiles import PROFILES
from .registry import all_instructions
from .spec import Instruction, Kind, Role
from .types import Pipe

_WIDE_INDEX = {Kind.GLOBAL}


def example_statement(instr: Instruction) -> str:
    """The declaration's example as one PTO-AS statement in the synchronous form:
    outputs that are tiles or scalars become results, inputs follow in declaration order."""
    ex = instr.example
    results, operands, in_types = [], [], []
    for op in instr.operands:
        if op.name not in ex.types and op.name not in ex.scalars:
            continue
        if op.kind is Kind.PIPE:
            value = ex.scalars[op.name]
            operands.append(f"#pto.pipe<{value.value if isinstance(value, Pipe) else value}>")
            continue
        if op.kind in (Kind.TILE, Kind.SCALAR) and op.role is Role.OUT:
            results.append(f"%{op.name}")
            continue
        if op.kind is Kind.GLOBAL:
            rank = ex.types[op.name].count("x")
            operands.append(f"%{op.name}[" + ", ".join(["%c0"] * max(rank, 1)) + "]")
        else:
            operands.append(f"%{op.name}")
        if op.name in ex.types:
            in_types.append(ex.types[op.name])
    out_types = [ex.types[r[1:]] for r in results]
    text = (", ".join(results) + " = " if results else "") + instr.asm_name
    if operands:
        text += " " + ", ".join(operands)
    if ex.attrs:
        text += " {" + ", ".join(f"{k} = {A.spell(v)}" for k, v in ex.attrs.items()) + "}"
    if in_types or out_types:
        sig = "(" + ", ".join(in_types) + ")"
        if out_types:
            sig += " -> " + (out_types[0] if len(out_types) == 1 else "(" + ", ".join(out_types) + ")")
        text += " : " + sig
    return text


def _enum_or_value(v: Any) -> Any:
    if isinstance(v, enum.Enum):
        return v.name
    if isinstance(v, type):
        return v.__name__
    return v


def instruction_json(instr: Instruction) -> dict[str, Any]:
    return {
        "mnemonic": instr.mnemonic,
        "asm": instr.asm_name,
        "aliases": list(instr.aliases),
        "family": instr.family.name.lower(),
        "extension": instr.extension,
        "summary": instr.summary,
        "doc": instr.doc,
        "special_values": instr.special_values,
        "operands": [{"name": o.name, "role": o.role.value, "kind": o.kind.value, "optional": o.optional,
                      "locations": [l.value for l in o.locations] if o.locations else None,
                      "bounds": list(o.bounds) if o.bounds is not None else None, "multiple": o.multiple,
                      "doc": o.doc} for o in instr.operands],
        "attributes": [{"name": a.name, "type": _enum_or_value(a.type),
                        "values": [m.name for m in a.type] if isinstance(a.type, type) and issubclass(a.type, enum.Enum) else None,
                        "default": _enum_or_value(a.default), "required": a.required, "doc": a.doc}
                       for a in instr.attrs],
        "domain": instr.domain.name.lower(),
        "pipe": instr.pipe.value if isinstance(instr.pipe, Pipe) else "depends on operand locations",
        "numerics": {"kind": instr.numerics.kind, "ulp": instr.numerics.ulp, "text": instr.numerics.describe()},
        "constraints": [c.doc for c in instr.constraints],
        "dtypes": {
            p: (None if not instr.supported_on(p) else
                (None if instr.dtype_rule(p) is None else
                 {"operands": list(instr.dtype_rule(p).operands),
                  "tuples": [[d.name for d in t] for t in instr.dtype_rule(p).sorted_tuples()]}))
            for p in PROFILES
        },
        "values": {p: [{"name": r.name, "operand": r.operand, "unless": r.unless, "code": r.code,
                        "values": {getattr(v, "name", str(v)): None if ds is None else [d.name for d in ds]
                                   for v, ds in r.values.items()}}
                       for r in instr.value_rules(p)]
                   for p in PROFILES if instr.supported_on(p) and instr.value_rules(p)},
        "forms": {p: [{"operand": r.operand, "code": r.code, "operands": list(r.rule.operands),
                       "tuples": [[d.name for d in t] for t in r.rule.sorted_tuples()]}
                      for r in instr.form_rules(p)]
                  for p in PROFILES if instr.supported_on(p) and instr.form_rules(p)},
        "profiles": [p for p in PROFILES if instr.supported_on(p)],
        "example": example_statement(instr),
        "has_semantics": callable(instr.semantics),
    }


def spec_json() -> dict[str, Any]:
    from . import SPEC_VERSION, dtypes as D
    return {
        "spec_version": SPEC_VERSION,
        "dtypes": [{"name": d.name, "kind": d.kind, "bits": d.bits, "bytes": d.itemsize} for d in D.ALL + D.CODED],
        "profiles": {p.name: {"description": p.description,
                              "capacity": {l.value: b for l, b in p.capacity.items()},
                              "layouts": {l.value: [x.value for x in ls] for l, ls in p.layouts.items()},
                              "alignment": p.alignment, "event_ids": p.event_ids,
                              "pipes": [x.value for x in p.pipes], "clock_mhz": p.clock_mhz}
                     for p in PROFILES.values()},
        "instructions": [instruction_json(i) for i in all_instructions()],
        "decisions": [d.__dict__ for d in DECISIONS],
    }
