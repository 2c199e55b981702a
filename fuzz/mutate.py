"""Mutation operators for text and bytes, driven by a ``random.Random`` (deterministic)."""
from __future__ import annotations

import random

#: spellings worth splicing into PTO-AS text: grammar punctuation, keywords, types,
#: attributes, literals at the edges of their types, odd characters
FRAGMENTS = ("%a", "%x", "%c0", ",", "{", "}", "(", ")", "[", "]", ":", "=", "->", ";", "\n", "#", "//",
             "@k", "scf.for", "scf.if", "else", "scf.yield", "kernel", ".arg", ".const", ".tile",
             "iter_args", "valid_row", "!pto.tile<16x16xf32>", "!pto.tile<", "!pto.memref<?x16xf32>",
             "#pto.cmp<GT>", "#pto.pipe<V>", "0", "-1", "1.5", "1e99", "nan", "inf", "true", "index",
             "i1", "i64", "f32", "bf16", "tadd", "tload", "tstore", "ins(", "outs(", "to", "step",
             "9223372036854775807", "-9223372036854775808", "18446744073709551616", "2147483648",
             "0x7fffffff", "ü", "\t", "\r\n", "\x00", "\u2028", "\ufeff", "'", "\"")
#: characters for huge runs (parser linearity and recursion limits)
RUNS = ("  ", "\n", "9", "{", "(", "[", "<", "%a, ", "x", "-", "/")


def mutate_chars(text: str, rng: random.Random) -> str:
    """Delete, insert, replace or duplicate a short span of characters."""
    i = rng.randrange(len(text) + 1)
    op = rng.randrange(4)
    if op == 0:
        return text[:i] + text[i + rng.randint(1, 12):]
    if op == 1:
        return text[:i] + rng.choice(FRAGMENTS) + text[i:]
    if op == 2:
        return text[:i] + "".join(chr(rng.choice((rng.randrange(32, 127), rng.randrange(0, 0x3000))))
                                  for _ in range(rng.randint(1, 4))) + text[i + 1:]
    j = min(len(text), i + rng.randint(1, 40))
    return text[:j] + text[i:j] + text[j:]


def mutate_tokens(tokens: list[str], vocab: list[str], rng: random.Random) -> list[str]:
    """Delete, replace, insert or swap whole tokens."""
    toks = list(tokens) or [""]
    i = rng.randrange(len(toks))
    op = rng.randrange(4)
    if op == 0:
        del toks[i]
    elif op == 1:
        toks[i] = rng.choice(vocab)
    elif op == 2:
        toks.insert(i, rng.choice(vocab))
    else:
        j = rng.randrange(len(toks))
        toks[i], toks[j] = toks[j], toks[i]
    return toks


def mutate_lines(text: str, rng: random.Random) -> str:
    """Delete, duplicate, move or swap whole lines."""
    lines = text.split("\n")
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    op = rng.randrange(4)
    if op == 0:
        del lines[i]
    elif op == 1:
        lines.insert(j, lines[i])
    elif op == 2:
        lines.insert(j, lines.pop(i))
    else:
        lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


def splice(a: str, b: str, rng: random.Random) -> str:
    """The head of one text and the tail of another."""
    return a[:rng.randrange(len(a) + 1)] + b[rng.randrange(len(b) + 1):]


def huge_run(text: str, rng: random.Random) -> str:
    """A run of thousands of one spelling inserted somewhere."""
    i = rng.randrange(len(text) + 1)
    return text[:i] + rng.choice(RUNS) * rng.choice((1000, 5000, 20000)) + text[i:]


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    """Bit flips, random or repeated byte runs, deletions, insertions, truncation."""
    b = bytearray(data)
    op = rng.randrange(6)
    i = rng.randrange(len(b) + 1)
    if op == 0 and b:
        i = min(i, len(b) - 1)
        b[i] ^= 1 << rng.randrange(8)
    elif op == 1:
        n = rng.randint(1, 8)
        b[i:i + n] = bytes(rng.randrange(256) for _ in range(n))
    elif op == 2:
        b[i:i + rng.randint(1, 16)] = bytes([rng.choice((0x00, 0xFF, 0x7F, 0x80))]) * rng.randint(1, 16)
    elif op == 3:
        del b[i:i + rng.randint(1, 16)]
    elif op == 4:
        b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
    else:
        del b[i:]
    return bytes(b)
