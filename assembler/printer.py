"""Module -> canonical PTO-AS text, the exact inverse of the parser: ``parse(print(m)) == m``.

Canonical choices: a kernel header always; one statement per line, two-space indent per
region; tile instructions in the synchronous form with a full type signature (as
``isa.render.example_statement`` prints them); attributes in declaration order spelled
``#pto.kind<VALUE>``; ``.const`` for constants; ``scf.for``/``scf.if``/``scf.yield``;
``arith.<op>`` for scalar ops; canonical type spellings.
"""
from __future__ import annotations

import enum
from typing import Any

from ..isa import attrs as A
from ..isa.spec import Instruction
from . import scalar_ops as S
from .ir import (Arg, Bound, Const, For, If, Kernel, MemRef, Module, PipeLit, ScalarOp, Stmt,
                 TileDecl, TileOp, Value, Yield, arg_type, spell_number)
from .operands import sync_layout

INDENT = "  "


def print_module(m: Module) -> str:
    return "\n".join(print_kernel(k) for k in m.kernels)


def print_kernel(k: Kernel) -> str:
    params = ", ".join(f"%{p.name} : {p.type}" for p in k.params)
    lines = [f"kernel @{k.name}({params}) {{"]
    _body(k.body, 1, lines)
    lines.append("}")
    return "\n".join(lines) + "\n"


def _body(body: tuple[Stmt, ...], depth: int, out: list[str]) -> None:
    for s in body:
        pad = INDENT * depth
        if isinstance(s, For):
            out.append(pad + _for_head(s))
            _body(s.body, depth + 1, out)
            out.append(pad + "}")
        elif isinstance(s, If):
            out.append(pad + _results(s.results) + f"scf.if %{s.cond.name}" + _arrow(s.results) + " {")
            _body(s.then_body, depth + 1, out)
            if s.else_body:
                out.append(pad + "} else {")
                _body(s.else_body, depth + 1, out)
            out.append(pad + "}")
        else:
            out.append(pad + print_statement(s))


def print_statement(s: Stmt) -> str:
    """One non-region statement as a line of text (without indentation)."""
    if isinstance(s, TileOp):
        return print_tile_op(s)
    if isinstance(s, ScalarOp):
        return _scalar(s)
    if isinstance(s, Const):
        return f".const %{s.result.name} = {spell_number(s.value)} : {s.result.type}"
    if isinstance(s, TileDecl):
        valid = "".join(f" {k} = %{v.name}" for k, v in (("valid_row", s.valid_rows),
                                                        ("valid_col", s.valid_cols)) if v is not None)
        return f".tile %{s.value.name}{valid} : {s.value.type}"
    if isinstance(s, Yield):
        vals = ", ".join(f"%{v.name}" for v in s.values)
        types = ", ".join(str(v.type) for v in s.values)
        return "scf.yield" + (f" {vals} : {types}" if s.values else "")
    raise TypeError(f"not a statement: {s!r}")


def _results(vals: tuple[Value, ...]) -> str:
    return ", ".join(f"%{v.name}" for v in vals) + " = " if vals else ""


def _arrow(vals: tuple[Value, ...]) -> str:
    return " -> (" + ", ".join(str(v.type) for v in vals) + ")" if vals else ""


def _bound(b: Bound) -> str:
    return f"%{b.name}" if isinstance(b, Value) else str(b)


def _for_head(s: For) -> str:
    text = _results(s.results) + f"scf.for %{s.iv.name} = {_bound(s.lb)} to {_bound(s.ub)} step {_bound(s.step)}"
    if s.iter_args:
        pairs = ", ".join(f"%{a.name} = {_operand(i)}" for a, i in zip(s.iter_args, s.inits))
        text += f" iter_args({pairs})" + _arrow(s.iter_args)
    if s.iv.type.spell() != "index":
        text += f" : {s.iv.type}"
    return text + " {"


def _operand(a: Arg) -> str:
    if isinstance(a, Value):
        return f"%{a.name}"
    if isinstance(a, MemRef):
        return f"%{a.base.name}[" + ", ".join(_bound(i) for i in a.indices) + "]"
    if isinstance(a, PipeLit):
        return f"#pto.pipe<{a.pipe.value}>"
    return spell_number(a.value)


def spell_attr(value: Any) -> str:
    """``#pto.cmp<GT>`` for enums with a PTO-AS kind, the bare member name for others."""
    if isinstance(value, enum.Enum) and type(value) not in A.ENUM_SPELLING:
        return value.name
    if isinstance(value, (bool, int, float)) and not isinstance(value, enum.Enum):
        return spell_number(value)
    return A.spell(value)


def _attrs(instr: Instruction, attrs: dict[str, Any] | Any) -> str:
    names = [a.name for a in instr.attrs if a.name in attrs]
    names += [n for n in attrs if n not in names]
    if not names:
        return ""
    return " {" + ", ".join(f"{n} = {spell_attr(attrs[n])}" for n in names) + "}"


def print_tile_op(s: TileOp) -> str:
    res_ops, pos_ops = sync_layout(s.instr)
    args = s.args
    results = [args[o.name] for o in res_ops if o.name in args]
    operands = [args[o.name] for o in pos_ops if o.name in args]
    text = ", ".join(_operand(r) for r in results) + " = " if results else ""
    text += s.instr.asm_name
    if operands:
        text += " " + ", ".join(_operand(a) for a in operands)
    if s.attrs:
        text += _attrs(s.instr, s.attrs)
    ins = [spell_type(arg_type(a)) for a in operands if not isinstance(a, PipeLit)]
    outs = [spell_type(arg_type(r)) for r in results]
    if ins or outs:
        text += " : (" + ", ".join(ins) + ")"
        if outs:
            text += " -> " + (outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")")
    return text


def spell_type(t: Any) -> str:
    """``str(t)``, remembered per type object: a module spells the same few types over and
    over, and a tile type's spelling takes a dozen string operations."""
    hit = _SPELLED.get(id(t))
    if hit is not None and hit[0] is t:
        return hit[1]
    if len(_SPELLED) >= 4096:
        _SPELLED.clear()
    text = str(t)
    _SPELLED[id(t)] = (t, text)
    return text


_SPELLED: dict[int, tuple[Any, str]] = {}


def _scalar(s: ScalarOp) -> str:
    spec = S.SCALAR_OPS[s.op]
    text = f"%{s.result.name} = {spec.text_name}"
    ops = ", ".join(f"%{v.name}" for v in s.operands)
    if s.predicate is not None:
        ops = f"{s.predicate}, {ops}"
    if ops:
        text += " " + ops
    if spec.cls == "cast":
        return text + f" : {s.operands[0].type} to {s.result.type}"
    if spec.cls == "block":
        return text
    if spec.cls in ("cmpi", "cmpf"):
        return text + f" : {s.operands[0].type}"
    return text + f" : {s.result.type}"

