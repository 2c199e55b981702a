"""``bytecode``: mutated bytecode through load, check and disassembly.

Seeds are the bytecode of every parse-campaign seed. Half the mutants are one flipped
payload bit with the header resealed (most of those decode far enough to reach the type,
name and instruction checks); the others get bit flips, byte runs,
deletions, insertions, truncation and header-field edits (version, flags, payload length);
most then get their payload length and CRC-32 recomputed so the mutation reaches the
decoder instead of stopping at the checksum. Whatever loads must disassemble and parse
back to the same module (``parse(dis(x)) == load(x)``) and re-encode to bytes that load
to it again; then it goes through ``check``.
"""
from __future__ import annotations

import functools
import random
import struct
import zlib

from ...assembler import parse
from ...assembler.bytecode import HEADER, load_bytes
from ...assembler.verifier import verify
from ...isa.diagnostics import PTOError
from .. import mutate
from ..corpus import seeds
from ..harness import Campaign, Input
from ..outcome import Verdict

EDGES = (0, 1, 0x7F, 0x80, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF)


@functools.lru_cache(maxsize=None)
def seed_blobs() -> tuple[bytes, ...]:
    out = []
    for text in seeds():
        try:
            out.append(parse(text).to_bytes())
        except PTOError:
            continue
    return tuple(out)


def _header_edit(data: bytearray, rng: random.Random) -> None:
    """Set version, flags or payload length to an edge value."""
    if len(data) < HEADER.size:
        return
    field = rng.choice(((6, "<H"), (8, "<H"), (10, "<I")))
    size = struct.calcsize(field[1])
    value = rng.choice(EDGES) & ((1 << (8 * size)) - 1)
    data[field[0]:field[0] + size] = struct.pack(field[1], value)


def _reseal(data: bytearray, rng: random.Random) -> None:
    """Recompute the CRC (and mostly the length) so the payload reaches the decoder."""
    if len(data) < HEADER.size:
        return
    payload = bytes(data[HEADER.size:])
    if rng.random() < 0.9:
        data[10:14] = struct.pack("<I", len(payload))
    data[14:18] = struct.pack("<I", zlib.crc32(payload))


def mutated_blob(rng: random.Random) -> bytes:
    data = bytearray(rng.choice(seed_blobs()))
    if rng.random() < 0.5 and len(data) > HEADER.size:     # one bit of the payload, resealed:
        i = rng.randrange(HEADER.size, len(data))           # reaches the decoder's deeper checks
        data[i] ^= 1 << rng.randrange(8)
        _reseal(data, rng)
        return bytes(data)
    for _ in range(rng.randint(1, 3)):
        data = bytearray(mutate.mutate_bytes(bytes(data), rng))
    if rng.random() < 0.15:
        _header_edit(data, rng)
    if rng.random() < 0.8:
        _reseal(data, rng)
    return bytes(data)


class BytecodeCampaign(Campaign):
    name = "bytecode"
    timeout = 10.0

    def make(self, seed: int, index: int) -> Input:
        return Input(index, mutated_blob(random.Random(f"bytecode:{seed}:{index}")), seed=seed)

    def execute(self, inp: Input) -> Verdict | None:
        try:
            m = load_bytes(inp.payload, "fuzz.ptobc")
        except PTOError as e:
            e.render()
            raise
        text = m.to_text()
        if parse(text, filename="dis.pto") != m:
            return Verdict("mismatch", detail="parse(dis(x)) != load(x)")
        if load_bytes(m.to_bytes()) != m:
            return Verdict("mismatch", detail="load(dump(load(x))) != load(x)")
        verify(m, "cpu")
        return None

    def reproduce(self, inp: Input) -> dict[str, str | bytes]:
        return {".ptobc": inp.payload,
                ".py": ("import sys\nimport openpto as pto\n"
                        "m = pto.load(sys.argv[1])   # the .ptobc next to this file\n"
                        "assert pto.parse(m.to_text()) == m\npto.check(m, profile='cpu')\n")}
