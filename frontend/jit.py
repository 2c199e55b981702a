"""``@jit``: binds a call's arrays to the annotations, captures and compiles once per static
signature, and runs the compiled function.

A call checks every argument against its annotation (count, array type, rank, static sizes,
dtype), reads the dynamic sizes off the arrays, and looks the compile up under (source,
options, backend, profile, static shapes and dtypes, compile-time arguments and the values of
the names the function, its nested code and its helper functions read: ``reads_key``). Only a miss captures and compiles; a hit allocates the results
and runs the compiled function. torch CPU tensors go in and come out as torch tensors.
"""
from __future__ import annotations

import functools
import hashlib
import inspect
import types
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

from ..isa import dtypes as dt
from ..isa.diagnostics import FrontendError
from ..isa.dtypes import DType
from .api import Dynamic, Tensor, TensorProxy, _tensor_value
from .capture import TensorParam, capture, here, user_frame
from .codes import front_error, has_location, relocated
from .graph import Dim, Function, Sym, evaluate_dim

def _loc():  # noqa: ANN202
    loc = here()
    return loc.location() if loc else None


# --------------------------------------------------------------------------------------------
# torch interop (torch is optional: nothing here imports it)

def is_torch(x: object) -> bool:
    return type(x).__module__.split(".")[0] == "torch" and hasattr(x, "numpy") and hasattr(x, "dtype")


def torch_to_numpy(x: Any) -> np.ndarray:
    """A numpy array sharing the CPU tensor's memory (bf16 through an int16 view)."""
    import torch
    if x.device.type != "cpu":
        raise front_error("FRONT_ARG_TYPE", "only CPU torch tensors can be passed", location=_loc(),
                          expected="a tensor on the cpu device", actual=str(x.device))
    x = x.detach()
    if x.dtype == torch.bfloat16:
        return x.view(torch.int16).numpy().view(dt.BF16.np_dtype)
    return x.numpy()


def numpy_to_torch(a: np.ndarray) -> Any:
    import torch
    if a.dtype == dt.BF16.np_dtype:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


# --------------------------------------------------------------------------------------------
# one compiled signature

@dataclass
class Entry:
    """What a warm call needs: the graph, the compiled function, how to allocate results."""

    fn: Function
    compiled: Any
    results: list[tuple[str, tuple[Dim, ...], DType]]


@dataclass
class Call:
    """A bound call: arrays by parameter name, compile-time arguments, symbol values, the key."""

    arrays: dict[str, np.ndarray]
    originals: dict[str, Any]
    static: dict[str, Any]
    symbols: dict[str, int]
    params: list[TensorParam]
    sources: dict[str, tuple[str, int]]
    key: tuple
    torch: bool


_CACHE: dict[tuple, Entry] = {}


