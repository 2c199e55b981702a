"""PTO bytecode: text -> IR -> bytes -> IR -> text is exact for every instruction's example,
control flow and generated programs; the layout is pinned against a hand-assembled file; every
malformed file (bad header, truncation, damage, corrupted but checksummed payloads, random
bytes) raises ``BytecodeError`` with a BCODE_* code, and quickly."""
from __future__ import annotations

import itertools
import math
import re
import struct
import zlib

import pytest
from hypothesis import given, settings, strategies as st

import openpto.assembler as asm
from openpto.assembler.bytecode import FORMAT_VERSION
from openpto.assembler import ir
from openpto.assembler.codes import CODES
from openpto.isa import BytecodeError, PTOError, all_instructions, get
from openpto.isa.types import INDEX, ScalarType, parse_type
from test_assembler_fuzz import mutated
from test_assembler_parse import PUBLIC, program
from test_assembler_roundtrip import HEADER, SOFTMAX_LIKE, programs
from work_support import call_budget

F32 = ScalarType("f32")
T16 = parse_type("!pto.tile<16x16xf32>")


def bytes_round_trip(m: ir.Module) -> ir.Module:
    data = asm.dump(m)
    back = asm.load_bytes(data)
    assert back == m
    assert back.to_text() == m.to_text()
    assert asm.dump(back) == data          # canonical: equal modules, equal bytes
    return back


def text_round_trip(text: str) -> ir.Module:
    m = asm.parse(text)
    back = bytes_round_trip(m)
    assert back.to_bytes() == m.to_bytes()
    return back


# ============================================================================ round trips

@pytest.mark.parametrize("instr", all_instructions(), ids=lambda i: i.mnemonic)
def test_every_instruction_example_round_trips(instr) -> None:  # noqa: ANN001
    back = text_round_trip(program(instr))
    assert [s.instr for s in back.kernel().body if isinstance(s, ir.TileOp)] == [instr]


def test_control_flow_program_round_trips_and_verifies() -> None:
    back = text_round_trip(SOFTMAX_LIKE)
    asm.verify(back, "cpu")


def test_public_form_and_locations_do_not_change_the_bytes() -> None:
    m = text_round_trip(PUBLIC)
    assert all(s.loc is None for k in m.kernels for s in k.walk())       # locations are not stored
    assert asm.parse(asm.parse(PUBLIC).to_text()).to_bytes() == asm.parse(PUBLIC).to_bytes()


def _fill(body: str) -> str:
    """Number the '$' suffixes of a generated program; '^' repeats the last one."""
    counter, last = itertools.count(), [0]

    def fill(m: re.Match) -> str:
        if m.group() == "$":
            last[0] = next(counter)
        return str(last[0])
    return re.sub(r"[$^]", fill, body)


@given(programs())
def test_generated_programs_round_trip(body: str) -> None:
    text = HEADER + "\n" + _fill(body) + "\n"
    back = text_round_trip(text)
    assert asm.parse(back.to_text()) == asm.parse(text)


@settings(max_examples=150)
@given(mutated())
def test_every_parsable_module_round_trips(text: str) -> None:
    """Mutated programs that still parse (verifying or not: wrong attribute kinds, odd
    literals) keep their exact IR and text through bytecode."""
    try:
        m = asm.parse(text)
    except PTOError:
        return
    bytes_round_trip(m)


