"""The backend plug-in interface: what every backend provides and what callers get back.

A backend turns a verified ``Module`` into an ``Executable`` for one profile. It declares
which instructions it can lower (``rules``: mnemonic -> lowering rule, the only per-instruction
table a backend keeps) and may narrow dtypes further (``unsupported``); ``compile`` rejects
anything else with a ``LEGAL_*`` diagnostic before any code runs.
"""
from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..assembler.ir import Module, TileOp
from ..assembler.verifier import verify
from ..isa.diagnostics import LegalityError, Location, PTOError, PTOErrorGroup
from ..isa.profiles import PROFILES
from ..isa.registry import all_instructions
from ..isa.spec import Instruction
from ..isa.types import Type
from .blocks import check_block_num


def thread_count_option(threads: Any) -> int | None:
    """A backend's ``threads`` option: None (the backend's default) or a positive int."""
    if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool) or threads < 1):
        raise PTOError("PTO_OPTION", "threads must be a positive integer", expected=">= 1", actual=repr(threads))
    return threads


def flag_option(name: str, value: Any) -> bool:
    """A backend's on/off option (``strict``, ``checked``, ``cache``): True or False, nothing
    that merely converts to one."""
    if not isinstance(value, bool):
        raise PTOError("PTO_OPTION", f"{name} must be True or False", expected="a bool", actual=repr(value))
    return value


@dataclass
class Result:
    """What one kernel run gives back: the arrays it wrote (by parameter name, the caller's
    own arrays, updated in place), event counters, and a trace when one was requested."""

    outputs: dict[str, Any]
    counters: dict[str, int] = field(default_factory=dict)
    trace: list[dict[str, Any]] | None = None

    def __getitem__(self, name: str) -> Any:
        return self.outputs[name]

    def __iter__(self):  # noqa: ANN204 - unpack like a tuple of outputs
        return iter(self.outputs.values())

    def __len__(self) -> int:
        return len(self.outputs)


class Executable(abc.ABC):
    """A compiled module: call it for the only kernel, or ``run(name, ...)`` for any."""

    #: whether a run's Result carries simulated timing (cycles, per-pipe busy, bound)
    simulates: bool = False

    def __init__(self, module: Module, profile: str) -> None:
        self.module = module
        self.profile = profile

    @property
    def kernels(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.module.kernels)

    def __call__(self, *args: Any, **kwargs: Any) -> Result:
        return self.run(self.module.kernel(None, "name one with run(name, ...)").name, *args, **kwargs)

    def _check_launch(self, kernel: str, block_num: Any) -> int:
        """The checks every backend's ``run`` makes before binding arguments; returns
        ``block_num`` as an int (``PTO_BLOCK_NUM`` outside 1 .. ``blocks.MAX_BLOCK_NUM``)."""
        self.module.kernel(kernel)                       # PTO_KERNEL unless it names a kernel
        return check_block_num(block_num)

    @abc.abstractmethod
    def run(self, kernel: str, *args: Any, block_num: int = 1, trace: bool = False,
            **kwargs: Any) -> Result:
        """Run ``kernel`` once per block index in ``range(block_num)``; arguments by position
        or parameter name."""


class Backend(abc.ABC):
    """Subclasses set ``name``, ``default_profile``, ``rules`` and implement ``_compile``."""

    name: str = ""
    default_profile: str = "cpu"
    profiles: tuple[str, ...] = tuple(PROFILES)
    rules: Mapping[str, Any] = {}
    #: whether its executables run ``ranks=N`` launches (docs/comm.md); without, one rank only
    multi_rank: bool = False

    def is_available(self) -> tuple[bool, str]:
        """(True, "") when the backend can run here, else (False, why not)."""
        return True, ""

    def unsupported(self, instr: Instruction, types: Mapping[str, Type], profile: str) -> str | None:
        """Why this backend cannot run ``instr`` on these operand types (None: it can).
        Override to narrow below the profile; the default supports every ruled instruction."""
        if instr.mnemonic not in self.rules:
            return f"backend {self.name!r} has no lowering for {instr.mnemonic}"
        return None

    def coverage(self) -> tuple[int, int]:
        """(instructions with a lowering rule, instructions in the spec)."""
        names = [i.mnemonic for i in all_instructions()]
        return sum(1 for n in names if n in self.rules), len(names)

    def compile(self, module: Module, profile: str | None = None, **options: Any) -> Executable:
        """Verify ``module`` for the profile, check every instruction is supported, lower it."""
        profile = profile or self.default_profile
        ok, why = self.is_available()
        if not ok:
            raise PTOError("PTO_BACKEND_UNAVAILABLE", f"backend {self.name!r} is not available: {why}")
        if profile not in self.profiles:
            raise LegalityError("LEGAL_PROFILE", f"backend {self.name!r} does not target profile {profile!r}",
                                expected=" | ".join(self.profiles), actual=profile)
        verify(module, profile)
        errors = self._capability_errors(module, profile)
        if errors:
            raise errors[0] if len(errors) == 1 else PTOErrorGroup(errors)
        return self._compile(module, profile, **options)

    def _capability_errors(self, module: Module, profile: str) -> list[PTOError]:
        errors: list[PTOError] = []
        for k in module.kernels:
            for index, s in enumerate(k.walk()):   # numbered as the verifier numbers statements
                if not isinstance(s, TileOp):
                    continue
                why = self.unsupported(s.instr, s.types(), profile)
                if why:
                    at = s.loc or Location()
                    errors.append(LegalityError("LEGAL_BACKEND_UNSUPPORTED", why,
                                                location=Location(at.file, at.line, at.col, k.name, index,
                                                                  at.source_line),
                                                expected=f"an instruction {self.name!r} supports",
                                                actual=s.instr.mnemonic))
        return errors

    @abc.abstractmethod
    def _compile(self, module: Module, profile: str, **options: Any) -> Executable:
        """Lower a verified, supported module."""


