"""What the MX / HiF4 scale tests share: a program's diagnostic codes, a run on one backend,
the TLOAD -> TMOV -> scaled-matmul program the public kernels build, and the hand-worked mixed
HiF4 product (tests/test_matmul_hif4_mixed.py works it out) with its scales as global images."""
from __future__ import annotations

from typing import Any

import numpy as np

import openpto as pto
from openpto.assembler.verifier import diagnose
from openpto.isa.diagnostics import PTOError


def codes(text: str, profile: str = "cpu") -> list[str]:
    """The sorted distinct codes of parsing ``text`` and verifying it for ``profile``."""
    try:
        module = pto.parse(text)
    except PTOError as e:
        return [e.code]
    return sorted({e.code for e in diagnose(module, profile)})


def run(text: str, backend: str, profile: str, args: dict[str, Any]) -> dict[str, Any]:
    """The arrays after running ``text`` for ``profile`` on ``backend`` with copies of ``args``."""
    arrays = {k: v.copy() for k, v in args.items()}
    pto.compile(pto.parse(text), backend, profile)(**arrays)
    return arrays


def load_move_matmul(op: str, ga: str, gb: str, ma: str, mb: str, la: str, rb: str, at: str, bt: str,
                     acc: str) -> str:
    """Kernel ``k``: the scales loaded from the globals ``ga`` / ``gb`` into the mat tiles ``ma`` /
    ``mb``, moved to the scale tiles ``la`` / ``rb``, then ``op`` (tmatmul_mx, tmatmul_mx_hif4)
    of the parameters %a (``at``) and %b (``bt``) into %c (``acc``)."""
    return (f"kernel @k(%ga : {ga}, %gb : {gb}, %a : {at}, %b : {bt}, %c : {acc}) {{\n"
            f"  %ma = tload %ga[0, 0, 0, 0, 0] : ({ga}) -> {ma}\n"
            f"  %mb = tload %gb[0, 0, 0, 0, 0] : ({gb}) -> {mb}\n"
            f"  %sa = tmov %ma : ({ma}) -> {la}\n"
            f"  %sb = tmov %mb : ({mb}) -> {rb}\n"
            f"  %c = {op} %a, %sa, %b, %sb : ({at}, {la}, {bt}, {rb}) -> {acc}\n}}\n")


#: the globals of the hand-worked HiF4 product: A's E8M0 scales, B's 64-byte record patch
HIF4_GA = "!pto.memref<1x1x1x16x2xu8, layout=MX_A_ZZ>"
HIF4_GB = "!pto.memref<1x1x1x16x4xu8, layout=HIF4_B_NN>"
HIF4_AT = "!pto.tile<16x64xf16, loc=left, layout=NZ>"
HIF4_BT = "!pto.tile<64x16xhifloat4x2, loc=right, layout=ZN>"
HIF4_ACC = "!pto.tile<16x16xf32, loc=acc, layout=NZ>"


def hif4_hand_case() -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """(arrays a, b, c, scales sa (16 x 2 E8M0), the HIF4_B_NN patch, the expected c).

    A row 0: 1.5 at k = 0 (scale 128: x2), -3 at k = 40 (scale 126: x0.5). B column 0: code 4
    (1.0) at k = 0 and 0xB (-0.75) at k = 40 under Ea 0xC0 (1.0) at patch byte 0, Eb 0x20 (octet
    5) at byte 1, Ec 0x00 / 0x04 (quad 10) at bytes 32 / 33, so B(40, 0) = -3; column 1 has Ea 0.
    c[0, 0] = 1.5 * 2 * 1 + (-3 * 0.5) * (-3) = 7.5, every other element 0."""
    a = np.zeros((16, 64), np.float16)
    a[0, 0], a[0, 40] = 1.5, -3.0
    sa = np.full((16, 2), 127, np.uint8)
    sa[0] = [128, 126]
    b = np.zeros((64, 16), np.uint8)
    b[0, 0], b[40, 0], b[:, 1] = 4, 0xB, 7
    patch = np.zeros(64, np.uint8)
    patch[[0, 1, 32, 33]] = [0xC0, 0x20, 0x00, 0x04]        # column 0: Ea, Eb, Ec lo, Ec hi
    patch[[2, 3, 34, 35]] = [0x00, 0xFF, 0xFF, 0xFF]        # column 1: Ea 0
    want = np.zeros((16, 16), np.float32)
    want[0, 0] = 7.5
    return {"a": a, "b": b, "c": np.full((16, 16), 99.0, np.float32)}, sa, patch.reshape(1, 1, 1, 16, 4), want