def test_number_kinds_and_special_floats_are_exact() -> None:
    """Constants of each kind at their type's extremes, and integers far beyond any type as
    attribute values (which the text form takes too), come back bit-exact."""
    typed = [(True, "i1"), (False, "i1"), (0, "index"), (1, "i8"), (-1, "i32"), (2**63 - 1, "i64"),
             (-2**63, "i64"), (2**64 - 1, "u64"), (0.0, "f32"), (-0.0, "f16"), (1.5, "bf16"), (1e-310, "f32"),
             (math.inf, "f32"), (-math.inf, "f32"), (math.nan, "f32"), (5e-324, "f32"),
             (1.7976931348623157e308, "f32")]
    values = [v for v, _ in typed] + [2**200, -2**247, 2**248 - 1]
    body = tuple(ir.Const(ir.Value(f"c{n}", ScalarType(t)), v) for n, (v, t) in enumerate(typed))
    body += tuple(ir.TileOp(get("TCMP"), {"dst": ir.Value(f"m{n}", parse_type("!pto.tile<16x16xi1>")),
                                          "src0": ir.Value("x", T16), "src1": ir.Value("x", T16)},
                            {"cmpMode": v}) for n, v in enumerate(values[len(typed):]))
    m = ir.Module((ir.Kernel("k", (ir.Value("x", T16),), body),))
    back = bytes_round_trip(m)
    got = [s.value if isinstance(s, ir.Const) else s.attrs["cmpMode"] for s in back.kernel().body]
    assert [type(v) for v in got] == [type(v) for v in values]
    for g, v in zip(got, values):
        assert struct.pack("<d", g) == struct.pack("<d", v) if isinstance(v, float) else g == v
    raw = bytes.fromhex("0100000000f8ff7f")                     # a quiet NaN with payload 1
    lit = ir.Lit(struct.unpack("<d", raw)[0], F32)
    x = ir.Value("x", T16)
    m = ir.Module((ir.Kernel("k", (x,), (ir.TileOp(get("TADDS"), {"dst": x, "src": x, "scalar": lit}),)),))
    assert struct.pack("<d", asm.load_bytes(asm.dump(m)).kernel().body[0].args["scalar"].value) == raw


def test_attribute_values_keep_their_python_kind() -> None:
    """The parser takes any attribute kind or number (the verifier judges it); bytecode keeps
    each as it is: an enum of another kind, bool vs int vs float, a 248-bit integer."""
    sig = " : (!pto.tile<16x16xf32>, !pto.tile<16x16xf32>) -> !pto.tile<16x16xi1>"
    spelled = ["#pto.round<RINT>", "true", "1", "-0.0", "0x" + "f" * 62]
    text = ".arg %a : !pto.tile<16x16xf32>\n.arg %b : !pto.tile<16x16xf32>\n" + "".join(
        f"%m{n} = tcmp %a, %b {{cmpMode = {v}}}{sig}\n" for n, v in enumerate(spelled))
    back = text_round_trip(text)
    got = [s.attrs["cmpMode"] for s in back.kernel().body if isinstance(s, ir.TileOp)]
    assert [type(v).__name__ for v in got] == ["RoundMode", "bool", "int", "float", "int"]
    assert got[-1] == 2**248 - 1 and math.copysign(1.0, got[3]) == -1.0


def _nested(depth: int) -> ir.Module:
    c = ir.Value("c", ScalarType("i1"))
    body: tuple = ()
    for _ in range(depth):
        body = (ir.If(c, body),)
    return ir.Module((ir.Kernel("k", (c,), body),))


def test_nesting_limit_is_the_parsers() -> None:
    from openpto.assembler.parser import MAX_DEPTH
    bytes_round_trip(_nested(MAX_DEPTH))
    with pytest.raises(BytecodeError) as e:
        asm.dump(_nested(MAX_DEPTH + 1))
    assert e.value.code == "BCODE_ENCODE"


def test_unencodable_modules_are_refused() -> None:
    bad = [ir.Module((ir.Kernel("k", (ir.Value("x", ScalarType("f128")),), ()),)),     # no such type
           ir.Module((ir.Kernel("k", (), (ir.ScalarOp("nop", ir.Value("r", INDEX)),)),)),
           ir.Module((ir.Kernel("k", (), (ir.TileOp(get("TEXP"), {"bogus": ir.Value("x", T16)}),)),)),
           ir.Module((ir.Kernel("k", (), (ir.Const(ir.Value("c", INDEX), 1 << 5000),)),))]
    for m in bad:
        with pytest.raises(BytecodeError) as e:
            asm.dump(m)
        assert e.value.code == "BCODE_ENCODE"


# ============================================================================ the layout

