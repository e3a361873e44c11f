"""Golden data for tests/test-nn.c: ggmlc-nn layers against torch.nn.

For each case: the input x, a target y, the layer's initial weights (in
ggmlc's parameter order), the output, and the weights after one SGD step
(lr 0.1) on the mean squared error, which checks the layer's gradients.
Run: OPENBLAS_NUM_THREADS=2 /usr/bin/python3 tests/golden/gen_nn_layers.py
"""
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(__file__))
from goldfile import write_gold  # noqa: E402

torch.manual_seed(11)
out = {}
LR = 0.1


def flat(params):
    return torch.cat([p.detach().reshape(-1) for p in params])


def case(name, module, x, params, fwd=None):
    """params: the module's tensors in ggmlc's order."""
    fwd = fwd or module
    with torch.no_grad():
        module.eval()  # inference: moving statistics, no update
        y_shape = fwd(x).shape
        out[f"{name}.out"] = fwd(x)
        module.train()
    target = torch.rand(y_shape) * 2 - 1
    out[f"{name}.x"] = x
    out[f"{name}.y"] = target
    if not params:
        return
    out[f"{name}.w0"] = flat(params)
    opt = torch.optim.SGD([p for p in params if p.requires_grad], lr=LR)
    opt.zero_grad()
    torch.nn.functional.mse_loss(fwd(x), target).backward()
    opt.step()
    out[f"{name}.w1"] = flat(params)


dense = nn.Linear(7, 5)
case("dense", dense, torch.rand(6, 7) * 2 - 1, [dense.weight, dense.bias])

conv = nn.Conv2d(2, 3, (3, 3), stride=1, padding=1)
case("conv2d", conv, torch.rand(4, 2, 6, 5) * 2 - 1, [conv.weight, conv.bias])

conv_s = nn.Conv2d(3, 4, (3, 3), stride=2, padding=0)
case("conv2d_stride2", conv_s, torch.rand(2, 3, 7, 9) * 2 - 1, [conv_s.weight, conv_s.bias])

conv1 = nn.Conv1d(3, 4, 3, stride=1, padding=1)
case("conv1d", conv1, torch.rand(3, 3, 10) * 2 - 1, [conv1.weight, conv1.bias])

bn = nn.BatchNorm1d(5, momentum=0.1, eps=1e-3)
with torch.no_grad():
    bn.weight.uniform_(0.5, 1.5)
    bn.bias.uniform_(-0.5, 0.5)
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
# moving statistics are parameters 3 and 4 in ggmlc; SGD leaves them, the engine updates them
case("batch_norm", bn, torch.rand(8, 5) * 4 - 2, [bn.weight, bn.bias, bn.running_mean, bn.running_var])

ln = nn.LayerNorm(6, eps=1e-5)
with torch.no_grad():
    ln.weight.uniform_(0.5, 1.5)
    ln.bias.uniform_(-0.5, 0.5)
case("layer_norm", ln, torch.rand(4, 6) * 4 - 2, [ln.weight, ln.bias])

emb = nn.Embedding(9, 4)
case("embedding", emb, torch.tensor([[1, 8, 3], [0, 3, 5]]), [emb.weight])
out["embedding.x"] = out["embedding.x"].float()

lstm = nn.LSTM(3, 4, batch_first=True)
case("lstm", lstm, torch.rand(2, 5, 3) * 2 - 1,
     [lstm.weight_ih_l0, lstm.weight_hh_l0, lstm.bias_ih_l0, lstm.bias_hh_l0], fwd=lambda x: lstm(x)[0])

gru = nn.GRU(3, 4, batch_first=True)
case("gru_last", gru, torch.rand(2, 5, 3) * 2 - 1,
     [gru.weight_ih_l0, gru.weight_hh_l0, gru.bias_ih_l0, gru.bias_hh_l0], fwd=lambda x: gru(x)[0][:, -1, :])

pool = nn.MaxPool2d(2)
case("max_pool2d", pool, torch.rand(2, 3, 6, 4) * 2 - 1, [])

write_gold(os.path.join(os.path.dirname(__file__), "nn_layers.gold"), out)
print(f"wrote {len(out)} tensors")
