"""Checking one instruction's declaration against operand types, without a program: the codes
the verifier's structure checks give, or, when there are none, its legality checks for a profile."""
from __future__ import annotations

from typing import Any

from openpto import isa
from openpto.isa import checks, profiles
from openpto.isa.types import parse_type


def decl_codes(mnemonic: str, types: dict[str, str], attrs: dict[str, Any] | None = None,
               profile: str = "cpu") -> list[str]:
    """The codes of checking ``mnemonic`` with the operand types ``types`` (spellings) and
    ``attrs``: structure errors first; legality for ``profile`` only when the structure holds."""
    instr, parsed, attrs = isa.get(mnemonic), {k: parse_type(v) for k, v in types.items()}, attrs or {}
    errs = checks.check_structure(instr, parsed, attrs)
    return [e.code for e in errs] or [e.code for e in checks.check_legality(instr, parsed, attrs,
                                                                            profiles.get(profile))]
