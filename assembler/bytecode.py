"""PTO bytecode: a compact, versioned binary form of a ``Module`` (``.ptobc`` files).

Loading never executes anything: the reader decodes integers, strings and tags and looks
instructions up in the registry by mnemonic. Every malformed input raises ``BytecodeError``
(``BCODE_*``) whose message names the byte offset; counts are bounded by the bytes left and
nesting by the IR's limit, so no length field can make the reader allocate or recurse
beyond the file's size.

Bytecode is a compact encoding of what PTO-AS says, never more: names must be names the
text form spells (``BCODE_NAME``), and a decoded module is printed and parsed back, the
parser being the one definition of a well-formed module (scoping, literal kinds, statement
forms); a module that does not come back the same is refused (``BCODE_TEXT``). So
``parse(dis(x)) == load(x)`` for every file that loads.

Equal modules give identical bytes (source locations are not stored: they are not part of
a module's identity, and ``pto dis`` regenerates canonical text), so a file's hash can key
a cache. ``load_bytes(dump(m)) == m`` and the text of both is the same.

Layout (little-endian; *varint* = unsigned LEB128, *sint* = zigzag varint)::

    offset size  field
    0      6     magic  b"PTOBC\\0"
    6      2     u16 format version (FORMAT_VERSION = 2)
    8      2     u16 flags (reserved, 0)
    10     4     u32 payload length in bytes
    14     4     u32 CRC-32 (zlib.crc32) of the payload
    18     ...   payload: four sections, each  u8 id, varint length, body

    id  section  body
    1   strings  varint n; n x (varint byte length, UTF-8 bytes); deduplicated
    2   types    varint n; n x string index of the canonical spelling (isa.types.parse_type)
    3   values   varint n; n x (string index of the name, type index): every %value used
    4   kernels  varint n; n x (string name, varint nparams, value indices, body)

A body is ``varint n`` statements, each a ``u8`` tag and its fields:

    tag  statement  fields
    1    TileDecl   value, opt-value valid_rows, opt-value valid_cols
    8    TileDecl   the same fields, ``keep`` set (``pto.set_validshape``)
    9    TileDecl   the fields of tag 1, then value addr (``pto.alloc_tile addr = %a``)
    10   View       string op, value result, value source; three lists (offsets, sizes,
                    strides), each varint n, n x bound
    11   ViewQuery  string op, value result, value source, bound dim
    12   Subset     value result, value source, bound row offset, bound column offset,
                    varint rows, varint cols
    2    Const      value, number
    3    TileOp     string mnemonic; varint n, n x (varint operand position, arg);
                    varint m, m x (varint attribute position, attr value)
    4    ScalarOp   string op, opt-string predicate, value result, [value second: the
                    two-result ops only], varint n, n x value
    5    Yield      varint n, n x value
    6    For        value iv, bound lb, ub, step; varint n, n x value iter_args;
                    varint n, n x arg inits; varint n, n x value results; body
    7    If         value cond; varint n, n x value results; body then; body else

Operand positions index ``Instruction.operands`` / ``Instruction.attrs`` (so every key is
declared); opt-x is ``varint 0`` for none, else index + 1. Tagged forms (u8 tag first):
*number* 0 false, 1 true, 2 int (sint), 3 float (8-byte IEEE double, bit-exact);
*attr value* a number or 4 enum (string kind as in ``#pto.<kind><..>``, string member name);
*arg* 0 value, 1 literal (type index, number), 2 memref (value base, varint n, n x bound),
3 pipe (string member name); *bound* 0 value, 1 int (sint).
"""
from __future__ import annotations

import enum
import struct
import zlib
from typing import Any, Callable, NoReturn

from ..isa.diagnostics import BytecodeError, Location, ParseError, PTOError
from ..isa.registry import lookup as lookup_instruction
from ..isa.spec import Instruction
from ..isa.types import EventType, GlobalType, Pipe, ScalarType, TileType, Type, parse_type
from . import scalar_ops as S
from .ir import (MAX_DEPTH, QUERY_OPS, VIEW_OPS, Arg, Bound, Const, For, If, Kernel, Lit, MemRef, Module, Number,
                 PipeLit, ScalarOp, Stmt, Subset, TileDecl, TileOp, Value, View, ViewQuery, Yield)
