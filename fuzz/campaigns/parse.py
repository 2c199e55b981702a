"""``parse``: mutated PTO-AS text through parse, print/reparse and check.

Each input is a seed (examples, benchmark kernels, every instruction's example) with one
to four character-, token- or line-level mutations, a splice of two seeds, or a huge run
of one spelling. Whatever parses must print and parse back to the same module
(``parse(print(m)) == m``, else a ``mismatch``) and then go through ``check``.
"""
from __future__ import annotations

import functools
import random

from ...assembler import parse
from ...assembler.lexer import EOF, tokenize
from ...assembler.verifier import verify
from ...isa.diagnostics import PTOError
from .. import mutate
from ..corpus import seeds
from ..harness import Campaign, Input
from ..outcome import Verdict

PROFILES = (None, "cpu", "a2", "a3", "a5")


@functools.lru_cache(maxsize=None)
def _tokens() -> tuple[tuple[tuple[str, ...], ...], tuple[str, ...]]:
    """Each seed's tokens (newlines kept) and the vocabulary of all of them."""
    per_seed = tuple(tuple(t.text for t in tokenize(s) if t.kind != EOF) for s in seeds())
    vocab = sorted({t for toks in per_seed for t in toks} | set(mutate.FRAGMENTS))
    return per_seed, tuple(vocab)


def mutated_text(rng: random.Random) -> str:
    """One mutant of a random seed."""
    corpus = seeds()
    k = rng.randrange(len(corpus))
    text = corpus[k]
    how = rng.random()
    if how < 0.2:
        toks, vocab = _tokens()
        out = list(toks[k])
        for _ in range(rng.randint(1, 3)):
            out = mutate.mutate_tokens(out, list(vocab), rng)
        return "".join(t if t == "\n" else t + " " for t in out)
    if how < 0.3:
        text = mutate.splice(text, rng.choice(corpus), rng)
    elif how < 0.35:
        return mutate.huge_run(text, rng)
    for _ in range(rng.randint(1, 4)):
        text = mutate.mutate_lines(text, rng) if rng.random() < 0.25 else mutate.mutate_chars(text, rng)
    return text


class ParseCampaign(Campaign):
    name = "parse"
    timeout = 10.0

    def make(self, seed: int, index: int) -> Input:
        rng = random.Random(f"parse:{seed}:{index}")
        return Input(index, mutated_text(rng), label=str(PROFILES[index % len(PROFILES)]), seed=seed)

    def execute(self, inp: Input) -> Verdict | None:
        try:
            m = parse(inp.payload, filename="fuzz.pto")
        except PTOError as e:
            e.render()               # a diagnostic must render without raising
            raise
        printed = m.to_text()
        again = parse(printed, filename="printed.pto")
        if again != m:
            return Verdict("mismatch", detail="parse(print(m)) != m")
        verify(m, None if inp.label == "None" else inp.label)
        return None

    def reproduce(self, inp: Input) -> dict[str, str | bytes]:
        return {".pto": inp.payload,
                ".py": ("import sys\nimport openpto as pto\n"
                        f"text = open(sys.argv[1] if len(sys.argv) > 1 else {'REPRO.pto'!r}).read()\n"
                        "m = pto.parse(text, filename='fuzz.pto')\n"
                        "assert pto.parse(m.to_text()) == m\n"
                        f"pto.check(m, profile={None if inp.label == 'None' else inp.label!r})\n")}