class JitFunction:
    """A function compiled from tensor code; call it with numpy arrays (or torch CPU tensors)."""

    def __init__(self, fn: Callable, backend: str = "llvm", profile: str = "cpu",
                 options: dict | None = None) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.backend = backend
        self.profile = profile
        self.options = dict(options or {})
        # how a call runs (frontend/tasks.py): not pipeline knobs, so not part of the compile key
        self.executor = self.options.pop("executor", "sequential")
        self.policy = self.options.pop("policy", "fifo")
        _check_options(self.options, self.executor, self.policy, profile)
        self.last_run: Any = None       # the runtime's RunRecord of the last call (not sequential)
        self._signature = inspect.signature(fn)
        plain = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        #: the parameter names when every one can be given by position: a call giving each so
        #: binds without inspect (what Signature.bind would give, with nothing to default)
        self._positional = (tuple(self._signature.parameters)
                            if all(p.kind in plain for p in self._signature.parameters.values()) else None)
        self._annotations: dict[str, Any] | None = None
        frame = user_frame()      # string annotations may name the decorating scope's locals
        self._scope = dict(frame.f_locals) if frame is not None and frame.f_locals is not fn.__globals__ else None
        digest = code_digest(fn.__code__)
        self._base = (digest, fn.__qualname__, backend, profile, repr(sorted(self.options.items())))
        self._entries: dict[tuple, Entry] = {}

    def with_options(self, *, backend: str | None = None, profile: str | None = None,
                     **options: Any) -> "JitFunction":
        """The same function with other compile options (merged over these)."""
        return JitFunction(self.fn, backend or self.backend, profile or self.profile,
                           {"executor": self.executor, "policy": self.policy, **self.options, **options})

    def __repr__(self) -> str:
        return f"<jit {self.fn.__qualname__} backend={self.backend} profile={self.profile}>"

    # binding --------------------------------------------------------------------------------
    def annotations(self) -> dict[str, Any]:
        if self._annotations is None:
            try:
                self._annotations = inspect.get_annotations(self.fn, locals=self._scope, eval_str=True)
            except Exception as e:  # noqa: BLE001 - any error evaluating a user's annotation
                raise front_error("FRONT_ANNOTATION", f"the annotations of {self.fn.__name__} cannot be "
                                  "evaluated", location=_loc(), expected="valid annotations",
                                  actual=f"{type(e).__name__}: {e}") from None
        return self._annotations

    def _arguments(self, args: tuple, kwargs: dict) -> dict[str, Any]:
        """Parameter name -> value, defaults applied (FRONT_ARG_COUNT for a call that does not fit)."""
        names = self._positional
        if names is not None and not kwargs and len(args) == len(names):
            return dict(zip(names, args))
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise front_error("FRONT_ARG_COUNT", f"{self.fn.__name__}() called with the wrong arguments",
                              location=_loc(), expected=f"{self.fn.__name__}{self._signature}",
                              actual=str(e)) from None
        bound.apply_defaults()
        return bound.arguments

    def _bind(self, args: tuple, kwargs: dict) -> Call:
        arguments = self._arguments(args, kwargs)
        notes = self.annotations()
        arrays: dict[str, np.ndarray] = {}
        originals: dict[str, Any] = {}
        static: dict[str, Any] = {}
        symbols: dict[str, int] = {}
        sources: dict[str, tuple[str, int]] = {}
        params: list[TensorParam] = []
        key: list = []
        torch = False
        for i, (name, value) in enumerate(arguments.items()):
            ann = notes.get(name)
            if not isinstance(ann, Tensor) and not (ann is None and (isinstance(value, np.ndarray) or is_torch(value))):
                try:
                    hash(value)
                except TypeError:
                    raise front_error("FRONT_ARG_TYPE", f"the compile-time argument {name} cannot be hashed",
                                      location=_loc(), expected="an int, float, str, tuple or other hashable",
                                      actual=type(value).__name__) from None
                static[name] = value
                key.append((name, value))
                continue
            spec = ann if isinstance(ann, Tensor) else Tensor()
            if isinstance(value, np.ndarray):
                arr = value
            elif is_torch(value):
                torch = True
                arr = torch_to_numpy(value)
            else:
                raise front_error("FRONT_ARG_TYPE", f"argument {i + 1} ({name}) must be an array",
                                  location=_loc(), expected="a numpy array or a torch CPU tensor",
                                  actual=type(value).__name__)
            try:
                have = dt.of_numpy(arr.dtype)
            except KeyError:
                have = None
            if have is None or (spec.dtype is not None and have != spec.dtype):
                raise front_error("FRONT_ARG_DTYPE", f"argument {i + 1} ({name}) has the wrong element type",
                                  location=_loc(), expected=(spec.dtype or "a dtype openpto knows"),
                                  actual=str(arr.dtype))
            shape: list[Dim] = []
            layout: list = []
            want = spec.shape if spec.shape is not None else tuple(arr.shape)
            if len(want) != arr.ndim:
                raise front_error("FRONT_ARG_SHAPE", f"argument {i + 1} ({name}) has rank {arr.ndim}",
                                  location=_loc(), expected=f"rank {len(want)}: {list(want)}",
                                  actual=list(arr.shape))
            for axis, (w, n) in enumerate(zip(want, arr.shape)):
                if isinstance(w, Dynamic):
                    sym = w.name or f"{name}_dim{axis}"
                    if sym in symbols and symbols[sym] != n:
                        raise front_error("FRONT_ARG_SHAPE", f"the dynamic size {sym} differs between arguments",
                                          location=_loc(), expected=f"{sym} = {symbols[sym]} (as before)",
                                          actual=f"{n} for {name} axis {axis}")
                    if n < 1:
                        raise front_error("FRONT_ARG_SHAPE", f"argument {name} is empty on axis {axis}",
                                          location=_loc(), expected="sizes >= 1", actual=list(arr.shape))
                    symbols[sym] = n
                    sources.setdefault(sym, (name, axis))
                    shape.append(Sym.var(sym))
                    layout.append(sym)
                else:
                    if w != n:
                        raise front_error("FRONT_ARG_SHAPE", f"argument {i + 1} ({name}) has the wrong shape",
                                          location=_loc(), expected=list(_spell(want)), actual=list(arr.shape))
                    shape.append(int(w))
                    layout.append(int(w))
            arrays[name] = arr
            originals[name] = value
            params.append(TensorParam(name, tuple(shape), have))
            key.append((name, have.name, tuple(layout)))
        return Call(arrays, originals, static, symbols, params, sources, tuple(key), torch)

    def _globals_key(self) -> tuple:
        """The values the function reads by name: see ``reads_key``."""
        return reads_key(self.fn)

    def clear_cache(self) -> None:
        """Forget this function's compiles, so the next call captures again (after changing what
        the key cannot see: a module attribute, a list's or dict's contents)."""
        self._entries.clear()
        for key in [k for k in _CACHE if k[0] == self._base]:
            del _CACHE[key]

    # capture and compile -------------------------------------------------------------------
    def _capture(self, call: Call) -> Function:
        fn = capture(self.fn, call.params, call.static, wrap=TensorProxy, unwrap=_tensor_value,
                     symbols=dict(call.sources))
        self._check_results(fn)
        return fn

    def _check_results(self, fn: Function) -> None:
        """The results against the return annotation (a Tensor or a tuple of them), if any."""
        ann = self.annotations().get("return")
        if ann is None:
            return
        want = ann if isinstance(ann, tuple) else (ann,)
        where = fn.loc.location() if fn.loc else None
        if not all(isinstance(w, Tensor) for w in want) or len(want) != len(fn.results):
            raise front_error("FRONT_RESULT", f"{self.fn.__name__} returns {len(fn.results)} tensor(s)",
                              location=where, expected=f"what the return annotation says: {ann!r}",
                              actual=", ".join(r.type_str() for r in fn.results) or "nothing")
        for w, r in zip(want, fn.results):
            shape_ok = w.shape is None or (len(w.shape) == r.rank and all(
                isinstance(a, Dynamic) or (isinstance(b, int) and a == b) for a, b in zip(w.shape, r.shape)))
            if not shape_ok or (w.dtype is not None and w.dtype != r.dtype):
                raise front_error("FRONT_RESULT", f"{self.fn.__name__}'s result {r.name} differs from the "
                                  "return annotation", location=where, expected=repr(w), actual=r.type_str())

    def _entry(self, call: Call, compiled: bool = True) -> Entry:
        key = (self._base, call.key, self._globals_key(), compiled)
        entry = self._entries.get(key) or _CACHE.get(key)
        if entry is None:
            fn = self._capture(call)
            comp = _compile(fn, self.backend, self.profile, self.options) if compiled else None
            entry = Entry(fn, comp, [(r.name, r.shape, r.dtype) for r in fn.results])
            _CACHE[key] = entry
        self._entries[key] = entry
        return entry

    # entry points ---------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        call = self._bind(args, kwargs)
        entry = self._entry(call)
        _check_writes(call, entry.fn)
        if self.executor == "sequential":
            return self._run(call, entry, entry.compiled)
        return self._run(call, entry, functools.partial(self._run_tasks, entry.compiled))

    def _run_tasks(self, compiled: Any, arrays: dict, symbols: dict) -> None:
        """Run a call as a runtime task graph on this function's executor; keep its record."""
        self.last_run = compiled(arrays, symbols, self.executor, self.policy)

    def interpret(self, *args: Any, **kwargs: Any) -> Any:
        """Run the captured tensor graph with the numpy interpreter (the oracle), no compile."""
        from .interpret import interpret
        call = self._bind(args, kwargs)
        entry = self._entry(call, compiled=False)
        _check_writes(call, entry.fn)
        return self._run(call, entry, lambda arrays, symbols: interpret(entry.fn, arrays, symbols))

    def graph(self, *args: Any, **kwargs: Any) -> Function:
        """The tensor graph: captured for these arguments, or from the annotations alone."""
        if args or kwargs or not self._signature.parameters:
            return self._entry(self._bind(args, kwargs), compiled=False).fn
        return self.graph_from_annotations()

    def stages(self, *args: Any, **kwargs: Any) -> Any:
        """Every stage of the compile (the pipeline's Stages) for these arguments, or from the
        annotations alone (dynamic sizes stay symbolic)."""
        if args or kwargs or not self._signature.parameters:
            return self._entry(self._bind(args, kwargs)).compiled.stages
        return self.stages_from_annotations()

    def graph_from_annotations(self, dims: dict[str, int] | None = None) -> Function:
        """The tensor graph from the annotations; ``dims`` fixes dynamic sizes by name."""
        return self._capture(self._from_annotations(dims or {}))

    def stages_from_annotations(self, dims: dict[str, int] | None = None) -> Any:
        """Every stage from the annotations; ``dims`` fixes dynamic sizes by name."""
        return _compile(self.graph_from_annotations(dims), self.backend, self.profile, self.options).stages

    def dynamic_dims(self) -> list[str]:
        """The names of the annotations' dynamic sizes (what ``dims`` may fix)."""
        names: list[str] = []
        for name, ann in self.annotations().items():
            if isinstance(ann, Tensor) and ann.shape is not None and name != "return":
                for axis, d in enumerate(ann.shape):
                    sym = (d.name or f"{name}_dim{axis}") if isinstance(d, Dynamic) else None
                    if sym is not None and sym not in names:
                        names.append(sym)
        return names

    def _from_annotations(self, dims: dict[str, int]) -> Call:
        """A call with no arguments: every tensor parameter fully annotated, the rest defaulted."""
        notes = self.annotations()
        params: list[TensorParam] = []
        static: dict[str, Any] = {}
        sources: dict[str, tuple[str, int]] = {}
        for name, p in self._signature.parameters.items():
            ann = notes.get(name)
            if isinstance(ann, Tensor) and ann.shape is not None and ann.dtype is not None:
                shape: list[Dim] = []
                for axis, d in enumerate(ann.shape):
                    sym = (d.name or f"{name}_dim{axis}") if isinstance(d, Dynamic) else None
                    if sym is None or sym in dims:
                        shape.append(dims[sym] if sym is not None else d)  # type: ignore[arg-type]
                    else:
                        sources.setdefault(sym, (name, axis))
                        shape.append(Sym.var(sym))
                params.append(TensorParam(name, tuple(shape), ann.dtype))
            elif p.default is not inspect.Parameter.empty and not isinstance(ann, Tensor):
                static[name] = p.default
            else:
                raise front_error("FRONT_ANNOTATION", f"parameter {name} needs a full pto.Tensor annotation "
                                  "(shape and dtype) to capture without arguments", location=_loc(),
                                  expected="pto.Tensor((dims...), pto.DT_...)", actual=repr(ann))
        return Call({}, {}, static, {}, params, sources, (), False)

    def _run(self, call: Call, entry: Entry, run: Callable) -> Any:
        arrays = dict(call.arrays)
        outs = []
        for (name, shape, dtype), result in zip(entry.results, entry.fn.results):
            sizes = tuple(evaluate_dim(d, call.symbols) for d in shape)
            if any(n < 1 for n in sizes):
                raise front_error("FRONT_BOUNDS", f"the result {name} would be empty at run time",
                                  location=_loc(), expected="every size >= 1",
                                  actual=f"{list(sizes)} from [{', '.join(str(d) for d in shape)}]",
                                  notes=[f"{name} is made at {result.loc}"] if result.loc else None)
            a = np.empty(sizes, dtype=dtype.np_dtype)
            arrays[name] = a
            outs.append(a)
        run(arrays, call.symbols)
        if call.torch:
            outs = [numpy_to_torch(a) for a in outs]
        if not outs:
            return None
        return outs[0] if len(outs) == 1 else tuple(outs)


