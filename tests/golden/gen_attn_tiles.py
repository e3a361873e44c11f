#!/usr/bin/python3
"""Golden data for tests/test-ops-rope-attn.c's flash attention over several tiles of keys
and blocks of queries (the CPU kernel scores keys in tiles of 32 for blocks of 32 queries,
4 at a time): llama.cpp's prompt shape, the last N of M cached positions attending causally,
F16 K/V, one case with softcap, ALiBi and sinks, and one with head sizes the kernel's vectors
do not divide (a block of 6 queries padded to 8, 20-value keys, 40-value values).  Plain PyTorch in float64 (gen_nn.attn_ref).
Run from tests/golden/:  /usr/bin/python3 gen_attn_tiles.py
"""
import math
import os

import torch

from gen_nn import D, HERE, args, attn_ref, f32, fp16_round
from goldfile import write_gold


def causal_mask(n, m):
    """[1, 1, n, m]: query i sees keys 0 .. m - n + i (the last n of m positions)."""
    mask = torch.zeros(1, 1, n, m, dtype=D)
    mask[0, 0][torch.ones(n, m, dtype=torch.bool).triu(m - n + 1)] = -math.inf
    return mask


def main():
    torch.manual_seed(20261202)
    g = {}
    # 37 queries (blocks of 16, 16, 5) over 75 keys (tiles of 32, 32, 11): the first block
    # sees no key of the last tile, the last tile is partial, 4 heads over 2 KV heads
    B, H, Hkv, N, M, Dk, Dv = 1, 4, 2, 37, 75, 64, 48
    q = torch.randn(B, H, N, Dk, dtype=D)
    k = fp16_round(torch.randn(B, Hkv, M, Dk, dtype=D))
    v = fp16_round(torch.randn(B, Hkv, M, Dv, dtype=D) * 2)
    mask = causal_mask(N, M)
    g["tq"], g["tk"], g["tv"], g["tmask"] = f32(q), f32(k), f32(v), f32(mask)
    scale = 1.0 / math.sqrt(Dk)
    g["causal_args"] = args(scale, 0.0, 0.0)
    g["causal"] = f32(attn_ref(q, k, v, mask, scale, 0.0, 0.0))
    # scores spread wide (scale 1): later tiles raise the running maximum by a lot
    sinks = torch.randn(H, dtype=D) * 3
    g["tsinks"] = f32(sinks)
    g["full_args"] = args(1.0, 4.0, 20.0)
    g["full"] = f32(attn_ref(q, k, v, mask, 1.0, 4.0, 20.0, sinks))
    # 38 queries (blocks of 32 and 6) over 70 keys, one head, Dk 20, Dv 40 (two vectors of 16
    # and a tail of 8 values)
    N, M, Dk, Dv = 38, 70, 20, 40
    q = torch.randn(1, 1, N, Dk, dtype=D)
    k = fp16_round(torch.randn(1, 1, M, Dk, dtype=D))
    v = fp16_round(torch.randn(1, 1, M, Dv, dtype=D))
    mask = causal_mask(N, M)
    g["oq"], g["ok"], g["ov"], g["omask"] = f32(q), f32(k), f32(v), f32(mask)
    g["odd_args"] = args(1.0 / math.sqrt(Dk), 0.0, 0.0)
    g["odd"] = f32(attn_ref(q, k, v, mask, 1.0 / math.sqrt(Dk), 0.0, 0.0))
    write_gold(os.path.join(HERE, "attn_tiles.gold"), g)


if __name__ == "__main__":
    main()
