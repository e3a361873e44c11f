#!/usr/bin/python3
"""PyTorch reference for `ggmlc-bench train-step`: training steps of an MLP
(Linear/ReLU layers, cross-entropy on logits, AdamW) on the CPU.

    OPENBLAS_NUM_THREADS=2 /usr/bin/python3 bench/pytorch_train_step.py \
        --arch 784,512,256,10 --batch 256 --threads 2 --steps 50 --rounds 3

Each round runs --steps steps over fresh batches (in order, like the ggmlc run),
reading the loss every step as ggmlc's engine does; the median round is printed
as steps/s and the GFLOPS it implies (3x the forward product flops per step).
"""
import argparse
import os
import statistics
import time

import torch


def build(arch):
    layers = []
    for i in range(1, len(arch)):
        layers.append(torch.nn.Linear(arch[i - 1], arch[i]))
        if i + 1 < len(arch):
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", default="784,512,256,10")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    arch = [int(v) for v in args.arch.split(",")]
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = build(arch)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
    loss_fn = torch.nn.CrossEntropyLoss()
    n = args.steps * args.batch
    x = torch.rand(n, arch[0]) * 2 - 1
    y = torch.arange(n) * 7 % arch[-1]

    def epoch():
        for s in range(args.steps):
            xb, yb = x[s * args.batch:(s + 1) * args.batch], y[s * args.batch:(s + 1) * args.batch]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            loss.item()

    forward = sum(2.0 * args.batch * arch[i - 1] * arch[i] for i in range(1, len(arch)))
    flops = 3.0 * forward
    epoch()  # warm-up
    times = []
    for r in range(args.rounds):
        t0 = time.perf_counter()
        epoch()
        t = (time.perf_counter() - t0) / args.steps
        times.append(t)
        print(f"round {r + 1}: {1 / t:.1f} steps/s ({flops / t * 1e-9:.1f} GFLOPS)")
    t = statistics.median(times)
    print(f"pytorch {torch.__version__} train-step mlp {'-'.join(map(str, arch))} batch {args.batch}, "
          f"{args.steps} steps x {args.rounds} rounds, threads={torch.get_num_threads()} "
          f"(OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}): "
          f"{t * 1e3:.3f} ms/step, {1 / t:.1f} steps/s, {flops / t * 1e-9:.1f} GFLOPS ({flops * 1e-9:.3f} GFLOP/step)")


if __name__ == "__main__":
    main()
