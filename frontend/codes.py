"""The frontend's diagnostic codes and a helper that raises them at a Python source line.

One table, so docs/diagnostics.md and the code agree (tests/test_diagnostic_codes.py compares
them) and no call site invents a code of its own.
"""
from __future__ import annotations

from ..isa.diagnostics import FrontendError, Location

#: code -> meaning (the row docs/diagnostics.md shows for it)
FRONT_CODES: dict[str, str] = {
    "FRONT_ANNOTATION": (
        "a pto.Tensor annotation (or pto.tensor/pto.full shape) that is malformed: a dimension that is "
        "not a positive int, pto.DYNAMIC or pto.dynamic(name); or a parameter whose shape is needed "
        "without an argument to take it from"),
    "FRONT_ARG_COUNT": "a @jit function called with missing, extra or unknown arguments",
    "FRONT_ARG_ALIAS": (
        "a @jit function called with an array it writes (an output or inout parameter) that shares "
        "memory with another of its tensor arguments"),
    "FRONT_ARG_DTYPE": "a @jit function's array argument whose element type is not the annotated one",
    "FRONT_ARG_SHAPE": (
        "a @jit function's array argument whose rank or static dimensions differ from the annotation, or "
        "two arguments giving one named dynamic dimension different sizes"),
    "FRONT_ARG_TYPE": (
        "a @jit function's tensor argument that is not a numpy array (or torch CPU tensor), a "
        "compile-time argument that cannot be hashed, or a torch tensor requiring grad that the "
        "function writes"),
    "FRONT_ATTRIBUTE": (
        "an attribute a tensor of the function does not have (x.foo): the message lists those it has"),
    "FRONT_AXIS": (
        "a reduction, topk or transpose axis outside the tensor's rank, or a permutation that is not one"),
    "FRONT_BOUNDS": (
        "a view or assemble window that does not lie inside its tensor (at capture for static sizes, "
        "while interpreting for run-time ones)"),
    "FRONT_BROADCAST": (
        "operand shapes that numpy's broadcasting rules cannot join (a run-time dimension joins only "
        "itself or 1)"),
    "FRONT_DTYPE": (
        "operand element types an op does not accept: two tensors of different dtypes (cast one with "
        "pto.cast), a dtype outside the op's set, or a scalar the tensor's dtype cannot hold"),
    "FRONT_DTYPE_UNKNOWN": (
        "a dtype name or object the frontend does not know (pto.DT_* lists the known ones)"),
    "FRONT_FUNCTION": (
        "pto.function used twice, nested, or listing something that is not a parameter tensor; a declared"
        " output the function never writes"),
    "FRONT_LOOP": (
        "a pto.loop whose step is not positive (at capture when it is known, in the tensor-graph "
        "interpreter otherwise), whose bound is not an int or run-time value, or that is given a keyword "
        "it does not take (PyPTO's unroll_list, parallel, ...)"),
    "FRONT_NO_OUTPUT": (
        "a @jit function that returns nothing and writes no parameter: it computes nothing the caller "
        "sees"),
    "FRONT_OPERAND": (
        "an op given an operand of the wrong kind (not a tensor, int, float or run-time value; a scalar "
        "where a tensor is needed; a bad attribute value)"),
    "FRONT_OUTPUT_REBIND": (
        "a parameter the function writes (an output) rebound by assignment (out = x), which would "
        "silently leave the caller's array unchanged; write it with out[:] = x or pto.assemble"),
    "FRONT_OUTSIDE": "a frontend op called outside a @jit function being captured",
    "FRONT_PIPELINE": "a @jit function called before the compile pipeline (frontend/pipeline.py) exists",
    "FRONT_RESULT": (
        "a returned value that is not a tensor of the function, or differs from the return annotation's "
        "shape or dtype"),
    "FRONT_SHAPE": (
        "shapes an op cannot take: a reshape that changes the element count, a move or assemble whose "
        "source does not fit, matmul inner dimensions that differ, a view of another rank"),
    "FRONT_SYMBOLIC_BRANCH": (
        "a run-time value (a dynamic size, a loop index) asked for a Python truth value or int while the "
        "program is built"),
    "FRONT_TILE_RANK": (
        "an op tiled by the vector tile shapes set with set_vec_tile_shapes whose rank differs from "
        "theirs"),
    "FRONT_TILE_SHAPE": "a tile shape with an extent that is not a positive int",
    "FRONT_UNSUPPORTED": (
        "Python the frontend cannot capture in a @jit function (yield, await, global, nonlocal), or a "
        "Python operator or numpy function with no tensor op (x ** 3, x // y, x % y, np.sin(x)): the "
        "message names what to write instead"),
    "FRONT_UNWRITTEN_READ": "a local pto.tensor read before anything has written it",
    # raised by the pipeline (tiling, partition, lowering, running)
    "FRONT_CHECK": (
        "Stages.check: the compiled kernels' outputs disagree with the tensor-graph interpreter on random"
        " inputs"),
    "FRONT_LEGAL": (
        "a generated kernel the profile or backend refuses (an element type, alignment or form an "
        "instruction does not take there), told at the source line of the op that needs it; the "
        "kernel's diagnostic is a note"),
    "FRONT_LOOP_STEP": "a pto.loop whose step is not positive when the compiled function runs",
    "FRONT_MATMUL": (
        "a matmul the pipeline cannot tile (a transpose flag on an operand with a batch, or on a window)"),
    "FRONT_OPTION": "an unknown pipeline option or stage name, or a bad value for one",
    "FRONT_RUN_ARGUMENT": (
        "a compiled function called without an array for a tensor, or without a value for a run-time size"),
    "FRONT_TILE_BROADCAST": (
        "an elementwise operand the tiler cannot read whole, per row or per column (the batch pass makes "
        "every numpy broadcast such groups first: only a hand-built tile graph meets it)"),
    "FRONT_UNSUPPORTED_OP": (
        "an op the pipeline has no tiling or lowering rule for (named, with those it has)"),
    "FRONT_VIEW": "a view, assemble window or reshape whose rows are not consecutive rows of its tensor",
}


def front_error(code: str, message: str, *, location: Location | None = None,
                expected: object = None, actual: object = None,
                notes: list[str] | None = None) -> FrontendError:
    """A FrontendError for a code of the table (a KeyError for an unknown one is a bug here)."""
    FRONT_CODES[code]  # noqa: B018 - an unlisted code must fail loudly in tests
    return FrontendError(code, message, location=location, expected=expected, actual=actual, notes=notes)


def relocated(err: FrontendError, location: Location) -> FrontendError:
    """The same diagnostic at ``location`` (rules raise without one; capture knows the line)."""
    new = FrontendError(err.code, err.message, location=location, expected=err.expected,
                        actual=err.actual, notes=err.notes)
    return new


def has_location(err: FrontendError) -> bool:
    return err.location.line is not None
