#!/usr/bin/python3
"""PyTorch peer of `ggmlc-bench eager-mlp` and `eager-op` (bench/eager.c): the same MLP
784-512-256-10 (ReLU, cross-entropy, AdamW lr 1e-3, weight decay 0.01) trained eagerly on
batches of 256 random samples with the loss read every step, and the same chain of adds of two
64-element tensors.  Run with OPENBLAS_NUM_THREADS=2 (Debian's torch uses OpenBLAS):

    OPENBLAS_NUM_THREADS=2 /usr/bin/python3 bench/pytorch_eager.py [--threads 2] [--steps 20]
"""
import argparse
import time

import torch


def bench_mlp(steps, batch, rounds):
    torch.manual_seed(42)
    model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 10))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    x = torch.rand(steps * batch, 784)
    y = torch.tensor([(i * 7) % 10 for i in range(steps * batch)])
    best = float("inf")
    for r in range(rounds + 1):
        t0 = time.perf_counter()
        for s in range(steps):
            xb, yb = x[s * batch:(s + 1) * batch], y[s * batch:(s + 1) * batch]
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            loss.item()
        t = (time.perf_counter() - t0) / steps
        if r > 0:
            best = min(best, t)
    print(f"pytorch eager-mlp 784-512-256-10 batch {batch} AdamW: {best * 1e3:.3f} ms/step "
          f"(best of {rounds} rounds of {steps} steps, {torch.get_num_threads()} threads)")


def bench_op(ops, size):
    a, b = torch.zeros(size), torch.ones(size)
    best = float("inf")
    with torch.no_grad():
        for _ in range(3):
            t0 = time.perf_counter()
            c = a
            for _ in range(ops):
                c = c + b
            c.tolist()
            best = min(best, (time.perf_counter() - t0) / ops)
    print(f"pytorch eager-op add of two {size}-element tensors, each result used by the next: "
          f"{best * 1e6:.3f} us/op (best of 3 chains of {ops} ops)")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--ops", type=int, default=200000)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    bench_mlp(a.steps, a.batch, a.rounds)
    bench_op(a.ops, 64)
