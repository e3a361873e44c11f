#!/usr/bin/python3
"""The model of bench/transformer-train.c in PyTorch 1.13: embedding, learned positions, two
pre-norm causal Transformer blocks (nn.TransformerEncoderLayer with norm_first, GELU, no
dropout), LayerNorm, Linear to the vocabulary; per-token cross-entropy, AdamW, one fixed batch.
Usage: OPENBLAS_NUM_THREADS=2 /usr/bin/python3 bench/pytorch_transformer.py [THREADS]"""
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

V, T, D, B, STEPS = 256, 64, 128, 16, 20


class SmallGPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, D)
        self.pos = nn.Parameter(torch.zeros(T, D))
        self.blocks = nn.ModuleList([nn.TransformerEncoderLayer(D, 4, 4 * D, 0.0, "gelu", batch_first=True,
                                                                norm_first=True) for _ in range(2)])
        self.ln, self.head = nn.LayerNorm(D), nn.Linear(D, V)
        self.register_buffer("mask", torch.ones(T, T, dtype=torch.bool).triu(1))

    def forward(self, ids):
        h = self.emb(ids) + self.pos
        for b in self.blocks:
            h = b(h, src_mask=self.mask)
        return self.head(self.ln(h))


def main():
    torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
    torch.manual_seed(1)
    model = SmallGPT()
    opt = torch.optim.AdamW(model.parameters(), 1e-3)
    x, y = torch.randint(0, V, (B, T)), torch.randint(0, V, (B, T))

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x).reshape(-1, V), y.reshape(-1))
        loss.backward()
        opt.step()
        return loss.item()

    step()  # warm-up
    t0 = time.time()
    for _ in range(STEPS):
        loss = step()
    dt = time.time() - t0
    params = sum(p.numel() for p in model.parameters())
    print(f"pytorch {torch.__version__}: {STEPS * B * T / dt:.0f} tokens/s ({1e3 * dt / STEPS:.1f} ms per step of "
          f"{B} x {T} tokens), {params} parameters, loss {loss:.3f}")


if __name__ == "__main__":
    main()