def uv(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def strs(*ss: str) -> bytes:
    return uv(len(ss)) + b"".join(uv(len(s.encode())) + s.encode() for s in ss)


def payload(strings: bytes, types: bytes, values: bytes, kernels: bytes) -> bytes:
    return b"".join(bytes([sid]) + uv(len(body)) + body
                    for sid, body in enumerate((strings, types, values, kernels), start=1))


def wrap(body: bytes, version: int = FORMAT_VERSION, flags: int = 0) -> bytes:
    return b"PTOBC\0" + struct.pack("<HHII", version, flags, len(body), zlib.crc32(body)) + body


def kernel_file(statements: bytes, *extra: str) -> bytes:
    """One kernel @k(%c : i1, %x : tile) with one hand-encoded statement; ``extra`` strings
    follow the five the tables use, so the first of them has string index 5."""
    strings = strs("k", "c", "i1", "x", "!pto.tile<16x16xf32>", *extra)
    types = b"\x02\x02\x04"                 # i1, the tile
    values = b"\x02\x01\x00\x03\x01"         # %c : i1, %x : tile
    return wrap(payload(strings, types, values, b"\x01\x00\x02\x00\x01\x01" + statements))


def test_layout_matches_a_hand_assembled_file() -> None:
    m = asm.parse("kernel @k(%n : index) {\n  .const %c = -1 : index\n}\n")
    expected = wrap(payload(strs("k", "n", "index", "c"),          # first use order
                            b"\x01\x02",                             # 1 type: spelling "index"
                            b"\x02\x01\x00\x03\x00",                 # %n : index, %c : index
                            b"\x01\x00\x01\x00\x01\x02\x01\x02\x01"))  # kernel k(%n) { const %c int -1 }
    assert m.to_bytes() == expected
    assert asm.load_bytes(expected) == m
    with pytest.raises(BytecodeError) as e:      # no kernels: text reads as one empty @main
        asm.load_bytes(wrap(payload(b"\x00", b"\x00", b"\x00", b"\x00")))
    assert e.value.code == "BCODE_TEXT" and e.value.actual == "0 kernel(s), read back as 1"


def test_hand_assembled_statements_load() -> None:
    src = uv(get("TEXP").operands.index(get("TEXP").operand("src")))
    dst = uv(get("TEXP").operands.index(get("TEXP").operand("dst")))
    m = asm.load_bytes(kernel_file(b"\x03\x05\x02" + dst + b"\x00\x01" + src + b"\x00\x01" + b"\x00", "TEXP"))
    assert m.to_text().splitlines()[1].strip() == \
        "%x = texp %x : (!pto.tile<16x16xf32>) -> !pto.tile<16x16xf32>"
    xs = b"\x03" + b"".join(bytes([n, 0, 1]) for n in range(3))       # dst, src0, src1 = %x
    cmp = asm.load_bytes(kernel_file(b"\x03\x05" + xs + b"\x01\x00\x04\x06\x07", "TCMP", "cmp", "GT"))
    assert cmp.kernel().body[0].attrs == {"cmpMode": get("TCMP").attr("cmpMode").type.GT}


# ============================================================================ errors

SMALL = asm.parse("kernel @k(%a : !pto.tile<16x16xf32>, %n : index) {\n"
                  "  scf.for %i = 0 to %n step 1 {\n    %a = texp %a\n  }\n}\n").to_bytes()
BIG = asm.parse(SOFTMAX_LIKE).to_bytes()


#: calls loading and checking one file may make: about 100 times what the big module takes,
#: so only a hang or a runaway path in the loader exceeds it (counted, not timed).
BUDGET = 2_000_000


def code_of(data: bytes, filename: str | None = None) -> str:
    with call_budget(BUDGET, "loading and checking one file"):
        return _code_of(data, filename)


def _code_of(data: bytes, filename: str | None) -> str:
    try:
        m = asm.load_bytes(data, filename)
    except BytecodeError as e:
        assert e.code in CODES, e.code
        assert e.render()
        assert e.location.file == filename
        code = e.code
    else:
        assert asm.parse(m.to_text()) == m            # whatever loads is what its text says
        for profile in (None, "cpu"):
            asm.diagnose(m, profile)
        code = "OK"
    return code


def test_header_errors() -> None:
    assert code_of(b"PTOBD\0" + SMALL[6:]) == "BCODE_MAGIC"
    assert code_of(b"#!/bin/sh\n") == "BCODE_MAGIC"
    assert code_of(b"PTOBC\0" + b"\x03\x00" + SMALL[8:]) == "BCODE_VERSION"
    assert code_of(b"PTOBC\0" + b"\x01\x00" + SMALL[8:]) == "BCODE_VERSION"
    assert code_of(b"PTOBC\0" + b"\x00\x00" + SMALL[8:]) == "BCODE_VERSION"
    assert code_of(b"PTOBC\0\x02\x00\x01\x00" + SMALL[10:]) == "BCODE_FLAGS"
    assert code_of(SMALL + b"\0") == "BCODE_CORRUPT"


def test_version_error_says_expected_and_actual() -> None:
    with pytest.raises(BytecodeError) as e:
        asm.load_bytes(wrap(payload(b"\x00", b"\x00", b"\x00", b"\x00"), version=3), "k.ptobc")
    assert (e.value.expected, e.value.actual) == (2, 3)
    assert e.value.location.file == "k.ptobc"
    assert e.value.render() == ("k.ptobc: BCODE_VERSION: bytecode format version 3 is newer than this openpto reads "
                                "(byte 6)\n  expected: 2\n  actual:   3")


def test_every_truncation_is_reported() -> None:
    assert {code_of(SMALL[:n]) for n in range(len(SMALL))} == {"BCODE_TRUNCATED"}


def test_every_flipped_payload_bit_fails_the_checksum() -> None:
    for i in range(18, len(BIG)):
        for bit in (0x01, 0x80):
            damaged = bytearray(BIG)
            damaged[i] ^= bit
            assert code_of(bytes(damaged)) == "BCODE_CHECKSUM", i


def test_flipped_header_bytes_name_the_field() -> None:
    size = len(SMALL) - 18
    for i in range(18):
        damaged = bytearray(SMALL)
        damaged[i] ^= 0x10
        longer = struct.unpack_from("<I", damaged, 10)[0] > size
        want = ("BCODE_MAGIC" if i < 6 else "BCODE_VERSION" if i < 8 else "BCODE_FLAGS" if i < 10
                else ("BCODE_TRUNCATED" if longer else "BCODE_CORRUPT") if i < 14 else "BCODE_CHECKSUM")
        assert code_of(bytes(damaged)) == want, i


def types_file(*spellings: str) -> bytes:
    return wrap(payload(strs(*spellings), uv(len(spellings)) + bytes(range(len(spellings))), b"\x00", b"\x00"))


EMPTY = (b"\x00", b"\x00", b"\x00", b"\x00")
CORRUPTED = [   # (code, what the message says, a file with a correct checksum)
    ("BCODE_INSTRUCTION", "unknown instruction 'TNOPE'", kernel_file(b"\x03\x05\x00\x00", "TNOPE")),
    ("BCODE_TYPE", "not a canonical type spelling", types_file("index2")),
    ("BCODE_TYPE", "not a canonical type spelling", types_file("!pto.tile<16x16xf32, loc=vec>")),
    ("BCODE_TYPE", "not a canonical type spelling", types_file("!pto.tile<" + "9" * 5000 + "x1xf32>")),
    ("BCODE_TYPE", "not a canonical type spelling", types_file("!pto.tile<\u0661\u0666x1xf32>")),
    ("BCODE_CORRUPT", "string is not UTF-8", wrap(payload(b"\x01\x02\xff\xfe", *EMPTY[1:]))),
    ("BCODE_CORRUPT", "string count 5 exceeds", wrap(payload(b"\x05\x00", *EMPTY[1:]))),
    ("BCODE_CORRUPT", "1 unread byte(s) at the end of the kernels", wrap(payload(*EMPTY[:3], b"\x00\x00"))),
    ("BCODE_CORRUPT", "trailing byte(s) after the sections", wrap(payload(*EMPTY) + b"\x05\x00")),
    ("BCODE_CORRUPT", "expected the strings section", wrap(payload(*EMPTY)[3:])),
    ("BCODE_CORRUPT", "string index 0 out of range", wrap(payload(b"\x00", b"\x00", b"\x01\x00\x00", b"\x00"))),
    ("BCODE_CORRUPT", "integer longer than 10 bytes", wrap(payload(*EMPTY[:3], b"\x01" + b"\xff" * 11))),
    ("BCODE_CORRUPT", "bad statement tag 13", kernel_file(b"\x0d")),   # 9-12: alloc addr, views, subset
    ("BCODE_CORRUPT", "value index 7 out of range", kernel_file(b"\x05\x01\x07")),
    ("BCODE_CORRUPT", "integer longer than 586 bytes", kernel_file(b"\x02\x00\x02" + b"\xff" * 700 + b"\x00")),
    ("BCODE_CORRUPT", "nested deeper than 64",
     kernel_file(b"\x07\x00\x00\x01" * 64 + b"\x07\x00\x00\x00" + b"\x00" * 65)),
    ("BCODE_CORRUPT", "unknown scalar op 'frobnicate'", kernel_file(b"\x04\x05\x00\x00\x00", "frobnicate")),
    ("BCODE_CORRUPT", "addi takes 2 operand(s), not 0", kernel_file(b"\x04\x05\x00\x00\x00", "addi")),
    ("BCODE_CORRUPT", "operand position 9", kernel_file(b"\x03\x05\x01\x09\x00\x01\x00", "TEXP")),
    ("BCODE_CORRUPT", "operand position 0", kernel_file(b"\x03\x05\x02\x00\x00\x01\x00\x00\x01\x00", "TEXP")),
    ("BCODE_CORRUPT", "'dst' (tile) cannot be PipeLit", kernel_file(b"\x03\x05\x01\x00\x03\x06\x00", "TEXP", "V")),
    ("BCODE_CORRUPT", "'dst' (tile) cannot be MemRef", kernel_file(b"\x03\x05\x01\x00\x02\x01\x00\x00", "TEXP")),
    ("BCODE_CORRUPT", "'XX' is not a CmpMode", kernel_file(b"\x03\x05\x00\x01\x00\x04\x06\x07", "TCMP", "cmp", "XX")),
    ("BCODE_CORRUPT", "unknown attribute kind 'colour'",
     kernel_file(b"\x03\x05\x00\x01\x00\x04\x06\x07", "TCMP", "colour", "GT")),
    ("BCODE_CORRUPT", "attribute position 3", kernel_file(b"\x03\x05\x00\x01\x03\x04\x06\x07", "TCMP", "cmp", "GT")),
    ("BCODE_CORRUPT", "bad attribute value tag 5", kernel_file(b"\x03\x05\x00\x01\x00\x05", "TCMP")),
    ("BCODE_CORRUPT", "literal of non-scalar type",     # for %c = 0 to 2 step 2 iter_args(%c = <lit : tile>)
     kernel_file(b"\x06\x00\x01\x00\x01\x02\x01\x02\x01\x00\x01\x01\x01\x02\x00\x00\x00")),
]


@pytest.mark.parametrize("code, message, data", CORRUPTED, ids=[m for _, m, _ in CORRUPTED])
def test_checksummed_corruption_is_still_caught(code: str, message: str, data: bytes) -> None:
    with pytest.raises(BytecodeError) as e:
        asm.load_bytes(data)
    assert (e.value.code, message in e.value.message) == (code, True), e.value.message


@st.composite
def damaged(draw) -> bytes:  # noqa: ANN001
    """A valid file whose payload is edited (bytes flipped, set, inserted or deleted) and
    then given a correct length and checksum, so the decoder itself must catch it."""
    body = bytearray(draw(st.sampled_from([SMALL, BIG]))[18:])
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(body) - 1))
        op = draw(st.sampled_from(["flip", "set", "insert", "delete"]))
        if op == "flip":
            body[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "set":
            body[i] = draw(st.sampled_from([0, 1, 2, 3, 0x7F, 0x80, 0xFF]))
        elif op == "insert":
            body[i:i] = draw(st.binary(min_size=1, max_size=4))
        else:
            del body[i:i + draw(st.integers(1, 4))]
    return wrap(bytes(body))


@settings(max_examples=300)
@given(damaged())
def test_damaged_but_checksummed_files_raise_only_bytecode_errors(data: bytes) -> None:
    code_of(data, "fuzz.ptobc")


def _sections(data: bytes) -> list[bytes]:
    """The four section bodies of a well-formed file."""
    out, pos = [], 18
    for _ in range(4):
        pos += 1
        n = shift = 0
        while True:
            b = data[pos]
            pos += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        out.append(data[pos:pos + n])
        pos += n
    return out


def _strings(body: bytes) -> list[str]:
    pos, out = 0, []
    count = body[pos]
    pos += 1
    for _ in range(count):
        n = body[pos]
        pos += 1
        out.append(body[pos:pos + n].decode())
        pos += n
    return out


NAMES = ["", " ", "a b", "\u00fc", "a%b", "@k", "#x", "a\nb", "x,y", "{", "1.5", "nan", "-", "$", "k",
         "main", "x", "n", "a", "i", "TEXP", "addi", "index", "i1", "f32", "!pto.tile<16x16xf32>", "GT"]


@st.composite
def renamed(draw) -> bytes:  # noqa: ANN001
    """A valid file whose string table (names, mnemonics, type spellings, enum members) has
    entries replaced by odd or colliding strings, then re-checksummed: every name class the
    text form cannot write, duplicate names, names that collide with another value's."""
    data = draw(st.sampled_from([SMALL, BIG]))
    strings, *rest = _sections(data)
    table = _strings(strings)
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(table) - 1))
        table[i] = draw(st.one_of(st.sampled_from(NAMES + table), st.text(max_size=4)))
    return wrap(payload(strs(*table), *rest))


