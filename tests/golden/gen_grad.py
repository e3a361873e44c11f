"""Golden gradients from PyTorch autograd for test-grad-golden.c.

For each case: inputs, fixed weights w, and the gradients of
loss = sum(f(inputs) * w) with respect to every differentiable input.
Run: OPENBLAS_NUM_THREADS=2 /usr/bin/python3 tests/golden/gen_grad.py
"""
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from goldfile import write_gold  # noqa: E402

torch.manual_seed(7)
out = {}


def record(name, f, inputs, grad_inputs):
    """inputs: dict name -> tensor; grad_inputs: names whose gradients to record."""
    leaves = {k: v.clone().requires_grad_(k in grad_inputs) for k, v in inputs.items()}
    y = f(**leaves)
    w = torch.rand(y.shape) * 2 - 1
    (y * w).sum().backward()
    for k, v in inputs.items():
        out[f"{name}.{k}"] = v
    out[f"{name}.w"] = w
    for k in grad_inputs:
        out[f"{name}.grad_{k}"] = leaves[k].grad


def u(*shape, lo=-1.0, hi=1.0):
    return torch.rand(*shape) * (hi - lo) + lo


# ggml_mul_mat(a [K,N], b [K,M]) = b a^T in torch terms: (M,K) x (K,N) -> (M,N)
record("mul_mat", lambda a, b: b @ a.transpose(-1, -2), {"a": u(2, 5, 7), "b": u(2, 3, 7)}, ["a", "b"])


def alibi_slopes(n_head, max_bias):
    if max_bias <= 0:
        return torch.ones(n_head)
    n_log2 = 2 ** math.floor(math.log2(n_head))
    m0 = 2 ** (-max_bias / n_log2)
    m1 = 2 ** (-(max_bias / 2) / n_log2)
    return torch.tensor([m0 ** (h + 1) if h < n_log2 else m1 ** (2 * (h - n_log2) + 1) for h in range(n_head)])


def soft_max_ext(scale, max_bias):
    def f(x, mask):
        slopes = alibi_slopes(x.shape[0], max_bias).view(-1, 1, 1)
        return torch.softmax(x * scale + mask * slopes, dim=-1)
    return f


# x [n_head=3, rows=4, cols=6] (ggml [6, 4, 3]); mask [4, 6] broadcast over heads
record("soft_max_scale", soft_max_ext(0.6, 0.0), {"x": u(3, 4, 6, lo=-2, hi=2), "mask": u(4, 6)}, ["x"])
record("soft_max_alibi", soft_max_ext(0.6, 8.0), {"x": u(3, 4, 6, lo=-2, hi=2), "mask": u(4, 6)}, ["x"])

record("cross_entropy", lambda logits, labels: -(labels * torch.log_softmax(logits, -1)).sum() / logits.shape[0],
       {"logits": u(5, 7, lo=-2, hi=2), "labels": torch.softmax(u(5, 7, lo=-2, hi=2), -1)}, ["logits"])

record("rms_norm", lambda x: x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-5), {"x": u(3, 9, lo=-2, hi=2)}, ["x"])
record("norm", lambda x: F.layer_norm(x, (x.shape[-1],), eps=1e-5), {"x": u(3, 9, lo=-2, hi=2)}, ["x"])


def rope_normal(x, pos):
    # x: (ne2 = tokens, ne1 = heads, ne0 = dims); pairs (2i, 2i+1) rotated by pos * base^(-2i/n_dims)
    n_dims = x.shape[-1]
    i = torch.arange(n_dims // 2, dtype=torch.float32)
    theta = pos.view(-1, 1, 1).float() * (10000.0 ** (-2 * i / n_dims)).view(1, 1, -1)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    c, s = torch.cos(theta), torch.sin(theta)
    y = torch.empty_like(x)
    y[..., 0::2] = x0 * c - x1 * s
    y[..., 1::2] = x0 * s + x1 * c
    return y


record("rope", lambda x, pos: rope_normal(x, pos), {"x": u(4, 3, 8), "pos": torch.tensor([0, 3, 7, 12], dtype=torch.int32)}, ["x"])

# conv_2d: kernel ggml [KW=3, KH=3, IC=2, OC=3] = torch (3, 2, 3, 3); input ggml [W=6, H=5, C=2, N=1]
record("conv_2d", lambda k, x: F.conv2d(x, k, stride=1, padding=1), {"k": u(3, 2, 3, 3), "x": u(1, 2, 5, 6)}, ["k", "x"])

record("get_rows", lambda a, idx: a[idx.long()], {"a": u(6, 5), "idx": torch.tensor([4, 0, 4, 2], dtype=torch.int32)}, ["a"])
record("silu", lambda x: F.silu(x), {"x": u(4, 9, lo=-4, hi=4)}, ["x"])
record("gelu", lambda x: F.gelu(x, approximate="tanh"), {"x": u(4, 9, lo=-4, hi=4)}, ["x"])

write_gold(os.path.join(os.path.dirname(__file__), "grad.gold"), out)
print(f"wrote {len(out)} tensors")
