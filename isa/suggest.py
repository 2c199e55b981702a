"""Did-you-mean suggestions for unknown names, in one place so every unknown-name diagnostic
(mnemonics, attributes, enum members, types, directives, operands) suggests the same way.

Names are compared case-insensitively with the public dialect prefixes (``pto.``, and
``arith.``/``scf.`` for scalar ops and control flow) stripped, by ``difflib`` closeness;
a suggestion is shown in the candidate's own spelling, and none when nothing is close.
"""
from __future__ import annotations

import difflib
from typing import Iterable

_PREFIXES = ("pto.", "arith.", "scf.")
_CUTOFF = 0.6          # difflib's ratio below which a candidate is not "close"
_SPREAD = 0.1          # keep only candidates about as close as the best one
_MAX_NAME = 64         # longer names are not typos of a short keyword: no search


def _key(name: str) -> str:
    n = name.strip().lower()
    for p in _PREFIXES:
        if n.startswith(p):
            return n[len(p):]
    return n


def nearest(name: str, candidates: Iterable[str], limit: int = 3) -> list[str]:
    """The candidates closest to ``name`` (best first, at most ``limit``), or [] if none is close."""
    if not isinstance(name, str) or not name or len(name) > _MAX_NAME:
        return []
    by_key: dict[str, str] = {}
    for c in candidates:
        by_key.setdefault(_key(str(c)), str(c))
    key = _key(name)
    if not key:
        return []
    scored = []
    for k, spelling in by_key.items():
        m = difflib.SequenceMatcher(None, key, k)
        if m.real_quick_ratio() >= _CUTOFF and m.quick_ratio() >= _CUTOFF:
            r = m.ratio()
            if r >= _CUTOFF:
                scored.append((-r, spelling))
    scored.sort()
    if not scored:
        return []
    best = -scored[0][0]
    return [s for r, s in scored if -r >= best - _SPREAD][:limit]


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """``", did you mean tmuls?"`` (or ``"..., did you mean a, b or c?"``) to append to an
    unknown-name message; ``""`` when no candidate is close."""
    found = nearest(name, candidates)
    if not found:
        return ""
    words = found[0] if len(found) == 1 else ", ".join(found[:-1]) + " or " + found[-1]
    return f", did you mean {words}?"
