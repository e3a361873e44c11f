"""Golden data for tests/test-ops-index.c: get_rows, get_rows_back, set_rows,
add_id, argsort and top_k, computed with PyTorch indexing, sort and topk.

Run: OPENBLAS_NUM_THREADS=2 /usr/bin/python3 tests/golden/gen_index.py
Tensors are written in torch order (the last torch dim is ggml's ne[0]).
"""
import os

import torch

from goldfile import write_gold

torch.manual_seed(1234)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "index.gold")


def distinct(*shape, scale=100.0):
    """Values with no ties inside a row (sort and topk ties are unspecified), negative and large."""
    n = shape[-1]
    rows = torch.stack([torch.randperm(n) for _ in range(int(torch.tensor(shape[:-1]).prod()))])
    vals = (rows.to(torch.float32) - n / 2) * scale + torch.rand(rows.shape) * 0.5
    return vals.reshape(shape)


g = {}

# get_rows: a [E=7, R=9, 3, 2], b I32 [5, 3, 2] -> [7, 5, 3, 2]
a = torch.randn(2, 3, 9, 7) * 10
idx = torch.randint(0, 9, (2, 3, 5), dtype=torch.int32)
rows = torch.stack([torch.stack([a[i3, i2, idx[i3, i2].long()] for i2 in range(3)]) for i3 in range(2)])
g["get_rows.a"], g["get_rows.idx"], g["get_rows.out"] = a, idx, rows
g["get_rows.out_f16"] = torch.stack([torch.stack([a.half().float()[i3, i2, idx[i3, i2].long()] for i2 in range(3)]) for i3 in range(2)])
g["get_rows.out_bf16"] = torch.stack([torch.stack([a.bfloat16().float()[i3, i2, idx[i3, i2].long()] for i2 in range(3)]) for i3 in range(2)])
ai = torch.randint(-1000000, 1000000, (4, 11), dtype=torch.int32)
idx_i = torch.tensor([10, 0, 3, 3, 7, 1], dtype=torch.int32)
g["get_rows_i32.a"], g["get_rows_i32.idx"], g["get_rows_i32.out"] = ai.t().contiguous(), idx_i, ai.t()[idx_i.long()].contiguous()

# get_rows_back: dy [E=6, n=8], idx [8] (repeats accumulate), rows R = 5
dy = torch.randn(8, 6)
idx_b = torch.tensor([4, 0, 2, 4, 4, 1, 0, 2], dtype=torch.int32)
g["get_rows_back.dy"], g["get_rows_back.idx"] = dy, idx_b
g["get_rows_back.out"] = torch.zeros(5, 6).index_add_(0, idx_b.long(), dy)

# set_rows: dst [E=5, R=10, 3, 2], src [5, 4, 3, 2], idx I64 [4, 1, 2] broadcast over dim 2
dst = torch.randn(2, 3, 10, 5)
src = torch.randn(2, 3, 4, 5) * 50
sidx = torch.stack([torch.randperm(10)[:4] for _ in range(2)]).reshape(2, 1, 4)
out = dst.clone()
for i3 in range(2):
    for i2 in range(3):
        out[i3, i2, sidx[i3 % 2, i2 % 1]] = src[i3, i2]
g["set_rows.dst"], g["set_rows.src"], g["set_rows.idx"], g["set_rows.out"] = dst, src, sidx.to(torch.int64), out
out16 = dst.half().float().clone()
for i3 in range(2):
    for i2 in range(3):
        out16[i3, i2, sidx[i3 % 2, i2 % 1]] = src[i3, i2].half().float()
g["set_rows.out_f16"] = out16

# add_id: a [E=6, n_used=3, T=4] + b [6, n_expert=5][ids [3, 4]]
a_id = torch.randn(4, 3, 6)
b_id = torch.randn(5, 6) * 3
ids = torch.randint(0, 5, (4, 3), dtype=torch.int32)
g["add_id.a"], g["add_id.b"], g["add_id.ids"] = a_id, b_id, ids
g["add_id.out"] = a_id + b_id[ids.long()]

# argsort / top_k on rows without ties
x = distinct(3, 4, 13)
g["argsort.x"] = x
g["argsort.asc"] = torch.argsort(x, dim=-1).to(torch.int32)
g["argsort.desc"] = torch.argsort(x, dim=-1, descending=True).to(torch.int32)
xi = torch.stack([torch.randperm(9) * 1000 - 4000 for _ in range(5)]).to(torch.int32)
g["argsort_i32.x"], g["argsort_i32.asc"] = xi, torch.argsort(xi, dim=-1).to(torch.int32)
t = distinct(2, 5, 17, scale=1e4)
g["top_k.x"] = t
g["top_k.idx"] = torch.topk(t, 4, dim=-1, largest=True, sorted=True).indices.to(torch.int32)

# quantized tables (the test quantizes these f32 values itself): rows of 64, tolerance set by the format
aq = torch.randn(2, 9, 64) * 3
idx_q = torch.randint(0, 9, (2, 6), dtype=torch.int32)
g["get_rows_q.a"], g["get_rows_q.idx"] = aq, idx_q
g["get_rows_q.out"] = torch.stack([aq[i, idx_q[i].long()] for i in range(2)])
srcq = torch.randn(1, 5, 64)
sidx_q = torch.tensor([7, 2, 0, 8, 4], dtype=torch.int64)
outq = aq[:1].clone()
outq[0, sidx_q] = srcq[0]
g["set_rows_q.src"], g["set_rows_q.idx"], g["set_rows_q.out"] = srcq, sidx_q, outq

write_gold(OUT, g)
print("wrote", OUT)
