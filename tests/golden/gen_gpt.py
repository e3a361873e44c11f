#!/usr/bin/python3
"""Golden data for tests/test-gpt.c: the GPT of ggmlc-gpt (the PyTorch model of
bench/pytorch_gpt.py) with random weights, the logits of a token sequence, the mean cross
entropy of its next bytes and the gradients of that loss for a few weights.

Run: OPENBLAS_NUM_THREADS=2 /usr/bin/python3 tests/golden/gen_gpt.py
Weights are named as in ggmlc-gpt's GGUF checkpoint; torch's Linear weight [out, in] is ggml's
[in, out] with the same bytes.
"""
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
sys.path.insert(0, HERE)
from goldfile import write_gold  # noqa: E402
from pytorch_gpt import GPT  # noqa: E402

torch.manual_seed(2024)
LAYERS, HEADS, WIDTH, CONTEXT, T = 2, 4, 32, 16, 12
model = GPT(LAYERS, HEADS, WIDTH, CONTEXT)
with torch.no_grad():
    for p in model.parameters():  # larger than a fresh model's, so every part matters
        p.copy_(torch.randn(p.shape) * (0.3 if p.dim() > 1 else 0.2) + (1.0 if p.dim() == 1 else 0.0))

g = {}
g["token_embd.weight"] = model.embd.weight
for i, b in enumerate(model.blocks):
    g[f"blk.{i}.attn_norm.weight"] = b.attn_norm.weight
    g[f"blk.{i}.attn_qkv.weight"] = b.qkv.weight
    g[f"blk.{i}.attn_output.weight"] = b.wo.weight
    g[f"blk.{i}.ffn_norm.weight"] = b.mlp_norm.weight
    g[f"blk.{i}.ffn_up.weight"] = b.up.weight
    g[f"blk.{i}.ffn_down.weight"] = b.down.weight
g["output_norm.weight"] = model.norm.weight
g["output.weight"] = model.out.weight

tokens = torch.randint(0, 256, (1, T + 1))
logits = model(tokens[:, :-1])
loss = F.cross_entropy(logits.reshape(-1, 256), tokens[:, 1:].reshape(-1))
loss.backward()
g["tokens"] = tokens[0].to(torch.int32)
g["logits"] = logits[0]
g["loss"] = loss.reshape(1)
for name, p in (("grad.token_embd.weight", model.embd.weight),
                ("grad.blk.0.attn_qkv.weight", model.blocks[0].qkv.weight),
                ("grad.blk.1.ffn_down.weight", model.blocks[1].down.weight),
                ("grad.output.weight", model.out.weight)):
    g[name] = p.grad
g = {k: v.detach() for k, v in g.items()}
write_gold(os.path.join(HERE, "gpt.gold"), g)
