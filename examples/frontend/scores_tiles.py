"""Attention scores and their row softmax, tiled for a large buffer: legal on cpu, but its
vector tiles (64 rows of 1024 f32, 256 KB) overflow the 192 KB vector buffer of a2/a3. Run
`pto port examples/frontend/scores_tiles.py` to see every profile's verdict; the report names
`set_vec_tile_shapes(32, 1024)` as the largest shape that fits a3, and with that one change
the same source is legal there (docs/frontend.md, "Portability report")."""
import numpy as np

import openpto.frontend as pto

Q, K, S = 256, 128, 1024   # sizes
ROWS = 64                  # the vector tile's rows: 64 fits cpu, 32 fits a2/a3 as well


@pto.jit
def scores(q: pto.Tensor((Q, K), pto.DT_FP16), k: pto.Tensor((S, K), pto.DT_FP16)) -> pto.Tensor((Q, S), pto.DT_FP32):
    pto.set_cube_tile_shapes(128, 128, 256)
    s = pto.matmul(q, k, b_trans=True)
    pto.set_vec_tile_shapes(ROWS, 1024)
    p = pto.exp(s - pto.amax(s, -1, True))
    return p / pto.sum(p, -1, True)


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    q = rng.standard_normal((Q, K)).astype(np.float16)
    k = rng.standard_normal((S, K)).astype(np.float16)
    p = scores(q, k)
    s = q.astype(np.float64) @ k.astype(np.float64).T
    e = np.exp(s - s.max(-1, keepdims=True))
    np.testing.assert_allclose(p, e / e.sum(-1, keepdims=True), rtol=1e-4, atol=1e-6)
    print(f"scores {Q}x{S}: equal to numpy")