def _code_parts(code: types.CodeType) -> Iterator[bytes]:
    """What makes a code object the program it is: bytecode, constants (nested code objects
    recursively), names, file and every instruction's (line, column) span. Source text alone is
    not enough: two lambdas on one line share it, and exec'd code has none."""
    yield code.co_code
    yield repr((code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars,
                code.co_filename, code.co_qualname, code.co_flags, code.co_argcount,
                code.co_kwonlyargcount, tuple(code.co_positions()))).encode()
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield b"<code>"
            yield from _code_parts(c)
            yield b"</code>"
        else:
            yield repr((type(c).__name__, c)).encode()


def code_digest(code: types.CodeType) -> str:
    """A digest of a code object that differs whenever the compiled program would."""
    h = hashlib.sha256()
    for part in _code_parts(code):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()


_TOO_HARD = getattr(getattr(np, "exceptions", np), "TooHardError", Exception)


def _check_options(options: dict, executor: Any, policy: Any, profile: str) -> None:
    """Pipeline knobs and run options checked where they are written (the decorator or
    with_options line), not at the first call's compile."""
    from .options import Options
    from .tasks import check_run_options
    try:
        check_run_options(executor, policy, profile)
        Options.from_dict(options)
    except FrontendError as err:
        loc = here()
        raise (relocated(err, loc.location()) if loc and not has_location(err) else err) from None


