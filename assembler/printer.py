"""Module -> canonical PTO-AS text, the exact inverse of the parser: ``parse(print(m)) == m``.

Canonical choices: a kernel header always; one statement per line, two-space indent per
region; tile instructions in the synchronous form with a full type signature (as
``isa.render.example_statement`` prints them); attributes in declaration order spelled
``#pto.kind<VALUE>``; ``.const`` for constants; ``scf.for``/``scf.if``/``scf.yield``;
``arith.<op>`` for scalar ops; canonical type spellings.
"""
from __future__ import annotations

import enum
from typing import Any, NoReturn

from ..isa import attrs as A
from ..isa.diagnostics import StructError
from ..isa.spec import Instruction
from ..isa.types import TileType
from . import scalar_ops as S
from .ir import (Arg, Bound, Const, For, If, Kernel, MemRef, Module, PipeLit, ScalarOp, Stmt,
                 Subset, TileDecl, TileOp, Value, View, ViewQuery, Yield, arg_type, spell_number)
from .lexer import is_name
from .subset import subset_type
from .operands import KIND_OF_ENUM, sync_layout

INDENT = "  "


def print_module(m: Module) -> str:
    return "\n".join(print_kernel(k) for k in m.kernels)


def print_kernel(k: Kernel) -> str:
    params = ", ".join(f"{_v(p)} : {p.type}" for p in k.params)
    if not is_name(k.name):
        _unwritable("kernel", "@", k.name)
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
            out.append(pad + _results(s.results) + f"scf.if {_v(s.cond)}" + _arrow(s.results) + " {")
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
        return f".const {_v(s.result)} = {spell_number(s.value)} : {s.result.type}"
    if isinstance(s, TileDecl) and s.keep:
        return f"pto.set_validshape {_v(s.value)}, {_v(s.valid_rows)}, {_v(s.valid_cols)} : {s.value.type}"
    if isinstance(s, TileDecl):
        valid = "".join(f" {k} = {_v(v)}" for k, v in (("addr", s.addr), ("valid_row", s.valid_rows),
                                                        ("valid_col", s.valid_cols)) if v is not None)
        return f".tile {_v(s.value)}{valid} : {s.value.type}"
    if isinstance(s, View):
        return _view(s)
    if isinstance(s, Subset):
        return _subset(s)
    if isinstance(s, ViewQuery):
        return f"{_v(s.result)} = pto.{s.op} {_v(s.source)}, {_bound(s.dim)} : {s.source.type} -> index"
    if isinstance(s, Yield):
        vals = ", ".join(_v(v) for v in s.values)
        types = ", ".join(str(v.type) for v in s.values)
        return "scf.yield" + (f" {vals} : {types}" if s.values else "")
    raise TypeError(f"not a statement: {s!r}")


def _view(s: View) -> str:
    """The public spelling of a view statement, with the source's and the result's types."""
    lists = {"make_tensor_view": (("shape", s.sizes), ("strides", s.strides)),
             "partition_view": (("offsets", s.offsets), ("sizes", s.sizes))}.get(s.op, ())
    text = "".join(f", {kw} = [" + ", ".join(_bound(b) for b in items) + "]" for kw, items in lists)
    types = f"{s.result.type}" if s.op == "make_tensor_view" else f"{s.source.type} -> {s.result.type}"
    return f"{_v(s.result)} = pto.{s.op} {_v(s.source)}{text} : {types}"


def _subset(s: Subset) -> str:
    """The public spelling; the result's type only when it is not the one the parent implies."""
    derived = isinstance(s.source.type, TileType) and \
        s.result.type == subset_type(s.source.type, s.offsets, s.sizes)
    types = f"{s.source.type}" + ("" if derived else f" -> {s.result.type}")
    return (f"{_v(s.result)} = pto.subset {_v(s.source)}[{_bound(s.offsets[0])}, {_bound(s.offsets[1])}] "
            f"sizes [{s.sizes[0]}, {s.sizes[1]}] : {types}")


def _results(vals: tuple[Value, ...]) -> str:
    return ", ".join(_v(v) for v in vals) + " = " if vals else ""


def _arrow(vals: tuple[Value, ...]) -> str:
    return " -> (" + ", ".join(str(v.type) for v in vals) + ")" if vals else ""


def _bound(b: Bound) -> str:
    return _v(b) if isinstance(b, Value) else str(b)


def _for_head(s: For) -> str:
    text = _results(s.results) + f"scf.for {_v(s.iv)} = {_bound(s.lb)} to {_bound(s.ub)} step {_bound(s.step)}"
    if s.iter_args:
        pairs = ", ".join(f"{_v(a)} = {_operand(i)}" for a, i in zip(s.iter_args, s.inits))
        text += f" iter_args({pairs})" + _arrow(s.iter_args)
    if s.iv.type.spell() != "index":
        text += f" : {s.iv.type}"
    return text + " {"


def _operand(a: Arg) -> str:
    if isinstance(a, Value):
        return _v(a)
    if isinstance(a, MemRef):
        return f"{_v(a.base)}[" + ", ".join(_bound(i) for i in a.indices) + "]"
    if isinstance(a, PipeLit):
        return f"#pto.pipe<{a.pipe.value}>"
    return spell_number(a.value)


def spell_attr(value: Any) -> str:
    """``#pto.cmp<GT>`` for an enum of any attribute kind (a pipe too: ``#pto.pipe<V>``, which
    the parser reads back in any attribute), the bare member name for another enum (which
    no attribute declares: the verifier reports it), numbers as literals."""
    if isinstance(value, enum.Enum):
        kind = KIND_OF_ENUM.get(type(value))
        return value.name if kind is None else f"#pto.{kind}<{value.name}>"
    if isinstance(value, (bool, int, float)):
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


def _v(v: Value) -> str:
    """``%name``, remembered per name; a name the lexer would not read back is refused."""
    text = _SPELLED_NAMES.get(v.name) if v.name.__class__ is str else None
    if text is None:
        if not is_name(v.name):
            _unwritable("value", "%", v.name)
        if len(_SPELLED_NAMES) >= 1 << 16:
            _SPELLED_NAMES.clear()
        text = _SPELLED_NAMES[v.name] = "%" + v.name
    return text


_SPELLED_NAMES: dict[str, str] = {}


def _unwritable(what: str, sigil: str, name: object) -> NoReturn:
    raise StructError("STRUCT_NAME", f"{what} name {name!r} cannot be written as {sigil}name",
                      expected="one or more of A-Z a-z 0-9 _ $ . -", actual=repr(name)[:200])


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
    text = f"{', '.join(map(_v, s.results))} = {spec.text_name}"
    ops = ", ".join(_v(v) for v in s.operands)
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
    if spec.cls == "extended" and spec.second == "i1" and s.second is not None:
        return text + f" : {s.result.type}, {s.second.type}"
    return text + f" : {s.result.type}"

