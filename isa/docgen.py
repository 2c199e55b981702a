"""Generates docs/isa/: one page per instruction, an index by family, and decisions.md.

The pages are derived from the declarations only; a test regenerates them and fails
when the committed copy differs.
"""
from __future__ import annotations

from pathlib import Path

from .decisions import DECISIONS
from .profiles import PROFILES
from .registry import all_instructions, by_family
from .render import example_statement
from .spec import Instruction, Operand
from .types import Layout, Location, Pipe


def _dtype_table(instr: Instruction) -> list[str]:
    lines = ["| profile | operands | legal dtype tuples |", "|---|---|---|"]
    for p in PROFILES:
        if not instr.supported_on(p):
            lines.append(f"| {p} | | not available |")
            continue
        rule = instr.dtype_rule(p)
        if rule is None:
            lines.append(f"| {p} | | no element types |")
            continue
        tuples = rule.sorted_tuples()
        if all(len(set(t)) == 1 for t in tuples):
            body = "all the same: " + " ".join(t[0].name for t in tuples)
        else:
            body = "; ".join("(" + ", ".join(d.name for d in t) + ")" for t in tuples)
        lines.append(f"| {p} | {', '.join(rule.operands)} | {body} |")
    return lines


def _profile_rule_table(instr: Instruction, rules_of: str, title: str, intro: str, column: str,
                        unlimited: str) -> list[str]:
    """One section listing, per profile, the rules ``getattr(instr, rules_of)(profile)`` returns
    with their codes; empty when no profile has any."""
    rules = {p: getattr(instr, rules_of)(p) for p in PROFILES if instr.supported_on(p)}
    if not any(rules.values()):
        return []
    lines = [f"## {title}", "", intro, "", f"| profile | {column} |", "|---|---|"]
    for p, rs in rules.items():
        body = "; ".join(f"{r.describe()} (`{r.code}`)" for r in rs) or unlimited
        lines.append(f"| {p} | {body} |")
    return lines + [""]


def _value_table(instr: Instruction) -> list[str]:
    """The per-profile attribute and pipe values (``Instruction.value_rules``)."""
    return _profile_rule_table(
        instr, "value_rules", "Values per profile",
        "Values a profile's headers accept, where they are fewer than the type allows (a value outside "
        "them is refused by the verifier with the code shown).", "allowed values", "every value")


def _form_table(instr: Instruction) -> list[str]:
    """The per-profile dtype tuples of the forms an optional operand selects (``Instruction.form_rules``)."""
    return _profile_rule_table(
        instr, "form_rules", "Element types per form",
        "The tuples a form converts on each profile, where they are fewer than the table above (which "
        "joins every form); others are refused with the code shown.", "form tuples", "as the table above")


def operand_range(o: Operand) -> str:
    """An index operand's declared range and alignment in words ("an integer in [0, 7]")."""
    parts = []
    if o.bounds is not None:
        lo, hi = o.bounds
        parts.append(f"an integer in [{lo}, {hi}]" if hi is not None else f"an integer >= {lo}")
    if o.multiple is not None:
        parts.append(f"a multiple of {o.multiple}")
    return ", ".join(parts)


