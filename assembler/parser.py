"""PTO-AS text -> ``Module``: a hand-written recursive-descent parser.

Statements end at a newline, ``;``, or a closing ``}``. A failing statement is recorded and
parsing resumes on the next line (skipping any region the statement opened), so one pass
reports several errors; names the failed statement would have defined are silenced so one
mistake gives one diagnostic. The statement kinds live in ``tileops.py`` (instructions),
``statements.py`` (directives, constants, scalar ops) and ``control.py`` (for, if, yield).
"""
from __future__ import annotations

from ..isa.diagnostics import PTOError, PTOErrorGroup, StructError
from ..isa.registry import lookup as lookup_instruction
from . import scalar_ops as S
from .control import ControlParser
from .cursor import Silent
from .ir import MAIN, Kernel, Module, Stmt, Yield
from .lexer import DIRECTIVE, EOF, IDENT, NEWLINE, PUNCT, SYMBOL, VALUE, Token
from .scope import Scope
from .statements import KernelBuild

MAX_DEPTH = 64      # nesting of regions
MAX_ERRORS = 100

CONTROL = {"for": "for", "scf.for": "for", "if": "if", "scf.if": "if", "yield": "yield",
           "scf.yield": "yield"}
CONSTANT = ("constant", "arith.constant")
ALLOC = ("alloc_tile", "pto.alloc_tile")


class Parser(ControlParser):
    def __init__(self, text: str, filename: str | None = None) -> None:
        super().__init__(text, filename)
        self.errors: list[PTOError] = []
        self._seen: set[tuple[str, int | None, int | None]] = set()
        self.pending: list[str] = []   # names the current statement defines

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
        while self.at(NEWLINE) or self.at(PUNCT, ";"):
            self.next()

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
        """Statements up to a closing '}' or the end of input (neither consumed)."""
        out: list[Stmt] = []
        while True:
            self.skip_seps()
            if self.at(EOF) or self.at(PUNCT, "}"):
                return out
            start = self.i
            self.pending = []
            if out and isinstance(out[-1], Yield):
                self.record(StructError("STRUCT_YIELD", "scf.yield must be the last statement of its region",
                                        location=out[-1].loc))
            try:
                out += self.statement(scope, depth, kb)
                if not self.at_end():
                    self.unexpected(self.peek(), "the end of the statement")
            except (PTOError, Silent) as e:
                if isinstance(e, PTOError):
                    self.record(e)
                for n in self.pending:
                    scope.poison(n)
                self.recover()
            if self.i == start:
                self.next()

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
        instr = lookup_instruction(mt.text)
        if instr is not None:
            return [self.tile_op(instr, mt, results, scope)]
        spec = S.lookup(mt.text)
        if spec is not None:
            return [self._scalar(spec, mt, results, scope)]
        self.fail("PARSE_UNKNOWN_MNEMONIC", f"unknown mnemonic '{mt.text}'", mt,
                  expected="an instruction listed by 'pto isa', an arith scalar op, for, if or yield",
                  actual=mt.text)



def parse(text: str, filename: str | None = None) -> Module:
    """Parse PTO-AS text; raises ``PTOError`` (``PTOErrorGroup`` for several) on bad input."""
    return Parser(text, filename).module()
