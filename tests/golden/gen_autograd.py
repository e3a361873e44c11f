#!/usr/bin/python3
"""Golden data for test-autograd-golden.c: compound programs run by PyTorch autograd.

Each program has float inputs (those in GRAD get gradients), an output out and, for an output
that is not a scalar, fixed weights w: the gradients are those of sum(out * w) (of out itself
for a scalar).  Class indices are stored as floats, as ggmlc-autograd.h takes them.
Run: OPENBLAS_NUM_THREADS=2 /usr/bin/python3 tests/golden/gen_autograd.py
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from goldfile import write_gold  # noqa: E402

torch.manual_seed(21)
out = {}


def record(name, f, inputs, grad):
    assert "w" not in inputs, "w names the output weights"
    leaves = {k: v.clone().requires_grad_(k in grad) for k, v in inputs.items()}
    y = f(**leaves)
    if y.dim() == 0:
        y.backward()
    else:
        w = torch.rand(y.shape) + 0.5
        (y * w).sum().backward()
        out[f"{name}.w"] = w
    out[f"{name}.out"] = y.detach()
    for k, v in inputs.items():
        out[f"{name}.{k}"] = v.float()
    for k in grad:
        out[f"{name}.grad_{k}"] = leaves[k].grad


def n(*shape):
    return torch.randn(*shape)


labels = torch.tensor([2, 0, 1, 2, 1, 0, 2, 1]).float()

record("mlp_ce",
       lambda x, w1, b1, w2, b2, y: F.cross_entropy(
           F.linear(F.relu(F.linear(x, w1, b1)), w2, b2), y.long()),
       {"x": n(8, 6), "w1": n(5, 6), "b1": n(5), "w2": n(3, 5), "b2": n(3), "y": labels},
       ["x", "w1", "b1", "w2", "b2"])
record("mlp_mse_tanh",
       lambda x, w1, w2, t: F.mse_loss(torch.tanh(x @ w1) @ w2, t),
       {"x": n(4, 3), "w1": n(3, 6), "w2": n(6, 2), "t": n(4, 2)}, ["x", "w1", "w2"])
record("attention",
       lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m)
       if hasattr(F, "scaled_dot_product_attention") else
       torch.softmax(q @ k.transpose(-2, -1) / (q.shape[-1] ** 0.5) + m, -1) @ v,
       {"q": n(2, 4, 8), "k": n(2, 5, 8), "v": n(2, 5, 6), "m": -torch.rand(4, 5) * 2},
       ["q", "k", "v"])
record("attention_causal",
       lambda q, k, v: torch.softmax(
           (q @ k.transpose(-2, -1)) * 0.3 +
           torch.triu(torch.full((4, 4), float("-inf")), 1), -1) @ v,
       {"q": n(3, 4, 5), "k": n(3, 4, 5), "v": n(3, 4, 2)}, ["q", "k", "v"])
record("ln_gelu_linear",
       lambda x, g, b, lw: F.linear(F.gelu(F.layer_norm(x, (6,), g, b)), lw),
       {"x": n(2, 3, 6), "g": n(6), "b": n(6), "lw": n(4, 6)}, ["x", "g", "b", "lw"])
record("losses",
       lambda a, b, z, t, lp, y: (F.smooth_l1_loss(a, b, beta=0.7) + F.l1_loss(a, b) +
                                  F.binary_cross_entropy_with_logits(z, t) +
                                  F.nll_loss(F.log_softmax(lp, 1), y.long(), ignore_index=1) +
                                  F.cross_entropy(lp, y.long(), label_smoothing=0.1) +
                                  F.cross_entropy(lp, torch.softmax(b[:, :3] * 2, 1))),
       {"a": n(8, 4), "b": n(8, 4), "z": n(8, 4), "t": torch.rand(8, 4), "lp": n(8, 3),
        "y": labels}, ["a", "b", "z", "lp"])
record("broadcast",
       lambda a, b, c: ((a * b + c).exp() / (b + 3)).mean(dim=1).sum() - (a - c).sum(),
       {"a": n(3, 1, 4) * 0.5, "b": n(2, 1) * 0.5, "c": n(4) * 0.5}, ["a", "b", "c"])
record("bmm_softmax_lse",
       lambda a, b: torch.logsumexp(torch.softmax(a @ b, dim=1), dim=-1) *
       torch.log_softmax(a @ b, dim=0).sum(dim=(0,)).mean(),
       {"a": n(2, 1, 3, 4), "b": n(3, 4, 5)}, ["a", "b"])
record("batchnorm_relu",
       lambda x, g, b: F.relu(F.batch_norm(x, None, None, g, b, training=True)).mean(),
       {"x": n(4, 3, 2, 2), "g": n(3), "b": n(3)}, ["x", "g", "b"])
record("groupnorm_silu_var",
       lambda x, g, b: F.silu(F.group_norm(x, 2, g, b)).var(dim=2, unbiased=True),
       {"x": n(2, 4, 5), "g": n(4), "b": n(4)}, ["x", "g", "b"])
record("rms_softplus_leaky_std",
       lambda x, g: F.leaky_relu(F.softplus(x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
                                            * g), 0.2).std(dim=-1),
       {"x": n(3, 7), "g": n(7)}, ["x", "g"])
record("embedding_ln",
       lambda idx, e: F.layer_norm(F.embedding(idx.long(), e), (4,)).pow(3).mean(dim=0),
       {"idx": torch.tensor([[1, 3, 3], [0, 4, 2]]).float(), "e": n(5, 4)}, ["e"])
record("views",
       lambda a, b: torch.cat([a.permute(0, 2, 1), torch.stack([b, b * 2], 0)], dim=1)
       .narrow(2, 1, 2).max(dim=1).values.sqrt().sum(),
       {"a": n(2, 3, 4).abs() + 0.1, "b": n(2, 3).abs() + 0.1}, ["a", "b"])
record("clamp_where_minmax",
       lambda x, y, c: torch.where(c > 0, x.clamp(-0.5, 0.8), y ** 2).min(dim=0).values.sum()
       + x.masked_fill(c > 0, 3.0).sigmoid().mean(),
       {"x": n(4, 3), "y": n(4, 3), "c": (torch.rand(4, 3) > 0.5).float()}, ["x", "y"])
record("cnn",
       lambda x, cw, cb, c1w, lw, lb, y: F.cross_entropy(F.linear(F.avg_pool2d(
           F.max_pool2d(F.relu(F.conv2d(x, cw, cb, stride=1, padding=1)), 2), 2).flatten(1)
           + F.conv1d(x.flatten(2), c1w, padding=1).mean(dim=2), lw, lb), y.long()),
       {"x": n(2, 2, 4, 4), "cw": n(3, 2, 3, 3), "cb": n(3), "c1w": n(3, 2, 3), "lw": n(3, 3),
        "lb": n(3), "y": torch.tensor([2, 0]).float()}, ["x", "cw", "cb", "c1w", "lw", "lb"])

write_gold(os.path.join(os.path.dirname(__file__), "autograd.gold"), out)
print(f"wrote {len(out)} tensors")