def page(instr: Instruction) -> str:
    out = [f"# {instr.mnemonic}", ""]
    tag = " (openpto extension)" if instr.extension else ""
    out += [f"*{instr.summary}* — family: {instr.family.value}{tag}.", ""]
    if instr.aliases:
        out += ["Also spelled: " + ", ".join(f"`{a}`" for a in instr.aliases) + ".", ""]
    out += ["## Syntax", "", "```", example_statement(instr), "```", ""]
    out += ["## Operands", "", "| name | role | kind | locations | description |", "|---|---|---|---|---|"]
    for o in instr.operands:
        locs = " ".join(l.value for l in o.locations) if o.locations else "any"
        opt = " (optional)" if o.optional else ""
        out.append(f"| `{o.name}` | {o.role.value} | {o.kind.value}{opt} | {locs} | {o.doc} |")
    out.append("")
    ranged = [o for o in instr.operands if o.bounds is not None or o.multiple is not None]
    if ranged:
        out += ["## Operand ranges", "", "A value outside these faults at run time; limits that depend on other operands are stated "
                "under Semantics.", ""]
        out += [f"- `{o.name}`: {operand_range(o)}" for o in ranged] + [""]
    if instr.attrs:
        out += ["## Attributes", "", "| name | values | default | description |", "|---|---|---|---|"]
        for a in instr.attrs:
            values = (" ".join(m.name for m in a.type) if hasattr(a.type, "__members__") else a.type.__name__)
            default = "required" if a.required else (getattr(a.default, "name", None) or str(a.default))
            out.append(f"| `{a.name}` | {values} | {default} | {a.doc} |")
        out.append("")
    out += ["## Semantics", "", instr.doc, "", f"Iteration domain: {instr.domain.value}. Elements of an "
            "output outside the domain are unspecified unless stated above.", ""]
    if instr.special_values:
        out += ["## Special values", "", instr.special_values, ""]
    out += ["## Numerics", "", instr.numerics.describe() + ".", ""]
    if instr.constraints:
        out += ["## Constraints", ""] + [f"- {c.doc} (`{c.code}`)" for c in instr.constraints] + [""]
    out += ["## Element types", ""] + _dtype_table(instr) + [""]
    out += _value_table(instr)
    out += _form_table(instr)
    pipe = instr.pipe.value if isinstance(instr.pipe, Pipe) else "depends on operand locations (see semantics)"
    out += ["## Pipe", "", f"{pipe}", ""]
    return "\n".join(out)


def index() -> str:
    out = ["# PTO instruction set reference", "",
           "Generated from `isa/` by `pto isa --write-docs docs/isa`; do not edit by hand.", "",
           "Implementation-defined points and openpto's choices: [decisions.md](decisions.md).", ""]
    total = 0
    for fam, instrs in by_family().items():
        if not instrs:
            continue
        total += len(instrs)
        out += [f"## {fam.value} ({len(instrs)})", "", "| instruction | summary | pipe |", "|---|---|---|"]
        for i in instrs:
            pipe = i.pipe.value if isinstance(i.pipe, Pipe) else "by location"
            out.append(f"| [{i.mnemonic}]({i.mnemonic}.md) | {i.summary} | {pipe} |")
        out.append("")
    out.insert(4, f"{total} instructions.")
    out.insert(5, "")
    return "\n".join(out)


def decisions() -> str:
    out = ["# Decisions", "",
           "Every point where the public PTO ISA is implementation-defined or its targets disagree, and "
           "what openpto specifies. Generated from `isa/decisions.py`.", ""]
    for n, d in enumerate(DECISIONS, 1):
        out += [f"## {n}. {d.topic}", "", f"- **Public ISA:** {d.public}", f"- **openpto:** {d.choice}",
                f"- **Why:** {d.reason}", ""]
    return "\n".join(out)


def layout_table() -> str:
    """Markdown: the layouts each tile location takes on each profile (``Profile.layouts``),
    then what each layout name means. docs/assembly.md carries it; a test keeps it equal."""
    names = list(PROFILES)
    lines = ["| location | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for loc in Location:
        cells = [" ".join(l.value for l in PROFILES[p].layouts.get(loc, ())) or "none" for p in names]
        lines.append(f"| `{loc.value}` | " + " | ".join(cells) + " |")
    lines += ["", "| layout | element order |", "|---|---|"]
    lines += [f"| `{l.value}` | {l.describe} |" for l in Layout]
    return "\n".join(lines)


def generate() -> dict[str, str]:
    """File name -> content of every generated page."""
    files = {f"{i.mnemonic}.md": page(i) for i in all_instructions()}
    files["README.md"] = index()
    files["decisions.md"] = decisions()
    return files


def write(directory: str | Path) -> list[Path]:
    """Write the pages into ``directory`` (removing stale generated pages) and return their paths."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    files = generate()
    for old in d.glob("*.md"):
        if old.name not in files:
            old.unlink()
    paths = []
    for name, text in sorted(files.items()):
        p = d / name
        p.write_text(text, encoding="utf-8")
        paths.append(p)
    return paths
