"""The diagnostic codes the assembler raises, with what each means (for docs and tests).

Codes from ``isa.checks`` (STRUCT_MISSING_OPERAND, STRUCT_SHAPE, LEGAL_DTYPE, ...) are
raised by the verifier too; they are documented with the ISA.
"""
from __future__ import annotations

CODES: dict[str, str] = {
    "PARSE_CHAR": "a character that starts no token",
    "PARSE_TOKEN": "a token where the grammar expects another (unterminated brackets included)",
    "PARSE_TYPE": "a malformed type spelling",
    "PARSE_UNKNOWN_MNEMONIC": "a mnemonic that is neither an instruction, a scalar op nor control flow",
    "PARSE_ARITY": "the wrong number of results or operands for the instruction",
    "PARSE_SIGNATURE": "a type signature whose length does not match the operands or results",
    "PARSE_ATTR": "a malformed, duplicated or unknown attribute value",
    "PARSE_LITERAL": "a literal that does not fit its type",
    "PARSE_MISSING_TYPE": "a new value whose type is neither written nor inferable",
    "PARSE_KERNEL": "kernel structure: bare statements mixed with kernels, duplicate kernel names",
    "PARSE_DIRECTIVE": "an unknown directive, or .arg inside a region",
    "PARSE_NESTING": "regions nested deeper than the parser allows",
    "STRUCT_UNDEFINED": "use of a value that is not defined (or not visible) here",
    "STRUCT_REDEFINED": "a value defined twice, or a tile redeclared with another type",
    "STRUCT_TYPE_MISMATCH": "a value used with a type other than its definition's",
    "STRUCT_OPERAND_KIND": "an operand written in a form its kind does not take",
    "STRUCT_UNKNOWN_OPERAND": "an argument for an operand the instruction does not declare",
    "STRUCT_UNKNOWN_ATTR": "an attribute the instruction does not declare",
    "STRUCT_INDEX": "an index, bound or dynamic extent that is not an index/integer value",
    "STRUCT_SCALAR_TYPE": "a scalar op applied to operand types it does not take",
    "STRUCT_YIELD": "a yield in the wrong place, or with the wrong number or types of values",
    "STRUCT_REGION": "a region-carrying op with inconsistent results, iter_args or condition",
    "STRUCT_NAME": "a kernel or value name the text form cannot write (printing a module built in "
                   "Python: empty, or a character outside A-Z a-z 0-9 _ $ . -)",
    "STRUCT_CHECK_FAILED": "an instruction's own check raised unexpectedly (a declaration bug)",
    "STRUCT_OOB": "a global window that constant indices put outside the tensor's static shape "
                  "(or a nonzero index of a whole-tensor operand)",
    "STRUCT_LAYOUT": "a pto.subset window that splits a boxed (NZ/ZN/ZZ) tile's inner boxes or its whole "
                     "side (decision \"pto.subset\")",
    "PARSE_VECSCOPE": "an op the public pages allow only inside pto.vecscope (pto.tile_buf_addr), a region "
                      "openpto does not have",
    "STRUCT_UNINIT_READ": "a read of a local tile that no path has written before it (initialisation.py)",
    "STRUCT_PIPE_DIRECTION": "a TPUSH/TPOP whose tile is on a side of traffic its !pto.tpipe's direction "
                             "does not carry (an acc push into a vector -> cube pipe)",
    "STRUCT_PIPE_FLAGS": "two !pto.tpipe declarations of one kernel claiming a common hardware flag "
                         "(FlagID, FlagID + 1, and FlagID + 2, + 3 for both directions)",
    "STRUCT_PIPE_CONFIG": "a FIFO statement its !pto.tpipe cannot configure: FlagID or SlotNum written "
                          "otherwise, a tile larger than SlotSize, a split on an IsNoSplit pipe, two pipes, a "
                          "GlobalData form on a bidirectional pipe",
    "ORDER_WAIT_UNSET": "a wait_flag with no set_flag before it in program order (it would wait forever)",
    "ORDER_LOOP_UNBALANCED": "a loop body that changes flag counts, so its iterations synchronise differently",
    "ORDER_BRANCH_UNBALANCED": "the branches of an if leave different flag counts",
    "ORDER_FLAG_PENDING": "a kernel that ends with flags still set (the verifier; the ascend_sim backend reports "
                          "the flags a run leaves set)",
    "ORDER_RACE": "two accesses by different pipes to overlapping bytes, at least one a write, that no flag or "
                  "barrier orders, or by different blocks of one launch to overlapping global bytes, at least "
                  "one a write (found by the ascend_sim backend while the program runs)",
    "ORDER_DEADLOCK": "every unfinished pipe waits on a flag no running pipe will set, or the scalar unit waits on "
                      "one (found by the ascend_sim backend while the program runs)",
    "ORDER_FLAG_IDS": "the auto-sync pass (pto sync) cannot order a program's accesses within the profile's flag "
                      "ids: more pairs of one (src pipe, dst pipe) live at once than it has ids",
    "LEGAL_CAPACITY": "the tiles of a kernel (or one tile) exceed a location's capacity, or a constant TASSIGN / "
                      "alloc_tile address puts a tile past its buffer's end",
    "LEGAL_EVENT_ID": "a set_flag / wait_flag (record_event / wait_event) with a constant id past the ids the "
                      "profile has for its (src pipe, dst pipe) pair",
    "BCODE_MAGIC": "the data does not start with the bytecode magic b'PTOBC\\0'",
    "BCODE_VERSION": "a bytecode format version this openpto does not read (expected vs actual)",
    "BCODE_FLAGS": "header flags this format version does not define",
    "BCODE_TRUNCATED": "the file ends inside the header or before the length the header states",
    "BCODE_CHECKSUM": "the payload's CRC-32 differs from the header's (a damaged file)",
    "BCODE_CORRUPT": "a malformed payload: bad tag or index, bad UTF-8, impossible count, "
                     "misplaced or unread section bytes, nesting too deep",
    "BCODE_INSTRUCTION": "a mnemonic the instruction registry does not know",
    "BCODE_TYPE": "a type table entry that is not a canonical type spelling",
    "BCODE_NAME": "a kernel or value name PTO-AS cannot write (empty, a character outside "
                  "A-Z a-z 0-9 _ $ . -), or a kernel defined twice",
    "BCODE_TEXT": "a decoded module whose canonical text does not parse back to it (undefined or "
                  "mistyped values, literals their type cannot hold, missing operands, no kernel)",
    "BCODE_ENCODE": "a module holding something bytecode cannot represent (dump, not load)",
}
