"""PTO-AS text -> ``Module``: a hand-written recursive-descent parser.

Statements end at a newline, ``;``, or a closing ``}``. A failing statement is recorded and
parsing resumes on the next line (skipping any region the statement opened), so one pass
reports several errors; names the failed statement would have defined are silenced so one
mistake gives one diagnostic. The statement kinds live in ``tileops.py`` (instructions),
``statements.py`` (directives, constants, scalar ops) and ``control.py`` (for, if, yield).

Fast path: programs repeat a few statement shapes with different value names. A line that is
one statement (or the head of a ``for``/``if``, up to its '{') is keyed by its shape, its text
with every ``%name`` marked (``lexer.NAME_MARK``); the first line of a shape is lexed and
parsed into a template (syntax only), and every later line of that shape is built from the
template and the line's names, without lexing (what a line's text gives is remembered too,
as whole lines repeat). A template never reports: where the token path would say anything,
or build something else, it defers to the token path, which then parses that line.
"""
from __future__ import annotations

from typing import Any, Callable

from ..isa.diagnostics import Location, PTOError, PTOErrorGroup, StructError
from ..isa.registry import lookup as lookup_instruction, names as registry_names
from ..isa.suggest import did_you_mean
from . import scalar_ops as S
from .collector import collector_paused
from .control import ControlParser, Finish
from .cursor import Defer, Silent
from .events import BRACKET_FLAGS, EVENT_FORMS, EventParser
from .fifo_waits import FifoWaitParser
from .ir import MAIN, MAX_DEPTH, Kernel, Module, Stmt, Yield
from .lexer import DIRECTIVE, EOF, IDENT, NAME_MARK, NEWLINE, PUNCT, SYMBOL, VALUE, VALUE_NAME, WS, Token
from .scope import Scope
from .statements import KernelBuild
from .subset import FORMS as SUBSET_FORMS, SubsetParser
from .views import VIEW_FORMS, ViewParser
from .tileops import FifoTemplate, TileTemplate
from .tpipes import PIPE_DECL, TPipeParser
from ..isa.families.system import FIFO_MNEMONICS

MAX_ERRORS = 100

CONTROL = {"for": "for", "scf.for": "for", "if": "if", "scf.if": "if", "yield": "yield",
           "scf.yield": "yield"}
CONSTANT = ("constant", "arith.constant")
ALLOC = ("alloc_tile", "pto.alloc_tile")
SET_VALID = ("set_validshape", "pto.set_validshape")
VECSCOPE_ONLY = ("tile_buf_addr", "pto.tile_buf_addr")   # decision "pto.tile_buf_addr"
_TILE_TEMPLATES = (TileTemplate, FifoTemplate)
Opened = tuple[list[str], Finish]
new_loc = object.__new__
NO_TEMPLATE = object()       # a key whose lines take the token path
BLANK = object()             # a key whose lines hold nothing to parse (comments, ';')
SEEN_LINES = 1 << 16         # distinct line texts ``fast_lines`` remembers
_BLANK_LINE = (BLANK, None, 0, "", None)


