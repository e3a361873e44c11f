#!/usr/bin/python3
"""The byte-level GPT of `ggmlc-gpt train` in PyTorch, for a training-speed comparison on the
same model, batch and data: token embedding, pre-norm blocks (RMSNorm, fused QKV without bias,
rotary positions (NeoX halves), causal softmax attention, output projection, RMSNorm, GELU (tanh form, as ggml_gelu) MLP
of 4x width), final RMSNorm, output projection to 256 bytes; AdamW (weight decay 0.01), cross
entropy of the next byte, random windows of the text's first 90%.
Usage: /usr/bin/python3 bench/pytorch_gpt.py [--layers 4 --heads 4 --width 128 --context 128
       --batch 16 --steps 200 --threads 2 --device cpu|cuda]
Prints the training tokens per second (batch x context per step) after a warm-up of 5 steps.
--threads sets PyTorch's own threads; its matrix products run in the BLAS it links, whose
threads OPENBLAS_NUM_THREADS sets (Debian's python3-torch uses the OpenBLAS that
update-alternatives selects; its pthreads build takes every core when that is unset, so
`--threads 1` alone multiplies on all of them).  The line printed says both."""
import argparse
import gzip
import math
import os
import time

import torch
import torch.nn.functional as F


class RMSNorm(torch.nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope(x, cos, sin):
    """x [B, H, T, D]: the first and second halves of each head rotated as pairs (NeoX)."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


class Block(torch.nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.attn_norm, self.mlp_norm = RMSNorm(width), RMSNorm(width)
        self.qkv = torch.nn.Linear(width, 3 * width, bias=False)
        self.wo = torch.nn.Linear(width, width, bias=False)
        self.up = torch.nn.Linear(width, 4 * width, bias=False)
        self.down = torch.nn.Linear(4 * width, width, bias=False)

    def forward(self, x, cos, sin, mask):
        b, t, c = x.shape
        q, k, v = self.qkv(self.attn_norm(x)).split(c, dim=-1)
        shape = (b, t, self.heads, c // self.heads)
        q, k, v = (z.view(shape).transpose(1, 2) for z in (q, k, v))
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        att = torch.softmax(att.masked_fill(mask, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, c)
        x = x + self.wo(y)
        return x + self.down(F.gelu(self.up(self.mlp_norm(x)), approximate="tanh"))


class GPT(torch.nn.Module):
    def __init__(self, layers, heads, width, context):
        super().__init__()
        self.embd = torch.nn.Embedding(256, width)
        self.blocks = torch.nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.norm = RMSNorm(width)
        self.out = torch.nn.Linear(width, 256, bias=False)
        d = width // heads
        inv = 10000.0 ** (-torch.arange(0, d, 2).float() / d)
        ang = torch.arange(context).float()[:, None] * inv[None, :]
        self.register_buffer("cos", ang.cos())
        self.register_buffer("sin", ang.sin())
        self.register_buffer("mask", torch.triu(torch.ones(context, context, dtype=torch.bool), 1))

    def forward(self, tokens):
        t = tokens.shape[1]
        x = self.embd(tokens)
        for blk in self.blocks:
            x = blk(x, self.cos[:t], self.sin[:t], self.mask[:t, :t])
        return self.out(self.norm(x))


def main():
    p = argparse.ArgumentParser()
    for name, default in (("layers", 4), ("heads", 4), ("width", 128), ("context", 128),
                          ("batch", 16), ("steps", 200), ("threads", 2)):
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--device", default="cpu")
    here = os.path.dirname(os.path.abspath(__file__))
    p.add_argument("--data", default=os.path.join(here, "..", "data", "sherlock-holmes.txt.gz"))
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(42)
    text = torch.tensor(list(gzip.open(a.data).read()), dtype=torch.long)
    train = text[: int(len(text) * 0.9)]
    model = GPT(a.layers, a.heads, a.width, a.context).to(a.device)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.01)
    gen = torch.Generator().manual_seed(42)

    def step():
        starts = torch.randint(0, len(train) - a.context - 1, (a.batch,), generator=gen)
        win = torch.stack([train[s:s + a.context + 1] for s in starts.tolist()]).to(a.device)
        logits = model(win[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, 256), win[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    for _ in range(5):
        step()
    if a.device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
    loss = loss.item()
    dt = time.perf_counter() - t0
    n_params = sum(q.numel() for q in model.parameters())
    blas = os.environ.get("OPENBLAS_NUM_THREADS", "unset")
    print(f"pytorch {torch.__version__} {a.device} (threads {a.threads}, OPENBLAS_NUM_THREADS {blas}): "
          f"{n_params} parameters, {a.steps} steps of "
          f"{a.batch}x{a.context} in {dt:.2f} s: {a.steps * a.batch * a.context / dt:.0f} "
          f"training tokens/s (last loss {loss:.4f})")


if __name__ == "__main__":
    main()
