"""Every point where the public PTO ISA is implementation-defined or its targets disagree,
and what openpto decided. Rendered to docs/isa/decisions.md by the doc generator."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Decision:
    topic: str
    public: str   # what the public ISA says, or how its targets disagree
    choice: str   # what openpto specifies
    reason: str


DECISIONS: tuple[Decision, ...] = (
    Decision("Instruction inventory and versioning",
             "115 per-op pages, a 116-entry manifest (adds TSETHF32MODE/TSETTF32MODE, lacks TROWPROD), "
             "113 in the manual appendix, extra header-only ops (TDEQUANT, TPUSH/TPOP, TPACK).",
             "The 115 documented instructions plus TSETHF32MODE and TSETTF32MODE, plus the manual sync "
             "extension (SET_FLAG, WAIT_FLAG, PIPE_BARRIER). Spec version 1.0, reported by `pto isa --json`.",
             "Pages are the manual's first authority; header-only ops have no normative text to follow."),
    Decision("Outside the valid region",
             "Unspecified; the CPU simulator's TLOAD pads the whole tile, NPU vector ops may write whole "
             "32-byte blocks.",
             "Unspecified for every instruction except TFILLPAD*, which defines the whole static tile. "
             "TLOAD transfers only the valid region and does not pad. The reference backend poisons "
             "everything outside the valid region on each write; conformance compares valid regions only.",
             "Poisoning catches programs that rely on what no target guarantees."),
    Decision("Valid-region compatibility",
             "Assumed, not validated; A2/A3 assert equal regions for unary ops, A5 checks only columns.",
             "The iteration domain is the destination's valid region (declared per instruction otherwise: "
             "reductions, TSTORE, TINSERT, TTRANS, TMOV use the source's). Every source's valid region must "
             "cover the domain: the verifier rejects static violations (STRUCT_VALID_REGION) and semantics "
             "raise RUNTIME_INVALID_READ for dynamic ones.",
             "Reading outside a valid region reads unspecified data; rejecting it is the only portable choice."),
    Decision("Predicate (mask) representation",
             "Packed u8 bits on A2/A3, packed u32 on A5 (row-aligned, LSB-first), unpacked input-typed 0/1 "
             "on the CPU simulator; TSELS is per-element in the docs and whole-tile on the CPU simulator.",
             "Masks are i1 tiles, one logical boolean per element; TCMP/TCMPS write them and TSEL/TSELS read "
             "them per element. In global memory an i1 element is one byte, 0 or 1. Packing is a backend's "
             "private business.",
             "A logical mask is the only encoding every backend can produce and consume identically."),
    Decision("Float min/max and NaN",
             "NaN handling unspecified.",
             "IEEE 754-2019 minimum/maximum: NaN propagates, -0 < +0; which NaN (its payload) is "
             "unspecified, in every form (tile-tile, tile-scalar, expand, reduction).",
             "Deterministic, vectorisable on CPU and GPU, matches numpy minimum/maximum for NaN; "
             "payloads differ between targets (x86 keeps an operand's, GPUs give a canonical NaN)."),
    Decision("Float equality",
             "The CPU simulator's TCMPS EQ/NE use |a-b| < 1e-9; TCMP is exact.",
             "All compares are exact IEEE comparisons; NaN is unordered (only NE holds); -0 == +0.",
             "A tolerance inside a compare is not portable and not what users expect."),
    Decision("TREM vs TFMOD",
             "A2/A3 TREM is floored (a - floor(a/b)*b); the CPU simulator's TREM truncates.",
             "TREM is floored (sign of the divisor, numpy.remainder); TFMOD is truncated (sign of the "
             "dividend, C fmod). Integer x rem 0 = x.",
             "Follows the hardware, and gives the two mnemonics distinct meanings."),
    Decision("Shifts",
             "Arithmetic vs logical right shift of signed values unstated; counts >= width unstated.",
             "TSHR is arithmetic for signed, logical for unsigned types. The count is read as unsigned; "
             "a count >= the bit width gives 0 for left shifts and logical right shifts, the sign fill "
             "(0 or -1) for arithmetic right shifts.",
             "Total and cheap to implement with a compare and select on every backend."),
    Decision("Integer overflow and division",
             "Integer division rounding and division by zero are target-defined; the CPU simulator asserts.",
             "Integers wrap (two's complement). Division truncates toward zero; x / 0 = -1 (all bits set, "
             "also for unsigned), MIN / -1 = MIN; x rem 0 = x (RISC-V rules).",
             "A defined result avoids traps and undefined behaviour in generated C and LLVM code."),
    Decision("Transcendental accuracy and domains",
             "Domain errors target-defined; CPU asserts on 0 for TRECIP/TRSQRT.",
             "C99 Annex F special values (exp(-inf)=0, log(0)=-inf, log(x<0)=NaN, sqrt(-0)=-0, "
             "rsqrt(±0)=±inf, recip(±0)=±inf). TEXP, TLOG, TRSQRT: within 2 ulp; TSQRT, TRECIP, TDIV: "
             "correctly rounded. The reference computes in f64 and rounds once.",
             "Bounds every backend can meet with libm or a short polynomial; special values are exact."),
    Decision("Denormals",
             "Not stated; NPUs may flush.",
             "Denormal inputs and results are honoured (IEEE gradual underflow) on every profile.",
             "The reference, LLVM and CUDA (without -ftz) all honour them by default."),
    Decision("Narrow-float arithmetic",
             "f16/bf16 intermediate precision unstated (is a*b+c rounded once or twice?).",
             "f16, bf16 and fp8 operands are widened to f32, each instruction computes in f32 and rounds its "
             "result once to the destination type with round-to-nearest-even. Multi-operation instructions "
             "(TADDC, TSUBC, TADDSC, TSUBSC) round each f32 step, then once to the narrow type.",
             "For one add/sub/mul/div/sqrt this equals a correctly rounded narrow result (f32 has more "
             "than 2p+2 bits for p = 11 and 8)."),
    Decision("TCVT rounding and saturation",
             "No legality table for type pairs; rounding mode applied only to float->int on the CPU "
             "simulator; default saturation differs per pair on A2/A3.",
             "Every pair of element types converts. roundMode (default RINT; NONE means RINT) applies to "
             "every inexact conversion, float narrowing and int->float included; ODD is round-to-odd. "
             "satMode defaults to ON for every pair: clamp to the integer range, NaN -> 0; OFF wraps the "
             "rounded integer modulo 2^bits. Float narrowing overflow follows IEEE for the rounding mode.",
             "One uniform rule per mode instead of a per-pair table users must look up."),
    Decision("Accumulation order and precision",
             "Reduction and matmul order target-defined; the CPU simulator accumulates TROWSUM f16 in f32 "
             "but TCOLSUM in f16; TCOLSUM isBinary picks tree vs sequential.",
             "Reductions and matmul are order-independent contracts, accumulated in at least f32 (f16, bf16 "
             "and fp8 inputs widen to f32; an f16 accumulator does not conform): in f64, |result - exact| <= "
             "g * S + m * d32 plus one rounding to the output dtype, S = sum|terms| (|exact| for products), "
             "m = n + 2, g = m * 2**-24 / (1 - m * 2**-24), d32 f32's smallest denormal (the ``sum`` "
             "numerics). A finite exact result gives a finite one unless that bound reaches the output's "
             "overflow threshold; NaN exactly where the exact result is NaN; only where an f32 accumulator "
             "may leave its range in some order is the result order-dependent. The reference accumulates "
             "in f64 and rounds once. isBinary is accepted and does not change the contract. Integer sums wrap.",
             "Lets backends vectorise and tile reductions freely while staying testable."),
    Decision("Indexed memory access out of range",
             "MGATHER/MSCATTER OOB policy Undefined/Clamp/Wrap/Zero (A5); TGATHER CPU returns 0; "
             "TSCATTER row index vs flat offset differs between CPU and A2/A3 goldens.",
             "MGATHER/MSCATTER take an oobMode attribute: ERROR (default, RUNTIME_OOB before anything is "
             "written), CLAMP, WRAP, ZERO (gather reads 0, scatter skips); the public 'Undefined' mode is "
             "not offered. Tile-indexed TGATHER, TGATHERB and TSCATTER always raise RUNTIME_OOB. TSCATTER "
             "indexes destination rows. Duplicate scatter targets apply one at a time in row-major order: "
             "the last writer wins, or each contribution combines under the atomic mode.",
             "Silent out-of-range accesses are the bugs a reference must catch; explicit modes keep the "
             "hardware's cheaper behaviours available."),
    Decision("Sort record format and order",
             "TSORT32 stores the index by bit pattern on hardware and by numeric conversion on the CPU "
             "simulator; NaN order and stability unstated.",
             "Descending by value, NaN before +inf, -0 == +0; equal values go in ascending order of their "
             "u32 idx value (the current page's 'ties broken by smaller index first' and the CPU simulator's "
             "comparator), equal values with equal idx in column order. Records hold the u32 index by bit "
             "reinterpretation (hardware layout). TMRGSORT ties: the earlier list wins.",
             "Bit-compatible with hardware records and deterministic for every input."),
    Decision("Aliasing and TRESHAPE",
             "TRESHAPE aliases on A2/A3 and copies on the CPU simulator; in-place legality per op varies.",
             "TRESHAPE is a byte reinterpretation in each layout's physical order with value semantics (a "
             "copy); a backend may alias when it can prove the source is dead. In-place use (dst == src) "
             "is legal for elementwise instructions.",
             "Value semantics are the same on every backend; aliasing is an optimisation."),
    Decision("Physical layouts",
             "ND/DN/NZ/ZN/ZZ offset formulas define byte order on hardware.",
             "Tiles are logical 2-D arrays; layouts are legality facts and define the byte order only for "
             "instructions that reinterpret bytes (TRESHAPE, TGATHERB). Fractal boxes: 16 x (32 / itemsize), "
             "16 x 16 for acc tiles.",
             "Functional backends keep logical arrays; only byte-level ops and the Ascend simulator need "
             "the physical order."),
    Decision("Sync semantics",
             "Flag counter semantics and capacity never stated; 8 event ids per pipe pair; A2/A3 need "
             "pipe_barrier(PIPE_V) between dependent vector ops.",
             "Flags are counting semaphores per (src pipe, dst pipe, id), ids 0..7. Functional backends "
             "execute in program order and only validate sync instructions; the Ascend simulator gives "
             "them timing meaning and reports waits that can never be satisfied.",
             "Counting semantics make the ping-pong pre-set/drain pattern of real kernels well defined."),
    Decision("Pipe assignment and cost model",
             "An op-to-pipe table exists; no cycle costs.",
             "Each declaration names its pipe (a function of operand locations for TMOV, TSTORE, TEXTRACT, "
             "TINSERT). Cycle costs belong to the Ascend simulator's profile parameters.",
             "Keeps legality and timing facts in one place each."),
    Decision("Legality profiles",
             "Per-target static_asserts; dtype tables in per-op pages.",
             "Profiles cpu (permissive), a2, a3 (= a2), a5. Each declaration holds its architecture-wide "
             "dtype rule and narrowed rules for a2/a3/a5 from the public tables; profiles hold capacities, "
             "layouts per location, alignment and pipes. Diagnostics use LEGAL_* codes.",
             "One declaration answers every legality question for every target."),
    Decision("PTO-AS concrete syntax",
             "Three dialects (synchronous, IR level 1 SSA, IR level 2 DPS), two attribute spellings, no "
             "region syntax in the grammar.",
             "Canonical types `!pto.tile<RxCxT, loc=.., layout=.., valid=RxC, pad=..>` and "
             "`!pto.memref<...>`; attributes `#pto.cmp<GT>`; the public forms are accepted by the parser.",
             "One printed form, every published form readable."),
    Decision("Global tensors",
             "5-D shape/stride with a collapse rule (dims 0..3 into rows for ND).",
             "Global tensors have rank 1..5 with element strides; an access `%g[i0, ..., r, c]` selects a "
             "matrix with the leading indices and a 2-D window at (r, c) whose extent is the tile's valid "
             "region.",
             "The same window rule for every rank avoids the collapse rule's shape coupling."),
    Decision("Multi-core / MPMD",
             "block_idx/subblock ids and task dispatch only sketched.",
             "Kernels read their task coordinates through scalar extension ops (get_block_idx, "
             "get_block_num); the runtime defines dispatch.",
             "The runtime contract is ours to define; the ISA only exposes ids."),
    Decision("TDIVS operand order",
             "Two overloads told apart by operand order: tile / scalar and scalar / tile.",
             "One declaration with a `reverse` attribute (default false); the scalar-first spelling means "
             "reverse = true.",
             "One declaration, one printed form, no ambiguity for the verifier."),
    Decision("Scalar operands",
             "The scalar has the tile's element type.",
             "A scalar literal is converted to the tile dtype once before the operation (floats round to "
             "nearest even and may overflow to ±inf; integers wrap, so -1 on u8 is 255).",
             "One conversion rule for every tile-scalar instruction."),
    Decision("Matrix multiply numerics and forms",
             "The CPU simulator accumulates sequentially in the acc dtype; NPU order and precision are "
             "target-defined; TGEMV's K is B's valid rows; MX scale semantics target-defined.",
             "C = sum_k A[i,k] * B[k,j] (+ acc_in, + bias) with the 'sum' contract; the reference forms "
             "exact products and sums in f64 and rounds once. i8 x i8 accumulates in i32 and wraps. TGEMV "
             "uses K = A.valid_cols like TMATMUL and requires B to cover K rows. MX scales are u8 E8M0 "
             "exponents (2^(e-127), 255 = NaN), one per 32 elements of K.",
             "The same contract for every matrix form; exact references make tolerance checks meaningful."),
    Decision("Reductions over empty lines",
             "A2/A3 assert non-empty input; A5 returns early.",
             "An empty valid region reduces to the identity: sum 0, product 1, max -inf (integer minimum), "
             "min +inf (integer maximum).",
             "Total semantics; the identity is what any tree or loop reduction naturally yields."),
    Decision("Sources of TQUANT and scratch operands",
             "A2/A3 TQUANT overwrites its f32 source; several ops take a tmp tile some targets use.",
             "Sources are never modified (a backend copies when it needs scratch); optional tmp operands are "
             "accepted for compatibility and never read or written.",
             "Programs stay portable across targets with and without scratch needs."),
    Decision("int8 PadValue::Min",
             "0xff (-1) on NPUs (looks like a bug), -128 on the CPU simulator.",
             "pad=min is the dtype's minimum (-128 for i8, -inf for floats); pad=max the maximum (+inf).",
             "The evident intent of the enum."),
    Decision("Integer indices, extents and loop counters",
             "Offsets, extents and loop bounds are `index` values; MLIR leaves an `scf.for` whose induction "
             "variable overflows undefined; narrower integer types in these places are not discussed.",
             "Every index-like value (memory-operand indices, `valid_row`/`valid_col`, index operands such as "
             "TEXTRACT's offsets or TTRI's diagonal, loop bounds and steps) may have any integer type and "
             "means its natural value: `iN` signed, `uN` unsigned, `index` signed 64-bit (u8 255 is 255, "
             "i8 -1 is -1). Range checks are exact: a window that does not fit is RUNTIME_OOB however large "
             "its start. `scf.for %iv = lb to ub step s : T` runs `%iv` over range(lb, ub, s) of T's natural "
             "values and ends when the next value would reach ub or leave T (it never wraps); a step <= 0 "
             "(0 for unsigned T) is RUNTIME_LOOP_STEP.",
             "The reference computes with exact integers; a backend must not turn a wild offset into a "
             "wrapped address or a counter near its type's maximum into an endless loop."),
    Decision("Arg-reductions: order, index dtype and forms",
             "TROWARGMAX/TROWARGMIN/TCOLARGMAX/TCOLARGMIN give the position of each line's extreme, "
             "optionally with the value; ties, NaN and signed zeros are not stated (the CPU simulator keeps "
             "the first of equal values and never lets a later NaN win); the index is i32/u32, except that "
             "A2/A3/A5's column value+index form wants 16-bit indices for 2-byte sources; A2/A3/A5 assert a "
             "non-empty source; the tmp tile is required in C++ and omitted in the synchronous form.",
             "One order for every form: NaN above every number in both directions (the first NaN of a line "
             "is its argmax and its argmin, as NaN propagates through TROWMAX/TROWMIN), then -0 < +0, equal "
             "values keep the smallest index. The value output (dstVal, optional, first among the outputs as "
             "the public pages print it) is the chosen element bit for bit. Index dtypes follow the form "
             "(decision 'Arg-reduction index widths'); column forms drop 8-bit sources on a5. An empty source "
             "is RUNTIME_VALID_REGION (STRUCT_VALID_REGION when static). tmp is optional and never touched.",
             "The index always names the value written beside it and agrees with the value reductions "
             "(decision 5); one index width keeps programs portable between the forms and targets."),
    Decision("TPARTARGMAX / TPARTARGMIN selection",
             "src0 wins when src0Val > src1Val (< for min), else src1: equal values pick src1; NaN and "
             "signed zeros unstated (a NaN in src0 loses to src1 under the C++ compare).",
             "The public rule for ordered values (equal values pick src1's value and index), with NaN "
             "propagating: a NaN value wins with its index (src0's when both are NaN), and -0 < +0. Where "
             "only one source is valid its value and index are copied; value and index tiles of a pair must "
             "share a valid region.",
             "Keeps the pair consistent with TPARTMAX/TPARTMIN (decision 5) while following the public tie rule."),
    Decision("Fused multiply-add and accumulating destinations",
             "TAXPY (vaxpy), TFUSEDMULADD (vmadd), TFUSEDMULADDRELU (vmaddrelu; vmadd + vrelu on A5) and "
             "TMULADDDST (vmla; vmula on A5) read their destination; the vector pages call vaxpy and vmula "
             "single fused operations but state no rounding; TFUSEDMULADDRELU's page prints the formula "
             "without the ReLU; the SSA form `%dst = op %src0, %src1` hides that dst is read.",
             "Fused: the exact a * b + c is rounded once to f32 (round to nearest even), then once more to an "
             "f16/bf16 destination (f16 and bf16 products are exact in f32). dst is an inout operand: the DPS "
             "form is the public `op ins(%src0, %src1) outs(%dst)`, the synchronous form `op %dst, %src0, "
             "%src1`; a source may be dst itself. TFUSEDMULADDRELU applies ReLU to the fused result. TAXPY "
             "takes an f16 src0 (and scalar) with an f32 dst, as its public table says.",
             "One rounding is what the public pages call fused and what FMA hardware gives; the f32 step "
             "before a narrow store is the rule of every float instruction (decision 12)."),
    Decision("ReLU and saturating narrowing in the fused instructions",
             "TSUBRELU, TADDRELUCONV and TADDDEQRELU do not say what ReLU does with NaN or -0; the "
             "conversions 'saturate' without saying how inf or NaN convert; TADDRELUCONV's i16 sum and "
             "TADDDEQRELU's i32 sum may overflow; TADDDEQRELU's A2/A3 sequence scales by 2**-17, deqScale, "
             "2**17 in turn.",
             "ReLU as TRELU: NaN stays NaN, -0 and negatives give +0. Integer sums wrap in the source width "
             "before the ReLU. Conversion to f16 rounds to nearest even and clamps finite values beyond the "
             "range to 65504 (+inf and NaN stay); conversion to i8 rounds to nearest even, clamps to "
             "[-128, 127] and gives 0 for NaN (as TCVT's saturation). TADDDEQRELU is f16(relu(f32(sum) * "
             "deqScale)) with the product rounded once to f32; its f16 result equals the 2**-17 sequence's. "
             "The tmp operand is optional and never read or written (decision 29).",
             "Consistent with TRELU, TCVT and the integer wrap rule; saturating only finite overflow keeps "
             "infinities visible."),
    Decision("TPAIRREDUCESUM odd widths",
             "The page and the CPU simulator add an odd row's last element to 0 and zero the upper half of "
             "each destination row; the A2/A3 implementation drops the last element and leaves the upper "
             "half untouched.",
             "dst[i, k] = src[i, 2k] + src[i, 2k + 1] for k < ceil(c / 2), the missing partner being +0; "
             "+0 for the rest of dst's valid row (c = dst.valid_cols). Each sum is computed in f32 and "
             "rounded once.",
             "The page is the first authority; the A2/A3 behaviour would leave defined elements undefined."),
    Decision("TPOW and TPOWS",
             "Floats are computed as exp(ln|base| * exp) with sign fix-ups on NPUs and with C pow on the CPU "
             "simulator; no accuracy is stated (DEFAULT is 'lower precision'); integer powers use repeated "
             "multiplication, with 0 ** 0 = 1 and a negative exponent giving 0 except for base +-1; tmp is "
             "required in C++ and absent from the grouped page's assembly.",
             "Floats: IEEE 754 / C99 Annex F pow special values exactly (pow(x, 0) = 1, pow(1, y) = 1, "
             "pow(-1, ±inf) = 1, negative base with non-integer exponent = NaN, zero bases by the sign and "
             "parity of the exponent), otherwise within 2 ulp of the correctly rounded result; the reference "
             "evaluates pow in f64 and rounds once. Integers wrap (modulo 2**bits); exp = 0 gives 1; a "
             "negative exponent gives 1 for base 1, ±1 for base -1 by parity, else 0 (unsigned exponents "
             "are never negative). TPOWS converts its exponent to the tile dtype. tmp is optional and never "
             "touched; PrecisionType is accepted and held to the same contract (as the 'Precision modes' "
             "decision).",
             "The special values every libm agrees on, a bound libm pow meets with margin, and the public "
             "integer rules, which both public implementations share."),
    Decision("Rearrangement: TCONCAT, TINTERLEAVE, TDEINTERLEAVE",
             "TCONCAT: A2/A3 need src0.valid_cols + src1.valid_cols <= dst's static columns, A5 and the CPU "
             "simulator equality with dst.valid_cols; the indexed forms read per-row byte counts that the CPU "
             "simulator divides by the index element's size. TINTERLEAVE/TDEINTERLEAVE: A5 asserts even valid "
             "columns; the C++ order is (dst1, dst0, src1, src0); no A2/A3 implementation.",
             "TCONCAT: basic form dst.valid_cols == src0.valid_cols + src1.valid_cols, sources' rows "
             "cover dst's; the indexed forms as decision 'TCONCAT indexed forms'. TINTERLEAVE/TDEINTERLEAVE: any width (the "
             "formulas are defined for odd C), the assembly order (%dst0, %dst1 = op %src0[, %src1]); the "
             "single-source TDEINTERLEAVE names its source src0 and needs it to cover 2 * C columns; profiles "
             "cpu and a5 only.",
             "Equality is the rule every implementation meets; "
             "total formulas over an assertion the CPU simulator does not make."),
    Decision("THISTOGRAM counts and filters",
             "The page's formula gives plain per-byte-value counts, the CPU simulator writes running sums; "
             "the formula indexes the u32 filter bytes per source row (idx[r, m]) while the table and the "
             "CPU simulator use one filter byte per idx row (idx[m, 0]) for every source row.",
             "Plain counts, dst overwritten (256 u32 bins per source row, dst.valid_cols == 256). u16: byte 0 "
             "keeps elements whose byte 1 equals idx[i, 0]; u32: byte k keeps elements whose bytes 3 .. k + 1 "
             "equal idx[0, 0], idx[1, 0], ...; the most significant byte filters nothing and idx is optional "
             "there. The byte is the attribute `byte`, an enumeration spelled as the public HistByte "
             "(#pto.hist_byte<BYTE_0> .. <BYTE_3>; <1> or \"1\" name a member by number; a bare integer is "
             "STRUCT_ATTR_VALUE), so conformance sweeps every byte.",
             "The page's formula is the first authority; the filter layout is what the table and the only "
             "readable implementation agree on."),
    Decision("TDEQUANT parameters",
             "dst = (src - offset) * scale with per-row f32 parameters; the NPU targets broadcast column 0 "
             "of each parameter row, the CPU simulator reads column min(j, scale.valid_cols - 1).",
             "Column 0 of each row only, scale and offset with exactly dst.valid_rows valid rows; the "
             "subtraction and the multiplication are each rounded to f32 (no fused multiply-add), so the "
             "result is exact (bit-identical).",
             "What every NPU target computes; the simulator agrees for the documented one-column form."),
    Decision("Pre-quantisation state",
             "SET_QUANT_SCALAR packs an f32 and a sign bit (bit 46) into a register; SET_QUANT_VECTOR writes "
             "a scaling tile's address; both encodings are implementation-defined.",
             "State instructions recording state['quant_scalar'] = {'scale': f32, 'out_type': QuantOutType} "
             "and state['quant_vector'] = {'fp': the tile itself}; a consumer reads fp's values when it runs. "
             "OutType is an attribute #pto.out_type<I8|U8|I16|F16|BF16>; fp is a 1 x N f32 scaling tile. "
             "The public reader of the state is TPUSH with a pre-quantising fixpipe configuration "
             "(FixpipeParams' quant mode): openpto's TPUSH Quant attribute, which reads the state when the "
             "push runs (decision 'Pre-quantising TPUSH'; RUNTIME_QUANT_STATE where the CPU model uses 1.0 "
             "for a scalar never set); the TMOV/TEXTRACT/TINSERT/TSTORE scalar forms take the scale as an "
             "operand (decision 'Scalar pre-quantisation forms').",
             "Values instead of register bits keep consumers portable; recording the tile keeps the "
             "address semantics."),
    Decision("TQUANT_DN (MX quantisation along rows)",
             "Groups of 32 rows, OCP or NV shared exponent, FP8 or FP4 outputs; rows must be multiples of "
             "32 (64 interleaved); NaN and partial-group behaviour only in the CPU simulator's code.",
             "f8e4m3 output only (the FP4 algorithms need float4_e2m1x2, not declared yet); the group "
             "maximum ignores NaN; OCP e = exponent(max) - 8 floored at 0; NV e from f32(max * f32(1/448)) "
             "rounded up; values saturate to ±448, NaN is written 0x7F; a last group shorter than 32 rows is "
             "accepted; the max/scaling scratch tiles are never accessed.",
             "The simulator's algorithm is the only executable statement; saturation and one NaN code make "
             "results bit-exact."),
    Decision("Cube-vector FIFO (TPUSH, TPOP, TALLOC, TFREE)",
             "A TPipe<FlagID, Dir, SlotSize, SlotNum> ring between cube and vector cores with wait/record "
             "flags; no PTO-AS spelling (a !pto.tpipe operand in IR); split modes per target; the CPU "
             "simulator has no implementation; a wait that can never be satisfied hangs.",
             "The FIFO is named by the attributes FlagID (0..15) and SlotNum (1..16, default 2; the first use "
             "in a run fixes it, RUNTIME_FIFO_CONFIG after). Functional backends keep one queue per FlagID "
             "per block, run producer and consumer in program order and fault instead of waiting: "
             "RUNTIME_FIFO_FULL (push/alloc with every slot taken), RUNTIME_FIFO_EMPTY (pop with nothing "
             "committed), RUNTIME_FIFO_STATE (GlobalData TPUSH without TALLOC, TFREE of a global without a "
             "held slot), RUNTIME_FIFO_MISMATCH (a tile popped from a slot of another dtype or valid shape, "
             "or committed without a tile). A slot holds a copy of the pushed valid region; TPOP of a tile "
             "frees it, TFREE without operands does nothing; the GlobalData forms take a whole-tensor slot "
             "view that is never read or written. Split modes as decision 'FIFO split modes'.",
             "A sequential run cannot wait for another core, so every wait that would block is a program "
             "error; queue semantics keep both backends bit-identical."),
    Decision("SYNCALL on functional backends",
             "A barrier across the launch's cores (Hard: FFTS flags, Soft: a GM counter); a no-op in the "
             "auto build; mismatched participation deadlocks.",
             "Blocks run to completion one after another (or on threads without interleaving at barriers), "
             "so SYNCALL validates (Soft needs gmWorkspace, usedCores >= 0: RUNTIME_BAD_CONFIG) and has no "
             "effect; programs that exchange data between blocks across it are not portable to functional "
             "backends. Mode and CoreType are attributes #pto.syncall_mode<HARD|SOFT>, "
             "#pto.sync_core<AIV_ONLY|AIC_ONLY|MIX>.",
             "Matches the public auto-mode behaviour; a real barrier would deadlock the sequential reference."),
    Decision("TRANDOM generator",
             "A Philox-like counter cipher (key 2 x u32, counter 4 x u32, 7 or 10 rounds); the A5 kernel and "
             "the CPU simulator lay words out differently and advance counters per row in different, "
             "width-dependent ways.",
             "Philox-4x32-R exactly (multipliers 0xD2511F53, 0xCD9E8D57; key increments 0x9E3779B9, "
             "0xBB67AE85); key = key[0, 0..1], counter = counter[0, 0..3] as a 128-bit little-endian word "
             "number. Element k of the valid region in row-major order gets word k mod 4 of the block of "
             "counter + floor(k / 4) (mod 2**128); the counter tile is not advanced; i32 takes the bits; "
             "Rounds is an attribute (7 or 10, default 10); cpu and a5 only.",
             "One stream over the valid region is reproducible on every backend and equals the A5 order "
             "when valid_cols is a multiple of 256."),
    Decision("TSUBVIEW, TALIAS, TGET_SCALE_ADDR",
             "TSUBVIEW and TALIAS make views sharing storage (writes through one visible in the other); "
             "TGET_SCALE_ADDR binds the scale tile at the data tile's address >> SHIFT_MX_ADDR (A5).",
             "TSUBVIEW (dst[i, j] = src[rowIdx + i, colIdx + j], window inside src's valid region, else "
             "RUNTIME_OOB) and TALIAS (same static shape, dst's valid region inside src's) copy bits when they "
             "run, as TRESHAPE (decision 17): later writes are not shared. TGET_SCALE_ADDR is an address "
             "binding like TASSIGN: nothing is read or written, dst's contents are unspecified; cpu and a5.",
             "Value semantics are the same on every backend; aliasing is a backend's optimisation."),
    Decision("Public config mnemonics",
             "SETFMATRIX, SET_IMG2COL_RPT, SET_IMG2COL_PADDING, SETHF32MODE, SETTF32MODE; SETFMATRIX and "
             "the IMG2COL pair take a config tile (!pto.fmatrix_config, ConvTileData).",
             "The public names are the declared mnemonics (listed by pto isa, printed by the assembler); "
             "openpto's earlier TSETFMATRIX, TSET_IMG2COL_RPT, TSET_IMG2COL_PADDING, TSETHF32MODE and "
             "TSETTF32MODE stay accepted as aliases (registry.RENAMED). SETFMATRIX and the IMG2COL pair keep "
             "their scalar fields and also take the public config tile (decision 'Config tiles').",
             "Programs in the public spelling assemble; existing programs keep working."),
    Decision("Precision modes",
             "TDIV, TDIVS, TEXP, TLOG, TSQRT, TRSQRT, TRECIP, TREM, TREMS, TFMOD, TFMODS, TROWEXPANDDIV and "
             "TCOLEXPANDDIV take a `PrecisionType` template argument (DivAlgorithm, ExpAlgorithm, ...: "
             "DEFAULT = 'faster but with lower precision', HIGH_PRECISION = 'high precision, slower'); it "
             "is honoured on A5 only (ignored on A2/A3; TREM and TFMODS: f32 only); no page bounds either "
             "value's error.",
             "An optional attribute `PrecisionType` (#pto.precision<DEFAULT> | <HIGH_PRECISION>, default "
             "DEFAULT) on each of them, legal on every profile and dtype. Both values are held to the "
             "instruction's one numerics contract (correctly rounded for division, reciprocal, square root "
             "and remainders; 2 ulp for exp, log and rsqrt), so the attribute never changes a specified "
             "result; the reference and llvm backends compute the same way for both.",
             "A DEFAULT contract looser than HIGH_PRECISION would need a bound the public pages do not "
             "give; an invented bound would either fail real hardware or test nothing. Holding DEFAULT to "
             "the tight contract keeps programs portable, and HIGH_PRECISION is at least as tight as "
             "before."),
    Decision("Public assembly spellings: destination first and signature lists",
             "The syntax page gives three forms, PTO-AS `tadd %dst, %src0, %src1 : !pto.tile<f32, 16, 16>` "
             "(one type, destination first), SSA `%dst = pto.tadd ... : (...) -> ...` and DPS `ins(...) "
             "outs(...)`, and calls them equivalent; per-op pages also print `: T, T -> T`, `: T, f32` (no "
             "arrow), `: T -> U` for a tile and a scalar, `ins(%a, %b {attrs} : T, T)`, `ins(%a, %b : (T, "
             "T))` and the BNF's `ins(%a : T, %b : T)`. Which operands are destinations when optional "
             "outputs exist, and what a lone or short type list types, are not said.",
             "A tile statement without results whose instruction has out tiles is destination first: its "
             "leading operands are the out tiles, split where both halves fit the declaration; two fitting "
             "splits are PARSE_ARITY (write the SSA form). A bare `: T` types the destination(s) / "
             "result(s); a list as long as all written operands types each in written order; a bare list "
             "without an arrow and longer than one types the operands; an unparenthesised input list may "
             "type only the leading operands, a parenthesised one must be complete; one operand typed "
             "twice differently is PARSE_SIGNATURE; DPS per-item types and a trailing list cannot be mixed "
             "(PARSE_SIGNATURE). Everything prints in the canonical SSA form with the full signature.",
             "Every public spelling reads as the program it prints; where the text admits two programs, a "
             "diagnostic instead of a guess."),
    Decision("Public attribute names, quoted values and hex immediates",
             'Attributes appear as `#cmp=gt`, `{cmp = "lt"}`, `{rmode = #pto.round_mode<CAST_RINT>}`, '
             '`#pto<round_mode xx>`, `rnd` = `rne`/`rz`/`rp`/`rm`; immediates as `0x3F800000`, "32-bit '
             'float immediate (1.0f)".',
             "An undeclared attribute name is the public name of the one declared attribute whose "
             "enumeration it names (cmp/cmpS: CmpMode, rmode/rnd/round/round_mode: RoundMode, sat, atomic, "
             "mask_pattern, relu); two candidates are PARSE_ATTR. Quoted values are member names, compared "
             "without case; `rne`, `rz`, `rp`, `rm`, `rna` are RINT, TRUNC, CEIL, FLOOR, ROUND and a "
             "`CAST_` prefix is dropped; a quoted value for a number or boolean attribute is PARSE_ATTR. A "
             "hexadecimal integer literal for a float scalar operand or `.const` is the float's bit "
             "pattern (32 bits for f32, 16 for f16/bf16); decimal integers stay values; a wider or "
             "negative pattern, or a NaN other than the quiet NaN (0x7FC00000, 0x7E00, 0x7FC0), is "
             "PARSE_LITERAL (text writes every NaN as `nan`). A literal scalar without a written type "
             "takes the element type of the first source tile.",
             "The page calls the hex immediate a float encoding; a NaN payload the text cannot print back "
             "would break parse(print(m)) == m."),
    Decision("Public type spellings and operation classes",
             "Tiles are printed `!pto.tile<f32, 16, 16>`, `!pto.tile<loc=vec, f32, 16, 16, RowMajor, "
             "NoneBox, None, Zero>`, `!pto.tile_buf<vec, 32x32xf16, valid=?x?>` with C++ element names "
             "(`int8`, `half`); FRACTAL takes None/NZ/ZN/FR/RN and PAD Zero/Null/Invalid (the C++ PadValue "
             "has Null, Zero, Max, Min); globals as `partition_tensor_view`, `tensor_view`, `!pto.ptr<T, "
             "gm>`; TMRGSORT's executed as `vector<4xi16>`; events name instructions (`record_event[TLOAD, "
             "TADD, 0]`, `tsync #pto.op<TADD>`).",
             "The positional list is `[loc=]LOC, DTYPE, ROWS, COLS[, V_ROW, V_COL][, BLAYOUT, SLAYOUT[, "
             "FRACTAL[, PAD]]]`, location `vec` when absent, layout from the (BLAYOUT, SLAYOUT) pair as "
             "before, FRACTAL read and not used except 32, the scale fractal (decision 'Scale boxes: ZZ_MX and "
             "NN_MX'), PAD Null/Zero/Max/Min (Invalid is PARSE_TYPE). Tensor "
             "views and `!pto.ptr<T, gm>` (rank 1, dynamic extent) are globals (`!pto.memref`); other "
             "pointer spaces are PARSE_TYPE. `vector<NxT>` is a 1 x N tile. An operation class may be any "
             "instruction issued on one fixed pipe (its declared pipe); one whose pipe depends on operands "
             "(TSTORE) is PARSE_ATTR.",
             "One type system: each spelling names a type openpto already has, and prints canonically."),
    Decision("TPACK",
             "The manual's TPACK page names a move into a narrower representation and leaves the semantics "
             "'instruction-specific'; no target header implements it; the vector-level pack truncates "
             "each element to the narrower width.",
             "TPACK narrows integers by truncation: dst[i, j] keeps the low dst-width bits of src[i, j] "
             "(8 from 16 or 32 bits, 16 from 32, either signedness), over dst's valid region, which must "
             "lie inside src's; vec ND tiles of one static shape; legal on cpu and a5. Float narrowing "
             "stays TCVT's.",
             "The one behaviour the public material states (the vector pack's truncation), applied per "
             "element, without inventing a layout change the manual does not describe."),
    Decision("Row-expand forms: which operand is expanded, Mode 2",
             "TROWEXPANDADD/SUB/MUL/DIV/MAX/MIN/EXPDIF: exactly one of src0 and src1 has dst's valid "
             "shape and the other is the expanded operand; Mode 1 reads one value per row (ColMajor, one "
             "valid column), Mode 2 a 32-byte block per row repeated along it (RowMajor, 32 / sizeof(T) "
             "valid columns); the C++ tmp overload is Mode 1 only; the order of the operation when src0 is "
             "the expanded one is not stated (the CPU simulator keeps src0 <op> src1).",
             "The expanded operand is src0 when src0's static shape differs from dst's, else src1 (a static "
             "rule every backend shares); the operation keeps its order (dst = s - src1 when src0 is "
             "expanded). The expanded operand has 1 valid column (DN R x 1 or ND) or, in layout ND, exactly "
             "32 / sizeof(T); it is read at column j mod that count. Any other count is STRUCT_VALID_REGION "
             "(RUNTIME_VALID_REGION when dynamic), so two full operands are rejected. The optional tmp is "
             "accepted in every mode and never touched. The column-expand ops keep src1 as the per-column "
             "operand (their pages give no other form).",
             "One static rule makes the form visible to the verifier and lets a backend pick its loop at "
             "compile time; reading at j mod width is the public formula for both modes."),
    Decision("Two-result arith ops",
             "The public IR takes its scalar ops from MLIR's arith dialect, which defines addui_extended (the "
             "sum and an i1 overflow bit), mulsi_extended and mului_extended (the low and high halves of the "
             "product) on signless integers; openpto's integer types carry a signedness the dialect lacks.",
             "The ops act on the operands' bits: addui_extended adds them as unsigned numbers and gives the "
             "wrapped sum and the carry out (i1); mului_extended and mulsi_extended multiply them as unsigned "
             "and as two's-complement numbers and give the low and the high half, each read as a value of the "
             "operands' type (u32 and i32 operands give the same bits). Operands share one fixed-width integer "
             "type, i8 to u64; index and i1 are STRUCT_SCALAR_TYPE. Written `%lo, %hi = arith.mulsi_extended "
             "%a, %b [: T]` and `%s, %c = arith.addui_extended %a, %b [: T, i1]`; any other number of results "
             "is PARSE_ARITY.",
             "Bits are what the dialect specifies, so the results agree with MLIR for every type; index has no "
             "fixed width in that rule and i1 is a boolean here."),
    Decision("Statements over several lines",
             "The public pages break long statements without stating a rule: TMRGSORT's SSA form puts its "
             "signature on the next line (`... {exhausted = false}` then `: T, T -> (T, vector<4xi16>)`), its "
             "DPS form starts `outs(...)` on a new line, alloc_tile and make_tensor_view put `: type` on the "
             "next line.",
             "A line whose first token is `:`, `->`, `ins(` or `outs(` continues the statement of the line "
             "before it; any other line starts a new statement (newlines inside a kernel's parameter list, a "
             "type list, a memory operand or an attribute dictionary stay allowed). A line ending inside an "
             "open bracket does not continue by itself. The printer writes each statement on one line.",
             "No statement starts with those tokens, so the rule never joins two statements and reads only the "
             "start of the next line (parsing stays linear); a bracket-depth rule would let one unclosed "
             "bracket swallow the rest of a file during error recovery."),
    Decision("HiFloat8 (hifloat8)",
             "The type table lists hifloat8_t for A5 without its encoding. The public CPU header decodes a "
             "code with D exponent bits using 5 - D mantissa bits, which for D = 0 and D = 1 reads past the "
             "payload (D = 1 loses its exponent bit); its encoder picks the nearer neighbour, the lower one on "
             "a tie, maps values beyond the largest finite to it and lets NaN fall through. The A5 conversion "
             "(TCVT f32/f16 -> hifloat8) always rounds to nearest with ties away from zero, whatever roundMode "
             "says, with saturation disabled.",
             "hifloat8 is a float type held as its uint8 codes (isa/hifloat8.py): mantissa widths 3, 3, 3, 2, 1 "
             "for D = 0 .. 4 exponent bits, sign-magnitude exponents with an implicit leading 1, denormals "
             "2**(M - 23), 0x00 zero (no -0), 0x80 NaN, 0x6F/0xEF ±inf, largest finite 2**15. TCVT honours "
             "roundMode on this target like on any other (ROUND gives the A5 result); overflow follows the "
             "IEEE rules per mode (RINT/ROUND to ±inf), satMode does not matter. Pairs: a5 f32 -> hifloat8, "
             "f16 -> hifloat8, hifloat8 -> f32; cpu hifloat8 to and from f32, f16 and bf16. hifloat8 is not "
             "yet a storable type for moves, loads and stores.",
             "The widths are the format's own definition (every code decodes to a distinct value only with "
             "them); one rounding rule for all targets keeps TCVT a single exact function of its attributes."),
    Decision("Newer targets: a6, kirin9030, kirinX90",
             "The public repository adds A6 (bring-up: 13 implementation headers, not yet wired into the "
             "instruction dispatcher), Kirin9030 and KirinX90 (a5 headers reused plus their own TLoad, TStore, "
             "TMatmul, TCvt, ...; bf16 and fp8 types #defined to other types; the cube accumulates in f16 or "
             "i32), and a kirinDev0000 development target without L0A/L0C; buffer sizes per target in "
             "buffer_limits.hpp; no clocks or core counts.",
             "Profiles a6, kirin9030 and kirinX90 with buffer_limits.hpp's capacities, 32-byte alignment and "
             "the a5 layouts. An instruction is legal there when the target's header set implements it, with "
             "a5's dtype rule less bf16/fp8 on the Kirin parts and, for TMATMUL*/TGEMV*, the accumulator "
             "types the target has (isa/targets.py, which names the snapshot). kirinDev0000 is not modelled.",
             "Legality read from what each target's headers implement, kept as one table so a newer snapshot "
             "is one edit, not 150."),
    Decision("MGATHER and MSCATTER defaults",
             "The C++ defaults are Coalesce::Row and GatherOOB::Undefined, but the page makes the coalesce "
             "mode the first template argument 'so the operating mode is always explicit at the call site'; "
             "the assembly spells it as a suffix (mgather.row, mgather.elem.zero).",
             "indexMode defaults to ELEMENT and oobMode to ERROR. Undefined is not offered: an index the "
             "public contract leaves undefined faults with RUNTIME_OOB, which any target's behaviour refines.",
             "Public programs always name the mode, so the default only matters to openpto text; faulting is "
             "the one safe reading of 'caller guarantees'."),
    Decision("TQUANT integer formula",
             "The page writes q = round(x / scale) + offset; every implementation multiplies, "
             "x * scale (+ offset), i.e. the scale tile holds the reciprocal.",
             "openpto follows the implementations: t = f32(x * scale) (+ offset, rounded to f32), then "
             "round half to even and saturate to the i8/u8 range.",
             "Code is what runs on every target; following the page would make openpto disagree with all "
             "of them on the same scale values."),
    Decision("TGEMV's K",
             "The page takes K = bMatrix.GetValidRow() and reads A over K columns whatever A's valid "
             "columns are.",
             "K = A.valid_cols (as TMATMUL), and B's valid rows must cover K; when A.valid_cols equals "
             "B.valid_rows, the only case where the page reads no unspecified data, both agree.",
             "One K rule for every matrix form, and no read of A outside its valid region."),
    Decision("TSCATTER untargeted destination elements",
             "The page warns that the destination buffer is zeroed over its whole static tile before "
             "scattering; the CPU simulator and the A2/A3 goldens keep what was there.",
             "dst elements no index targets are unspecified (the reference leaves them untouched; "
             "conformance does not compare them), and so are targets outside dst's valid region (decision "
             "'TSCATTER flat offsets'). Programs that need zeros write them first (TEXPANDS 0).",
             "The targets disagree, and the page's zeroing reaches outside the valid region, which "
             "decision 2 leaves unspecified for every instruction."),
    Decision("TCVT default saturation",
             "The current page states that the form without SaturationMode uses a target-defined default "
             "per type pair, and that on A2/A3 SaturationMode::OFF for f32->i16, f16->i16 and f16->i8 takes "
             "a PyTorch-compatible path through a tmp tile.",
             "Unchanged: satMode defaults to ON for every pair; OFF wraps the rounded integer modulo 2^bits "
             "(what the PyTorch-compatible paths compute); the tmp tile is accepted and unused.",
             "A per-pair default table would differ per target; ON is the default of most pairs and is "
             "total (NaN -> 0)."),
    Decision("pto.set_validshape",
             "pto.set_validshape %t, %r, %c updates the run-time valid rows and columns of a tile_buf "
             "allocated with valid=?x?, moving no data; constant extents must lie within the static shape; "
             "nothing is said about data outside the old region that the new one exposes.",
             "A statement of its own (IR: a TileDecl with keep set; bytecode tag 8) on an existing tile whose "
             "type has valid=?x? (else STRUCT_VALID_REGION), both extents index values. It keeps the tile's "
             "contents: the never-written analysis and the backends' initialisation checks treat it as the "
             "same tile, not a fresh declaration; elements a larger region exposes that were never written "
             "read as unwritten (RUNTIME_UNINIT_READ on the reference). A region beyond the tile is "
             "RUNTIME_VALID_REGION, as for .tile.",
             "The page calls it a metadata update of the same buffer; a re-declaration would throw away data "
             "the program still reads."),
    Decision("Arg-reduction index widths",
             "The index-only forms write i32/u32 on every target. With dstVal, A2/A3/A5 take i16/u16 or "
             "i32/u32 beside a 2-byte source in the row forms but only i16/u16 in the column forms, and "
             "i32/u32 beside a 4-byte source; the CPU simulator takes only i32/u32 in every form. "
             "TPARTARGMAX/TPARTARGMIN: A2/A3/A5 allow 16-bit indices only beside f16 values; the CPU "
             "simulator does not restrict the index type.",
             "The A2/A3/A5 rule for TROWARG*/TCOLARG* on every profile, checked by form (LEGAL_DTYPE): "
             "index-only i32/u32; value+index beside a 2-byte source i16/u16 (column) or i16/u16/i32/u32 "
             "(row), beside any other source i32/u32. So cpu accepts the row forms' 16-bit indices and "
             "refuses the simulator's 32-bit column value+index form for 2-byte sources. A 16-bit index "
             "must reach every position of src's static reduced axis (STRUCT_SHAPE otherwise). TPART*: "
             "any of i16/u16/i32/u32 on cpu, the headers' pairs on a2/a3/a5.",
             "Dtype rules cannot differ per profile and per form at once; one form rule everywhere keeps a "
             "program verified on cpu legal on the NPU profiles, which is what the cpu profile is for."),
    Decision("TCONCAT indexed forms",
             "TCONCAT(dst, src0, src1, [dstIdx,] src0Idx, src1Idx) takes per-row widths from column 0 of the "
             "index tiles; the page says 'column counts' without a unit; the CPU simulator, A2/A3 and A5 all "
             "divide the value by sizeof(index element); A2/A3/A5 clamp src0's count to dst.valid_cols and "
             "src1's to what is left and write min(n0 + n1, dst.valid_cols) * sizeof(index) to dstIdx, the CPU "
             "simulator writes the raw sum and does not clamp; no target checks the sources' widths or signs.",
             "The NPU rule: c0 = min(src0Idx[i, 0] // u, dst.valid_cols), c1 = min(src1Idx[i, 0] // u, "
             "dst.valid_cols - c0), u = the index element's size; dstIdx[i, 0] = (c0 + c1) * u. A negative count "
             "is RUNTIME_OOB, c0 (c1) beyond src0's (src1's) valid columns RUNTIME_INVALID_READ; the rest of dst's "
             "row keeps its contents. Index tiles: one dtype among i8, u8, i16, u16, i32, u32, row-major, "
             "covering dst's rows; dstIdx exactly dst.valid_rows x 1, and dst.cols * u must fit its dtype. "
             "Assembly: `%dst[, %dstIdx] = tconcat %src0, %src1, %src0Idx, %src1Idx` (DPS outs(dst, dstIdx)).",
             "The unit every implementation computes, whatever the page's word; the clamp is what both NPU "
             "families do and keeps writes inside dst; faults replace reads of unspecified elements."),
    Decision("TGATHER compare and column forms, TSCATTER mask forms",
             "The public TGATHER adds a compare form TGATHER<..., CmpMode>(dst, src0, k_value, cdst, tmp, offset) "
             "(per-row threshold, matching indices and a count; no assembly spelling, no CPU implementation) and "
             "a gatherType (GatherAxis GATHER_ROW/GATHER_COL) on the mask form; TSCATTER adds "
             "TSCATTER<maskPattern, ScatterType>(dst, src) (zero-filled spread, SCATTER_ROW/SCATTER_COL). A2/A3 "
             "compare in src's type after converting k (s32 -> f32, s16 -> f16) and report offset + the "
             "element's row-major position; A5 converts an f32 src to s32 and compares as u32, and restarts "
             "nothing per row; which element of k_value and cdst belongs to row i is only 'ptr + i'. The "
             "mask scatter page says A5 only; the A2/A3 header implements it too.",
             "One TGATHER declaration: idx carries k_value in the compare form, which is selected by giving "
             "the optional output cdst; trailing optional tmp (all forms, never touched), cdst and offset "
             "(index, default 0); cmpMode GT or EQ (default GT), gatherType GATHER_ROW (default). Row i "
             "reads k at idx[i, 0] and counts into cdst[i, 0] (column vectors); k converts to src's dtype "
             "(float: rounded to nearest even once; integer: wrapped), compared in src's type (NaN never "
             "matches, -0 == +0); dst[i, 0..n-1] = offset + i * src.cols + j wrapped to 32 bits, the rest of "
             "the row untouched. Dtypes: the A2/A3 and A5 tables on their profiles, their union on cpu (i32 "
             "src takes GT too). Other attributes keep their defaults outside their form (STRUCT_ATTR_VALUE); "
             "cdst without idx is STRUCT_MISSING_OPERAND, offset without cdst STRUCT_OPERAND_FORM. In the positional forms an "
             "SSA offset may be written with or without a tmp: the operand's kind binds it (decision 'Operand "
             "binding by kind'). TSCATTER: scatterType (lowerCamel like every attribute); "
             "the mask form on every profile with the index form's data dtypes; dst's valid region must be "
             "src's spread exactly (STRUCT_VALID_REGION / RUNTIME_VALID_REGION), unselected elements +0.",
             "The A2/A3 reading is the documented one (compare in the data's type), and flat positions make "
             "the compare form's output a valid index-form idx; reusing the third operand keeps the C++ "
             "argument order and every existing bytecode unchanged."),
    Decision("hifloat8 storage (TLOAD, TSTORE, TMOV)",
             "The A5 TLoad/TStore/TMov headers list hifloat8_t among the 1-byte types they move; the CPU "
             "implementation copies elements; ReLU on a move of a non-acc tile and atomic stores of "
             "hifloat8 are not described.",
             "TLOAD, TSTORE and TMOV take (hifloat8, hifloat8) on cpu and a5 (not a2/a3, which have no "
             "hifloat8): bit copies of the uint8 codes. A hifloat8 tile or tensor is stored as numpy uint8; "
             "its dtype comes from the program's types, so a uint8 array is still u8 wherever no type says "
             "otherwise (hifloat8 stays out of dt.ALL), and u8 <-> hifloat8 moves are dtype changes "
             "(LEGAL_DTYPE). relu on a hifloat8 TMOV reads the codes as values: sign bit set -> 0x00, "
             "except the NaN code 0x80, which stays (as relu keeps NaN for every float). TSTORE's atomic "
             "ADD does not take hifloat8 (LEGAL_MODE). Conformance draws hifloat8 operands as raw codes in "
             "every recipe and value situation.",
             "Moves must not change values; relu follows the same rule as the other float types; an "
             "atomic add would need a hifloat8 adder the public pages do not define."),
    Decision("FIFO split modes",
             "TPUSH/TPOP take a TileSplitAxis (TILE_NO_SPLIT, TILE_UP_DOWN, TILE_LEFT_RIGHT and the _ODD forms "
             "of the headers' enum): a tile moves between one cube and two vector sub-blocks, AIV0 taking the "
             "upper (left) half, AIV1 the rest; the _ODD forms give AIV0 the extra row (column); A5 adds "
             "dtype and 32-byte rules per direction; how a single-program functional run behaves is not stated.",
             "An attribute Split (#pto.split<...>, default TILE_NO_SPLIT). The cube side (acc tile pushed, "
             "mat tile popped) moves the whole tile, the vector side (vec tile) one part. Functional backends "
             "run vector sub-block 0 only (get_subblock_idx() = 0): a vector TPOP receives part 0 (upper "
             "R/2 or R//2 + 1 rows, or left columns alike), a vector TPUSH contributes part 0 of a whole tile "
             "whose split extent is 2p (2p - 1 for _ODD), and a cube TPOP of such a slot writes part 0 and "
             "leaves sub-block 1's part as it was. A cube TPUSH whose valid split extent has the wrong parity "
             "is RUNTIME_VALID_REGION; a TPOP with another Split than its push, or a tile that is not the part "
             "(vector) or the whole (cube), is RUNTIME_FIFO_MISMATCH. The A5-only dtype/alignment rules are "
             "not checked. GlobalData forms accept Split and move no data.",
             "Sub-block 0 is what a one-program-per-block run executes; recording the split in the slot turns "
             "every disagreement between producer and consumer into a fault instead of a silent reshuffle."),
    Decision("SYNCALL usedCores and the launch",
             "usedCores names how many cores take part in the barrier (0: all of the launch); more than the "
             "launch has would wait for ever on hardware.",
             "Checked only for usedCores >= 0 (RUNTIME_BAD_CONFIG): instruction semantics see one block's "
             "operands and per-run state, not the launch's block count, so the reference cannot compare "
             "usedCores with get_block_num(); the llvm backend could, but a check only one backend makes would "
             "split them. Passing the launch geometry to semantics is a backend-interface change left open.",
             "Both backends keep the same fault set; a usedCores above the block count has no effect on a "
             "functional run (SYNCALL changes nothing there)."),
    Decision("Tensor views",
             "pto.make_tensor_view builds a !pto.tensor_view from a !pto.ptr<T, gm> with run-time shape and "
             "element strides; pto.partition_view takes a window by offsets and sizes (out-of-range windows are "
             "target-defined); get_tensor_view_dim/stride read a dimension's extent or element stride; "
             "tensor_view_addr gives the storage as a pointer; pto.subset aliases part of a tile buffer; "
             "pto.alloc_tile may take addr = %a; pto.tile_buf_addr is legal only inside pto.vecscope.",
             "A view is a global value (!pto.memref), defined by a statement of its own (IR View / ViewQuery, "
             "bytecode tags 10, 11) and usable wherever a !pto.memref is. Strides are memory element strides "
             "(for a strided pointer: the given stride times the pointer's). A view is checked when it is made "
             "and never reaches outside its source: a window outside the view, or a view spanning more than its "
             "pointer, is RUNTIME_OOB (STRUCT_OOB when constants show it); negative sizes or strides, or run-time "
             "extents or strides that differ from static ones in the view's type, are RUNTIME_VIEW_SHAPE; a "
             "query of a dimension outside the rank is RUNTIME_OOB. tensor_view_addr gives a contiguous rank-1 "
             "pointer from the view's origin over its footprint (1 + sum of (n - 1) * max(stride, 0), 0 when "
             "empty). alloc_tile's addr (an integer value) is kept as a placement hint and not used, as TASSIGN. "
             "pto.subset and pto.tile_buf_addr: the decisions of those names.",
             "Reusing the global value keeps every instruction and backend check unchanged; checking at the view "
             "makes a bad window fail where it is written on both backends."),
    Decision("a2/a3/a5 legality from the current headers",
             "The current a2a3/ and a5/ headers implement TROWPROD on a5 and TCOLEXPAND on a2/a3 (1/2/4-byte "
             "types) and a5 (also 8-byte); row reductions take half, float, int32, int16 (a5 TROWMAX/TROWMIN "
             "also int8/uint8; a5 adds 64-bit integers on a scalar path); TSTORE_FP and TMOV_FP take the "
             "scaling tile, scaling the (dst, acc) pairs GetVectorPreQuantMode maps (a2/a3: f32 -> i8/u8, "
             "i32 -> i8/u8/f16/i16; a5 also f32 -> f16/bf16/hifloat8/fp8, i32 -> bf16) and applying no scale "
             "to same-type stores; TREM is f32/i32 and TFMOD f32 on a2/a3, 16/32-bit types on a5 (TREMS/TFMODS "
             "any 2- or 4-byte type there); TTRI on a5 adds (u)int8, bfloat16 and 64-bit integers.",
             "Applied, as profile dtype narrowing of the existing declarations: TROWPROD and TCOLEXPAND are "
             "legal on a2/a3/a5; TROWSUM/TROWMAX/TROWMIN/TROWPROD take f16 f32 i16 i32 on the NPU profiles "
             "(a5 TROWMAX/TROWMIN also i8 u8); TSTORE_FP on a2/a3 (i8/u8 <- f32, i8/u8 <- i32, f16 <- i32) and "
             "a5 (i8/u8/f16/bf16 <- f32 and i32, f8e4m3 and a scaled f32 <- f32: the acc store checks and "
             "GetVectorPreQuantModeGm, which maps f32 -> f32 to VQF322F32_PRE, a scaling mode); TMOV_FP on a2/a3 (f16 <- i32) and a5 (f16/bf16 <- f32/i32); "
             "TREM a2/a3 f32 i32, TFMOD a2/a3 f32, both f16 f32 i16 i32 on a5; TREMS/TFMODS a2/a3 as TREM/TFMOD, "
             "a5 f32 f16 bf16 i16 i32; TTRI a5 also i8 u8 bf16. Stricter than the headers: no 64-bit integers "
             "in these vector ops, no unsigned TREM/TFMOD(S), no i16 TSTORE_FP target and no hifloat8 "
             "scaled store (openpto's architecture-wide sets for them do not hold those types: widening them "
             "is new semantics on every backend, not a legality edit); TMOV_FP's acc -> vec path stays legal "
             "on a2/a3 (a2/a3 TMov scales into mat only; profiles cannot narrow locations).",
             "A program verified on a profile must be one its headers compile; a pair that compiles but "
             "applies no scale (same-type f32) would run with a different meaning, so it is refused there."),
    Decision("4-bit floats (float4_e2m1x2, float4_e1m2x2)",
             "The type table lists float4_e2m1x2_t and float4_e1m2x2_t (A5, 'packed 2x2', one byte per two "
             "values); the A5 TCVT counts their columns in 4-bit elements and converts bf16 to and from them "
             "(#rnd #sat); the CPU model stores element 2k in the low and 2k + 1 in the high nibble of byte k, "
             "bias 1 for both, and has no infinity or NaN for them. What NaN, infinities and overflow become "
             "is not stated.",
             "Both are coded float types (isa/fp4.py): a tile's columns count 4-bit elements, and the numpy "
             "storage holds one element per uint8 (code in the low nibble; the high nibble is ignored when "
             "read and written as 0); fp4.pack / unpack give the public two-per-byte memory image. E2M1 "
             "magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6; E1M2 multiples of 0.25 up to 1.75; code 8 is -0. TCVT "
             "rounds into them with roundMode like any float target (the exact method, precision 2 / 3, "
             "subnormals), overflow and ±inf give ±max under every roundMode and satMode, NaN gives +0, a "
             "negative value rounding to zero gives -0. Pairs: a5 bf16 -> either and either -> bf16; cpu "
             "either to and from f32, f16 and bf16. Moves and the 4-bit size rules: decision '4-bit moves and "
             "sizes'.",
             "Element columns are what the A5 conversion and the CPU accessors index; one code per uint8 keeps "
             "every elementwise rule and the conformance drawing unchanged; with no NaN code, saturating is "
             "the only finite answer and +0 the neutral one."),
    Decision("int4 (i4)",
             "The TCVT table lists S4 (int4b_t) for A2/A3 only: f16 -> S4 under each rounding mode and "
             "S4 -> f16; the header packs two per byte and the CPU type keeps one 4-bit two's-complement "
             "value per byte; the scalar types name it s4. No SSA tile name and no saturation rule are "
             "given.",
             "i4 (aliases int4b_t and s4) is a signed integer type in [-8, 7] counted one element per "
             "column and held one per uint8: two's complement in the low nibble, the high nibble ignored "
             "when read and written as 0. TCVT treats it like the other integer targets: roundMode picks "
             "the integer, satMode ON (the default) clamps to [-8, 7] (±inf too), OFF wraps modulo 16, NaN "
             "gives 0. Pairs: a2/a3 f16 -> i4 and i4 -> f16; cpu i4 to and from f32, f16 and bf16; not a5. "
             "Moves: decision '4-bit moves and sizes'.",
             "i4 follows openpto's integer names; one rule for every integer target keeps TCVT a single "
             "exact function; the low nibble is the element as the CPU type stores it."),
    Decision("pto.subset",
             "pto.subset %src[%i, %j] sizes [R, C] : T_src gives a tile_buf that aliases the R x C region of "
             "its parent at run-time offsets (no data movement); element type, location and tile config are the "
             "parent's, the valid shape comes from the parent's and constant offsets (dynamic otherwise); a "
             "boxed parent keeps its whole row (boxed col-major) or column (boxed row-major) extent at offset "
             "0 and splits at whole inner boxes.",
             "True aliasing, unlike TSUBVIEW/TALIAS (value semantics): writes through the child are the "
             "parent's and the reverse (IR Subset, bytecode tag 12). The result type is the parent's with shape "
             "R x C and valid extents min(C, max(0, parent valid - offset)) per dimension, '?' where the offset "
             "or the parent's extent is a run-time value; the run-time region is that formula at the subset "
             "statement. The window must lie in the parent's static shape: STRUCT_OOB for constants, else "
             "RUNTIME_OOB; sizes are static and positive; a child's name is defined by that one statement "
             "(STRUCT_REDEFINED otherwise). Boxed parents (NZ, ZN, ZZ: boxes of 16 rows of 32 "
             "bytes, transposed for ZN): NZ keeps every row, ZN/ZZ every column, at offset 0, and the other "
             "offset (a constant) and size are multiples of the box side (STRUCT_LAYOUT). The reference backend "
             "makes the child a numpy view of the parent whose never-written record is the parent's; the llvm "
             "backend gives the child a buffer of its own and copies the window in before each instruction "
             "naming the child and back after each that writes it. Writes through a child are writes of the "
             "parent for the never-written analysis; llvm checked mode keeps a byte per element of a parent "
             "that has children (one row watermark cannot hold a write of part of its rows), so it reports "
             "what the reference reports, with the same element. A child takes no capacity of its own.",
             "The public page states aliasing, and kernels use a subset to write part of a tile in place; copying "
             "in and out keeps every llvm lowering rule (several read tiles as flat bytes) and the per-tile "
             "alias scopes true."),
    Decision("pto.tile_buf_addr",
             "pto.tile_buf_addr gives the address of a tile buffer and is legal only inside pto.vecscope "
             "(vector-register code).",
             "Not accepted: openpto has no pto.vecscope and no vector registers, so no use of the address "
             "could be legal; it is PARSE_VECSCOPE, naming that reason.",
             "An address with nothing that may read it has no sound meaning; a dedicated code tells the "
             "author why rather than calling the op unknown."),
    Decision("make_tensor_view layout",
             "make_tensor_view takes an optional `layout` attribute (nd / dn / nz hint) that must agree with "
             "the layout static shapes and strides imply; its textual form is not printed.",
             "Accepted as `, layout = dn` after the lists or as `{layout = #pto.layout<dn>}` / "
             "`{layout = \"dn\"}`, any case; it becomes the result type's layout (printed as its layout= "
             "option, so nothing else is kept). A written type with another non-ND layout, or a literal "
             "stride that contradicts it (ND: unit stride in the last dimension, DN: in the one before), is "
             "PARSE_ATTR; NZ has no stride check.",
             "The view's layout is what TLOAD/TSTORE legality reads; keeping it in the type keeps one place "
             "for it."),
    Decision("Shape rules of the public kernels",
             "The A2/A3, A5 and CPU kernels of the elementwise, unary, tile-scalar (TADDS ... TSHRS, TDIVS, "
             "TREMS/TFMODS), TREM/TFMOD and TCOLEXPAND* instructions assert equal valid regions only: each "
             "tile is addressed with its own static row stride. The column reductions (TColReduceOps, "
             "TColSum) check dst's valid columns only and write its row 0, whatever its static rows. So do "
             "the NPU kernels of TCMP/TCMPS (the packed mask written at its own row stride, in bytes or "
             "words), TSEL/TSELS (the mask read at its own row stride), TCVT, TAXPY, TFUSEDMULADD(RELU), "
             "TMULADDDST, TSUBRELU, TADDRELUCONV, TADDDEQRELU, TPOW/TPOWS and TPAIRREDUCESUM. The public "
             "signatures take one tile type for TSEL's dst/src0/src1, TADDSC/TSUBSC's dst/src0/src1 and "
             "the accumulating matmuls' cOut/cIn; TFILLPAD's kernels, TMOV_TILE_IMPL (every move not from "
             "acc) and the CPU TQUANT static_assert equal Rows and Cols; moves from acc (TMOV, TMOV_FP) "
             "write dst at its own stride over src's valid region, an NZ dst receiving every static row "
             "of src (SrcTileData::Rows), and check only dst's column alignment; the CPU TSORT32 "
             "static_asserts src's row stride == idx's; NPU TSORT32 reads one idx row for every row when "
             "idx has one valid row. The CPU simulator's TPOW addresses base and exp at dst's offsets; its "
             "TSEL reads the packed mask as one bit stream over dst's valid elements. The a2a3 and a5 TSCATTER "
             "index kernels loop over idx's valid region reading idx at IdxTile::Cols and src at SrcTile::Cols "
             "(the CPU simulator at each tile's own offsets) and assert nothing between the three shapes.",
             "Those instructions take operands of any static shape whose valid regions cover dst's (decision "
             "'Valid-region compatibility'); a column reduction's dst may be statically taller than one row, "
             "its valid region still exactly 1 x C; masks (i1 tiles, one element per boolean) have a static "
             "shape of their own, since packing is a backend's business (decision 'Predicate (mask) "
             "representation'); TSORT32's idx may have other static rows than src (same columns); TMOV "
             "and TMOV_FP from acc take any static shapes where dst's valid region holds src's, an NZ dst "
             "with at least src's static rows (the kernels write them all); TSCATTER's index form takes dst, "
             "src and idx of static shapes of their own, each read or written at its own row stride. As the "
             "public code, not stricter: TSEL's dst/src0/src1, TADDSC/TSUBSC, TMATMUL_ACC/TGEMV_ACC's dst and acc_in, "
             "TFILLPAD, TQUANT_DN (dst and src, as the CPU model) and TMOV not from acc keep "
             "equal static shapes. Stricter, with reasons: TROWEXPAND* keep the full operand at dst's "
             "static shape, since that shape tells which operand is expanded; a column reduction's dst "
             "keeps one valid row (rows the kernels never write would be valid and undefined); TSORT32's "
             "idx must cover src's valid region (the NPU one-row broadcast is refused by the CPU kernel, "
             "and one idx shape rule serves every profile); TSCATTER's idx must cover src's valid region, "
             "which stays the domain (the public loop runs over idx's region: the two agree when the regions "
             "are equal, and an idx smaller than src is refused rather than leaving src elements silently "
             "unscattered). "
             "Looser than the CPU simulator: TPOW follows the NPU kernels "
             "(each operand at its own stride) and masks are per element (i1), not a packed stream.",
             "A program the public kernels accept should verify; every llvm rule involved reads each tile "
             "through its own strides (tests/test_shape_rules.py, tests/test_shape_rules_public2.py, "
             "tests/test_tscatter_shapes.py run each relaxed instruction on both backends with operands of "
             "other static shapes)."),
    Decision("MGATHER/MSCATTER row indices and NPU legality",
             "Coalesce::Row kernels (a2a3 and a5 MGather/MScatter) read row r's index at indices[r]; the "
             "a5 static_assert takes an index tile of valid shape [1, R] or [R, 1]. a2a3/MGather.hpp and "
             "MScatter.hpp implement (u)int8/16/32, half, bfloat16 and float data with int32/uint32 "
             "indices; a2/a3 scatter atomics are None or Add (Add on f32 i32 f16 bf16 i16 i8), a5's Add "
             "(i32 u32 f32 f16 bf16) and Max/Min (i32 u32 f32); a5 also moves fp8/hifloat8.",
             "ROW mode reads idx[0, r] when idx has exactly one valid row and the domain more than one "
             "(the [1, R] form), else idx[r, 0]; with one domain row both read idx[0, 0]. Decided by valid "
             "rows, not static shape, so a dynamic region selects at run time on every backend. The "
             "verifier asks the chosen form to hold R indices (STRUCT_VALID_REGION). MGATHER and MSCATTER "
             "are legal on a2, a3 and a5 with those data types and i32/u32 indices, a5 also moving "
             "float8_e4m3, float8_e5m2 and hifloat8 bit for bit (cpu: every storable type and hifloat8). "
             "MSCATTER's atomic is limited per profile and data type by a value rule (LEGAL_MODE): a2/a3 "
             "NONE, or ADD on f32 i32 f16 bf16 i16 i8; a5 NONE, ADD on i32 u32 f32 f16 bf16, MAX and MIN on "
             "i32 u32 f32; cpu any mode on the arithmetic types.",
             "One rule the reference, llvm and the verifier share, covering both public layouts; legality "
             "only where every accepted program is one the headers compile."),
    Decision("TCI on float tiles",
             "a2a3/TCI.hpp asserts a 2- or 4-byte type (so half, bfloat16 and float), its scalar loop "
             "stores start + i (start - i) per element; a5/Tci.hpp takes (u)int16/32 only; the page's "
             "formula is dst_k = S + k.",
             "Floats: start is converted to dst's dtype (RNE; an integer scalar through f64 and f32), then "
             "each element is computed from start, not accumulated: start +- k formed in f32 (k exact) and "
             "rounded once to dst's dtype (RNE). So f16 2048 ascending gives 2048 2048 2050 2052 ... "
             "(ties to even). Legal on cpu, a2 and a3; a5 keeps the integer types.",
             "Per-element from start matches the scalar loop and the formula and has no drift; f32 "
             "arithmetic is openpto's rule for every float dtype and exact for the column counts a tile has."),
    Decision("TRECIP on integer tiles",
             "pto_instr.hpp implements TRECIP as TDIVS(dst, 1, src) on the NPUs, so it takes TDIVS's types "
             "(a2/a3: i32 i16 f16 f32; a5: (u)int8/16/32 f16 f32); integer 1 / 0 is left to TDIVS.",
             "TRECIP on integers is TDIVS's scalar-first integer division with scalar 1: truncated toward "
             "zero (1/1 = 1, 1/-1 = -1, 1/x = 0 for |x| > 1) and 1/0 = -1, all bits set (the maximum of an "
             "unsigned type), as TDIVS defines x/0. Profiles: cpu all NUMERIC types, a2/a3 i32 i16 f16 f32, "
             "a5 u8 i8 u16 i16 u32 i32 f16 f32.",
             "The public definition is the division itself; one integer rule for both keeps them identical."),
    Decision("TQUANT_DN FP4 algorithms",
             "The TQUANT_DN page lists OcpMxFp4E2M1 and NvMxFp4E2M1 (E2M1 data, f16/bf16 sources) next to the "
             "FP8 ones without their formulas. The public CPU model takes the OCP exponent of the group "
             "maximum minus 2 (floored at 0), the NV one from max * f32(1/6) rounded up like the FP8 rule, "
             "encodes with round to nearest even and saturation to ±6, and lets a NaN poison its group: "
             "exponent 0xFF and every element 0x7; it also accepts f32 sources.",
             "As the CPU model: OCP e = biased exponent of m - 2 (floored at 0), NV e from d = f32(m * "
             "f32(1/6)); scale 2**(127 - e); dst = E2M1(f32(src * scale)), nearest even, saturated, -0 kept; "
             "a group holding a NaN gets exponent 0xFF and all its elements 0x7, ±inf gives 253 (OCP) / 254 "
             "(NV) and ±6. mx_alg must name dst's format (LEGAL_DTYPE). Sources: f16, bf16 on a5; f32 too on "
             "cpu. (The CPU model rounds a bf16 source's scaled value to bf16 first; a power-of-two scale "
             "makes that exact wherever E2M1 is not 0, so it is not modelled.)",
             "The CPU model is the only public statement of the formulas; the NaN rule differs from the FP8 "
             "algorithms' (NaN ignored) because the CPU model does so on purpose for FP4."),
    Decision("TSYNC pipes per profile, TGATHER 8-bit data",
             "Single-pipe TSYNC: a2a3/TSync.hpp asserts S, V, M, MTE1, MTE2, MTE3, FIX or ALL, a5/TSync.hpp "
             "MTE2, MTE3 or ALL. a5/TGather.hpp gathers b8/b16/b32/b64 data by b16/b32 indices, its mask "
             "form takes 8-bit types and its compare form int8/uint8 sources; a2a3/TGather.hpp is b16/b32 "
             "throughout.",
             "Declarations may limit an attribute's or a pipe operand's values per profile "
             "(Instruction.profile_values: allowed values, each optionally with the element types of one "
             "operand; a newer target not named borrows its base profile's rule); the verifier refuses "
             "other values with the rule's code, the pages list them under 'Values per profile', and "
             "conformance draws only allowed values and checks refused ones at L1. TSYNC's pipe: a2/a3 S V "
             "M MTE1 MTE2 MTE3 FIX ALL, a5 and a6 MTE2 MTE3 ALL, kirin9030/kirinX90 M MTE1 MTE2 MTE3 FIX ALL "
             "(their TSync.hpp), cpu every pipe; another is LEGAL_ATTR (so `tsync #pto.op<TADD>`, pipe V, "
             "is refused on a5). TGATHER: the index form moves i8/u8 on cpu and a5 (and the targets that "
             "borrow a5's rule), the compare form takes i8/u8 sources on a5; the mask form's data (outside "
             "the dtype rule, which needs idx) is limited by a rule on maskPattern, which only that form "
             "takes: a2/a3 2- or 4-byte types, a5 also i8/u8, the Kirin parts (u)int8/16/32, f16, f32 "
             "(LEGAL_DTYPE). Stricter: no 64-bit data and no fp8/hifloat8 in TGATHER (openpto's vector "
             "sets hold no 64-bit types, and its index form does not move fp8).",
             "Legality only where every accepted program is one the headers compile; one value-rule field "
             "covers pipes, atomics and a form's data instead of a check per instruction."),
    Decision("Operand binding by kind",
             "The public spellings leave optional operands out in the middle of a list: TGATHER's compare "
             "form may give an SSA offset without a tmp, TMRGSORT's single-list form writes (src, blockLen) "
             "where the multi-list form writes (src0, src1); nothing says how a reader tells them apart.",
             "Written items bind to declared operands in order, skipping optional operands only. Every "
             "assignment that fills the required operands is considered; an item may fill an operand only "
             "if its kind fits: a tile value a tile, a scalar or index value or a literal a scalar or index "
             "operand, an event value an event, %g[...] a global, #pto.pipe<...> a pipe. A value's kind is "
             "its written type, else its definition. Assignments that agree on every item's kind differ only "
             "in which of several same-kind optional operands an item fills: the earliest one is taken "
             "(positional). Assignments that still disagree on an item's kind are PARSE_ARITY naming both "
             "readings; an undefined name there is STRUCT_UNDEFINED. Bytecode stores bound operands, "
             "so it is unchanged.",
             "Types decide what the text alone cannot, and a statement never binds one way when it could "
             "equally mean another; the positional rule among same-kind operands is the one every earlier "
             "form already followed."),
    Decision("TMRGSORT single-list form",
             "TMRGSORT(dst, src, blockLen) merges the four blockLen-element blocks of each group of "
             "4 * blockLen columns of src (vmrgsort4 with repeatTimes = validCol / (4 * blockLen)); blockLen "
             "a multiple of 64, repeatTimes 1..255 (A2/A3/A5 assertions); no tmp, no exhausted; the CPU "
             "simulator silently skips a blockLen that is not a whole number of records and writes only "
             "whole groups.",
             "One TMRGSORT declaration: the optional index operand blockLen selects the form; executed and "
             "src1 become optional (required without blockLen: STRUCT_MISSING_OPERAND; with blockLen any of "
             "executed, src1..src3 is STRUCT_OPERAND_FORM, exhausted = true STRUCT_ATTR_VALUE). The source "
             "keeps the name src0. Each group is merged on its own into the same columns of dst by the "
             "multi-list head rule (ties to the earlier block, NaN first, -0 == +0). Faults, in this order: "
             "blockLen < 64 or not a multiple of 64 RUNTIME_BAD_CONFIG (every profile); src0.valid_cols not "
             "1..255 whole groups RUNTIME_VALID_REGION; dst's valid region shorter than src0's columns "
             "RUNTIME_INVALID_WRITE. A src0 valid region with no element writes nothing. Dtypes as the "
             "multi-list form per profile; the a2/a3/a5 UB-size assertions are not checked.",
             "The NPU assertions are the only stated limits; checking them everywhere keeps one behaviour "
             "on every backend instead of the simulator's silent partial results."),
    Decision("MX scale tiles: scale_left / scale_right",
             "TMATMUL_MX / TGEMV_MX take TileLeftScale / TileRightScale operands (TileType::ScaleLeft in L0A, "
             "ScaleRight in L0B; row-major and column-major tile aliases with an MX scale fractal); "
             "buffer_limits.hpp gives 4 KB each on A5 and A6 and none elsewhere; TMOV lists Mat -> "
             "ScaleLeft/ScaleRight. Their row alignment is not stated.",
             "Two locations scale_left and scale_right (PTO-AS loc=scale_left / loc=ScaleLeft). a5 and a6: "
             "4 KB each, scale_left takes ND or ZZ_MX and scale_right DN or NN_MX (the 32-byte scale "
             "boxes of decision 'Scale boxes: ZZ_MX and NN_MX'), and the 32-byte row rule does not apply to them (a row holds K/32 scales); a2, a3 and the Kirin "
             "parts have no scale tiles (capacity 0, no layout). TMATMUL_MX / TGEMV_MX take scale_a in "
             "scale_left or left and scale_b in scale_right or right (left/right kept for existing "
             "programs); TMOV moves mat -> scale_left / scale_right on MTE1. Location names compare without "
             "case or underscores, so the public ScaleLeft spelling parses.",
             "The public operand types name the scale buffers; keeping left/right accepted changes no "
             "existing program; a row rule in bytes cannot hold for 2-byte scale rows the public examples use."),
    Decision("Scratch operands of TSORT32, TCI, TPRINT and TMOV",
             "The public C++ overloads TSORT32(dst, src, idx, tmp), TCI(dst, start, tmp), TMOV(dst, src, tmp) "
             "take a scratch tile and TPRINT(src, tmp) a global scratch tensor (to stage Acc and Mat tiles "
             "through GM, at least Numel * sizeof(T) bytes); what the scratch holds afterwards is not stated.",
             "Each takes an optional trailing tmp after its existing operands (no operand moves): a tile for "
             "TSORT32, TCI and TMOV, a global (%g[0, 0], the whole tensor) for TPRINT. As every scratch "
             "operand in openpto (decision 'Sources of TQUANT and scratch operands') it is accepted and never "
             "read or written. TPRINT's tmp must hold src.rows * src.cols elements when both are static "
             "(STRUCT_SHAPE); its dtype is free. TMOV_FP takes no tmp.",
             "The results do not depend on the scratch on any target, so functional backends need not touch "
             "it; leaving it unchanged is the one behaviour every backend can promise."),
    Decision("Config tiles",
             "SETFMATRIX, SET_IMG2COL_RPT and SET_IMG2COL_PADDING take one configuration operand, "
             "`%cfg : !pto.fmatrix_config` (a ConvTile / Img2colTileConfig in C++: feature-map height and width, "
             "the pad list, repeat stride/time/mode, the pad value); the type's layout is not printed.",
             "!pto.fmatrix_config is the tile type !pto.tile<1x16xf32> (a type alias, printed as the tile). "
             "Each instruction takes either its scalar fields or an optional tile operand cfg (f32 or i32) "
             "whose row 0 holds fmap_h, fmap_w, pad_left, pad_right, pad_top, pad_bottom, repeat_stride, "
             "repeat_time, repeat_mode, pad_value in that order, so one tile feeds all three; each reads its "
             "own columns with the scalar form's ranges. An integer field holding a fraction, NaN or an "
             "infinity, or one out of range, is RUNTIME_BAD_CONFIG; fewer than ten valid columns is "
             "STRUCT_VALID_REGION (RUNTIME_INVALID_READ at run time); both forms or neither is "
             "STRUCT_OPERAND_FORM, some fields only STRUCT_MISSING_OPERAND.",
             "A tile carries run-time values the way the C++ config object does, and one fixed column order "
             "lets a program build or load the config like any tile; f32 holds every field exactly."),
    Decision("TMOV acc -> vec modes (AccToVecMode)",
             "TMOV<..., AccToVecMode mode>(dst, src) sends the cube's acc tile to vector sub-block 0 or 1 "
             "(SingleModeVec0/1) or splits it between both (DualModeSplitM by rows, DualModeSplitN by "
             "columns); A5 asserts no quantisation and no nz2dn destination in the dual modes, and valid "
             "columns a multiple of 32 for a 4-byte DualModeSplitN; which half goes where and what a "
             "single-program run sees are not stated.",
             "An attribute mode (#pto.acc_to_vec<...>, default SingleModeVec0), only on acc -> vec moves "
             "(STRUCT_ATTR_VALUE elsewhere). As decision 'FIFO split modes', a functional run is vector "
             "sub-block 0: SingleModeVec1 writes nothing into dst (the data lands in sub-block 1's buffer; "
             "the fit check still applies), DualModeSplitM writes the upper src.valid_rows / 2 rows, "
             "DualModeSplitN the left src.valid_cols / 2 columns. Dual modes: an odd split extent (or a "
             "4-byte SplitN width not a multiple of 32) is STRUCT_VALID_REGION, RUNTIME_VALID_REGION when "
             "dynamic; dst's static shape is the half of src's (STRUCT_SHAPE); same dtype and no DN "
             "destination (STRUCT_ATTR_VALUE). The TMOV pre-quantising forms (scalar, or reading the "
             "SET_QUANT_* state) and TINSERT's mode are not part of this decision.",
             "Sub-block 0 is what a one-program run executes on every backend; the header's assertions "
             "become static checks, and the run-time forms of the same checks fault identically."),
    Decision("TQUANT_HIF4 (HiFloat4 quantisation)",
             "A6 TQUANT<grp_axis=1, MxQuantAlg::Hif4> takes bf16 and writes float4_e1m2x2_t (the header's "
             "static_asserts); the page gives the three levels (Ea e6m2 per 64, Eb per 8, Ec per 4) and the "
             "thresholds; the public golden generator fixes the arithmetic (bf16 after every product, Ea = "
             "e6m2 of bf16(max * bf16(1/7)), round-half-even codes). Not stated: the exp tile's layout as an "
             "interface (the header carves a workspace of flat Ea/Eb/Ec regions plus the Cube patch layout), "
             "NaN, infinities, values below the e6m2 range, -0, rows not a multiple of 64 elements, and the "
             "kernel's vcvt ROUND_A against the golden's ties to even.",
             "TQUANT_HIF4 dst float4_e1m2x2, src bf16, exp u8, legal on cpu and a6; blocks are 64 consecutive "
             "elements of a row and dst's valid columns must be a multiple of 64 (STRUCT_VALID_REGION, "
             "RUNTIME_VALID_REGION when dynamic). exp holds R x C/16 bytes: per block Ea, the Eb byte (bit k: "
             "octet k, all eight kept as the page's pstu store does, not the old downsampled golden), then "
             "the Ec bits of quads 0-7 and 8-15. The maxima read NaN as 0; NaN and zero of either sign encode "
             "as +0; e6m2 rounds to 3 significant bits half-even, below 2**-48 gives code 0 (a zero scale) "
             "and above 1.5 * 2**15 (inf too) 0xFE; codes round half to the even code (the golden) and "
             "saturate at ±1.75. max and scaling are accepted scratch, never accessed.",
             "The golden is the only executable statement of the algorithm; one record per block keeps the "
             "32 bits the page counts next to their block without modelling the Cube's data movement; the "
             "undefined corners get the answers of TQUANT_DN and the fp4 types (NaN ignored, saturate)."),
    Decision("TINSERT acc -> vec",
             "A5's TINSERT writes an acc tile into a vec tile at (indexRow, indexCol) with an AccToVecMode "
             "(TInsertAccToVec); the TINSERT page lists acc -> mat, vec -> mat and vec -> vec only.",
             "TINSERT takes acc -> vec (FIX; accepted on a2/a3 too, as TMOV's acc -> vec, because the profile "
             "tables cannot narrow locations) and the attribute mode with TMOV's meaning (decision 'TMOV acc "
             "-> vec modes (AccToVecMode)'): sub-block 0's part is inserted at (r0, c0), SingleModeVec1 "
             "inserts nothing; the window check (RUNTIME_OOB) applies to that part; in dual modes dst's valid "
             "region need only hold the half, not the whole source.",
             "The header implements it and the mode means the same for both moves; one helper keeps them in "
             "step on every backend."),
    Decision("TMATMUL_MX_HIF4 and the hifloat4x2 spelling",
             "A6 TMATMUL_MX takes hifloat4x2_t A and B (also f8e4m3 / f16 / bf16 A with hifloat4x2_t B) with "
             "the HiF4 scales in HIF4_A_ZZ / HIF4_B_NN 64-byte patches, f32 in L0C; the page says the Cube "
             "applies Ea/Eb/Ec internally and requires an even K; TQUANT's HiF4 path writes float4_e1m2x2_t "
             "codes. How the scales combine with the codes (the e6m2 value or its bf16 reciprocal), the "
             "summation order and rounding, and how hifloat4x2_t relates to float4_e1m2x2_t are not stated.",
             "hifloat4x2 and hifloat4x2_t are accepted spellings of float4_e1m2x2 (the same E1M2 nibbles; "
             "dt.ALIASES), so TQUANT_HIF4's output feeds the matmul directly. TMATMUL_MX_HIF4 (cpu, a6; the "
             "mixed f8e4m3/f16/bf16 x HiF4 overloads: decision 'TMATMUL_MX_HIF4 mixed overloads') multiplies A (M x K) and B (K x N) of "
             "such codes, K a multiple of 64; scale_a is M x K/16 and scale_b K/16 x N, holding "
             "TQUANT_HIF4's 4-byte records per 64-element K block (B's records run down scale_b's rows, as "
             "the MX form's scale_b). Each element is E1M2(code) * e6m2(Ea) * 2**(Eb + Ec) exactly (the e6m2 "
             "value itself, not the quantiser's bf16 reciprocal; Ea 0 is zero, every other code of 0..255 "
             "its formula value); products exact in f64, summed in f64, rounded once to f32 (the matrix "
             "family's contract).",
             "One type for one bit pattern keeps the fp4 machinery (decode, moves, conversions) shared; the "
             "records TQUANT_HIF4 writes are the natural scale operand; exact values and one rounding are "
             "the contract every other matrix form has."),
    Decision("4-bit moves and sizes",
             "The A5 TLoad halves its strides for fp4 (one byte moves two elements) and TMov lists "
             "float4_e2m1x2_t / float4_e1m2x2_t; global memory holds the packed two-per-byte image; the "
             "32-byte row rule and the buffer capacities count bytes. Neither the A2/A3 nor the A5 moves "
             "name int4b_t, and nothing says how relu treats a 4-bit code.",
             "TLOAD, TSTORE and TMOV take float4_e2m1x2 / float4_e1m2x2 on cpu and a5 and i4 on cpu "
             "(dt.MOVABLE_CODED, dt.CPU_MOVABLE_CODED) as bit copies of the element bytes, no atomic ADD. "
             "openpto's tensors of a 4-bit type hold one element per array element, as its tiles do: the "
             "public packed image is the host's fp4.pack of that array. relu keeps a code whose low "
             "nibble is 1 .. 7 and writes 0 for the rest (-0 and the negatives; i4's too). The legality "
             "rules count a 4-bit element as half a byte (dt.memory_bits): a row is whole 32-byte units "
             "only at a multiple of 64 elements, a fractal box is 16 x 64 (64 x 16 for ZN), and a tile's "
             "capacity use is rows * cols / 2 bytes (dt.memory_bytes, TileType.nbytes), in the per-tile check, "
             "the verifier's per-buffer totals, a constant TASSIGN / alloc_tile address plus the tile's "
             "bytes, and pto.subset's boxes; only the backends' arrays (openpto's storage) take one "
             "uint8 per element.",
             "One element per array element keeps every move a plain copy on both backends and lets a "
             "kernel index 4-bit tensors like any other; counting bits in the rules gives the public "
             "limits (twice the elements per row and per buffer)."),
    Decision("Scalar pre-quantisation forms",
             "TMOV(dst, src, preQuantScalar), TEXTRACT(dst, src, preQuantScalar, indexRow, indexCol), "
             "TINSERT(dst, src, preQuantScalar, indexRow, indexCol) and TSTORE(dst, acc, preQuantScalar) "
             "take a uint64_t register image: the f32 scale's bits in the low word, bit 46 the i8 (set) / "
             "u8 (clear) flag, and in the CPU model an offset in bits 37-45; each reluMode template "
             "argument applies after the scale. GetScalarPreQuantMode maps (dst, acc) pairs: a2/a3 f32 -> "
             "i8/u8/f16/bf16 and i32 -> i8/u8/f16 plus i32 -> i16 (SHIFTS322S16, a right shift by a count "
             "in bits 32-35), but their acc moves assert f32 -> i8 and i32 -> i8/u8/f16 and their store "
             "f32 -> i8/u8 and i32 -> i8/u8/f16; a5 maps f32 -> i8/u8/f16/bf16/hifloat8/f8e4m3 (TSTORE "
             "also f32) and i32 -> i8/u8/f16/bf16; no dual AccToVecMode takes a scale. The CPU model "
             "clamps finite f16 results to ±65504 under a control bit.",
             "One optional f32 operand preQuantScalar on the existing mnemonics, in the public position "
             "(TEXTRACT/TINSERT: before r0, c0), written like any f32 (a hex literal is the f32's bit "
             "pattern, so the low word of the public image reads as it is); the i8/u8 choice comes "
             "from dst's type and there is no offset (an image with bit 46 or an offset has no spelling). "
             "Semantics as the _FP forms with one factor: f32(src) * scale rounded to f32, relu (moves' "
             "relu attribute, now also on TEXTRACT/TINSERT and their _FP forms and, as reluPreMode, TSTORE and TSTORE_FP), then f16/bf16 nearest-even "
             "(overflow ±inf, as TSTORE_FP) or i8/u8 nearest-even with saturation and NaN -> 0. Pairs: "
             "a2/a3 moves f32 -> i8, i32 -> i8/u8/f16, TSTORE also f32 -> u8; a5 and cpu f32 and i32 -> "
             "i8/u8/f16/bf16, f32 also -> f8e4m3 and (moves only) hifloat8 (decision 'Pre-quantising 8-bit "
             "float targets'). Not declared: i32 -> i16 (a shift, not a scale) and a5's scaled f32 -> f32 "
             "store (TSTORE_FP declares it on a5). The dtype table is the union of both forms; a pair only the scaled form "
             "converts without the operand is STRUCT_MISSING_OPERAND, a non-f32 scale LEGAL_DTYPE, on a "
             "non-acc source LEGAL_LOCATION, in a dual mode STRUCT_ATTR_VALUE. Which pairs the scaled form "
             "converts is a per-profile form rule (Instruction.profile_forms, spec.FormRule: with the "
             "operand present the tuple must be in the profile's form table, LEGAL_DTYPE with those pairs "
             "as expected), so a2/a3 refuse the scaled f32 -> f16/bf16 they accept unscaled; pages list "
             "the form tables under 'Element types per form'. The vector forms (TMOV_FP, TEXTRACT_FP, "
             "TINSERT_FP) take the same per-profile pairs (GetVectorPreQuantMode maps what the scalar table "
             "maps; a2/a3 TEXTRACT_FP/TINSERT_FP now narrowed like TMOV_FP). Bytecode positions of "
             "TEXTRACT/TINSERT's r0 and c0 moved up by one: bytecode format version 2, a version-1 file "
             "is refused with BCODE_VERSION naming the move.",
             "Same mnemonic as the public overload and a value rather than register bits, as decision "
             "'Pre-quantisation state'; one scaling rule for the scalar and vector forms keeps the forms "
             "and both backends in step; the narrower sets are those every header both maps and admits."),
    Decision("The !pto.tpipe spelling",
             "TPUSH / TPOP print `pto.tpush %tile, %pipe : (T, !pto.tpipe<...>) -> !pto.record_event`, "
             "`pto.tpush ins(%tile : T) pipe(%pipe : !pto.tpipe<...>)` and `pto.tpop pipe(%pipe : ...) outs(%tile "
             ": ...)` without spelling the type's body or how a pipe value is made; the C++ TPipe<FlagID, DirType, "
             "SlotSize, SlotNum, LocalSlotNum = 2, IsNoSplit = false, EN_UNIT_FLAG = false> is a constructed "
             "object; a one-way pipe waits and sets FlagID and FlagID + 1, DIR_BOTH adds FlagID + 2 and + 3 (the "
             "headers assert they stay below 16); DIR_V2C_CTRL moves a 32-bit control word.",
             "`!pto.tpipe<FlagID, Dir, SlotSize, SlotNum[, LocalSlotNum[, IsNoSplit[, EnUnitFlag]]]>`, positional "
             "or name=value (Dir: DIR_C2V, DIR_V2C, DIR_BOTH, the *_GM forms, their numbers 1..7, with or without "
             "DIR_ and Direction::); `%p = pto.initialize_pipe : !pto.tpipe<...>` declares a pipe for the whole "
             "kernel and adds no statement. A TPUSH/TPOP/TALLOC/TFREE naming %p (as an operand, in pipe(...), "
             "its type in the signature; its !pto.record_event result: decision 'FIFO event results') is the "
             "attribute form with "
             "FlagID and SlotNum the pipe's; the canonical text and the bytecode are that form. A bidirectional "
             "pipe's vector -> cube FIFO is FlagID + 2. Rejected: a malformed body, DIR_V2C_CTRL, flags past 15, "
             "SlotNum outside 1..16 (PARSE_TYPE); an acc push or vec pop on a pipe without cube -> vector traffic, "
             "a vec push or mat pop without vector -> cube traffic (STRUCT_PIPE_DIRECTION); two pipes of one "
             "kernel sharing a flag (STRUCT_PIPE_FLAGS); a written FlagID/SlotNum that differs from the pipe's, a "
             "tile (the whole tile, for a split vector part) larger than SlotSize, a Split on an IsNoSplit pipe, "
             "two pipes in one statement, a GlobalData form on a bidirectional pipe (STRUCT_PIPE_CONFIG); a pipe "
             "type anywhere else (a parameter, another instruction) is PARSE_TYPE. LocalSlotNum and EnUnitFlag "
             "are read and change nothing; the *_GM directions are accepted on every profile.",
             "A pipe is compile-time configuration: folding it into the attributes the FIFO semantics already "
             "take keeps one program model, one printer and one bytecode, and both backends unchanged, while "
             "everything the attributes cannot say (direction, size, flags) is checked where it is written."),
    Decision("TSCATTER flat offsets",
             "The older TSCATTER page writes dst[idx[i, j], j] = src[i, j] (a row selector); the current tile-op "
             "page says idx holds flattened destination offsets and is 'not a destination row selector', and "
             "every implementation agrees: the CPU simulator writes dst.data()[idx], a2a3/TScatter.hpp "
             "dstPtr[idx] over idx's valid region, a5 vscatter with idx as element offsets; the public CPU test "
             "turns row numbers into r * cols + col first. Offsets past the tile are unchecked.",
             "The index form writes src[i, j] to dst.flat[idx[i, j]], dst.flat being dst's static tile in "
             "row-major order (element r * dst.cols + c, as TGATHER's index form reads src), over src's valid "
             "region in row-major order, the last writer winning. An offset outside [0, dst.rows * dst.cols) is "
             "RUNTIME_OOB; a target outside dst's valid region is written and stays unspecified. dst's valid "
             "region no longer needs src's valid columns. The mask form is unchanged. This replaces openpto's "
             "earlier row reading: a program written for it gives idx[i, j] * dst.cols + j.",
             "Programs written for the hardware compute offsets; reading them as rows would scatter to the wrong "
             "places without any error. Row-major over the static tile makes TGATHER and TSCATTER inverses."),
    Decision("TMATMUL_MX_HIF4 mixed overloads",
             "A6 TMatmul.hpp's CheckMadMxValid admits float8_e4m3_t, half and bfloat16_t A with hifloat4x2_t B "
             "(C float, K a multiple of 64) besides HiF4 x HiF4; every overload takes an A and a B scale tile, "
             "whose role the TMATMUL_MX page calls target-defined; the A6 scale TLOAD takes float8_e8m0_t or "
             "uint8_t, in MX_A_* / MX_B_* or HIF4_A_ZZ / HIF4_B_NN global layouts. The HiF4 page describes a "
             "64-byte patch per fractal and K-group (the Ea/Eb pairs of 16 rows, then their Ec halves) but "
             "not the order of the patches across fractals and K-groups; no page or test exercises a mixed "
             "overload.",
             "TMATMUL_MX_HIF4 takes A of f8e4m3, f16 or bf16 with B of hifloat4x2 on cpu and a6 (a5 and "
             "earlier: LEGAL_UNSUPPORTED_INSTRUCTION; f8e5m2, f32 or integer A, or a B that is not HiF4: "
             "LEGAL_DTYPE). B and scale_b are as in the HiF4 form; A carries MX E8M0 scales like TMATMUL_MX's: "
             "scale_a is M x K/32 u8 codes e, value 2**(e - 127), 255 NaN (127 leaves A unscaled); each term "
             "(A[i, k] * 2**(scale_a[i, k // 32] - 127)) * B(k, j) is exact in f64, summed in f64, rounded "
             "once to f32; NaN and infinities follow IEEE as in TMATMUL_MX. The 64-byte patch arrangement "
             "is not modelled: it is the global/L1 image that TLOAD with a HIF4 layout reads and the Cube "
             "consumes, invisible to the matmul's meaning, which depends only on which record belongs to which "
             "row (column) and K block, and openpto's scale tiles state that directly (one record per row and "
             "block, as TQUANT_HIF4 writes them); the HIF4_A_ZZ / HIF4_B_NN global layouts belong to TLOAD, "
             "which reads a patch into those records (decision 'Global scale layouts').",
             "The only scale an fp8/f16/bf16 operand has anywhere in the public ISA is the MX E8M0 block scale, "
             "and it is what the A-side scale TLOAD accepts for a non-HiF4 A; code 127 reduces it to the plain "
             "weight-only product. Modelling the patch order would mean guessing what the page leaves out, for "
             "no change in any result."),
    Decision("Pre-quantising 8-bit float targets",
             "A5's pre-quant mode tables map f32 -> hifloat8 (QF322HIF8_PRE, VQF322HIF8_PRE) and f32 -> "
             "float8_e4m3 (VQF322FP8_PRE in both tables) and the acc-move and store checks admit them; no "
             "page says how the fixpipe rounds or saturates into them.",
             "Moves (TMOV, TEXTRACT, TINSERT and their _FP forms) convert the scaled f32 into f8e4m3 by "
             "saturating to ±448 and rounding nearest-even, NaN -> 0x7F (TQUANT's f8e4m3 rule), and into "
             "hifloat8 by its one conversion (nearest, ties away from zero; overflow past 2**15 ±inf; NaN "
             "0x80: isa/hifloat8.encode, the llvm hif8 encoder). TSTORE (preQuantScalar, QF322HIF8_PRE) and "
             "TSTORE_FP (VQF322HIF8_PRE) convert to both likewise, f32 acc -> an f8e4m3 or hifloat8 tensor; a "
             "hifloat8 tensor is an array of uint8 codes, and the global operand carries its declared element "
             "type (GlobalRef.element) so that the store encodes rather than saturating to u8. cpu and a5 "
             "(and a6, which uses the a5 TStore) take these pairs; a2/a3 refuse them (LEGAL_DTYPE).",
             "f8e4m3 has no infinity, and a fixpipe that saturates integers saturates the float without one; "
             "hifloat8 keeps the conversion every other openpto instruction uses for it, so a code means "
             "one thing wherever it is written."),
    Decision("Global scale layouts",
             "pto::Layout lists ND, DN, NZ, SCALE, MX_A_ND/DN/ZZ, MX_B_ND/DN/NN, HIF4_A_ZZ, HIF4_B_NN and the "
             "convolution layouts (NC1HWC0, GNC1HWC0, NCHW, GNCHW, NHWC, NDC1HWC0, NCDHW, FRACTAL_Z, "
             "FRACTAL_Z_S16S8, FRACTAL_Z_3D). The TLOAD page lets Mat loads read MX_A_* into ZZ scale tiles "
             "and MX_B_* into NN ones (MX_A_ZZ/MX_B_NN: shape[3] 16, shape[4] 2; the ND/DN forms: shape[0] = "
             "shape[1] = 1, shape[4] = 2, each also -1; valid columns (A) / rows (B) even); the CPU "
             "simulator's MapTileIndicesToGlobalOffset fixes the MX arithmetic; the a5 TLoad takes "
             "float8_e8m0_t, the a6 one also uint8_t and adds HIF4_A_ZZ/HIF4_B_NN ([16, 4] fractals), whose "
             "64-byte patch the TMATMUL_MX_HIF4 page describes (the Ea/Eb pairs of 16 rows, then their Ec "
             "pairs); the TileShape2D/BaseShape2D helpers build the 5-D shapes (their HIF4 row-group "
             "stride, cols * 16, is a quarter of the 64-byte patches a group holds). No TSTORE path takes a "
             "scale layout; SCALE appears only in the simulator's trace names. The convolution layouts "
             "belong to ConvTile loads, TTRANS and the acc TSTORE to NC1HWC0/NDC1HWC0.",
             "GlobalLayout has SCALE, the six MX and the two HiF4 layouts (PTO-AS layout=MX_A_ZZ in "
             "!pto.memref / tensor-view types and make_tensor_view's layout attribute, any case, "
             "underscores optional: MX_ADN). A scale tensor has rank 5 and u8 elements (E8M0 codes or HiF4 "
             "record bytes; LEGAL_DTYPE) and holds a scale matrix: A-side layouts an M x K/32 (MX) or M x "
             "K/16 (HiF4 records, 4 per 64-element group) matrix, B-side the K/32 x N / K/16 x N one, exactly "
             "the scale_a / scale_b tiles TMATMUL_MX and TMATMUL_MX_HIF4 read. Element (i, j) is at the "
             "written indices plus: MX_A_ZZ [0, i/16, j/2, i%16, j%2], MX_A_ND [0, 0, i, j/2, j%2], MX_A_DN "
             "[0, 0, j/2, i, j%2], MX_B_NN [0, j/16, i/2, j%16, i%2], MX_B_ND [0, 0, i/2, j, i%2], MX_B_DN "
             "[0, 0, j, i/2, i%2] (the simulator's formulas), HIF4_A_ZZ [0, i/16, j/4, ((j%4)/2)*8 + "
             "(i%16)/2, (i%2)*2 + j%2], i.e. record byte b of row r at patch byte (b/2)*32 + 2*(r%16) + "
             "b%2, so a patch is the page's (Ea, Eb) half then (Ec lo, Ec hi) half and the tile gets the "
             "(Ea, Eb, Ec lo, Ec hi) records TQUANT_HIF4 writes; HIF4_B_NN the same with i and j swapped; "
             "addresses go through the tensor's own strides (isa/glayouts.py is the one table the verifier, "
             "the reference and llvm read). TLOAD only, into a mat tile: A-side ND, ZZ or ZZ_MX, B-side DN or "
             "NN_MX (the public scale tiles' 32-byte boxes, decision 'Scale boxes: ZZ_MX and NN_MX'; an "
             "unboxed ND / DN mat tile follows the mat row rule on a5/a6, 32-byte rows). Static "
             "rules, STRUCT_SHAPE: the fixed dims as the page, but static (a ? there is refused, since the "
             "formula would silently misread another extent); STRUCT_VALID_REGION: valid columns (A) / rows "
             "(B) a multiple of 2 (MX) or 4 (HiF4: whole records; the page states none), "
             "RUNTIME_VALID_REGION when dynamic; out-of-range indices RUNTIME_OOB (STRUCT_OOB when "
             "constant) naming the dim, checked before anything is read. Profiles (Profile.global_layouts, "
             "LEGAL_LAYOUT): MX on cpu, a5, a6; HiF4 on cpu, a6; a2/a3/Kirin ND, DN, NZ only. TPREFETCH "
             "checks the same span. Out: SCALE parses but no load or store takes it (no public path); "
             "TSTORE / TSTORE_FP of a scale layout is LEGAL_LAYOUT (no public store). The convolution "
             "layouts are not declared: TLOAD, TIMG2COL, TTRANS and TEXPANDS use them for ConvTile tiles "
             "(tiles of up to 6 dims, which openpto does not have); their one use with 2-D tiles, the A2/A3 "
             "acc TSTORE to NC1HWC0 / NDC1HWC0 (a5: NHWC / NCHW / NCDHW, with no simulator formula), is left "
             "for a decision of its own: that store covers the whole tensor (validRow = N*H*W and validCol = "
             "C1*C0 asserted at run time), C0 depends on the dtype and a channel-split mode, and NDC1HWC0 "
             "folds C0 into the element offset of a 5-D tensor.",
             "The simulator's formulas and the page's patch are the only statements of what a scale tensor "
             "holds; reading them into the logical scale matrix keeps tiles logical (decision 'Physical "
             "layouts') and makes TLOAD's result the operand the MX matmuls already take."),
    Decision("TASSIGN placement checks",
             "TASSIGN.md: the compile-time-address form static_asserts tile_size <= capacity (SA-0352), "
             "Addr + tile_size <= capacity (SA-0353) and Addr % alignment == 0 (SA-0354); the run-time form "
             "checks nothing; no page says whether two tiles may be placed over the same bytes.",
             "The verifier checks the end of a placement whose address is a constant (a literal, a .const or "
             "folded integer arithmetic) for TASSIGN and for alloc_tile's addr: address + the tile's packed "
             "bytes (TileType.nbytes, decision '4-bit moves and sizes') past the profile's capacity of the "
             "tile's location is LEGAL_CAPACITY with both numbers. Overlapping placements are not reported "
             "(manual placement exists to reuse on-chip bytes), and a negative constant address is left to "
             "the run-time check (RUNTIME_BAD_ADDRESS); a misaligned one: decision 'Misaligned constant "
             "addresses'.",
             "SA-0353 is a static rule of the public headers that the TASSIGN page already promised the "
             "verifier applies; overlaps are a property of a schedule, not an error."),
    Decision("Scale boxes: ZZ_MX and NN_MX",
             "pto_tile.hpp: a Tile's SFractalSize is 512 (fractalABSize), 1024 (fractalCSize) or 32 "
             "(fractalMxSize); with 32 the inner box is fixedMxRowSize x fixedMxColSize = 16 x 2 elements "
             "when SLayout is RowMajor, 2 x 16 when ColMajor, the box-rows rule is waived (any Rows), and "
             "Cols must be whole boxes. TileLeftScale is (RowMajor, RowMajor, 32), TileRightScale (ColMajor, "
             "ColMajor, 32); the public MX / HiF4 kernels type their L1 scale tiles the same way (u8, K/32 "
             "or K/16 bytes a row), and TLoadMxCubeCheck wants the 32-byte fractal. Nothing says how such a "
             "tile reshapes or splits.",
             "Two tile layouts: ZZ_MX (16 x 2 boxes, row-major inside and across) and NN_MX (2 x 16 boxes, "
             "column-major inside and across), boxed, the box counted in elements whatever the dtype. The "
             "positional public spelling with FRACTAL 32 maps (RowMajor, RowMajor) to ZZ_MX and (ColMajor, "
             "ColMajor) to NN_MX, any other pair with 32 is PARSE_TYPE; without 32 the pairs mean what they "
             "did, and (ColMajor, ColMajor) stays PARSE_TYPE (no 512-byte NN tile). Alignment "
             "(LEGAL_ALIGNMENT): cols a multiple of the box cols (2 / 16), rows free. a5/a6: mat takes both, "
             "scale_left ND or ZZ_MX, scale_right DN or NN_MX; a2/a3/Kirin neither (no MX). TLOAD from an "
             "A-side scale layout takes ZZ_MX, a B-side one NN_MX. pto.subset splits ZZ_MX at whole 16-row "
             "boxes keeping every column, NN_MX at whole 16-column boxes keeping every row (STRUCT_LAYOUT). "
             "TRESHAPE refuses both (LEGAL_LAYOUT: partial boxes leave no defined byte order). Elements stay "
             "logical (decision 'Physical layouts'): no backend reads the layout. a6 has no TMOV; its "
             "scale tiles reach scale_left / scale_right through TEXTRACT (decision 'TEXTRACT / TINSERT "
             "codes and scale windows').",
             "It is the public type of the public kernels' scale tiles: with it a K = 64 MX load (2 scales a "
             "row) is legal on a5/a6 as on the hardware, where before only K >= 1024 met the 32-byte row rule."),
    Decision("float8_e8m0 scales",
             "The public pages type MX scale tiles float8_e8m0_t (TMATMUL_MX, TGEMV_MX; the A5 TLoad of "
             "MX_A_ZZ / MX_B_NN wants it, the A6 TLoad of the scale layouts takes it or uint8_t; A5 TMov, "
             "TStore, TExtract and TInsert list it) while TQUANT's pages write the exponents as uint8_t "
             "(E8M0). The encoding is 2**(e - 127) with 0xFF NaN, no sign and no zero (the CPU model's "
             "MXType<8, 0, 127>). No TCVT page or table converts to or from it; nothing says what arithmetic "
             "on it means.",
             "An element type f8e8m0 (ExponentFloat in isa/dtypes.py, held as its uint8 codes like the other "
             "coded floats), printed f8e8m0 and parsed also as float8_e8m0_t, float8_e8m0, e8m0, f8e8m0fnu "
             "and MLIR's f8E8M0FNU. It is the same bits as the u8 scale codes openpto took first, and both "
             "stay legal wherever a scale is: TMATMUL_MX / TGEMV_MX take both scale tiles u8 or both f8e8m0 "
             "(a mixed pair is LEGAL_DTYPE), TMATMUL_MX_HIF4's mixed overloads take a u8 or f8e8m0 scale_a "
             "(HiF4 records stay u8), TQUANT_DN writes u8 or f8e8m0 exponents (the same codes), and TLOAD "
             "from a global scale layout takes u8 or f8e8m0 on every profile that has the layouts. The "
             "scale decode reads the codes alike, so an f8e8m0 scale tile gives the same product as the u8 "
             "one. TLOAD, TSTORE and TMOV move f8e8m0 bit for bit on cpu and a5 (not a2/a3); u8 <-> f8e8m0 "
             "moves are dtype changes (LEGAL_DTYPE), TSTORE has no atomic mode for it (LEGAL_MODE), and "
             "relu on a move keeps every code (no E8M0 value is negative or zero; NaN stays). Everything "
             "else refuses it with LEGAL_DTYPE: arithmetic, and TCVT on every profile (cpu's 'every coded "
             "type with every float' rule leaves it out). TEXTRACT and TINSERT move it too (decision "
             "'TEXTRACT / TINSERT codes and scale windows'). "
             "Conformance draws f8e8m0 operands as raw codes, all 256 (0xFF NaN among them).",
             "Programs copied from the public pages parse as written, programs written for the u8 scales keep "
             "working, and the two spellings of one scale agree bit for bit; a conversion nobody specifies "
             "is refused rather than invented."),
    Decision("Pre-quantising TPUSH",
             "The public TPUSH<Pipe, TileProd, TConfig>(pipe, tile) overload takes a FixpipeParams whose "
             "QuantPre (a QuantMode_t) the acc push applies (TMovCcToUb / TStoreAcc into the slot); the "
             "consumer's element type is FixpipeConsDType of the mode (f16 for F322F16 / QF322F16_PRE / "
             "DEQF16 / VDEQF16, bf16 for F322BF16 / QF322BF16_PRE / QS322BF16_PRE / VQS322BF16_PRE, int8_t "
             "for QF322B8_PRE / REQ8 / VQF322B8_PRE / VREQ8, A5 float8_e4m3 for QF322FP8_PRE and hifloat8 "
             "for QF322HIF8_PRE, the source type otherwise). Scalar modes read the SET_QUANT_SCALAR "
             "register (the CPU model substitutes 1.0 when it is zero), vector modes the tile "
             "SET_QUANT_VECTOR pointed at. The pages do not say what a push with no state, or with a "
             "register whose sign flag disagrees with the mode, produces.",
             "TPUSH gains the attribute Quant (#pto.fixpipe_quant<...>, default NoQuant; appended after "
             "Split so the bytecode numbering of the older attributes stays) with the modes whose consumer "
             "type differs from the source: F322F16, F322BF16 (cast, no state), QF322B8_PRE, QF322F16_PRE, "
             "QF322BF16_PRE, QF322FP8_PRE, REQ8, DEQF16, QS322BF16_PRE (scalar), VQF322B8_PRE, VREQ8, "
             "VDEQF16, VQS322BF16_PRE (vector). The tile must be an unsplit acc tile of the mode's source "
             "dtype (LEGAL_DTYPE, LEGAL_LOCATION, STRUCT_ATTR_VALUE; the TConfig overload takes no split); "
             "a2/a3 refuse the A5-only QF322FP8_PRE, QS322BF16_PRE and VQS322BF16_PRE (LEGAL_ATTR). The "
             "slot holds the converted values (the mode's type), so the TPOP names that type. Conversion: "
             "the pre-quantising moves' (_prequant.saturate) after one f32 product with the scale the last "
             "SET_QUANT_SCALAR recorded or fp[0, j] of the tile the last SET_QUANT_VECTOR recorded, read when "
             "the push runs. No state: RUNTIME_QUANT_STATE (not the CPU model's 1.0); the i8 scalar modes "
             "also need OutType I8 (U8 would set a sign flag that writes unsigned codes into the int8 slot), "
             "the other modes ignore OutType as the register does. Not declared: the modes whose "
             "consumer type is the source type (VQF322F16_PRE and the like: FixpipeConsDType leaves them "
             "f32) and the i16/i4 modes (not TPUSH types). QF322HIF8_PRE and the layout, relu, phase, "
             "sub-block and atomic fields: decision 'TPUSH FixpipeParams fields'.",
             "It makes the SET_QUANT_* state observable through the one public instruction that reads it, "
             "with the same conversion as every other pre-quantising form; a fault instead of a silent 1.0 "
             "catches a missing SET_QUANT_* on every backend."),
    Decision("TEXTRACT / TINSERT codes and scale windows",
             "The A5 TExtract (is_textract_supported_type, also the A6 one, which adds hifloat4x2_t) and "
             "TInsert list hifloat8_t, float4_e2m1x2_t, float4_e1m2x2_t and float8_e8m0_t beside the fp8 "
             "types, and both TExtract headers route a ScaleLeft / ScaleRight destination to "
             "TExtractToAmx / TExtractToBmx (load_cbuf_to_ca_mx / _cb_mx), which take the row offset in "
             "16-row units and the column offset in 2-byte units (ScaleLeft; ScaleRight the transpose) and "
             "check only the fractals of both tiles. The a6 header has no TMOV, so its MX kernels can only "
             "reach the scale buffers through this path. Nothing says what a relu of a code means here, nor "
             "what an offset inside a box does.",
             "TEXTRACT and TINSERT take hifloat8, the fp4 pairs and f8e8m0 on cpu and a5 (TEXTRACT also on "
             "a6, which implements no TINSERT) and i4 on cpu, each as a bit copy of its codes, the dtype "
             "unchanged (LEGAL_DTYPE otherwise; a2/a3 refuse them); relu on them is TMOV's (a code read as "
             "its value; every f8e8m0 code kept). TEXTRACT gains the data paths mat -> scale_left and mat -> "
             "scale_right (pipe MTE1, every profile whose locations exist: a5, a6, cpu), a logical window "
             "copy like the others: dst[i, j] = src[r0 + i, c0 + j]; the offsets are not held to whole "
             "scale boxes (as the A2/A3 fractal alignment of offsets, a property of the hardware copy, not "
             "of the result); the window must lie in src's valid region (RUNTIME_OOB). The scale "
             "destinations take any dtype TEXTRACT takes, as TMOV's do: the matmul that reads them decides "
             "(u8 / f8e8m0 MX scales, u8 HiF4 records). With it an MX or HiF4 matmul runs on a6 from global "
             "memory to global memory (TLOAD, TEXTRACT, TMATMUL_MX / TMATMUL_MX_HIF4, TSTORE).",
             "The codes are the same bytes whichever instruction moves them, and the a6 kernels' only route "
             "to the scale buffers is the one the header implements."),
    Decision("L3 scenarios per profile",
             "a6 and the Kirin parts have no set_flag / wait_flag instruction of their own: their TSYNC "
             "headers order two pipes through an Event whose wait is a flag where the compiler allows one, "
             "and a6's Event falls back to pipe_barrier(PIPE_ALL) for a pipe pair its flags cannot join; "
             "the single-pipe TSYNC<Op> is a pipe_barrier of that op's pipe (ALL among the pipes every "
             "target accepts). a6 implements TADD but no tile-scalar arithmetic.",
             "The conformance synchronisation scenarios (conformance/scenario_forms.py) are written in the "
             "forms the profile provides, read from the declarations (supported_on, the dtype rule, TSYNC's "
             "pipe values): an ordering of pipe SRC before pipe DST is a set_flag / wait_flag pair where "
             "both are legal, else `tsync #pto.pipe<ALL>` at the wait (nothing at the signal; several waits "
             "at one point share one barrier); the scale step x * a is TMULS, else TADD of the tile with "
             "itself (x + x), the shift step mid + b TADDS, else TADD likewise. numpy's expectation follows "
             "the forms used. Scenario names stay the same on every profile.",
             "Every NPU profile runs all four scenarios (none unsupported) and each still orders the store "
             "before the load it feeds; an all-pipe barrier is the one ordering every target's TSYNC "
             "accepts and the one the a6 header itself falls back to."),
    Decision("Misaligned constant addresses",
             "TASSIGN.md: the compile-time-address form static_asserts Addr % alignment == 0 (SA-0354), the "
             "alignment being the buffer's PTO_*_ALIGN_BYTES (buffer_limits.hpp: 32 for UB, L1, L0A/B/C, "
             "bias and fixpipe buffers); the run-time form checks nothing and the CPU simulator ignores the "
             "address.",
             "A TASSIGN or alloc_tile address that is a constant (a literal, a .const or folded integer "
             "arithmetic) and not a multiple of Profile.address_alignment for the tile's location (32 on every "
             "profile, cpu included, since TASSIGN's semantics fault on the same rule everywhere) is "
             "LEGAL_ALIGNMENT at verify time, with the alignment and the address's remainder. A negative "
             "constant and any run-time address stay run-time faults (RUNTIME_BAD_ADDRESS, RUNTIME_MISALIGNED "
             "on the reference and llvm backends). This replaces the alignment half of decision 'TASSIGN "
             "placement checks'.",
             "SA-0354 is a static rule of the public headers: a misaligned constant can never run, so "
             "saying so before the run is the earlier, clearer report."),
    Decision("Flag ids per pipe pair",
             "set_flag / wait_flag pages: the event id 'must be within the supported range for the target "
             "profile' ('Profile-defined' on A2/A3 and A5, unlimited on the CPU simulator); the family page "
             "names EVENT_ID0-EVENT_ID15. The headers define EVENT_ID0..EVENT_ID7 and EVENT_ID_MAX = 8 "
             "(event.hpp), and EventIdCounter<SrcPipe, DstPipe> cycles through those 8 for every ordered pipe "
             "pair alike; cross-core events (ffts) use a 4-bit id instead, which are not flags.",
             "Profile.flag_ids(src, dst) is the number of ids of an ordered pair of two different single "
             "pipes: Profile.event_ids, 8, for every pair on every profile (no public page bounds one pair "
             "more tightly, the A2/A3 ones included). A set_flag / wait_flag (and record_event / wait_event, "
             "which become them) whose id is a constant outside [0, flag_ids) is LEGAL_EVENT_ID at verify "
             "time, naming the pair; a run-time id outside 0..7 stays RUNTIME_EVENT_ID on both backends.",
             "The one bound the public code applies is per pair and the same for all pairs; keeping it "
             "per-pair profile data lets a target with a narrower pair say so without touching the "
             "verifier."),
    Decision("TGATHER fp8 and 64-bit data",
             "a5/TGather.hpp: the index form's CheckValid takes any 1-, 2-, 4- or 8-byte dst type equal to "
             "src's, with b16/b32 indices and b32 indices for 8-byte data (Int64Gather); the mask form lists "
             "(u)int8/16/32/64, half, bfloat16, float, float8_e4m3, float8_e5m2 and hifloat8, and asserts "
             "GATHER_ROW for 64-bit data (Int64GatherPattern); the compare form keeps its own list (no fp8, "
             "no 64-bit). The Kirin TGather lists (u)int8/16/32, half and float only. Nothing names "
             "float8_e8m0_t for a gather.",
             "On cpu and a5 the index and mask forms also move f8e4m3, f8e5m2, hifloat8 (as bits: NaN "
             "codes and -0 kept) and i64/u64. 64-bit data takes i32/u32 indices only (LEGAL_DTYPE for "
             "i16/u16, every profile); a5's mask form refuses GATHER_COL for 64-bit data (LEGAL_DTYPE, a "
             "value rule on gatherType), cpu takes it. The compare form is unchanged. f8e8m0 is not "
             "gathered (the mask form's list leaves it out, and the index form follows that list rather "
             "than a bare size). kirin9030 / kirinX90 keep the a5 rule as it was before (2/4-byte and "
             "i8/u8 data), named in the declaration, as their header has no 64-bit or fp8 gather.",
             "The a5 header moves these types through the same byte gathers; a type no list names stays "
             "out rather than being admitted by its size alone."),
    Decision("Convolution global layouts",
             "pto::Layout has NC1HWC0, GNC1HWC0, NCHW, GNCHW, NHWC, NDC1HWC0, NCDHW, FRACTAL_Z, FRACTAL_Z_S16S8 "
             "and FRACTAL_Z_3D. TLOAD reads them only into ConvTile (tiles of 4 to 6 dims): the same-layout "
             "pairs of CheckConvTileData are NC1HWC0, FRACTAL_Z, NDC1HWC0 (cpu), those plus FRACTAL_Z_3D "
             "(a2/a3), NC1HWC0 and FRACTAL_Z (a5, a6, kirin9030; a5/a6 also convert NHWC / NCHW / NCDHW "
             "into them), none on kirinX90. TSTORE writes NC1HWC0 / NDC1HWC0 from an acc tile on a2/a3 "
             "(TStoreAccNz2NC1HWC0: validRow = N*H*W, validCol = C1*C0, C0 static, f32 8 or 16, i32 16, "
             "otherwise 32 bytes) and from any 2-D tile on the CPU simulator, whose "
             "MapTileIndicesToGlobalOffset gives the index map; a5 stores acc tiles to NHWC / NCHW / NCDHW "
             "instead. The public C0 is 32 bytes of elements. The NDC1HWC0 GlobalTensor is rank 5 [N, D, C1, H, "
             "W] with C0 implicit: the simulator's offset is the rank-5 offset times C0 plus c0, the a2/a3 "
             "load copies W * C0 contiguous elements per (n, d, c1, h) at the tensor's N/D/C1/H strides, and "
             "TStoreAccNz2NDC1HWC0 takes validRow = N*H*W, validCol = D*C1*C0 with C0 = 32 bytes except "
             "16 for an i32 target (the simulator keeps 8). GNC1HWC0 and GNCHW appear only in the CPU "
             "TTRANS conversions (GNCHW <-> GNC1HWC0, GNC1HWC0 -> FRACTAL_Z) on tiles; FRACTAL_Z_S16S8 in no "
             "instruction; C1HWNC0 is a comment naming FRACTAL_Z's dims, no enum member. a5's NHWC / NCHW / "
             "NCDHW acc stores write the matrix through the fixpipe's NZ2ND / NZ2DN with one destination "
             "stride (TStoreAccNCHW asserts validRow = Shape1*Shape3*Shape4 and validCol = Shape2); the CPU "
             "TStore has no such layout. The CPU TImg2col also reads an NDC1HWC0 ConvTile, as D batches of "
             "output rows.",
             "GlobalLayout gains NC1HWC0, NDC1HWC0, FRACTAL_Z and FRACTAL_Z_3D (layout=NC1HWC0 in !pto.memref / "
             "tensor-view types, the usual spellings). isa/glayouts.CONV_LAYOUTS is the one table (the "
             "verifier, the reference and llvm read it): a rank-5 tensor whose dims regroup into one matrix, "
             "NC1HWC0 [N, C1, H, W, C0] the (N*H*W) x (C1*C0) feature map, FRACTAL_Z [C1, H, W, N, C0] the "
             "(C1*H*W*C0) x N weights, FRACTAL_Z_3D the same with D*C1 in dim 0 (the a2/a3 load shares "
             "FRACTAL_Z's code); NDC1HWC0 is held as [N, D, C1, H, W*C0]: the public tensor with its implicit "
             "C0 folded into dim 4 (the same bytes, the same N/D/C1/H strides, dim 4 contiguous as the NPU "
             "load assumes), the (N*H*W) x (D*C1*C0) feature map, (i, j) at [i // (H*W), j // (C1*C0), "
             "(j // C0) % C1, (i // W) % H, (i % W) * C0 + j % C0]; dim 4 is static and a multiple of C0 "
             "(STRUCT_SHAPE); a store to it holds no i32 (LEGAL_DTYPE: the NPU's 16-element groups and the "
             "simulator's 8 disagree). A transfer moves the whole tensor's matrix: the tile's valid region equals "
             "it (STRUCT_VALID_REGION, RUNTIME_VALID_REGION when dynamic) and the written indices are 0 "
             "(a part of a tensor is a sub-view; RUNTIME_OOB / STRUCT_OOB otherwise, naming the dim). C0 = "
             "dim 4 static, 32 bytes of elements, a 4-byte acc-store target also 16 (STRUCT_SHAPE); "
             "elements i8/u8/i16/u16/i32/u32/f16/bf16/f32 (LEGAL_DTYPE). TLOAD fills a mat tile of the "
             "ConvTile's byte order: NZ from NC1HWC0 / NDC1HWC0, ZN from FRACTAL_Z(_3D) (LEGAL_LAYOUT "
             "otherwise). TSTORE and TSTORE_FP write NC1HWC0 / NDC1HWC0 from an acc tile only, with every "
             "acc conversion, relu, "
             "pre-quantising scale and atomic ADD of the ND path. Per profile (Profile.global_layouts for "
             "reads, Profile.stored_layouts for writes, LEGAL_LAYOUT): a2/a3 read all four and write "
             "NC1HWC0 and NDC1HWC0; a5, a6 and kirin9030 read NC1HWC0 and FRACTAL_Z and write none; "
             "kirinX90 none (its CheckConvTileData tests TileData::DType, a name its template does not "
             "declare, so its ConvTile path is not taken as working); cpu all. Left out, with reasons: "
             "GNC1HWC0 and GNCHW (no TLOAD / TSTORE "
             "reads or writes them; they exist only as TTRANS tile conversions, which openpto's 2-D TTRANS "
             "does not model); FRACTAL_Z_S16S8 and C1HWNC0 (no instruction uses them); NHWC / NCHW / NCDHW "
             "(the a5 acc stores' single-stride NZ2ND / NZ2DN writes fix no index map for more than one "
             "batch, the simulator has none, and the a5/a6 loads that convert them into a ConvTile pad C "
             "to C1*C0 with contents no page gives); TIMG2COL from an NDC1HWC0 feature map (openpto's "
             "TIMG2COL reads one 2-D H*W x C map; the depth-batched form would be a TIMG2COL extension); vec / mat stores to NC1HWC0 / NDC1HWC0 (only the CPU simulator has them). This "
             "replaces the convolution sentences of decision 'Global scale layouts'.",
             "Holding a ConvTile as the 2-D matrix the simulator's map already defines keeps tiles 2-D and "
             "logical (decision 'Physical layouts'); requiring the whole tensor is the NPU store's own "
             "assertion and the only reading under which the simulator's map and the NPU's block copy agree."),
    Decision("TPUSH FixpipeParams fields",
             "fixpipe.hpp: FixpipeParams<LayoutMode_t, QuantMode_t, ReluPreMode, STPhase, SubBlockId, AtomicType, "
             "ClipReluMode_t, IsChannelSplit>. The TConfig TPUSH reads LayoutMode (the consumer tile / GM slot "
             "layout: NZ2ND row-major, NZ2DN column-major, NZ2NZ NZ), QuantPre, ReluMode and Phase (passed to "
             "TMovCcToUb / TStoreAcc), SubBlockId (A5 only, cast to AccToVecMode for the UB path) and AtomicT "
             "(SetAtomicAdd around the GM-path store); no TPUSH path reads ClipReluMode or IsChannelSplit. "
             "FixpipeConsDType gives QF322HIF8_PRE the A5 hifloat8_t; VQF322HIF8_PRE (in the A5 mode tables of "
             "TSTORE) gets no consumer type there, so its slot would be typed f32. The pages do not say where "
             "the ReLU sits against the scaling, nor what AtomicAdd adds the push to.",
             "TPUSH gains LayoutMode (#pto.fixpipe_layout<NZ2NZ|NZ2ND|NZ2DN>, default NZ2ND), Relu "
             "(#pto.relu<NONE|RELU>), Phase (#pto.st_phase<Unspecified|Partial|Final>), SubBlockId (0..3) and "
             "AtomicT (#pto.atomic<...>), appended after Quant; Quant gains QF322HIF8_PRE (f32 acc, scalar "
             "scale, hifloat8 slot: nearest, ties away, overflow ±inf; a5 and cpu, LEGAL_ATTR on a2/a3; the "
             "hifloat8 TPOP is legal on a5 and cpu only). Any field off its default needs an unsplit acc tile "
             "(LEGAL_LOCATION; STRUCT_ATTR_VALUE with a Split or on a GlobalData slot). The slot holds values, "
             "so LayoutMode is a contract with the consumer: the vec tile that pops an acc push (the plain one "
             "included, which is NZ2ND) must have layout ND, DN or NZ as the mode writes, else "
             "RUNTIME_FIFO_MISMATCH; a vec push still pops into any layout. Relu zeroes what is not > 0 (NaN "
             "kept, -0 -> +0) after the scale and before the conversion, as the pre-quantising moves do. Phase "
             "changes no value. SubBlockId: 0 as before; 1 sends the slot to sub-block 1, so the TPOP of sub-block "
             "0 (the one a functional run executes, decision 'FIFO split modes') faults RUNTIME_FIFO_MISMATCH "
             "rather than read data it would never get; 2 and 3 push the whole tile split as TILE_UP_DOWN / "
             "TILE_LEFT_RIGHT (the TPOP names that Split; an odd extent is RUNTIME_VALID_REGION) and, as A5's "
             "dual AccToVecModes, take no Quant and no NZ2DN (STRUCT_ATTR_VALUE); a2/a3 take only 0 "
             "(LEGAL_ATTR). AtomicT takes only NONE (LEGAL_MODE): the FIFO holds slots, not the ring's memory, "
             "so there is nothing defined to add onto. ClipReluMode and IsChannelSplit are not attributes "
             "(STRUCT_UNKNOWN_ATTR), and VQF322HIF8_PRE is not a Quant value.",
             "Each declared field changes what a functional run can observe (the type, the values, the "
             "layout and the half the consumer gets) or is a timing hint that changes nothing; the fields "
             "that would need state openpto does not model fault or are refused instead of being guessed."),
    Decision("FIFO event results",
             "The public TPUSH / TPOP return a RecordEvent and take WaitEvents; the IR pages print `%event = "
             "pto.tpush %tile, %pipe : (T, !pto.tpipe<...>) -> !pto.record_event` and `%event = pto.tpop %pipe, "
             "%tile : (...) -> !pto.record_event`, the operand table types an event `!pto.event` (RecordEvent), "
             "and TSYNC's event form waits on one or more of them (`tsync %e0, %e1 : !pto.event<...>, ...`). "
             "The intrinsics take the WaitEvents pack after their operands (`TPUSH(pipe, tile, events...)`, "
             "`TPOP(pipe, tile, events...)`) and begin with `TSYNC(events...)`; no IR page prints a TPUSH / "
             "TPOP with events. How a recorded event is typed elsewhere, and whether one may be recorded twice, "
             "is not said.",
             "TPUSH, TPOP and TALLOC (whose intrinsic also returns a RecordEvent and takes WaitEvents) declare "
             "an optional out operand event (kind event), after their other operands so "
             "the bytecode numbering stays (no format change); it is written only as an SSA result: `%e = tpush "
             "%t {...}`, `%v, %e = tpop {...} : () -> (T, !pto.event)`, `%e = talloc %slot[0, 0] {...}`, and "
             "the public pipe forms' result. "
             "`!pto.record_event` is a spelling of `!pto.event` (the canonical text prints `!pto.event`), and "
             "an event result needs no signature. `tsync %e0, %e1, ...` is one TSYNC per token in order. An "
             "event is an SSA value recorded once: naming one twice is STRUCT_REDEFINED, a wait on one not "
             "visible there STRUCT_UNDEFINED, an event where a tile is read (or a non-event waited on, or a "
             "result typed other than an event) STRUCT_OPERAND_KIND, a written type that differs "
             "STRUCT_TYPE_MISMATCH. Functional backends run in program order: the reference records a token "
             "naming its producer when the instruction completes, llvm keeps nothing, and a wait on a token "
             "never blocks. This replaces the 'result that is not kept' of decision 'The !pto.tpipe spelling'. "
             "Wait events: TPUSH, TPOP and TALLOC take zero or more event tokens after their operand, in the "
             "intrinsics' order (`tpush %t, %e0, %e1 {...}`, `%v = tpop %e0 {...} : (!pto.event) -> T`, "
             "`talloc %slot[0, 0], %e0 {...}`, "
             "`pto.tpush %t, %pipe, %e0 : (T, !pto.tpipe<...>, !pto.event)`, `pto.tpop %pipe, %t, %e0`; "
             "signature types one per operand, events included); the parser reads such a statement as one "
             "TSYNC per token, in order, then the statement without them, which is what the intrinsic does "
             "and what the canonical text prints, so the IR, the bytecode (no format change), the verifier "
             "and the backends have one form. A wait on a name not visible there (its own result included) is "
             "STRUCT_UNDEFINED, on a non-event STRUCT_OPERAND_KIND, a written type other than an event "
             "STRUCT_TYPE_MISMATCH, a signature with another count PARSE_SIGNATURE. An event that was never "
             "recorded cannot be waited on: def-before-use holds on every path, and a `!pto.event` kernel "
             "parameter stands for a token recorded before the launch. The DPS `ins(...)` forms take no "
             "events (no page writes one).",
             "The token is how the public programs order a consumer after a push or pop; keeping it as a value "
             "lets the verifier hold programs to def-before-use, and an order-preserving run makes every such "
             "wait already satisfied."),
    Decision("Simulated synchronisation and hazards",
             "The public pages say what set_flag / wait_flag, pipe_barrier and TSYNC order on hardware, but not "
             "what a simulator should call a race, how precisely it should compare byte ranges, or what a "
             "TSYNC on an event token or a SYNCALL waits for inside one core.",
             "The ascend_sim backend orders two accesses when they are on one pipe (each pipe runs in order, "
             "one instruction after another), or a flag's set on the first pipe follows the first and its wait "
             "on the second pipe precedes the second (transitively: vector clocks), or a barrier on ALL lies "
             "between them. pipe_barrier and TSYNC on one pipe add nothing (that pipe is already in order); "
             "pipe_barrier(ALL), TSYNC(ALL), TSYNC on an event token and SYNCALL drain every pipe (an event's "
             "producer may be on any pipe). Accesses by different pipes to a common byte, one a write, not so "
             "ordered are ORDER_RACE; only the last read and write per pipe and region are kept. A tile's bytes "
             "are its whole static tile at its address (logical row-major inside, fractal order not modelled); "
             "a global ND window is its rows of bytes, any other global layout the whole tensor. A run that "
             "stops with every unfinished pipe (or the scalar unit) waiting is ORDER_DEADLOCK, always raised; "
             "flags still set at the end are ORDER_FLAG_PENDING. Races and pending flags are collected in the "
             "result by default (hazards='collect'), raised with hazards='raise', not tracked with 'off'. "
             "The simulator runs only verified programs: a program with a flag pair removed from a loop stays "
             "balanced, so the static ORDER_* checks accept it and the race is found at run time.",
             "Races are what a real core would get wrong silently, so the simulator reports each once, naming "
             "both instructions and the bytes; region comparison is exact for whole tiles and row windows "
             "and errs towards reporting elsewhere. Collecting by default lets flag-free programs (the "
             "examples, conformance) run for their values and timing while showing what they lack."),
    Decision("Simulated cost model",
             "No public document gives per-instruction cycle counts for A2/A3/A5 cores; public measurements "
             "exist for 910B1 only (vector repeats, cube throughput by shape, transfer bandwidth by size), "
             "and HBM bandwidth figures disagree between sources.",
             "isa/machines.py holds one Machine per NPU profile over its Profile (capacities, flag ids, clock "
             "and core counts are read from the profile). Vector: startup + repeats x cycles per repeat, a "
             "repeat being 256 bytes of the widest operand's valid region, per op class (binary and "
             "transcendental 1.18 + 1.91/repeat, reductions 3.0/repeat, fitted to 910B1's VADD, VEXP, VCADD). "
             "Cube: m*k*n / MACs per cycle (fp16/bf16 4096, 8-bit 8192, f32 1024 assumed, 4-bit 16384 "
             "assumed) + 2.1 issue cycles fitted to 910B1's mmad curve. Transfers: the measured 910B1 "
             "effective bandwidth against size where one exists (GM->UB, GM->L1, UB->GM, L1->L0A, L0C->GM), "
             "else 64 assumed latency cycles + the theoretical bytes per cycle, capped by one HBM parameter "
             "(1.6 TB/s) shared by the cores moving data. The scalar unit issues one instruction per cycle; "
             "queues are unbounded. A5 uses 910B1's rates at its 1650 MHz clock; a6 and the Kirin parts use "
             "A5's clock, cores and rates (no public numbers).",
             "Fitted to what was measured, labelled where assumed, kept as data so a better measurement "
             "changes a number, not the simulator."),
    Decision("Scale tile element types",
             "The a5/a6 TileType::ScaleLeft / ScaleRight tiles are filled by TExtract / TMov (TExtractToAmx / "
             "TExtractToBmx, which move the scale bytes) and read only by TMatmulMX's scale operands, whose "
             "scales are float8_e8m0_t (a6's HiF4 scale records are uint8_t); TMov's CommonCheckMX says "
             "'Supported types: float8_e8m0_t' but tests the wider TExtract list (int8, fp8, half, bf16, "
             "float, fp4, e8m0), and no page says what another element type in a scale buffer would mean.",
             "A scale_left / scale_right tile holds u8 or f8e8m0 elements (dt.SCALE_CODES, the same bits), on "
             "every profile: isa/profiles.LOCATION_DTYPES, read through Profile.location_dtypes, which the "
             "verifier checks at the tile's declaration (parameter, .tile or the first instruction writing "
             "it) and check_legality for every tile operand: another element type is LEGAL_DTYPE naming the "
             "location, the types it holds (expected) and the tile's (actual). Instructions keep their own "
             "dtype rules; this narrows TEXTRACT, TMOV and any future writer of a scale location.",
             "The scale buffers exist only to feed the MX matmul, which reads one-byte E8M0 codes; refusing "
             "other types at the tile keeps a program from placing data there that no instruction can use, "
             "and one table serves every instruction and profile."),
    Decision("Simulated multi-core launches",
             "The public pages give the A3 core counts (24 cube, 48 vector) and say a mixed kernel pairs one "
             "cube core with two vector cores, but not how a simulator should place the blocks of a launch, "
             "share the one HBM among cores, or count data the L2 cache serves.",
             "The ascend_sim backend places a launch's blocks by the work its kernel does: only vector pipes "
             "and UB tiles -> one AIV core per block; only cube pipes (M, MTE1, FIX) and L1/L0 tiles -> one "
             "AIC core; both -> a MIX group of one AIC and two AIVs (as many groups as cube cores, vector "
             "cores / 2 at most). Blocks go in index order to the core free first, so more blocks than cores "
             "run in waves. HBM is shared by a fair share over overlapping transfer intervals: each transfer "
             "crossing HBM asks for its lone-core rate, and where the rates asked at once exceed the HBM "
             "parameter each gets the fraction HBM / demand, which stretches it and delays what follows on "
             "its core; the recorded ops are replayed until no block's duration moves by more than 0.1% "
             "(8 rounds at most). Writes to global memory always cross HBM; a read of a global window some "
             "block of the launch already read is an L2 hit, limited only by the core's own path (L2 "
             "capacity and bandwidth are not modelled). values=False times a run without computing tile "
             "values (instructions with scalar or event results, or control state, still run). Cross-core "
             "flags are not modelled, so nothing orders two blocks of a launch: every pair of instructions "
             "of different blocks touching a common global byte, at least one writing, is ORDER_RACE "
             "(naming both instructions, both blocks and the tensor's byte range; one report per pair of "
             "instructions, with the number of block pairs), raised or collected as the hazards option "
             "says; reads shared by blocks are not reported. Each block's distinct global regions are "
             "collected from its recorded ops and intersected once at the end, sorted by address and swept.",
             "Blocks are independent, so placing them greedily is what a runtime's per-kind ready queues do; "
             "a fair share is the simplest model in which a memory-bound launch reaches and never exceeds "
             "the HBM parameter; without the L2 rule a tiled GEMM's re-read panels would count against HBM "
             "and it would run at a third of the measured 308 TFLOPS. Blocks of one launch run in any order "
             "and at once on real cores, so overlapping writes (or a write and a read) of two blocks give "
             "values that depend on timing even where the simulator's block-by-block run gives one answer; "
             "a sweep at the end costs a few percent of a launch's run, where checking every access against "
             "every other block would cost as much as the run."),
    Decision("Automatic synchronisation",
             "The public pages say what set_flag / wait_flag order and that each pipe pair has eight event "
             "ids, but not which pairs a program written without flags needs, where they go in loops and "
             "branches, or how ids are shared; the vendor compiler's auto-sync is not public.",
             "assembler/autosync.py (pto sync) adds, per unordered dependence, one set_flag on the producer's "
             "pipe (Instruction.pipe_for) after the producer and one wait_flag on the consumer's pipe before "
             "the consumer, in the innermost region holding both: a nested loop or if is passed whole (a wait "
             "before it, a set after it), so if arms never hold a flag of a dependence that crosses them. A "
             "dependence carried by a loop (the consumer comes first in the body) gets its set after the "
             "producer, its wait before the consumer, a set before the loop and a drain wait after it, as "
             "double_buffer_copy is written by hand. Dependences are the simulator's: two instructions on "
             "different pipes, one writing, touching one tile (a subset is its root tile; every tile of a "
             "buffer some TASSIGN places is the whole buffer) or one global tensor (a view is its root; any two "
             "windows of one tensor are taken to overlap; distinct parameters are taken not to alias). "
             "Two instructions on one pipe need nothing (pipes are in order), so no pipe_barrier is ever added. "
             "Whether a dependence is already ordered comes from an abstract run with vector clocks over the "
             "program with the flags so far (its own included): loops run three times, plus a zero-trip path "
             "when the trip count is not a constant; both if arms run; paths are merged after shifting each "
             "path's clocks to the merged count, keeping only orderings true on every path. Pairs are added for "
             "the latest unordered producer first, then every pair the rest already implies is dropped. Ids "
             "per pipe pair: the lowest the program does not use itself and no pair with an overlapping "
             "lifetime holds (two straight pairs of one region whose sets and waits come in one order may "
             "share one when ids run short); none left is ORDER_FLAG_IDS, and so is a program flagging a "
             "pipe pair the pass needs with an id known only at run time (no added id is sure to be free "
             "beside it; a .const id is known and avoided). Double-buffering is an option "
             "(autosync(..., double_buffer=True), pto sync --double-buffer; assembler/double_buffer.py), "
             "applied before the pairs are found: a loop whose iterations are plainly independent gets a "
             "'pong' copy of every tile its body writes and runs its iterations in pairs (ping body, then "
             "the pong body at iv + step) up to lb + (n / 2) * 2 step, n = max(ceildiv(ub - lb, step), 0), "
             "with the odd iteration left over after the loop behind an if; the order of every statement "
             "is the original's for every trip count, and the pairs then found for the two copies are live "
             "at once, so they take alternating ids. Independent means, conservatively: no iter_args; a "
             "straight body (no nested loop or if, no flags, barriers, TASSIGN, event operands, scalar "
             "results of tile instructions, .tile declarations or pto.subset); every tile the body writes is "
             "written before it is read in the body, is no pto.subset window or window's parent anywhere in "
             "the kernel (a copy would not share those bytes), and is used "
             "nowhere outside the loop (nor given a new valid shape); global memory is not restricted, "
             "since the unchanged order lets the pairs order a store before a later load of one tensor. A "
             "pong copy is declared like its original (run-time valid extents included). Where the copies "
             "do not fit the profile's capacity (tiles laid out as the simulator's allocator does, each at "
             "the next 32-byte boundary) or the loop is not independent, it stays single-buffered with a "
             "note saying why (LoopNote; pto sync prints it on stderr), never an error. A step <= 0 "
             "divides by 1 when the pair count is computed, so the loop still reports RUNTIME_LOOP_STEP.",
             "Pairs placed where the dependence is, and only where no other pair already orders it, are "
             "what a hand-written kernel has: every one is needed (tests remove each and the simulator "
             "reports the race), a second pass adds nothing, and the static ORDER_* checks accept the result "
             "because every pair is balanced inside one region. Taking distinct parameters as unaliased and "
             "windows of one tensor as overlapping errs towards the caller's contract and towards safety. "
             "Unrolling by two with the remainder after the loop (not an if inside it) keeps the ping and "
             "pong flags in one straight body, where the abstract run's merged paths stay exact. The "
             "example softmax works in 16-row blocks (64 KB tiles) so that two copies fit a3's and a5's "
             "UB, as a kernel author picks a tile for the next load to overlap this one: double-buffered "
             "it takes 46566 against 88091 cycles on a3 (a 32-row, 128 KB tile would not fit twice and "
             "would stay single)."),
    Decision("Frontend tiling and partition",
             "PyPTO's tensor frontend tiles each op by the tile shape in force when it was recorded, fails "
             "when none is set, splits the tile graph into kernels with hidden cost thresholds, separates "
             "cube and vector work, shares isomorphic kernels and merges their invocations by a per-group "
             "setting; none of this is part of the ISA, and the public PTO pages say nothing about it.",
             "frontend/tiling.py sees an N-D tensor as a matrix of rows = the product of its leading dims and "
             "the last dim as columns; a vector tile shape (t0, ..., tk) is t0*...*t(k-1) consecutive rows by "
             "tk columns (set for another rank, it is aligned on the last dims), clamped to the tensor. With "
             "no tile shape, a tile takes whole rows where they fit a budget (a quarter of the profile's UB, "
             "at most 64 KB; the tile_budget option), else 1024 columns, never failing. The last row or "
             "column of tiles is partial through run-time or static valid regions; the user's data is never "
             "padded (static tile widths are rounded up to 32-byte rows where the profile demands them, the "
             "valid columns stay exact). Broadcasting takes an operand of the result's shape, a per-row "
             "vector (last dim 1) or a single row (leading dims 1); any other numpy broadcast ([B,1,N] + "
             "[1,M,N], [M,N] + [1,1]) first becomes a pto.loop over the fewest leading dims of the result "
             "that leave every operand in one of those forms within a group (frontend/batching.py: views of "
             "each operand's slice, the group's result assembled into the result's window), and a matmul "
             "with batch dims (numpy's batch broadcasting) a loop over the batch of 2-D matmuls, so every "
             "iteration is one kernel and the loop runs inside it; a transpose flag on an operand with a "
             "batch is FRONT_MATMUL (the cube reads a transposed operand as a column-major view of a whole "
             "tensor). "
             "Reductions run along the last axis (partial per tile, combined over the column tiles: sum by "
             "tadd, max/min by tmax/tmin, from the identity) or over any other axis as column reductions: the "
             "input seen as groups (the product of the dims before the axis) of a length x inner matrix "
             "(inner: the product of the dims after it), one invocation per group and column block; "
             "mean is the sum times 1/length; a cast rounds a float into an integer by the op's mode (TCVT's "
             "roundMode: rint, round, floor, ceil, trunc), float -> float to nearest even, and to i1 is "
             "'nonzero' (TCMPS NE 0). Views and an assemble of a temporary or local used "
             "once are places (windows of one buffer), not copies; their rows must be consecutive "
             "(FRONT_VIEW). frontend/partition.py fuses consecutive vector ops that read a tensor made "
             "earlier in the kernel and tile the same rows the same way; a kernel whose ops need a whole row "
             "reduced earlier in it is widened to whole-row tiles when its rows are static and fit the UB "
             "(coalesce option), else split there. A matmul is its own kernel on profiles with separate "
             "cube and vector cores (a2, a3, a5: Profile.cube_cores); on the others, row-local vector ops "
             "on its whole-row output tiles join its kernel (acc -> vec). A kernel's invocations are one "
             "per tile, or per row block (a row reduction or row-vector op), or per column block (a column "
             "reduction), or per output tile (matmul); kernels with the same structural hash share one "
             "compiled kernel; merge (default all) invocations make one task, launched with block_num = "
             "blocks; a pto.loop whose body is one kernel runs inside it as scf.for when merge and blocks "
             "are at their defaults (the same order as the host loop). Tasks run in program order.",
             "Seeing tensors as rows of the last dim makes every row-local op (elementwise, broadcasts, "
             "last-axis reductions) a 2-D tile op with the ISA's row instructions, and tile rows may group "
             "any consecutive rows without changing a result. Defaults from the buffer size remove PyPTO's "
             "most common failure. Widening rather than spilling keeps a softmax's intermediates in tiles "
             "(the frontend softmax runs within 1.1x of examples/softmax.pto on llvm), and every choice is "
             "printed in the partition's 'why' lines instead of hidden thresholds."),
    Decision("Frontend capture",
             "The PTO ISA has no tensor-level language; PyPTO (its vendor's Python frontend) records ops "
             "by running the function, lets `out = x` silently rebind an output, treats tile shapes as "
             "mandatory global state, and leaves dtype promotion, broadcasting over run-time sizes and "
             "several numerics (integer division, casts, topk ties) to the implementation.",
             "`import openpto.frontend as pto` gives the whole API; the package is its own `frontend` "
             "attribute (pto.frontend.jit is pto.jit). A @jit function (default backend llvm, profile cpu) "
             "runs once per static signature with proxy tensors; each call records the op table's canonical "
             "op (frontend/ops.py) into the open body, named after the variable it is assigned to, with the "
             "tile shapes and semantic label in force and the innermost user source line; plain Python "
             "control flow runs then (static loops unroll, helpers inline); pto.loop records one Loop over a "
             "symbolic index; a truth value or int of a run-time value is FRONT_SYMBOLIC_BRANCH. The "
             "function's source is parsed: rebinding a parameter that is written (or declared an output of "
             "pto.function), or any tensor parameter of a function that writes nothing, is "
             "FRONT_OUTPUT_REBIND at the assignment; yield, await, global and nonlocal are FRONT_UNSUPPORTED. "
             "Parameters written (through views too) are outputs, inout if also read; naming a view reads "
             "nothing. Returning a parameter, view or repeated value copies it into a fresh result. Non-tensor "
             "parameters are compile-time values. Tensor-tensor ops need one dtype (FRONT_DTYPE suggests "
             "pto.cast); a scalar takes the tensor's dtype and a non-integral float scalar on an integer "
             "tensor is an error; compares give i1; exp/log/sqrt/rsqrt/reciprocal/mean take floats; matmul "
             "gives the accumulator type (f32 for float inputs, i32 for i8) unless out_dtype says. "
             "Broadcasting is numpy's, a run-time size joining only itself or 1. A vector-tiled op whose "
             "rank (the largest among its operands and results) differs from the vector tile shapes' is "
             "FRONT_TILE_RANK; view, assemble and reshape are not vector-tiled. A view's result shape is its "
             "valid_shape when given. A reduction's axis is stored non-negative. The tensor-graph interpreter "
             "(frontend/interpret.py, the oracle of every later stage) computes floats in float64 and rounds "
             "each op's result once to its dtype, wraps integers, divides integers toward zero with x / 0 = "
             "-1 (TDIV's rule), casts floats to integers by the mode (rint by default) saturating with NaN -> "
             "0, integers to integers by wrapping, anything to i1 as != 0; amax/amin/maximum/minimum propagate "
             "NaN; topk returns values in order with ties by lower index and NaN as the largest; locals start "
             "as NaN. A dynamic dimension is named PARAM_dimAXIS, or by pto.dynamic(NAME), which several "
             "parameters share (their sizes must agree at call time). One compile per (source, qualified "
             "name, backend, profile, options, static shapes and dtypes with dynamic dims by name, "
             "compile-time arguments, the globals and closure values the function reads: hashable ones by "
             "value, others by identity); a warm call binds, allocates results and runs.",
             "Running the function once keeps Python's own control flow and helpers for free and makes "
             "every op's line known; the source check catches the rebinding PyPTO silently accepts. "
             "Computing in float64 and rounding once per op makes the oracle correctly rounded for the "
             "arithmetic ops, so backend differences are the backends'. Keying the cache on the values the "
             "function reads (not just its text) stops a changed module constant from reusing a stale "
             "kernel."),    Decision("Frontend topk lowering",
             "The PTO ISA has no top-k instruction: TSORT32 sorts 32-element blocks and TMRGSORT merges "
             "sorted record lists (f16/f32 only on a2/a3/a5, and never with NaN last); the frontend's topk "
             "(values and i32 indices along an axis, largest or smallest, ties by the lower index, NaN the "
             "largest) has to be built from other instructions.",
             "topk is tiled along the last axis only (the row length static), in a kernel of its own. "
             "Largest first in a dtype the profile's TSORT32 and TMRGSORT take (f32/f16 everywhere, "
             "i32/i16 on cpu) it is a sort, one row per invocation (frontend/topksort.py plans it, "
             "lower_sort.py writes it): the row is cut into chunks (the whole row when its tiles fit the "
             "vector buffer, else the longest run-aligned length >= k that fits); each chunk is padded by "
             "TFILLPAD pad=min to 1..4 runs of 32 * 4^p records, its positions (TCI, u32) carried by "
             "TSORT32, p single-list TMRGSORT passes merge groups of four runs, one multi-list TMRGSORT "
             "merges the heads (first k records) of the last runs into the chunk's best k; later chunks "
             "are merged after the running best (best as the first list), the values and positions "
             "taken out of the records by TGATHER mask patterns (after TRESHAPE to i32 for the "
             "positions). The order is the op table's: TSORT32 puts equal values in ascending position "
             "order and TMRGSORT gives ties to the earlier list (run or chunk); a padding record (-inf or "
             "the integer minimum) sits after every real value it ties with, so none is among the first "
             "k <= n. Smallest first, and dtypes the profile does not sort, keep k selection passes over "
             "a row block of whole rows (their working tiles, 12 x 4 bytes per element, within the vector "
             "buffer): each pass picks per row the first available element of the best value (TROWMAX/"
             "TROWMIN over a TSEL of the available non-NaN elements with an infinite or integer-extreme "
             "sentinel, TCMP EQ masked by availability, TROWARGMAX of the 0/1 mask; a second TROWARGMAX "
             "for the first available NaN, which wins when largest and loses otherwise), copies the value "
             "from the picked column (so -0 keeps its sign), marks it taken and stores value and index at "
             "column j. Other axes and run-time row lengths are FRONT_UNSUPPORTED_OP naming why.",
             "The sort costs O(n log n) per row whatever k is (eight rows of 3072 positions, k = 2048: "
             "about 100 ms of the Lightning Indexer's time in selection passes on llvm, 2 ms sorted), and chunks bound its "
             "tiles by the chunk and k, not the row, so the public 131,072-position rows fit a3/a5 (64 or "
             "32 chunks). Sorting descending has no NaN-last form, so smallest first keeps the selection "
             "passes, which cost O(k x n) but use only plain vector instructions and keep rows with -inf, "
             "integer extremes, signed zeros and NaNs in the same exact order."),
    Decision("Frontend tasks on the runtime",
             "PyPTO hands its compiled function to a runtime that schedules it as tasks with dependencies; "
             "what a task is, how its dependencies are found and whether every call goes through a "
             "scheduler is not fixed by the public pages.",
             "A @jit call runs either sequentially (the default: the pipeline launches its tasks in program "
             "order, nothing recorded) or, with executor= embedded, simulated, dask or a runtime.Executor, "
             "as a runtime.TaskGraph built per call: one kernel task per launch of merge invocations and "
             "per iteration of a loop kept on the host, labelled with the kernel's name (semantic labels "
             "included) and the invocation range and loop indices, typed cube or vector by the partition, "
             "its global tensors bound as views of the call's arrays and narrowed with regions= to the "
             "rows (and, for a tile of a grid or matmul kernel, the columns) its invocations reach through "
             "the operands' windows; operands not modelled (broadcasts along rows or columns keep whole "
             "columns or bindings; a matmul's B and transposed A, column reductions, transposes, kernels "
             "with a loop inside) keep the whole binding. The dependencies are the runtime's byte-range "
             "ones; fn.last_run holds the RunRecord. The simulated executor needs a profile with a machine "
             "model (FRONT_OPTION otherwise); executor='dask' uses the default distributed client.",
             "A runtime call costs about 75 us plus 40-130 us per task of Python here (argument checks, "
             "spans, scheduling, recording, worker threads), against 20 us above the kernel for the "
             "sequential path, so the issue's < 50 us warm-call target keeps sequential the default and "
             "the runtime opt-in, for swimlanes, simulated NPU time and spreading large tasks. Regions "
             "computed from the kernel's mode and places make tiles of one tensor independent; keeping the "
             "whole binding wherever the access pattern is not modelled can only add ordering, never lose "
             "it, and a test checks task by task that no kernel reads or writes outside its regions."),
    Decision("Comm operands: symmetric tensors and a peer",
             "The public comm pages pass remote global addresses (a GlobalTensor built from another NPU's "
             "pointer, or a ParallelGroup array of per-rank tensors) and a UB staging tile (or ping/pong "
             "tiles) to TPUT, TGET and the collectives; the IR form `tput %dst_remote, %src_local` has no "
             "staging tile, and nothing says how an IR names another rank's memory. TPUT takes "
             "AtomicNone/AtomicAdd; ReduceOp is Sum, Max, Min; TNOTIFY's op is Set or AtomicAdd; "
             "TWAIT/TTEST compare an int32 signal (or every element of a signal tensor) with EQ NE GT GE LT "
             "LE. The collective TGATHER/TSCATTER share their names with the tile TGATHER/TSCATTER. No "
             "rank-id query is spelled in the public pages.",
             "Every global argument of a multi-rank launch is a symmetric tensor: one instance per rank, of "
             "one shape and element type. A remote location is named by this rank's own instance (or a view "
             "of it) at indices plus an index operand `peer`, the rank id: `tput %dst[i, j], %src[0, 0], "
             "%peer` writes the whole local src into rank peer's dst at (i, j); `tget %dst[0, 0], %src[i, "
             "j], %peer` reads the window of dst's shape. The whole-tensor operand gives the transfer's "
             "shape; the indexed one's window of that shape must lie inside its tensor (same rank, "
             "RUNTIME_OOB before anything moves). The staging tiles are lowering's business, not operands; "
             "TPUT's `atomicType` is NONE or ADD (`#pto.atomic<ADD>`). TNOTIFY updates the one signal at "
             "its indices (`op = #pto.notify_op<Set|AtomicAdd>`, required); TWAIT and TTEST read every "
             "element of their (whole) signal operand, `cmp = #pto.cmp<...>` (required); TTEST's i1 is an "
             "SSA result, `%r = ttest ...`. The collectives take the group as a symmetric tensor (`group`, "
             "rank k's instance being rank k's buffer) and are root-driven: the caller is the root. The "
             "collective TGATHER/TSCATTER are TGATHER_COMM/TSCATTER_COMM. The rank and rank count are "
             "`pto.get_rank` / `pto.get_rank_num` (index), named like `pto.get_block_idx`. The async forms "
             "return an optional event (`%e = tput_async ...`) and take no session.",
             "A rank id plus a local view is what every execution can implement: threads sharing memory, "
             "and an MPI window (the displacement is the view's offset in its instance); a raw remote "
             "pointer is not. Naming the other instance through this rank's own keeps the verifier's types "
             "and the tensors' shapes checkable. Distinct mnemonics for the collective gather/scatter keep "
             "one declaration per name; the operand forms would tell them apart, but a parser that picks a "
             "declaration by its operands would be the only such rule in the language."),
    Decision("Comm memory model",
             "The pages say a TPUT writes remote GM and TNOTIFY stores or atomically adds to a remote signal "
             "(the A2/A3 header flushes the signal's cache line and ends with a PIPE_ALL barrier), TWAIT "
             "spins until the condition holds, TTEST returns whether it holds, and an async transfer is "
             "complete once its event's Wait returns (quiet semantics: a Wait completes every earlier "
             "transfer of the session). What a reader may assume about data written by a put is not "
             "stated.",
             "Release/acquire through signals. (1) A TPUT or TGET completes before the issuing rank's next "
             "instruction; an async one completes at the latest when its event is waited on (`tsync %e`), "
             "and functional backends complete it at issue. (2) A TNOTIFY is a release: every completed "
             "put, get, collective and ordinary global store the notifying rank issued before it (in "
             "program order) happens before it. (3) A TWAIT that returns, or a TTEST that returns true, is "
             "an acquire of the notifies whose values it read: what they released is visible to the waiting "
             "rank after it, transitively (a rank that waited and then notifies passes on what it "
             "acquired). (4) Any other access of global bytes that another rank (or another block) wrote is "
             "a race: the program is wrong, and the embedded execution reports it as ORDER_COMM_RACE "
             "(read-after-write and write-after-write of one element by different agents, tracked per "
             "element with vector clocks; a write after an unordered read is not detected). (5) ADD puts "
             "and ADD notifies to one location are atomic with respect to each other; a SET notify is one "
             "atomic 32-bit store. (6) Signal values are int32 with two's complement wrap. (7) A TTEST "
             "returning false orders nothing; TTEST reads every element at one instant. (8) A peer outside "
             "[0, ranks) is RUNTIME_COMM_RANK, a window past the end of a tensor (local or remote) "
             "RUNTIME_OOB, a remote access to memory that is not a symmetric tensor RUNTIME_COMM_SYMMETRIC, "
             "all raised before anything is written; a wait no rank can satisfy (every unfinished rank "
             "waiting) is RUNTIME_COMM_DEADLOCK, naming each waiting rank, signal, comparison and current "
             "values.",
             "This is the discipline the public examples follow (put, notify, wait, read) and the one "
             "OpenSHMEM and MPI RMA programs use (put, fence/quiet, flag), so it holds on the NPUs' weak "
             "GM ordering and over MPI. Making undefined orders errors rather than leaving them to chance "
             "is the point of a checking execution: a missing wait passes by luck on one machine and "
             "fails on another."),
    Decision("Comm collectives: root-driven, one instance per rank",
             "TBROADCAST, TREDUCE, TGATHER and TSCATTER are executed by the root only (calling them on "
             "another rank is undefined); the others' buffers must stay valid for the operation. TGATHER "
             "concatenates along DIM_3 and leaves rows past N*H unchanged; TSCATTER reads the first N*H "
             "rows. The reduction order of TREDUCE is not stated.",
             "As the pages: the calling rank is the root; its own instance takes part like every other "
             "(TBROADCAST writes it too, TREDUCE reads it). The other ranks must not touch the group "
             "tensor until the root notifies them (the memory model's races apply). TREDUCE's SUM is the "
             "order-independent sum contract (the reference accumulates floats in f64 in rank order and "
             "rounds once; integers wrap), MAX/MIN return one rank's value (NaN when any is NaN). "
             "TGATHER_COMM/TSCATTER_COMM concatenate along the second-to-last axis (DIM_3 of a 5-D "
             "tensor; the only axis of a rank-1 one). Legal on cpu, a2, a3 and a5 (the profiles with "
             "include/pto/comm implementations, and cpu for the embedded execution); not on a6 or the "
             "Kirin targets, whose headers have none.",
             "Root-driven collectives over one-sided puts and gets are what the headers implement; "
             "keeping the root's instance in the group makes an all-reduce a TREDUCE plus a TBROADCAST "
             "with no special case."),
    Decision("CUDA code generation and host emulation",
             "The public PTO ISA targets Ascend NPUs only: it says nothing of GPUs, of how a tile maps "
             "to a GPU's memory or threads, or of a profile for one.",
             "A `cuda` profile (isa/profiles.py) describes an NVIDIA GPU: every location may hold up to "
             "the thread block's shared memory (227 KB, compute capability 9.0), any tile layout in any "
             "location (tiles are row-major buffers), the plain global layouts (ND, DN, NZ), no row "
             "alignment rule; its legality is every declaration's architecture-wide dtype rule (an "
             "instruction restricted to named profiles, such as the cpu-only extensions, is not legal "
             "there). The cupy backend (backends/cupy) generates one CUDA C++ unit per module: per kernel "
             "a body function over a small portability header (runtime.cuh), run by every thread of one "
             "thread block per SPMD block (block_num = grid size); local tiles in dynamic shared memory "
             "at offsets fixed at compile time (the kernel's total must fit the profile's capacity: "
             "LEGAL_CAPACITY); each tile instruction spreads its valid region's elements over the "
             "block's threads and ends with a block barrier; consecutive elementwise, tile-scalar and "
             "expand instructions fuse into one loop as on llvm, except that a member may not read "
             "another member's result at a different element (threads do not see each other's "
             "elements before the barrier); row reductions go one warp per row with shuffles, column "
             "reductions one thread per column; scalars and structured control flow are C++ computed "
             "by every thread alike, so every check is block-uniform: a failing check claims one "
             "device-side error record (site, details, block) and its block returns - never a device "
             "fault. On the GPU the other blocks still run to completion and the first block to fail "
             "(in time) is reported; in emulation blocks run in order and the lowest failing block is "
             "reported, as on reference and llvm. Numerics: f16 through cuda_fp16 conversions, bf16 "
             "and NaN encodings in integer code giving numpy's bits, exp/log by the llvm backend's "
             "polynomials (at most 1 ulp over every f32 input), division and sqrt IEEE, no FMA "
             "contraction (NVRTC --fmad=false, host -ffp-contract=off); float row/column sums in f32 "
             "in the thread order (the sum contract), TMATMUL's exact path in f64 rounded once, and on "
             "the GPU f16/bf16 matmuls of static 16-multiples in shared memory on tensor cores (wmma, "
             "f32 accumulation). Host emulation (backend `cupy_emu`) compiles the same unit with the "
             "host C++ compiler and -DPTO_HOST: one thread per block, the barrier a no-op, warp "
             "reductions sequential, the tensor-core branch left out; the cupy backend compiles it "
             "with NVRTC through cupy.RawModule and reports itself unavailable without CuPy or a "
             "device. The backend lowers a subset (its rules: elementwise, tile-scalar, reduce and "
             "expand, TLOAD/TSTORE, TMOV/TEXTRACT of one dtype, the matmul/GEMV plain, _ACC and _BIAS "
             "forms, flags); other instructions, forms and element types (fp8, fp4, i4, hifloat8, "
             "atomic or relu stores, views, subsets) are LEGAL_BACKEND_UNSUPPORTED when compiled.",
             "One source for both targets means the emulation tests the code the GPU runs, apart from "
             "thread interleaving and the tensor-core branch, which only a GPU run can check; the "
             "fusion rule is the one change thread-parallel loops need for that to hold."),
    Decision("Frontend in-place writes",
             "PyPTO's tensor frontend says nothing of a result written into a tensor that the same "
             "statement also reads (x[:] = transpose(x), a[:] = a @ b, x[1:, :] = x[:-1, :] + 1).",
             "numpy's meaning: every read sees the values from before the statement. The tiler "
             "computes a temp straight into the window it is assembled into only when neither the op "
             "producing it nor any op between that op and the assemble reads or writes the "
             "destination's memory anywhere but the very element being written (an elementwise op "
             "reading the same window tile for tile); otherwise the temp is a workspace and the "
             "assemble a copy. The partition never fuses a node into a kernel that reads, at other "
             "elements, the memory that node writes (an elementwise op or a row reduction reading "
             "the same window is fine: it reads before it writes, in the same invocation), so the "
             "copy runs after every read has happened.",
             "Writing straight into the destination saves a workspace and a copy and is the common "
             "case (x[:] = x * 2); when another tile still has to read what a tile overwrites the "
             "results depend on the tile order, which is silently wrong, so such writes pay for the "
             "copy."),
    Decision("Lightning Indexer: paged keys, lengths and padding",
             "PyPTO's Lightning Indexer reads its paged key cache block by block with run-time view "
             "offsets taken from the block table on the host, loops over each batch's own block "
             "count, and leaves open what a table entry outside the cache means and what a row "
             "of fewer visible keys than k holds past them (its golden pads with -1 and -inf).",
             "openpto's operator (operators/lightning_indexer.py) gathers a batch's blocks inside "
             "the kernels: pto.gather_rows (MGATHER, ROW mode, oobMode ZERO) of the cache seen as "
             "[blocks, block_size * head_dim] by the block-table row, so an entry outside the "
             "cache (the -1 of unused entries) reads zeros, and every batch is scored over all "
             "max_blocks * block_size positions; seq_len only masks. Token t of a batch of T query "
             "tokens sees positions s < seq_len[b] - (T - 1 - t), as the public decode operator "
             "does; masked positions score -inf before the top-k, and selected slots whose score "
             "is -inf (a token with fewer visible positions than k) hold index -1 and value -inf. "
             "Ties keep the lower position first (the frontend's topk order). The quantised form "
             "follows the public golden: i32 products, ReLU, times 1/2048 rounded to f16, weights "
             "times query scales in f16, the head sum in f32 times the key position's f16 scale.",
             "No scalar reads from tensors exist in the frontend's kernels, and a gather keeps one "
             "compile for every length and table; the price is scoring positions that are then "
             "masked (a batch's work is fixed by max_blocks, not by its length)."),
)