@settings(max_examples=300)
@given(renamed())
def test_renamed_files_load_only_as_what_their_text_says(data: bytes) -> None:
    """Every file that loads prints as text that parses back to the same module."""
    code_of(data, "fuzz.ptobc")


@pytest.mark.parametrize("name, code", [("", "BCODE_NAME"), ("a b", "BCODE_NAME"), ("\u00fc", "BCODE_NAME"),
                                        ("a%b", "BCODE_NAME"), ("x.1-$", "OK")])
def test_value_and_kernel_names_must_be_writable(name: str, code: str) -> None:
    strings, *rest = _sections(SMALL)
    table = _strings(strings)
    for old in ("a", "k"):                     # the tile value, then the kernel
        renamed = [name if s == old else s for s in table]
        assert code_of(wrap(payload(strs(*renamed), *rest))) == code, (old, name)


def test_a_kernel_defined_twice_is_refused() -> None:
    two = asm.parse("kernel @k() {\n}\nkernel @j() {\n}\n").to_bytes()
    strings, *rest = _sections(two)
    with pytest.raises(BytecodeError) as e:
        asm.load_bytes(wrap(payload(strs(*["k" if s == "j" else s for s in _strings(strings)]), *rest)))
    assert e.value.code == "BCODE_NAME" and "defined twice" in e.value.message


