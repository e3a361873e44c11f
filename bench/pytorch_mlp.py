#!/usr/bin/python3
"""The MLP of `ggmlc-train --data fashion-mnist --model mlp` in PyTorch:
784-256-128-10 with ReLU, Adam(lr 1e-3), cross-entropy, batch 32, 10 epochs.
Usage: OPENBLAS_NUM_THREADS=2 /usr/bin/python3 bench/pytorch_mlp.py [--epochs N] [--batch N] [--device cuda]"""
import torch

from fashion_mnist import run


def mlp():
    return torch.nn.Sequential(
        torch.nn.Flatten(),
        torch.nn.Linear(784, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 128), torch.nn.ReLU(),
        torch.nn.Linear(128, 10))


if __name__ == "__main__":
    run(mlp, "MLP 784-256-128-10")
