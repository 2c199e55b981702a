"""The portability report as text (a table and one block per refusing profile) and as Markdown
(for docs). Only presentation: the verdicts are frontend/port.py's."""
from __future__ import annotations

import linecache
import os

from . import graph as g
from .port import Blocker, PortReport, ProfileReport


def where_str(where: g.SourceLoc | None) -> str:
    """``file:line``, the file relative to the current directory when it lies under it."""
    if where is None:
        return "?"
    try:
        rel = os.path.relpath(where.file)
    except ValueError:
        rel = where.file
    name = rel if not rel.startswith("..") else os.path.basename(where.file)
    return f"{name}:{where.line}"


def source_text(where: g.SourceLoc | None) -> str:
    if where is None:
        return ""
    text = where.text or linecache.getline(where.file, where.line)
    return text.strip()


def _summary(p: ProfileReport) -> str:
    if p.legal:
        return "-"
    counts: dict[str, int] = {}
    for b in p.blockers:
        counts[b.kind] = counts.get(b.kind, 0) + 1
    return ", ".join(f"{n} {kind}" for kind, n in counts.items())


def _tiles(b: Blocker, limit: int = 4) -> str:
    parts = [f"{u.tile} {u.rows}x{u.cols} {u.dtype} {u.nbytes} B" + (f" ({where_str(u.where)})" if u.where else "")
             for u in b.tiles[:limit]]
    if len(b.tiles) > limit:
        parts.append(f"{len(b.tiles) - limit} more")
    return "; ".join(parts)


def _fits(p: ProfileReport, code: str = "") -> list[str]:
    """Each fit as 'old -> new at file:line' per knob it changes (``code``: Markdown quotes)."""
    def one(k, v) -> str:  # noqa: ANN001
        at = where_str(k.where) if k.where is not None else "?"
        if k.default:
            return f"wrap the matmul at {at} in {code}with {k.call(v)}:{code} ({k.call()})"
        return f"{code}{k.call()}{code} -> {code}{k.call(v)}{code} at {at}"
    return ["; ".join(one(k, v) for k, v in f.changes) for f in p.fits]


def _header(r: PortReport) -> str:
    sizes = ", ".join(f"{k}={v}" for k, v in r.sizes.items())
    file = f" ({where_str(g.SourceLoc(r.file, 0)).rsplit(':', 1)[0]})" if r.file else ""
    made = f", made by {r.label}" if r.label else ""
    return f"portability of {r.function}{file}{made}" + (f", sizes {sizes}" if sizes else "")


def text(r: PortReport) -> str:
    """The readable report: a table of profiles, then each refusing profile's blockers."""
    width = max([len(p.profile) for p in r.profiles] + [7])
    lines = [_header(r), "", f"{'profile':<{width}}  legal  blockers"]
    for p in r.profiles:
        lines.append(f"{p.profile:<{width}}  {'yes' if p.legal else 'no':<5}  {_summary(p)}")
    for p in r.profiles:
        if p.legal:
            continue
        lines += ["", f"{p.profile}: not legal"]
        for b in p.blockers:
            times = f" (x{b.count})" if b.count > 1 and b.kind != "capacity" else ""
            lines.append(f"  {b.kind}: {b.what()}{times}")
            lines.append(f"    at {where_str(b.where)}: {source_text(b.where)}")
            if b.kind == "capacity" and b.tiles:
                lines.append(f"    tiles: {_tiles(b)}")
        if any(b.kind == "capacity" for b in p.blockers):
            fits = _fits(p)
            for f in fits:
                lines.append(f"  fits: {f}")
            if not fits:
                lines.append("  fits: none found by shrinking the program's tile shapes")
    return "\n".join(lines)


def _cell(s: str) -> str:
    return s.replace("|", "\\|")


def markdown(r: PortReport, level: int = 3) -> str:
    """The report in Markdown: the profile table, then one table of blockers per refusing
    profile, with the tile shapes that fit."""
    h = "#" * level
    title = f"{h} `{r.function}`" + (f": `{r.label}`" if r.label else "")
    lines = [title, "", _header(r).replace(r.function, f"`{r.function}`", 1), "",
             "| profile | legal | blockers |", "|---|---|---|"]
    for p in r.profiles:
        lines.append(f"| {p.profile} | {'yes' if p.legal else '**no**'} | {_summary(p)} |")
    for p in r.profiles:
        if p.legal:
            continue
        lines += ["", f"{h}# {r.label or r.function} on {p.profile}", "", "| blocker | what | source line |",
                  "|---|---|---|"]
        for b in p.blockers:
            what = b.what() + (f"; tiles: {_tiles(b)}" if b.kind == "capacity" and b.tiles else "")
            src = source_text(b.where)
            line = f"`{where_str(b.where)}`" + (f" `{_cell(src)}`" if src else "")
            times = f" (x{b.count})" if b.count > 1 and b.kind != "capacity" else ""
            lines.append(f"| {b.kind} | {_cell(what)}{times} | {line} |")
        if any(b.kind == "capacity" for b in p.blockers):
            lines.append("")
            lines += [f"Fits on {p.profile}: {f}" for f in _fits(p, "`")] \
                or [f"No tile shape found that fits on {p.profile}."]
    return "\n".join(lines) + "\n"