@pytest.mark.parametrize("text, actual", [
    # a use with another type than its definition's: the text would read back the definition's type
    ("kernel @k(%a : !pto.tile<16x16xf32>, %n : index) {\n  %a = texp %a\n}\n", "%a = texp %a"),
])
def test_modules_without_a_text_form_are_refused(text: str, actual: str) -> None:
    m = asm.parse(text)
    k = m.kernel()
    op = k.body[0]
    wrong = ir.Value("a", parse_type("!pto.tile<16x16xf16>"))
    bad = ir.Module((ir.Kernel(k.name, k.params, (ir.TileOp(op.instr, {"dst": op.args["dst"], "src": wrong}),)),))
    with pytest.raises(BytecodeError) as e:
        asm.load_bytes(asm.dump(bad), "k.ptobc")
    assert e.value.code == "BCODE_TEXT" and e.value.location.file == "k.ptobc"
    assert e.value.actual.startswith(actual), e.value.actual
    undefined = ir.Module((ir.Kernel("k", (), (ir.TileOp(op.instr, dict(op.args)),)),))
    with pytest.raises(BytecodeError) as e:
        asm.load_bytes(asm.dump(undefined))
    assert e.value.code == "BCODE_TEXT" and "STRUCT_UNDEFINED" in e.value.message


def test_dump_refuses_unwritable_names() -> None:
    for m in (ir.Module((ir.Kernel("a b", (), ()),)),
              ir.Module((ir.Kernel("k", (ir.Value("", INDEX),), ()),))):
        with pytest.raises(BytecodeError) as e:
            asm.dump(m)
        assert e.value.code == "BCODE_ENCODE"


@settings(max_examples=100)
@given(st.binary(max_size=64))
def test_random_bytes_raise_only_bytecode_errors(data: bytes) -> None:
    code_of(data)


@settings(max_examples=100)
@given(st.binary(max_size=64))
def test_random_payloads_raise_only_bytecode_errors(data: bytes) -> None:
    code_of(wrap(data))