def _overlap(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two arrays share an element (a problem too hard to decide counts as yes)."""
    if not np.may_share_memory(a, b):
        return False
    try:
        return bool(np.shares_memory(a, b, max_work=1 << 20))
    except _TOO_HARD:
        return True


def _check_writes(call: Call, fn: Function) -> None:
    """Refuse an array the function writes that shares memory with another tensor argument
    (the kernels read and write in tile order, so the result would depend on the tiling), and a
    torch tensor that requires grad written in place (torch itself refuses that)."""
    kinds = {p.name: p.tensor.kind for p in fn.params if p.tensor is not None}
    written = [n for n, k in kinds.items() if k in ("output", "inout") and n in call.arrays]
    for name in written:
        if _requires_grad(call.originals.get(name)):
            raise front_error("FRONT_ARG_TYPE", f"the torch tensor {name} requires grad and the function "
                              "writes it in place", location=_loc(),
                              expected="an output tensor without requires_grad (or a call under torch.no_grad())",
                              actual="requires_grad=True",
                              notes=["torch refuses in-place writes that autograd cannot see; writing "
                                     "through .detach() would leave its gradient wrong"])
        for other, arr in call.arrays.items():
            if other != name and _overlap(call.arrays[name], arr):
                raise front_error("FRONT_ARG_ALIAS", f"the argument {other} shares memory with {name}, "
                                  "which the function writes", location=_loc(),
                                  expected=f"{name} apart from every other tensor argument",
                                  actual=f"{other} and {name} overlap",
                                  notes=[f"pass a copy (e.g. {other}.copy()), or write the result into a "
                                         "fresh array and copy it back"])


def _requires_grad(x: object) -> bool:
    if not is_torch(x) or not getattr(x, "requires_grad", False):
        return False
    import torch
    return bool(torch.is_grad_enabled())


_NAMES_READ: dict[types.CodeType, tuple[str, ...]] = {}
_HELPER_DEPTH = 4


def _names_read(code: types.CodeType) -> tuple[str, ...]:
    """Global names a code object and the code nested in it (comprehensions, lambdas, inner
    defs) may read; kept per code object, since a warm call asks again."""
    names = _NAMES_READ.get(code)
    if names is None:
        found = dict.fromkeys(code.co_names)
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                found.update(dict.fromkeys(_names_read(c)))
        names = _NAMES_READ[code] = tuple(found)
    return names


def _is_helper(v: object) -> bool:
    """A plain Python function of the user's (not openpto's): its reads are keyed too."""
    return isinstance(v, types.FunctionType) and not str(getattr(v, "__module__", "")).startswith("openpto")


def reads_key(fn: Callable) -> tuple:
    """What a compile depends on besides its arguments: the globals read by the function and by
    the code nested in it, the values of its closure cells, and the same for each plain Python
    helper function among them (to a depth of four). Hashable values key by value, others by
    identity: a module attribute (``cfg.SCALE``) or a container's contents are not seen."""
    out: list = []
    seen: set[int] = set()
    todo: list[tuple[Callable, int]] = [(fn, 0)]
    while todo:
        f, depth = todo.pop()
        if id(f) in seen:
            continue
        seen.add(id(f))
        g = f.__globals__
        values = [(n, g[n]) for n in _names_read(f.__code__) if n in g]
        for n, cell in zip(f.__code__.co_freevars, f.__closure__ or ()):
            try:
                values.append((n, cell.cell_contents))
            except ValueError:      # an empty cell
                pass
        for n, v in values:
            out.append((n, _keyed(v)))
            if depth < _HELPER_DEPTH and _is_helper(v):
                todo.append((v, depth + 1))
    return tuple(out)


