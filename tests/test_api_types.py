"""Wrong-typed arguments to the public API (everything ``openpto.__all__`` exports, and the
executable ``compile`` returns) are diagnostics with a code and expected vs actual, never an
AttributeError or TypeError from inside."""
from __future__ import annotations

import inspect
import pathlib
from typing import Any, Callable

import numpy as np
import pytest

import openpto as pto

ROOT = pathlib.Path(__file__).resolve().parent.parent
M = pto.load(ROOT / "examples" / "vector_add.pto")
TEXT = M.to_text()


def exe() -> Any:
    return pto.compile(M)


# (what is called, the call, the code it must raise, a word the 'expected' line holds)
CASES: list[tuple[str, Callable[[], Any], str, str]] = [
    ("parse", lambda: pto.parse(123), "PTO_API_TYPE", "str"),
    ("parse", lambda: pto.parse(None), "PTO_API_TYPE", "str"),
    ("parse", lambda: pto.parse(TEXT.encode()), "PTO_API_TYPE", "str"),
    ("parse", lambda: pto.parse(TEXT, filename=5), "PTO_API_TYPE", "None"),
    ("parse", lambda: pto.parse(TEXT, "k.pto", "extra"), "PTO_API_TYPE", "filename"),
    ("parse", lambda: pto.parse(), "PTO_API_TYPE", "text"),
    ("load", lambda: pto.load(None), "PTO_API_TYPE", "os.PathLike"),
    ("load", lambda: pto.load(123), "PTO_API_TYPE", "os.PathLike"),
    ("load", lambda: pto.load(["examples/vector_add.pto"]), "PTO_API_TYPE", "str"),
    ("load", lambda: pto.load(b"examples/vector_add.pto"), "PTO_API_TYPE", "str"),
    ("check", lambda: pto.check(TEXT), "PTO_API_TYPE", "Module"),
    ("check", lambda: pto.check(None), "PTO_API_TYPE", "Module"),
    ("check", lambda: pto.check(M, profile=5), "PTO_API_TYPE", "str"),
    ("check", lambda: pto.check(M, profile=["a3"]), "PTO_API_TYPE", "str"),
    ("check", lambda: pto.check(M, bogus=1), "PTO_API_TYPE", "profile"),
    ("compile", lambda: pto.compile(object()), "PTO_API_TYPE", "Module"),
    ("compile", lambda: pto.compile("examples/vector_add.pto"), "PTO_API_TYPE", "Module"),
    ("compile", lambda: pto.compile(M, profile=3), "PTO_API_TYPE", "str"),
    ("compile", lambda: pto.compile(M, backend=5), "PTO_UNKNOWN_BACKEND", "Backend"),
    ("compile", lambda: pto.compile(M, backend=None), "PTO_UNKNOWN_BACKEND", "Backend"),
    ("Executable.run", lambda: exe().run(123), "PTO_KERNEL", "vector_add"),
    ("Executable.run", lambda: exe().run("vector_add", block_num="2"), "PTO_BLOCK_NUM", None),
    ("Executable.run", lambda: exe().run("vector_add", 1, 2, 3, 4), "RUNTIME_ARG_TYPE", None),
    ("Executable.__call__", lambda: exe()("a", "b", "c", "d"), "RUNTIME_ARG_TYPE", None),
    ("Executable.__call__", lambda: exe()(np.zeros((16, 1024), np.float32), np.zeros((16, 1024), np.float32),
                                          np.zeros((16, 1024), np.float32), "16"), "RUNTIME_ARG_TYPE", None),
]


@pytest.mark.parametrize("what, call, code, expected", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_wrong_types_are_diagnostics(what: str, call: Callable[[], Any], code: str, expected: str | None) -> None:
    with pytest.raises(pto.PTOError) as e:
        call()
    assert e.value.code == code, e.value.render()
    if expected is not None:
        assert expected in str(e.value.expected), e.value.render()
    assert e.value.actual is not None


def test_every_public_function_is_covered() -> None:
    functions = {n for n in pto.__all__ if inspect.isfunction(getattr(pto, n))}
    assert functions == {"parse", "load", "check", "compile"}
    assert functions <= {c[0] for c in CASES}


def test_the_message_names_function_parameter_and_value() -> None:
    with pytest.raises(pto.PTOError) as e:
        pto.check(M, profile=5)
    assert e.value.render().splitlines() == [
        "PTO_API_TYPE: check(): argument 'profile' must be str or None",
        "  expected: str or None", "  actual:   int 5"]


def test_right_types_still_work() -> None:
    assert pto.parse(TEXT, filename="k.pto") == M == pto.load(str(ROOT / "examples" / "vector_add.pto"))
    assert pto.check(M, profile=None) is M and pto.compile(M, profile="a3").profile == "a3"
    assert pto.parse.__doc__ and pto.parse.__name__ == "parse"


def test_kernel_and_parameter_lookups_are_diagnostics() -> None:
    """Module.kernel / Kernel.param / Executable.run with a wrong name or type: PTO_KERNEL with
    what exists, never KeyError."""
    import openpto as pto
    t = "!pto.tile<16x16xf32>"
    two = pto.parse("".join(f"kernel @{k}(%x : {t}) {{\n  %x = tadd %x, %x : ({t}, {t}) -> {t}\n}}\n"
                            for k in ("a", "b")))
    cases = [lambda: two.kernel(), lambda: two.kernel("c"), lambda: two.kernel(5),
             lambda: two.kernel("a").param("y"), lambda: pto.compile(two).run(None),
             lambda: pto.compile(two).run("c")]
    for call in cases:
        with pytest.raises(pto.PTOError) as info:
            call()
        assert info.value.code == "PTO_KERNEL" and info.value.expected and info.value.actual


@pytest.mark.parametrize("backend, option, value", [
    ("reference", "strict", "yes"), ("reference", "strict", 0), ("reference", "threads", 1.5),
    ("llvm", "checked", 1), ("llvm", "cache", "no"), ("llvm", "threads", True)])
def test_backend_options_of_the_wrong_type_are_diagnostics(backend: str, option: str, value: Any) -> None:
    """An option that merely converts to the right type (``strict="yes"``) is refused, not guessed."""
    m = pto.parse("kernel @k(%x : !pto.tile<16x16xf32>) {\n  %x = tabs %x\n}\n")
    with pytest.raises(pto.PTOError) as info:
        pto.compile(m, backend=backend, **{option: value})
    assert info.value.code == "PTO_OPTION" and info.value.actual == repr(value)