class Parser(ControlParser, EventParser, ViewParser, SubsetParser, TPipeParser, FifoWaitParser):
    fast = True      # take lines by template (False: every line through the token path)

    def __init__(self, text: str, filename: str | None = None) -> None:
        super().__init__(text, filename)
        self.errors: list[PTOError] = []
        self._seen: set[tuple[str, int | None, int | None]] = set()
        self.pending: list[str] = []   # names the current statement defines
        # line shape -> (template, names before its location token, fixed part of that column,
        # the same for each result a region head names) or NO_TEMPLATE or BLANK
        self.templates: dict[str, Any] = {}
        self.seen: dict[str, tuple] = {}     # line text -> ``_read_line``'s answer

    # ------------------------------------------------------------------ errors and recovery
    def record(self, e: PTOError) -> None:
        key = (e.code, e.location.line, e.location.col)
        if key not in self._seen:
            self._seen.add(key)
            self.errors.append(e)
        if len(self.errors) >= MAX_ERRORS:
            raise PTOErrorGroup(self.errors)

    def recover(self) -> None:
        """Skip to the next line, together with any region opened on the way; a '}' that
        starts a line closes the enclosing region and is left for it."""
        depth = 0
        while True:
            t = self.peek()
            if t.kind == EOF:
                return
            starts_line = self.i == 0 or self.toks[self.i - 1].kind == NEWLINE
            if t.is_(PUNCT, "{"):
                depth += 1
            elif t.is_(PUNCT, "}"):
                if depth == 0 and starts_line:
                    return
                depth = max(depth - 1, 0)
            elif depth == 0 and (t.kind == NEWLINE or t.is_(PUNCT, ";")):
                self.next()
                return
            self.next()

    def skip_seps(self) -> None:
        """Step over newlines and ';' (a tight loop: a line may hold a million of them)."""
        while True:
            toks, i = self.toks, self.i
            n = len(toks)
            while i < n and (toks[i].kind == NEWLINE or (toks[i].kind == PUNCT and toks[i].text == ";")):
                i += 1
            self.i = i
            if i < n or self.next_line >= len(self.lines):
                return
            self.peek()                 # lex the next line

    # ------------------------------------------------------------------ module and kernels
    def module(self) -> Module:
        self.skip_seps()
        kernels: list[Kernel] = []
        if self.at(IDENT, "kernel"):
            while True:
                self.skip_seps()
                if self.at(EOF):
                    break
                start = self.i
                try:
                    if not self.at(IDENT, "kernel"):
                        self.fail("PARSE_KERNEL", "a statement outside any kernel", self.peek(),
                                  expected="kernel @name(...) { ... }")
                    kt = self.peek()
                    k = self.kernel()
                    if any(x.name == k.name for x in kernels):
                        self.fail("PARSE_KERNEL", f"kernel @{k.name} is defined twice", kt)
                    kernels.append(k)
                except PTOError as e:
                    self.record(e)
                    self.recover()
                if self.i == start:
                    self.next()
        else:
            kb = KernelBuild(MAIN, self.peek())
            body: list[Stmt] = []
            while True:
                body += self.block(kb.scope, 0, kb)
                if self.at(EOF):
                    break
                self.record(self.error("PARSE_TOKEN", "'}' closes no region", self.next()))
            kernels.append(Kernel(MAIN, tuple(kb.params), tuple(body), loc=self.loc(kb.tok)))
        if self.errors:
            raise self.errors[0] if len(self.errors) == 1 else PTOErrorGroup(self.errors)
        return Module(tuple(kernels))

    def kernel(self) -> Kernel:
        kt = self.expect(IDENT, "kernel")
        name = self.expect(SYMBOL, what="a kernel name @name")
        kb = KernelBuild(name.text[1:], kt)
        self.expect(PUNCT, "(")
        self.skip_nl()
        while not self.accept(PUNCT, ")"):
            if kb.params:
                self.expect(PUNCT, ",", "',' or ')'")
                self.skip_nl()
            self._param(kb)
            self.skip_nl()
        self.expect(PUNCT, "{")
        body = self.block(kb.scope, 0, kb)
        self.expect(PUNCT, "}", "'}' closing the kernel")
        return Kernel(kb.name, tuple(kb.params), tuple(body), loc=self.loc(kt))

    def block(self, scope: Scope, depth: int, kb: KernelBuild) -> list[Stmt]:
        """Statements up to a closing '}' or the end of input (neither consumed). The names
        the enclosing statement defines (``pending``) are kept across the block, whose own
        statements set theirs, so a region statement that fails after its regions still
        silences all of its results."""
        outer = self.pending
        try:
            return self._block(scope, depth, kb)
        finally:
            self.pending = outer

    def _block(self, scope: Scope, depth: int, kb: KernelBuild) -> list[Stmt]:
        out: list[Stmt] = []
        while True:
            opened = self.fast_lines(scope, out, depth, kb)
            if opened is not None:          # a region statement whose head a template took
                self.pending, finish = opened
                self._statement(lambda: [finish()], scope, out)
                continue
            self.skip_seps()
            if self.at(EOF) or self.at(PUNCT, "}"):
                return out
            start = self.i
            self.pending = []
            if out and isinstance(out[-1], Yield):
                self.record(StructError("STRUCT_YIELD", "scf.yield must be the last statement of its region",
                                        location=out[-1].loc))
            self._statement(lambda: self.statement(scope, depth, kb), scope, out)
            if self.i == start:
                self.next()

    def _statement(self, parse: Callable[[], list[Stmt]], scope: Scope, out: list[Stmt]) -> None:
        """Run one statement's parse; a failure is recorded, its names silenced, and parsing
        resumes on the next line."""
        try:
            out += parse()
            if not self.at_end():
                self.unexpected(self.peek(), "the end of the statement")
        except (PTOError, Silent) as e:
            if isinstance(e, PTOError):
                self.record(e)
            for n in self.pending:
                scope.poison(n)
            self.recover()

    # ------------------------------------------------------------------ fast path
    def fast_lines(self, scope: Scope, out: list[Stmt], depth: int, kb: KernelBuild) -> Opened | None:
        """Take whole lines by template while the next line is not lexed yet. Stops at a line
        that needs the token path, or after the head of a region statement: then returns
        the names it defines and the step that parses its regions."""
        if not self.fast:
            return None
        toks, i = self.toks, self.i
        while i < len(toks) and (toks[i].kind == NEWLINE or (toks[i].kind == PUNCT and toks[i].text == ";")):
            i += 1
        self.i = i
        if i < len(toks) or (out and out[-1].__class__ is Yield):
            return None
        lines, seen, file, cont = self.lines, self.seen, self.file, self.continued
        k, n = self.next_line, len(lines)
        opened = None
        # per line: locals rather than globals and attributes
        no_template, blank, yield_, read, add = NO_TEMPLATE, BLANK, Yield, self._read_line, out.append
        while k < n:
            if k + 1 in cont:               # a statement over two lines: tokens
                self.next_line = k
                return None
            text = lines[k]
            line = seen.get(text)
            lexed = line is None
            if lexed:
                self.next_line = k
                line = read(text)
                lexed = self.next_line > k
            tpl, names, col, src, heads = line
            if tpl is no_template:
                if not lexed:
                    self.next_line = k
                return None
            if tpl is not blank:
                loc = new_loc(Location)     # cursor.location, inlined: one per line
                d = loc.__dict__
                d["file"], d["line"], d["col"], d["kernel"], d["index"], d["source_line"] = \
                    file, k + 1, col, None, None, src
                try:
                    if heads is None:
                        stmt = tpl.apply(self, scope, names, loc)
                        add(stmt)
                    elif depth < MAX_DEPTH:
                        results = [Token(VALUE, "%" + names[j], k + 1, c) for j, c in enumerate(heads)]
                        opened = names[:len(heads)], tpl.open(self, scope, names, loc, results, depth, kb)
                    else:
                        raise Defer
                except Defer:
                    if not lexed:
                        self.next_line = k
                    return None
                if opened or stmt.__class__ is yield_:
                    k += 1
                    if lexed:
                        self.i = len(toks) - 1 if toks[-1].kind == EOF else len(toks)
                    break
            k += 1
            if lexed:                       # step past its tokens too
                self.i = len(toks) - 1 if toks[-1].kind == EOF else len(toks)
        self.next_line = k
        if k == n and self.i == len(toks):  # the last line was taken unlexed
            toks.append(Token(EOF, "", n, len(lines[-1]) + 1))
        return opened

    def _read_line(self, text: str) -> tuple:
        """What ``fast_lines`` needs of a line of this text: the template (or NO_TEMPLATE or
        BLANK) with the line's names, location column, caret text and the columns of the
        results a region head names. A line of a new shape is lexed (the token path takes
        it from there if no template results) and its template learned."""
        rest = text.lstrip(WS)
        body = rest.rstrip(WS)
        if not body:
            return _BLANK_LINE
        parts = VALUE_NAME.split(body)          # text, name, text, name, ..., text
        key = NAME_MARK.join(parts[::2])
        entry = self.templates.get(key)
        if entry is None:
            entry = self.templates[key] = self._learn(body)
        if entry is NO_TEMPLATE or entry is BLANK:
            line: tuple = (entry, None, 0, "", None)
        else:
            tpl, before, fixed, heads = entry
            names = parts[1::2]
            indent = len(text) - len(rest)
            if heads is not None:
                heads = tuple(indent + 1 + c + sum(map(len, names[:j])) for j, c in enumerate(heads))
            col = indent + 1 + fixed + (len(names[0]) if before == 1 else sum(map(len, names[:before])))
            line = (tpl, names, col, text.rstrip("\r").replace("\t", " "), heads)
        if len(self.seen) < SEEN_LINES and (line[0].__class__ in _TILE_TEMPLATES or not isinstance(entry, tuple)):
            self.seen[text] = line          # lines that recur verbatim: tile ops (buffers are
        return line                         # rewritten), '}' and the like; not SSA definitions

    def _learn(self, body: str) -> Any:
        """Lex the next line and make its template: BLANK for a line with nothing to parse,
        NO_TEMPLATE for a line that is neither one statement nor a region head."""
        start = len(self.toks)
        self.lex_next_line()
        end = len(self.toks) - 1                # the line's NEWLINE or EOF
        line = self.toks[start:end]
        if all(t.kind == PUNCT and t.text == ";" for t in line):
            return BLANK
        values = [t for t in line if t.kind == VALUE]
        if [t.text[1:] for t in values] != VALUE_NAME.findall(body):
            return NO_TEMPLATE
        try:
            tpl = self.statement_template()
            stop = self.i
        except PTOError:
            return NO_TEMPLATE
        finally:
            self.i = start
        region = hasattr(tpl, "open")
        if len(self.toks) != end + 1 or not (start < stop <= end and all(
                t.kind == PUNCT and t.text == ";" and not region for t in self.toks[stop:end])):
            return NO_TEMPLATE
        ordinal = {id(t): k for k, t in enumerate(values)}
        tpl.number_names(ordinal)
        at = tpl.loc_tok

        def offset(t: Token) -> int:            # its column less the indent and the names before it
            return t.col - line[0].col - sum(len(v.text) - 1 for v in values if v.col < t.col)
        heads = tuple(offset(t) for t in tpl.results) if region else None
        return tpl, sum(1 for t in values if t.col < at.col), offset(at), heads

    def statement_template(self) -> Any:
        """The syntax of one statement (or a region statement's head) as a template; PTOError
        for anything else."""
        if self.at(DIRECTIVE):
            dt = self.next()
            if dt.text in (".const", ".tile"):
                vt = self.expect(VALUE)
                if dt.text == ".tile":
                    return self.decl_template(dt, vt)
                self.expect(PUNCT, "=")
                return self.const_template(dt, vt)
            self.unexpected(dt, "a simple statement")
        results: list[Token] = []
        if self.at(VALUE):
            results.append(self.next())
            while self.accept(PUNCT, ","):
                results.append(self.expect(VALUE))
            self.expect(PUNCT, "=")
        mt = self.expect(IDENT)
        low = mt.text.lower()
        if low in CONTROL:
            return getattr(self, CONTROL[low] + "_template")(mt, results)
        if low in CONSTANT:
            return self.const_template(mt, self._one_result(mt, results))
        if low in ALLOC:
            return self.decl_template(mt, self._one_result(mt, results))
        instr = lookup_instruction(mt.text) if low != "kernel" else None
        if instr is not None:               # FIFO lines may name a pipe: see FifoTemplate
            tpl = self.tile_template(instr, mt, results)
            return FifoTemplate.of(tpl) if instr.mnemonic in FIFO_MNEMONICS else tpl
        spec = S.lookup(mt.text)
        if spec is None or low == "kernel":
            self.unexpected(mt, "a template statement")
        return self.scalar_template(spec, mt, results)

    def statement(self, scope: Scope, depth: int, kb: KernelBuild) -> list[Stmt]:
        if self.at(DIRECTIVE):
            return self.directive(scope, depth, kb)
        results: list[Token] = []
        if self.at(VALUE):
            results.append(self.next())
            while self.accept(PUNCT, ","):
                results.append(self.expect(VALUE, what="a result %name"))
            self.pending = [r.text[1:] for r in results]
            self.expect(PUNCT, "=", "'='")
        mt = self.peek()
        if mt.kind != IDENT:
            self.unexpected(mt, "a mnemonic")
        low = mt.text.lower()
        if low == "kernel":
            self.fail("PARSE_KERNEL", "a kernel cannot be defined here", mt,
                      expected="kernels only at the top level of a file without bare statements")
        self.next()
        if low in CONTROL:
            if depth >= MAX_DEPTH:
                self.fail("PARSE_NESTING", f"regions nested deeper than {MAX_DEPTH}", mt)
            return [getattr(self, "_" + CONTROL[low])(mt, results, scope, depth, kb)]
        if low in CONSTANT:
            return [self._constant(mt, results, scope)]
        if low in ALLOC:
            return [self._tile_decl(mt, self._one_result(mt, results), scope)]
        if low in SET_VALID:
            return [self._set_validshape(mt, results, scope)]
        if low in VIEW_FORMS:
            return [self.view_statement(mt, results, scope)]
        if low in SUBSET_FORMS:
            return [self.subset_statement(mt, results, scope)]
        if low in VECSCOPE_ONLY:
            self.fail("PARSE_VECSCOPE", f"{mt.text} is legal only inside pto.vecscope, which openpto does not have "
                      "(decision \"pto.tile_buf_addr\")", mt, expected="a tile instruction outside pto.vecscope",
                      actual=mt.text)
        if low in EVENT_FORMS or (low in BRACKET_FLAGS and self.at(PUNCT, "[")):
            return [self._event(mt, results, scope)]
        if low in PIPE_DECL:
            return self.pipe_decl(mt, results, scope)
        instr = lookup_instruction(mt.text)
        if instr is not None:
            if instr.mnemonic == "TSYNC" and self.several_waits():
                return self.tsync_events(mt, results, scope)
            if instr.mnemonic in FIFO_MNEMONICS:
                return self.fifo_statement(instr, mt, results, scope)
            return [self.tile_op(instr, mt, results, scope)]
        spec = S.lookup(mt.text)
        if spec is not None:
            return [self._scalar(spec, mt, results, scope)]
        known = (*registry_names(), *(o.text_name for o in S.SCALAR_OPS.values()), *CONTROL, *CONSTANT, *ALLOC,
                 *SET_VALID, *VIEW_FORMS, *SUBSET_FORMS, *EVENT_FORMS, *PIPE_DECL)
        self.fail("PARSE_UNKNOWN_MNEMONIC", f"unknown mnemonic '{mt.text}'{did_you_mean(mt.text, known)}", mt,
                  expected="an instruction listed by 'pto isa', an arith scalar op, for, if or yield",
                  actual=mt.text)



def parse(text: str, filename: str | None = None) -> Module:
    """Parse PTO-AS text; raises ``PTOError`` (``PTOErrorGroup`` for several) on bad input."""
    with collector_paused():
        return Parser(text, filename).module()
