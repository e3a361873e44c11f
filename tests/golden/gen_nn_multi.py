"""Golden data for tests/test-nn-multi.c: a functional model of two inputs and
two outputs against torch.nn.

The model: a Linear(5, 6) + tanh shared by both inputs (one weight set),
the two results concatenated, a Linear(12, 7) + ReLU trunk, then two heads:
a regression Linear(7, 3) trained with MSE (loss weight 2) and a classifier
Linear(7, 4) + softmax trained with cross-entropy on class indices (loss
weight 0.5).  Recorded: inputs, targets, initial weights (in ggmlc's order:
shared, trunk, regression, classifier; kernel then bias), both outputs, the
total and per-output losses, the classifier's accuracy and the regression's
MAE, the weights after one SGD step (lr 0.1) on the whole batch, and after
one epoch of unshuffled batches of 3 (3 + 3 + 1 samples: the smaller last
batch).
Run: OPENBLAS_NUM_THREADS=2 /usr/bin/python3 tests/golden/gen_nn_multi.py
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from goldfile import write_gold  # noqa: E402

torch.manual_seed(23)
N, LR, W_REG, W_CLS = 7, 0.1, 2.0, 0.5

shared, trunk, reg, cls = nn.Linear(5, 6), nn.Linear(12, 7), nn.Linear(7, 3), nn.Linear(7, 4)
layers = [shared, trunk, reg, cls]
params = [p for l in layers for p in (l.weight, l.bias)]


def forward(a, b):
    h = torch.cat([torch.tanh(shared(a)), torch.tanh(shared(b))], dim=1)
    h = torch.relu(trunk(h))
    return reg(h), cls(h)  # the classifier's logits


def losses(a, b, y_reg, y_cls):
    out_reg, logits = forward(a, b)
    l_reg = F.mse_loss(out_reg, y_reg)
    l_cls = F.cross_entropy(logits, y_cls)
    return W_REG * l_reg + W_CLS * l_cls, l_reg, l_cls


def flat():
    return torch.cat([p.detach().reshape(-1) for p in params])


def sgd_step(a, b, y_reg, y_cls):
    opt = torch.optim.SGD(params, lr=LR)
    opt.zero_grad()
    losses(a, b, y_reg, y_cls)[0].backward()
    opt.step()


x_a = torch.rand(N, 5) * 6 - 3
x_b = torch.rand(N, 5) * 6 - 3
y_reg = torch.randn(N, 3) * 2
y_cls = torch.randint(0, 4, (N,))

out = {"x_a": x_a, "x_b": x_b, "y_reg": y_reg, "y_cls": y_cls.float(), "w0": flat()}
w0 = [p.detach().clone() for p in params]
with torch.no_grad():
    out_reg, logits = forward(x_a, x_b)
    total, l_reg, l_cls = losses(x_a, x_b, y_reg, y_cls)
    out["out_reg"] = out_reg
    out["out_cls"] = torch.softmax(logits, dim=1)
    out["losses"] = torch.tensor([total, l_reg, l_cls])
    out["metrics"] = torch.tensor([(logits.argmax(1) == y_cls).float().mean(), (out_reg - y_reg).abs().mean()])

sgd_step(x_a, x_b, y_reg, y_cls)
out["w1"] = flat()

with torch.no_grad():
    for p, w in zip(params, w0):
        p.copy_(w)
for first in range(0, N, 3):
    s = slice(first, first + 3)
    sgd_step(x_a[s], x_b[s], y_reg[s], y_cls[s])
out["w_epoch"] = flat()

write_gold(os.path.join(os.path.dirname(__file__), "nn_multi.gold"), out)