from .lexer import is_name
from .operands import ACCEPTS, ENUM_KINDS, KIND_OF_ENUM
from .parser import collector_paused, parse
from .printer import print_module, print_statement

MAGIC = b"PTOBC\0"
FORMAT_VERSION = 2
#: older versions and why this reader refuses them: operand positions index the declarations of
#: their time, which have moved since (guessing would misread a file, not reject it)
RETIRED_VERSIONS = {
    1: "TEXTRACT and TINSERT took their offsets r0, c0 at operand positions 2 and 3, where "
       "preQuantScalar now is (version 2 numbers them 3 and 4); re-assemble the file from its text",
}
HEADER = struct.Struct("<6sHHII")          # magic, version, flags, payload length, crc32
MAX_INT_BITS = 4096                        # literal/attribute integers (text allows 64 digits)
_MAX_VARINT = 10                           # bytes of a count or index (64 bits)
_MAX_SINT = (MAX_INT_BITS + 1 + 6) // 7    # bytes of a zigzag-encoded integer

SECTIONS = ("strings", "types", "values", "kernels")   # ids 1..4, in this order

# statement tags
(T_DECL, T_CONST, T_OP, T_SCALAR, T_YIELD, T_FOR, T_IF, T_SETVALID, T_DECL_ADDR, T_VIEW, T_QUERY,
 T_SUBSET) = range(1, 13)
# number / attribute-value tags
N_FALSE, N_TRUE, N_INT, N_FLOAT, N_ENUM = range(5)
# argument tags and bound tags
A_VALUE, A_LIT, A_MEMREF, A_PIPE = range(4)
B_VALUE, B_INT = range(2)

_F64 = struct.Struct("<d")
_TYPES = (TileType, GlobalType, ScalarType, EventType)


# ============================================================================ writing

def _encode_error(message: str) -> NoReturn:
    raise BytecodeError("BCODE_ENCODE", f"cannot encode the module: {message}")


