"""Golden data for tests/test-ops-matmul.c: mul_mat, mul_mat_id, out_prod.

Inputs are not stored: both this script and the test build them from the same
integer hash (pattern() here, test_pattern() in the test), whose values
k/64 with |k| <= 127 are exact in f32, f16 and bf16, so no rounding differs.
Outputs are computed by PyTorch in float64.  Shapes are written in ggml order
[ne0, ne1, ne2, ne3] in the comments; torch shapes are the reverse.

Run: OPENBLAS_NUM_THREADS=2 /usr/bin/python3 tests/golden/gen_matmul.py
"""
import os

import torch

from goldfile import write_gold

HERE = os.path.dirname(os.path.abspath(__file__))


def pattern(ne, seed, scale=1.0 / 64):
    """Values for a tensor of ggml shape ne (flat index in ggml order, ne[0] fastest), as 4-D."""
    ne = list(ne) + [1] * (4 - len(ne))
    n = 1
    for d in ne:
        n *= d
    i = torch.arange(n, dtype=torch.int64)
    h = (i * 2654435761 + seed * 40503) % (1 << 32)
    v = ((h >> 8) % 255 - 127).to(torch.float64) * scale
    return v.reshape(list(reversed(ne)))


def mul_mat(a, b):
    """ggml_mul_mat: a [K, N, A2, A3], b [K, M, B2, B3] -> [N, M, B2, B3]; a batch i2/(B2/A2)."""
    r2 = b.shape[1] // a.shape[1]
    r3 = b.shape[0] // a.shape[0]
    a = a.repeat_interleave(r2, dim=1).repeat_interleave(r3, dim=0)
    return b @ a.transpose(-1, -2)


def out_prod(a, b):
    """ggml_out_prod: a [N, K, A2, A3], b [M, K, B2, B3] -> [N, M, B2, B3]."""
    r2 = b.shape[1] // a.shape[1]
    r3 = b.shape[0] // a.shape[0]
    a = a.repeat_interleave(r2, dim=1).repeat_interleave(r3, dim=0)
    return b.transpose(-1, -2) @ a


def mul_mat_id(as_, b, ids):
    """as [K, N, E], b [K, B1, T], ids [U, T] -> [N, U, T]."""
    as_, b = as_[0], b[0]  # 3-D
    n_b1, t_count = b.shape[1], b.shape[0]
    n_used = ids.shape[1]
    out = torch.zeros(t_count, n_used, as_.shape[1], dtype=torch.float64)
    for t in range(t_count):
        for s in range(n_used):
            e = int(ids[t, s])
            out[t, s] = as_[e] @ b[t, s % n_b1]
    return out


def ids_pattern(n_used, tokens, n_experts):
    """Expert ids [n_used, T] (ggml order): slot s of token t uses (3 s + 7 t + 1) mod E."""
    ids = torch.zeros(tokens, n_used, dtype=torch.int32)
    for t in range(tokens):
        for s in range(n_used):
            ids[t, s] = (3 * s + 7 * t + 1) % n_experts
    return ids


def main():
    torch.manual_seed(0)
    g = {}
    # name: (a shape, a seed, b shape, b seed, a scale)  -- the test knows the types and views
    cases = {
        "mm_f32": ([65, 33], 1, [65, 7], 2, 1 / 64),
        "mm_f32_blocks": ([300, 130], 3, [300, 77], 4, 1 / 64),
        "mm_f16": ([129, 65], 5, [129, 127], 6, 1 / 64),
        "mm_bf16": ([127, 33], 7, [127, 20], 8, 1 / 64),
        "mm_vec": ([1000, 127], 9, [1000, 1], 10, 1 / 64),
        "mm_vec3_f16": ([1000, 61], 11, [1000, 3], 12, 1 / 64),
        "mm_batch": ([33, 17, 2, 3], 13, [33, 9, 4, 6], 14, 1 / 64),
        "mm_batch_bf16": ([40, 12, 1, 2], 15, [40, 65, 3, 2], 16, 1 / 64),
        "mm_large": ([64, 48], 17, [64, 40], 18, 64.0),
        "mm_b_f16": ([33, 18], 19, [33, 10], 20, 1 / 64),
    }
    for name, (ane, aseed, bne, bseed, ascale) in cases.items():
        g[name] = mul_mat(pattern(ane, aseed, ascale), pattern(bne, bseed))
    # a: a view of the first 45 columns of a [50, 19] buffer; b: the transpose of bt [13, 45]
    a_big = pattern([50, 19], 21)
    bt = pattern([13, 45], 22)
    g["mm_views"] = mul_mat(a_big[..., :45], bt.transpose(-1, -2))

    g["op_f32"] = out_prod(pattern([17, 29], 31), pattern([13, 29], 32))
    g["op_batch"] = out_prod(pattern([17, 29, 2, 1], 33), pattern([13, 29, 4, 3], 34))
    g["op_bT"] = out_prod(pattern([20, 37], 35), pattern([37, 11], 36).transpose(-1, -2))
    g["op_f16"] = out_prod(pattern([70, 33], 37), pattern([9, 33], 38))

    ids = ids_pattern(2, 5, 4)
    g["id_ids"] = ids
    g["id_f32"] = mul_mat_id(pattern([40, 23, 4], 41), pattern([40, 2, 5], 42), ids)
    ids1 = ids_pattern(3, 6, 5)
    g["id1_ids"] = ids1
    g["id_bcast_f16"] = mul_mat_id(pattern([64, 35, 5], 43), pattern([64, 1, 6], 44), ids1)
    write_gold(os.path.join(HERE, "matmul.gold"), g)


if __name__ == "__main__":
    main()
