#!/usr/bin/python3
"""The CNN of `ggmlc-train --data fashion-mnist --model cnn` in PyTorch:
conv 3x3 32 (same) + ReLU, max-pool 2, conv 3x3 64 (same) + ReLU, max-pool 2,
dense 3136-128 + ReLU, dense 128-10; Adam(lr 1e-3), cross-entropy, batch 32.
Usage: OPENBLAS_NUM_THREADS=2 /usr/bin/python3 bench/pytorch_cnn.py [--epochs N] [--batch N] [--device cuda]"""
import torch

from fashion_mnist import run


def cnn():
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(),
        torch.nn.Linear(64 * 7 * 7, 128), torch.nn.ReLU(),
        torch.nn.Linear(128, 10))


if __name__ == "__main__":
    run(cnn, "CNN conv32-pool-conv64-pool-128-10")