class _Ident:
    """An unhashable value in a cache key, by identity. It holds the value, so the id cannot be
    reused by another object while the key lives (a bare id() could, after garbage collection)."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __hash__(self) -> int:
        return id(self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Ident) and other.value is self.value


def _keyed(v: object) -> object:
    try:
        hash(v)
        return v
    except TypeError:
        return _Ident(v)


def _spell(shape: tuple) -> tuple:
    return tuple("DYNAMIC" if isinstance(d, Dynamic) else d for d in shape)


def _compile(fn: Function, backend: str, profile: str, options: dict) -> Any:
    try:
        from .pipeline import compile_function
    except ImportError as e:
        raise front_error("FRONT_PIPELINE", "the frontend's compile pipeline is not built",
                          location=fn.loc.location() if fn.loc else None,
                          expected="openpto.frontend.pipeline.compile_function", actual=str(e),
                          notes=["JitFunction.interpret runs the tensor graph with the numpy interpreter"]) from None
    return compile_function(fn, backend=backend, profile=profile, options=options)


def jit(fn: Callable | None = None, *, backend: str = "llvm", profile: str = "cpu",
        **options: Any) -> Any:
    """Decorate a tensor function: ``@jit`` or ``@jit(backend=..., profile=..., executor=..., policy=...,
    **pipeline options)``."""
    if fn is None:
        return lambda f: JitFunction(f, backend, profile, options)
    if not callable(fn):
        raise front_error("FRONT_OPERAND", "jit decorates a function", location=_loc(),
                          expected="a function", actual=type(fn).__name__)
    return JitFunction(fn, backend, profile, options)


__all__ = ["jit", "JitFunction", "FrontendError"]
