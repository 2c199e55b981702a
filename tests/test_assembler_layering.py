"""The assembler's modules import each other without a circle, and the IR sits at the bottom:
``isa -> ir -> parser/printer/bytecode/verifier -> loading``. Read from the source (every
import statement, function-level ones included), so a lazy import cannot hide a cycle."""
from __future__ import annotations

import ast
from pathlib import Path

import openpto.assembler as asm

PACKAGE = "openpto.assembler"
ROOT = Path(asm.__file__).parent


def _imports(path: Path, module: str) -> set[str]:
    """The openpto modules ``module`` (at ``path``) imports anywhere in its body; ``from . import x``
    counts as importing ``x`` when x is a module of the package."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("openpto")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("openpto"):
                continue
            subs = {f"{target}.{a.name}" for a in node.names}
            found = {s for s in subs if _module_path(s) is not None}
            out |= found if found else {target}
    return out


def _module_path(name: str) -> Path | None:
    if not name.startswith(PACKAGE + "."):
        return None
    rel = name[len(PACKAGE) + 1:].replace(".", "/")
    for p in (ROOT / f"{rel}.py", ROOT / rel / "__init__.py"):
        if p.exists():
            return p
    return None


def graph() -> dict[str, set[str]]:
    """Module -> the assembler modules it imports (the package ``__init__`` left out: it only
    gathers the public names)."""
    mods = {f"{PACKAGE}.{p.stem}": p for p in ROOT.glob("*.py") if p.name != "__init__.py"}
    return {m: {i for i in _imports(p, m) if i in mods and i != m} for m, p in mods.items()}


def _cycle(g: dict[str, set[str]]) -> list[str] | None:
    """One import cycle, or None (depth-first search with colours)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for n in sorted(g[m]):
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if n not in state:
                found = visit(n)
                if found:
                    return found
        state[m] = 2
        stack.pop()
        return None

    for m in sorted(g):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def test_the_assembler_imports_form_no_cycle() -> None:
    g = graph()
    assert len(g) >= 15
    assert _cycle(g) is None, " -> ".join(_cycle(g) or [])


def test_the_ir_imports_nothing_of_the_front_or_back_ends() -> None:
    imported = _imports(ROOT / "ir.py", f"{PACKAGE}.ir")
    assert imported and all(m.startswith("openpto.isa") for m in imported), imported


def test_the_layers_read_from_the_code() -> None:
    """isa -> ir -> parser / printer / verifier -> bytecode (a file holds what its text says,
    so the reader checks it against them) -> loading; nothing below imports up."""
    g = graph()
    for low, high in [("ir", "parser"), ("ir", "printer"), ("ir", "verifier"), ("parser", "bytecode"),
                      ("printer", "bytecode"), ("parser", "loading"), ("bytecode", "loading")]:
        assert f"{PACKAGE}.{low}" in g[f"{PACKAGE}.{high}"], (high, low)
    for low, high in [("parser", "printer"), ("parser", "verifier"), ("printer", "verifier")]:
        assert f"{PACKAGE}.{high}" not in g[f"{PACKAGE}.{low}"] and f"{PACKAGE}.{low}" not in g[f"{PACKAGE}.{high}"]
    for low in ("parser", "printer", "verifier", "bytecode"):
        assert f"{PACKAGE}.loading" not in g[f"{PACKAGE}.{low}"], low


def test_the_finder_sees_function_level_imports(tmp_path: Path) -> None:
    """The check itself: a lazy import inside a method is an edge too."""
    f = tmp_path / "m.py"
    f.write_text("def f():\n    from .printer import print_module\n    from . import bytecode\n")
    assert _imports(f, f"{PACKAGE}.m") == {f"{PACKAGE}.printer", f"{PACKAGE}.bytecode"}


def test_module_writers_still_reach_printer_and_bytecode() -> None:
    m = asm.parse(".const %c = 1 : index\n")
    assert m.to_text() == asm.print_module(m) and m.to_bytes() == asm.dump(m)
