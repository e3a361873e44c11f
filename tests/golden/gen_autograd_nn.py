#!/usr/bin/python3
"""Golden data for tests/test-autograd-nn.c: torch.optim's SGD (momentum, dampening, Nesterov,
weight decay), Adam and AdamW over a small MLP trained with cross-entropy, gradient clipping,
the learning-rate schedulers (StepLR, OneCycleLR with its momentum cycle, a cosine schedule
with warmup written as a LambdaLR), BatchNorm's running statistics, and MultiheadAttention,
TransformerEncoderLayer (post- and pre-norm) and TransformerDecoderLayer: outputs and gradients.

Run from tests/golden/:  /usr/bin/python3 gen_autograd_nn.py   (PyTorch 1.13, CPU)
Writes autograd_nn.gold (format: goldfile.py).
"""
import math
import os

import torch
import torch.nn.functional as F

from goldfile import write_gold

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = 4
g = {}

torch.manual_seed(7)
init = {"0.weight": torch.randn(5, 4) * 0.5, "0.bias": torch.randn(5) * 0.1,
        "2.weight": torch.randn(3, 5) * 0.5, "2.bias": torch.randn(3) * 0.1}
x = torch.randn(6, 4)
y = torch.tensor([0, 2, 1, 2, 0, 1])
for k, v in init.items():
    g["init." + k] = v
g["x"] = x
g["y"] = y.to(torch.float32)


def mlp():
    net = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3))
    with torch.no_grad():
        for name, p in net.named_parameters():
            p.copy_(init[name])
    return net


def train(name, make_opt, clip=None, sched=None):
    net = mlp()
    opt = make_opt(net.parameters())
    s = sched(opt) if sched else None
    norms, lrs, moms = [], [], []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        if clip:
            norms.append(float(torch.nn.utils.clip_grad_norm_(net.parameters(), clip[0], clip[1])))
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        if s:
            s.step()
    for pname, p in net.named_parameters():
        g[name + "." + pname] = p.detach().clone()
    if norms:
        g[name + ".norms"] = torch.tensor(norms)
    g[name + ".lrs"] = torch.tensor(lrs, dtype=torch.float32)


train("sgd_plain", lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.5, weight_decay=0.01))
train("sgd_damp", lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, dampening=0.1,
                                              weight_decay=0.01))
train("sgd_nesterov", lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01,
                                                  nesterov=True))
train("adam", lambda p: torch.optim.Adam(p, lr=0.01, betas=(0.8, 0.95), eps=1e-6,
                                         weight_decay=0.05))
train("adamw", lambda p: torch.optim.AdamW(p, lr=0.01, betas=(0.8, 0.95), eps=1e-6,
                                           weight_decay=0.1))
train("adamw_clip2", lambda p: torch.optim.AdamW(p, lr=0.01), clip=(0.5, 2.0))
train("adamw_clipinf", lambda p: torch.optim.AdamW(p, lr=0.01), clip=(0.3, math.inf))
train("adamw_onecycle", lambda p: torch.optim.AdamW(p, lr=0.01),
      sched=lambda o: torch.optim.lr_scheduler.OneCycleLR(o, max_lr=0.05, total_steps=STEPS,
                                                          pct_start=0.5))
train("sgd_onecycle", lambda p: torch.optim.SGD(p, lr=0.01),
      sched=lambda o: torch.optim.lr_scheduler.OneCycleLR(o, max_lr=0.2, total_steps=STEPS,
                                                          pct_start=0.3))


def lr_sequence(name, make_sched, steps, base=0.1):
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=base)
    s = make_sched(opt)
    lrs, moms = [], []
    for _ in range(steps):
        lrs.append(opt.param_groups[0]["lr"])
        moms.append(opt.param_groups[0]["momentum"])
        opt.step()
        s.step()
    g[name + ".lrs"] = torch.tensor(lrs, dtype=torch.float32)
    g[name + ".moms"] = torch.tensor(moms, dtype=torch.float32)


def cosine_warmup(warmup, total, base, min_lr):
    def factor(k):
        if k < warmup:
            return k / warmup
        progress = min((k - warmup) / max(1, total - warmup), 1.0)
        return (min_lr + (base - min_lr) * 0.5 * (1 + math.cos(math.pi * progress))) / base
    return factor


lr_sequence("step_lr", lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5), 10)
lr_sequence("one_cycle", lambda o: torch.optim.lr_scheduler.OneCycleLR(
    o, max_lr=1.0, total_steps=20, pct_start=0.25), 20)
lr_sequence("cosine", lambda o: torch.optim.lr_scheduler.LambdaLR(
    o, cosine_warmup(4, 16, 0.1, 0.01)), 20)

# BatchNorm2d: two training forwards (running statistics), then one in evaluation mode
bn = torch.nn.BatchNorm2d(3, eps=1e-5, momentum=0.2)
xb1, xb2, xe = torch.randn(4, 3, 2, 2), torch.randn(4, 3, 2, 2) * 2 + 1, torch.randn(2, 3, 2, 2)
bn.train()
bn(xb1)
bn(xb2)
bn.eval()
g["bn.x1"], g["bn.x2"], g["bn.xe"] = xb1, xb2, xe
g["bn.running_mean"] = bn.running_mean.clone()
g["bn.running_var"] = bn.running_var.clone()
g["bn.eval_out"] = bn(xe).detach()

# Attention and Transformer layers (batch_first): outputs and the gradients of sum(out * r)
def layer_case(name, module, inputs, forward, grads_of):
    for k, v in module.state_dict().items():
        g[name + ".init." + k] = v.clone()
    for k, v in inputs.items():
        v.requires_grad_(True)
        g[name + "." + k] = v.detach().clone()
    out = forward(module, inputs)
    r = torch.randn(out.shape)
    (out * r).sum().backward()
    g[name + ".r"] = r
    g[name + ".out"] = out.detach()
    params = dict(module.named_parameters())
    for k in grads_of:
        t = inputs[k] if k in inputs else params[k]
        g[name + ".grad." + k] = t.grad.detach().clone()


torch.manual_seed(21)
causal = torch.triu(torch.full((5, 5), float("-inf")), diagonal=1)
pad = torch.tensor([[0, 0, 0, 0, 0], [0, 0, 0, 1, 1]], dtype=torch.bool)
g["mha.pad"] = pad.to(torch.float32)
layer_case("mha", torch.nn.MultiheadAttention(8, 2, batch_first=True),
           {"x": torch.randn(2, 5, 8)},
           lambda m, i: m(i["x"], i["x"], i["x"], attn_mask=causal, key_padding_mask=pad)[0],
           ["x", "in_proj_weight", "in_proj_bias", "out_proj.weight"])
for norm_first in (False, True):
    layer_case("enc%d" % norm_first,
               torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation="gelu",
                                                batch_first=True, norm_first=norm_first),
               {"x": torch.randn(2, 5, 8)},
               lambda m, i: m(i["x"], src_mask=causal),
               ["x", "linear1.weight", "self_attn.in_proj_weight", "norm1.weight"])
layer_case("dec", torch.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, batch_first=True),
           {"tgt": torch.randn(2, 4, 8), "mem": torch.randn(2, 6, 8)},
           lambda m, i: m(i["tgt"], i["mem"], tgt_mask=causal[:4, :4]),
           ["tgt", "mem", "multihead_attn.in_proj_weight", "norm3.bias"])

write_gold(os.path.join(HERE, "autograd_nn.gold"), g)
