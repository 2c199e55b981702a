"""docs/diagnostics.md lists every diagnostic code a user can see, with its meaning.

The codes are collected from the package source, not from a hand-kept list: every string
literal spelled like a code (``PARSE_*``, ``STRUCT_*``, ``LEGAL_*``, ``ORDER_*``, ``BCODE_*``,
``RUNTIME_*``, ``SPEC_*``, ``FRONT_*``, ``PTO_*``) outside ``__all__``, so a code added anywhere, passed
to a ``PTOError`` subclass directly or through a helper or table, must be documented.
"""
from __future__ import annotations

import ast
import pathlib
import re

from openpto.assembler.codes import CODES
from openpto.backends.arguments import ARG_CODES
from openpto.frontend.codes import FRONT_CODES

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "diagnostics.md"
CODE = re.compile(r"(PARSE|STRUCT|LEGAL|ORDER|BCODE|RUNTIME|SPEC|FRONT|PTO)_[A-Z0-9_]+")
NOT_PACKAGE = {"tests", "benchmarks", "examples", "docs", "build"}


def _exported(tree: ast.AST) -> set[int]:
    """ids of the nodes inside ``__all__ = [...]`` (names, not codes: SPEC_VERSION)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            out |= {id(n) for n in ast.walk(node.value)}
    return out


def source_codes() -> dict[str, str]:
    """Every code string in the package source -> one place it occurs."""
    found: dict[str, str] = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if rel.parts[0] in NOT_PACKAGE or rel.parts[0].startswith("."):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _exported(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str) and CODE.fullmatch(node.value)
                    and id(node) not in skip):
                found.setdefault(node.value, f"{rel}:{node.lineno}")
    return found


def documented() -> dict[str, str]:
    rows = re.findall(r"^\| `([A-Z0-9_]+)` \| [^|]+ \| (.+) \|$", DOC.read_text(encoding="utf-8"), re.M)
    return dict(rows)


def test_the_scan_finds_codes_of_every_class_and_ignores_exported_names() -> None:
    codes = source_codes()
    assert {c.split("_")[0] for c in codes} == {"PARSE", "STRUCT", "LEGAL", "ORDER", "BCODE", "RUNTIME",
                                                "SPEC", "FRONT", "PTO"}
    assert {"RUNTIME_OOB", "PTO_ARG", "STRUCT_SHAPE", "RUNTIME_ARG_COUNT"} <= codes.keys()   # via helpers
    assert "SPEC_VERSION" not in codes                      # a constant's name in isa.__all__


def test_every_code_in_the_source_is_documented() -> None:
    missing = {c: where for c, where in source_codes().items() if c not in documented()}
    assert not missing, f"add these to docs/diagnostics.md with their meaning: {missing}"


def test_every_documented_code_exists() -> None:
    stale = sorted(documented().keys() - source_codes().keys())
    assert not stale, f"docs/diagnostics.md lists codes nothing raises: {stale}"


def test_meanings_agree_with_the_code_tables() -> None:
    docs = documented()
    for table in (CODES, ARG_CODES, FRONT_CODES):
        for code, meaning in table.items():
            assert docs.get(code, "").replace("`", "") == meaning.replace("|", "/"), code


def test_the_table_has_one_row_per_code_in_class_order() -> None:
    rows = re.findall(r"^\| `([A-Z0-9_]+)` \|", DOC.read_text(encoding="utf-8"), re.M)
    assert len(rows) == len(set(rows))
    order = ["PARSE", "STRUCT", "LEGAL", "ORDER", "BCODE", "RUNTIME", "SPEC", "FRONT", "PTO"]
    assert [order.index(r.split("_")[0]) for r in rows] == sorted(order.index(r.split("_")[0]) for r in rows)