class _Writer:
    """Builds the tables while encoding kernels; the tables are emitted first."""

    def __init__(self) -> None:
        self.strings: dict[str, int] = {}
        self.types: dict[Type, int] = {}
        self.values: dict[tuple[str, Type], int] = {}
        self.out = bytearray()

    # ---------------------------------------------------------------- primitives
    def uint(self, n: int, out: bytearray | None = None) -> None:
        out = self.out if out is None else out
        while n >= 0x80:
            out.append((n & 0x7F) | 0x80)
            n >>= 7
        out.append(n)

    def sint(self, n: int) -> None:
        if n.bit_length() > MAX_INT_BITS:
            _encode_error(f"integer of {n.bit_length()} bits exceeds {MAX_INT_BITS}")
        self.uint(2 * n if n >= 0 else -2 * n - 1)

    def string(self, s: str) -> int:
        if not isinstance(s, str):
            _encode_error(f"{s!r} is not a string")
        return self.strings.setdefault(s, len(self.strings))

    def type_(self, t: Type) -> int:
        idx = self.types.get(t)
        if idx is None:
            spelling = t.spell() if isinstance(t, _TYPES) else repr(t)
            try:
                same = parse_type(spelling) == t
            except (ParseError, ValueError):
                same = False
            if not same:
                _encode_error(f"type {spelling} does not survive its spelling")
            idx = self.types[t] = len(self.types)
            self.string(spelling)
        return idx

    def value_index(self, v: Value) -> int:
        if not isinstance(v, Value):
            _encode_error(f"{v!r} is not a value")
        key = (v.name, v.type)
        idx = self.values.get(key)
        if idx is None:
            if not is_name(v.name):
                _encode_error(f"value name {v.name!r} cannot be written as %name")
            self.string(v.name)
            self.type_(v.type)
            idx = self.values[key] = len(self.values)
        return idx

    def value(self, v: Value) -> None:
        self.uint(self.value_index(v))

    def values_(self, vs: tuple[Value, ...]) -> None:
        self.uint(len(vs))
        for v in vs:
            self.value(v)

    def opt_value(self, v: Value | None) -> None:
        self.uint(0 if v is None else self.value_index(v) + 1)

    def number(self, x: Number) -> None:
        if isinstance(x, bool):
            self.out.append(N_TRUE if x else N_FALSE)
        elif isinstance(x, int):
            self.out.append(N_INT)
            self.sint(x)
        elif isinstance(x, float):
            self.out.append(N_FLOAT)
            self.out += _F64.pack(x)
        else:
            _encode_error(f"{x!r} is not a number")

    def bound(self, b: Bound) -> None:
        if isinstance(b, Value):
            self.out.append(B_VALUE)
            self.value(b)
        elif isinstance(b, int) and not isinstance(b, bool):
            self.out.append(B_INT)
            self.sint(b)
        else:
            _encode_error(f"{b!r} is neither a value nor an integer")

    # ---------------------------------------------------------------- operands
    def arg(self, a: Arg) -> None:
        if isinstance(a, Value):
            self.out.append(A_VALUE)
            self.value(a)
        elif isinstance(a, Lit):
            if not isinstance(a.type, ScalarType):
                _encode_error(f"literal of non-scalar type {a.type}")
            self.out.append(A_LIT)
            self.uint(self.type_(a.type))
            self.number(a.value)
        elif isinstance(a, MemRef):
            self.out.append(A_MEMREF)
            self.value(a.base)
            self.uint(len(a.indices))
            for i in a.indices:
                self.bound(i)
        elif isinstance(a, PipeLit) and isinstance(a.pipe, Pipe):
            self.out.append(A_PIPE)
            self.uint(self.string(a.pipe.name))
        else:
            _encode_error(f"{a!r} is not an operand")

    def attr_value(self, v: Any) -> None:
        if isinstance(v, enum.Enum):
            kind = KIND_OF_ENUM.get(type(v))
            if kind is None:
                _encode_error(f"attribute value {v!r} is not of an attribute enum")
            self.out.append(N_ENUM)
            self.uint(self.string(kind))
            self.uint(self.string(v.name))
        else:
            self.number(v)

    # ---------------------------------------------------------------- statements
    def body(self, body: tuple[Stmt, ...], depth: int) -> None:
        self.uint(len(body))
        for s in body:
            handler = self.HANDLERS.get(type(s))
            if handler is None:
                _encode_error(f"{s!r} is not a statement")
            if isinstance(s, (For, If)) and depth >= MAX_DEPTH:
                _encode_error(f"regions nested deeper than {MAX_DEPTH}")
            handler(self, s, depth)

    def tile_decl(self, s: TileDecl, depth: int) -> None:
        if s.keep and s.addr is not None:
            _encode_error("pto.set_validshape with an address")
        self.out.append(T_SETVALID if s.keep else T_DECL if s.addr is None else T_DECL_ADDR)
        self.value(s.value)
        self.opt_value(s.valid_rows)
        self.opt_value(s.valid_cols)
        if s.addr is not None:
            self.value(s.addr)

    def view(self, s: View, depth: int) -> None:
        if s.op not in VIEW_OPS:
            _encode_error(f"unknown view op {s.op!r}")
        self.out.append(T_VIEW)
        self.uint(self.string(s.op))
        self.value(s.result)
        self.value(s.source)
        for items in (s.offsets, s.sizes, s.strides):
            self.uint(len(items))
            for b in items:
                self.bound(b)

    def query(self, s: ViewQuery, depth: int) -> None:
        if s.op not in QUERY_OPS:
            _encode_error(f"unknown view query {s.op!r}")
        self.out.append(T_QUERY)
        self.uint(self.string(s.op))
        self.value(s.result)
        self.value(s.source)
        self.bound(s.dim)

    def subset(self, s: Subset, depth: int) -> None:
        if any(not isinstance(n, int) or n < 0 for n in s.sizes):
            _encode_error(f"pto.subset sizes {s.sizes!r} are not counts")
        self.out.append(T_SUBSET)
        self.value(s.result)
        self.value(s.source)
        for b in s.offsets:
            self.bound(b)
        for n in s.sizes:
            self.uint(n)

    def const(self, s: Const, depth: int) -> None:
        self.out.append(T_CONST)
        self.value(s.result)
        self.number(s.value)

    def tile_op(self, s: TileOp, depth: int) -> None:
        instr = s.instr
        if not isinstance(instr, Instruction) or lookup_instruction(instr.mnemonic) is not instr:
            _encode_error(f"{instr!r} is not a registered instruction")
        ops = {o.name: (n, o) for n, o in enumerate(instr.operands)}
        attrs = {a.name: n for n, a in enumerate(instr.attrs)}
        self.out.append(T_OP)
        self.uint(self.string(instr.mnemonic))
        self.uint(len(s.args))
        for name, a in s.args.items():
            if name not in ops:
                _encode_error(f"{instr.mnemonic} has no operand {name!r}")
            n, o = ops[name]
            if not isinstance(a, ACCEPTS[o.kind]):
                _encode_error(f"{instr.mnemonic} operand {name!r} ({o.kind.value}) holds {a!r}")
            self.uint(n)
            self.arg(a)
        self.uint(len(s.attrs))
        for name, v in s.attrs.items():
            if name not in attrs:
                _encode_error(f"{instr.mnemonic} has no attribute {name!r}")
            self.uint(attrs[name])
            self.attr_value(v)

    def scalar(self, s: ScalarOp, depth: int) -> None:
        spec = S.SCALAR_OPS.get(s.op)
        if spec is None or len(s.operands) != spec.arity:
            _encode_error(f"scalar op {s.op!r} with {len(s.operands)} operand(s)")
        if (spec.cls == "extended") != (s.second is not None):
            _encode_error(f"scalar op {s.op!r} with {len(s.results)} result(s)")
        self.out.append(T_SCALAR)
        self.uint(self.string(s.op))
        self.uint(0 if s.predicate is None else self.string(s.predicate) + 1)
        for v in s.results:
            self.value(v)
        self.values_(s.operands)

    def yield_(self, s: Yield, depth: int) -> None:
        self.out.append(T_YIELD)
        self.values_(s.values)

    def for_(self, s: For, depth: int) -> None:
        self.out.append(T_FOR)
        self.value(s.iv)
        for b in (s.lb, s.ub, s.step):
            self.bound(b)
        self.values_(s.iter_args)
        self.uint(len(s.inits))
        for i in s.inits:
            if not isinstance(i, (Value, Lit)):
                _encode_error(f"loop init {i!r} is neither a value nor a literal")
            self.arg(i)
        self.values_(s.results)
        self.body(s.body, depth + 1)

    def if_(self, s: If, depth: int) -> None:
        self.out.append(T_IF)
        self.value(s.cond)
        self.values_(s.results)
        self.body(s.then_body, depth + 1)
        self.body(s.else_body, depth + 1)

    HANDLERS: dict[type, Callable[["_Writer", Any, int], None]] = {
        TileDecl: tile_decl, Const: const, TileOp: tile_op, ScalarOp: scalar, Yield: yield_, For: for_, If: if_,
        View: view, ViewQuery: query, Subset: subset,
    }

    # ---------------------------------------------------------------- file
    def module(self, m: Module) -> bytes:
        self.uint(len(m.kernels))
        for k in m.kernels:
            if not is_name(k.name):
                _encode_error(f"kernel name {k.name!r} cannot be written as @name")
            self.uint(self.string(k.name))
            self.values_(k.params)
            self.body(k.body, 0)
        kernels, self.out = self.out, bytearray()
        self.uint(len(self.values))
        for name, t in self.values:
            self.uint(self.strings[name])
            self.uint(self.types[t])
        values, self.out = self.out, bytearray()
        self.uint(len(self.types))
        for t in self.types:
            self.uint(self.strings[t.spell()])
        types, self.out = self.out, bytearray()
        self.uint(len(self.strings))
        for s in self.strings:
            try:
                raw = s.encode("utf-8")
            except UnicodeEncodeError:
                _encode_error(f"{s!r} is not valid Unicode")
            self.uint(len(raw))
            self.out += raw
        strings = self.out
        payload = bytearray()
        for sid, body in enumerate((strings, types, values, kernels), start=1):
            payload.append(sid)
            self.uint(len(body), payload)
            payload += body
        return HEADER.pack(MAGIC, FORMAT_VERSION, 0, len(payload), zlib.crc32(payload)) + bytes(payload)


def dump(module: Module) -> bytes:
    """The bytecode of ``module``; ``BytecodeError`` (BCODE_ENCODE) if it holds something the
    format cannot represent (an unregistered instruction, a type its spelling does not give back)."""
    if not isinstance(module, Module):
        _encode_error(f"{type(module).__name__} is not a Module")
    return _Writer().module(module)


# ============================================================================ reading

class _Reader:
    """A cursor over one section of the payload; every read is bounds-checked."""

    def __init__(self, data: bytes, pos: int, end: int, filename: str | None) -> None:
        self.data, self.pos, self.end, self.file = data, pos, end, filename
        self.strings: list[str] = []
        self.types: list[Type] = []
        self.values: list[Value] = []

    def fail(self, code: str, message: str, at: int | None = None, **kw: Any) -> NoReturn:
        at = self.pos if at is None else at
        raise BytecodeError(code, f"{message} (byte {at})", location=Location(file=self.file), **kw)

    def corrupt(self, message: str, at: int | None = None) -> NoReturn:
        self.fail("BCODE_CORRUPT", message, at)

    # ---------------------------------------------------------------- primitives
    def u8(self) -> int:
        if self.pos >= self.end:
            self.corrupt("unexpected end of section")
        self.pos += 1
        return self.data[self.pos - 1]

    def uint(self, limit: int = _MAX_VARINT) -> int:
        start, n, shift = self.pos, 0, 0
        for _ in range(limit):
            b = self.u8()
            n |= (b & 0x7F) << shift
            if b < 0x80:
                return n
            shift += 7
        self.corrupt(f"integer longer than {limit} bytes", start)

    def sint(self) -> int:
        start = self.pos
        z = self.uint(_MAX_SINT)
        n = z >> 1 if not z & 1 else -((z + 1) >> 1)
        if n.bit_length() > MAX_INT_BITS:
            self.corrupt(f"integer wider than {MAX_INT_BITS} bits", start)
        return n

    def count(self, min_item: int, what: str) -> int:
        """A count of items that each take at least ``min_item`` bytes of what is left."""
        start = self.pos
        n = self.uint()
        if n * min_item > self.end - self.pos:
            self.corrupt(f"{what} count {n} exceeds the {self.end - self.pos} byte(s) left", start)
        return n

    def index(self, table: list, what: str) -> Any:
        start = self.pos
        i = self.uint()
        if i >= len(table):
            self.corrupt(f"{what} index {i} out of range (table has {len(table)})", start)
        return table[i]

    def string(self) -> str:
        return self.index(self.strings, "string")

    def value(self) -> Value:
        return self.index(self.values, "value")

    def values_(self) -> tuple[Value, ...]:
        return tuple(self.value() for _ in range(self.count(1, "value")))

    def optional(self, table: list, what: str) -> Any:
        """``varint 0`` for none, else a table index plus one."""
        start = self.pos
        i = self.uint()
        if i > len(table):
            self.corrupt(f"{what} index {i - 1} out of range (table has {len(table)})", start)
        return None if i == 0 else table[i - 1]

    def tag(self, allowed: range, what: str) -> int:
        t = self.u8()
        if t not in allowed:
            self.corrupt(f"bad {what} tag {t}", self.pos - 1)
        return t

    def number(self, tag: int | None = None) -> Number:
        t = self.tag(range(N_FLOAT + 1), "number") if tag is None else tag
        if t == N_INT:
            return self.sint()
        if t == N_FLOAT:
            if self.end - self.pos < 8:
                self.corrupt("unexpected end of section")
            self.pos += 8
            return _F64.unpack_from(self.data, self.pos - 8)[0]
        return t == N_TRUE

    def bound(self) -> Bound:
        return self.value() if self.tag(range(2), "bound") == B_VALUE else self.sint()

    def member(self, cls: type[enum.Enum]) -> enum.Enum:
        start = self.pos
        name = self.string()
        m = cls.__members__.get(name)
        if m is None:
            self.corrupt(f"'{name}' is not a {cls.__name__}", start)
        return m

    def arg(self, allowed: range = range(4)) -> Arg:
        t = self.tag(allowed, "operand")
        if t == A_VALUE:
            return self.value()
        if t == A_LIT:
            start = self.pos
            ty = self.index(self.types, "type")
            if not isinstance(ty, ScalarType):
                self.corrupt(f"literal of non-scalar type {ty}", start)
            return Lit(self.number(), ty)
        if t == A_MEMREF:
            base = self.value()
            return MemRef(base, tuple(self.bound() for _ in range(self.count(2, "index"))))
        return PipeLit(self.member(Pipe))  # type: ignore[arg-type]

    def attr_value(self) -> Any:
        t = self.tag(range(N_ENUM + 1), "attribute value")
        if t != N_ENUM:
            return self.number(t)
        start = self.pos
        kind = self.string()
        cls = ENUM_KINDS.get(kind)
        if cls is None:
            self.corrupt(f"unknown attribute kind '{kind}'", start)
        return self.member(cls)

    # ---------------------------------------------------------------- statements
    def body(self, depth: int) -> tuple[Stmt, ...]:
        return tuple(self.statement(depth) for _ in range(self.count(1, "statement")))

    def statement(self, depth: int) -> Stmt:
        start = self.pos
        t = self.tag(range(T_DECL, T_SUBSET + 1), "statement")
        if t in (T_FOR, T_IF) and depth >= MAX_DEPTH:
            self.corrupt(f"regions nested deeper than {MAX_DEPTH}", start)
        return self.STATEMENTS[t](self, depth)

    def tile_decl(self, depth: int) -> TileDecl:
        return TileDecl(self.value(), self.optional(self.values, "value"), self.optional(self.values, "value"))

    def set_valid(self, depth: int) -> TileDecl:
        return TileDecl(self.value(), self.optional(self.values, "value"), self.optional(self.values, "value"), True)

    def decl_addr(self, depth: int) -> TileDecl:
        v, rows, cols = self.value(), self.optional(self.values, "value"), self.optional(self.values, "value")
        return TileDecl(v, rows, cols, addr=self.value())

    def view(self, depth: int) -> View:
        start = self.pos
        op = self.string()
        if op not in VIEW_OPS:
            self.corrupt(f"unknown view op '{op}'", start)
        result, source = self.value(), self.value()
        offsets, sizes, strides = (tuple(self.bound() for _ in range(self.count(2, "bound"))) for _ in range(3))
        return View(op, result, source, offsets, sizes, strides)

    def query(self, depth: int) -> ViewQuery:
        start = self.pos
        op = self.string()
        if op not in QUERY_OPS:
            self.corrupt(f"unknown view query '{op}'", start)
        return ViewQuery(op, self.value(), self.value(), self.bound())

    def subset(self, depth: int) -> Subset:
        result, source = self.value(), self.value()
        offsets = (self.bound(), self.bound())
        return Subset(result, source, offsets, (self.uint(), self.uint()))

    def const(self, depth: int) -> Const:
        return Const(self.value(), self.number())

    def tile_op(self, depth: int) -> TileOp:
        start = self.pos
        mnemonic = self.string()
        instr = lookup_instruction(mnemonic)
        if instr is None:
            self.fail("BCODE_INSTRUCTION", f"unknown instruction '{mnemonic}'", start,
                      expected="a mnemonic listed by 'pto isa'", actual=mnemonic)
        args: dict[str, Arg] = {}
        for _ in range(self.count(2, "operand")):
            at = self.pos
            n = self.uint()
            if n >= len(instr.operands) or instr.operands[n].name in args:
                self.corrupt(f"bad or repeated operand position {n} for {instr.mnemonic}", at)
            op = instr.operands[n]
            a = self.arg()
            if not isinstance(a, ACCEPTS[op.kind]):
                self.corrupt(f"{instr.mnemonic} operand '{op.name}' ({op.kind.value}) cannot be "
                             f"{type(a).__name__}", at)
            args[op.name] = a
        attrs: dict[str, Any] = {}
        for _ in range(self.count(2, "attribute")):
            at = self.pos
            n = self.uint()
            if n >= len(instr.attrs) or instr.attrs[n].name in attrs:
                self.corrupt(f"bad or repeated attribute position {n} for {instr.mnemonic}", at)
            attrs[instr.attrs[n].name] = self.attr_value()
        return TileOp(instr, args, attrs)

    def scalar(self, depth: int) -> ScalarOp:
        start = self.pos
        op = self.string()
        spec = S.SCALAR_OPS.get(op)
        if spec is None:
            self.corrupt(f"unknown scalar op '{op}'", start)
        predicate = self.optional(self.strings, "string")
        result = self.value()
        second = self.value() if spec.cls == "extended" else None
        at = self.pos
        operands = self.values_()
        if len(operands) != spec.arity:
            self.corrupt(f"{op} takes {spec.arity} operand(s), not {len(operands)}", at)
        return ScalarOp(op, result, operands, predicate, second)

    def yield_(self, depth: int) -> Yield:
        return Yield(self.values_())

    def for_(self, depth: int) -> For:
        iv = self.value()
        lb, ub, step = self.bound(), self.bound(), self.bound()
        iter_args = self.values_()
        inits = tuple(self.arg(range(A_LIT + 1)) for _ in range(self.count(2, "init")))
        results = self.values_()
        return For(iv, lb, ub, step, self.body(depth + 1), iter_args, inits, results)  # type: ignore[arg-type]

    def if_(self, depth: int) -> If:
        cond, results = self.value(), self.values_()
        return If(cond, self.body(depth + 1), self.body(depth + 1), results)

    STATEMENTS: dict[int, Callable[["_Reader", int], Stmt]] = {
        T_DECL: tile_decl, T_CONST: const, T_OP: tile_op, T_SCALAR: scalar, T_YIELD: yield_,
        T_FOR: for_, T_IF: if_, T_SETVALID: set_valid, T_DECL_ADDR: decl_addr, T_VIEW: view, T_QUERY: query,
        T_SUBSET: subset,
    }

    # ---------------------------------------------------------------- tables
    def string_table(self) -> None:
        for _ in range(self.count(1, "string")):
            start = self.pos
            n = self.count(1, "string byte")
            try:
                self.strings.append(self.data[self.pos:self.pos + n].decode("utf-8"))
            except UnicodeDecodeError as e:
                self.corrupt(f"string is not UTF-8 ({e.reason})", start)
            self.pos += n

    def type_table(self) -> None:
        for _ in range(self.count(1, "type")):
            start = self.pos
            spelling = self.string()
            try:
                t = parse_type(spelling)
                ok = t.spell() == spelling
            except (ParseError, ValueError):
                ok = False
            if not ok:
                self.fail("BCODE_TYPE", "not a canonical type spelling", start,
                          expected="a type as the printer spells it", actual=spelling[:200])
            self.types.append(t)

    def name(self, what: str, sigil: str) -> str:
        """A string that must be a name the text form spells (``lexer.is_name``)."""
        start = self.pos
        name = self.string()
        if not is_name(name):
            self.fail("BCODE_NAME", f"{what} name {name[:80]!r} cannot be written as {sigil}name", start,
                      expected="one or more of A-Z a-z 0-9 _ $ . -", actual=repr(name[:200]))
        return name

    def value_table(self) -> None:
        for _ in range(self.count(2, "value")):
            self.values.append(Value(self.name("value", "%"), self.index(self.types, "type")))

    def kernels(self) -> tuple[Kernel, ...]:
        out: list[Kernel] = []
        for _ in range(self.count(3, "kernel")):
            start = self.pos
            name = self.name("kernel", "@")
            if any(k.name == name for k in out):
                self.fail("BCODE_NAME", f"kernel @{name} is defined twice", start, actual=name)
            params = self.values_()
            out.append(Kernel(name, params, self.body(0)))
        return tuple(out)


def load_bytes(data: bytes, filename: str | None = None) -> Module:
    """Decode bytecode; ``BytecodeError`` (a ``BCODE_*`` code and the byte offset) on any defect,
    ``BCODE_TEXT`` for a module the text form cannot hold (see ``text_form``)."""
    with collector_paused():
        module = _decode(bytes(data), filename)
    return text_form(module, filename)


def text_form(module: Module, filename: str | None = None) -> Module:
    """``module`` if its canonical text parses back to it, else ``BytecodeError`` (BCODE_TEXT)
    naming the first difference: what a file holds must be what ``pto dis`` shows."""
    text = print_module(module)
    try:
        back = parse(text)
    except PTOError as e:
        first = getattr(e, "errors", [e])[0]
        raise BytecodeError("BCODE_TEXT", f"the module has no text form: {first.code}: {first.message}",
                            location=Location(file=filename), expected="a module PTO-AS can express",
                            actual=(first.location.source_line or "").strip()[:200]) from None
    if back != module:
        raise BytecodeError("BCODE_TEXT", "the module's text reads back as another module "
                            "(a value used with another type than its definition's, or the like)",
                            location=Location(file=filename), expected="a module PTO-AS can express",
                            actual=_first_difference(module, back)[:200])
    return module


def _first_difference(module: Module, back: Module) -> str:
    """The text of the first simple statement (else the kernel) that reads back differently."""
    for k, kb in zip(module.kernels, back.kernels):
        if k != kb:
            for s, sb in zip(k.walk(), kb.walk()):
                if s != sb and not isinstance(s, (For, If)):
                    return print_statement(s)
            return f"kernel @{k.name}"
    return f"{len(module.kernels)} kernel(s), read back as {len(back.kernels)}"


def _decode(data: bytes, filename: str | None) -> Module:
    r = _Reader(data, 0, len(data), filename)
    if not data.startswith(MAGIC):
        if MAGIC.startswith(data):
            r.fail("BCODE_TRUNCATED", "file ends inside the header", len(data),
                   expected=f"{HEADER.size} header bytes", actual=len(data))
        r.fail("BCODE_MAGIC", "not a PTO bytecode file", 0, expected=repr(MAGIC),
               actual=repr(data[:len(MAGIC)]))
    if len(data) >= len(MAGIC) + 2:
        (version,) = struct.unpack_from("<H", data, len(MAGIC))
        if version != FORMAT_VERSION:
            why = ("newer than this openpto reads" if version > FORMAT_VERSION else
                   f"an older format this openpto no longer reads: {RETIRED_VERSIONS[version]}"
                   if version in RETIRED_VERSIONS else "unknown")
            r.fail("BCODE_VERSION", f"bytecode format version {version} is {why}", len(MAGIC),
                   expected=FORMAT_VERSION, actual=version)
    if len(data) < HEADER.size:
        r.fail("BCODE_TRUNCATED", "file ends inside the header", len(data),
               expected=f"{HEADER.size} header bytes", actual=len(data))
    _, _, flags, size, crc = HEADER.unpack_from(data)
    if flags:
        r.fail("BCODE_FLAGS", f"unknown flags 0x{flags:04x}", len(MAGIC) + 2, expected=0, actual=flags)
    end = HEADER.size + size
    if len(data) < end:
        r.fail("BCODE_TRUNCATED", "file ends inside the payload", len(data),
               expected=f"{end} bytes", actual=len(data))
    if len(data) > end:
        r.corrupt(f"{len(data) - end} trailing byte(s) after the payload", end)
    actual = zlib.crc32(memoryview(data)[HEADER.size:])
    if actual != crc:
        r.fail("BCODE_CHECKSUM", "payload checksum mismatch (the file is damaged)", HEADER.size,
               expected=f"0x{crc:08x}", actual=f"0x{actual:08x}")
    r.pos = HEADER.size
    readers = (r.string_table, r.type_table, r.value_table, r.kernels)
    kernels: Any = None
    for sid, (name, read) in enumerate(zip(SECTIONS, readers), start=1):
        r.end = end
        at = r.pos
        if r.u8() != sid:
            r.corrupt(f"expected the {name} section (id {sid})", at)
        length = r.count(1, f"{name} section byte")
        r.end = r.pos + length
        kernels = read()
        if r.pos != r.end:
            r.corrupt(f"{r.end - r.pos} unread byte(s) at the end of the {name} section")
    if r.pos != end:
        r.corrupt(f"{end - r.pos} trailing byte(s) after the sections")
    return Module(kernels)
