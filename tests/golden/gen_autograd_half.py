#!/usr/bin/python3
"""Golden data for test-autograd-half.c: float16 and bfloat16 eager tensors.

Conversions: float32 values (ties, subnormals, overflow, infinities) rounded by torch to
float16 and bfloat16 (the bit patterns as i32), and sampled 16-bit patterns read back as
float32.  Programs: a few compound programs run with float16 and with bfloat16 inputs; the
output y and the gradients of the inputs for the upstream gradient w (y.backward(w)).

torch 1.13 has bfloat16 CPU kernels for every op used here and runs them natively.  Its CPU
has no float16 kernels for most ops (exp, tanh, addmm, softmax ...), so float16 programs run
every op as PyTorch's CUDA kernels do and as ggmlc documents: the inputs converted to float32,
the op in float32, the result rounded to float16 (autograd converts the gradients the same
way at each boundary; ops whose gradient PyTorch computes from their output read the
rounded output, as its CUDA kernels do).
Run: OPENBLAS_NUM_THREADS=2 /usr/bin/python3 tests/golden/gen_autograd_half.py
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from goldfile import write_gold  # noqa: E402

torch.manual_seed(2116)
out = {}

# ------------------------------------------------------------- conversions

special = [0.0, -0.0, 1.0, -1.0, 65504.0, 65519.99, 65520.0, 1e6, -1e6, float("inf"),
           float("-inf"), 6.1035156e-05, 5.9604645e-08, 2.9802322e-08, 2.9802326e-08,
           8.940697e-08, 1e-10, 3.0e38, 1.0009765625, 1.00048828125, 1.00146484375,
           1.0 + 2 ** -9, 1.0 + 3 * 2 ** -9, 1.00390625, 1.001953125, 1.005859375,
           3.3895314e38, 3.4028235e38, 1.17549435e-38, 9.1835e-41]
vals = torch.cat([torch.tensor(special), torch.randn(200) * 10, torch.randn(50) * 1e-5,
                  torch.randn(50) * 3e4]).float()
out["conv.values"] = vals
out["conv.f16_bits"] = vals.half().view(torch.int16).int() & 0xFFFF
out["conv.bf16_bits"] = vals.bfloat16().view(torch.int16).int() & 0xFFFF
patterns = torch.arange(0, 65536, 13, dtype=torch.int32)
out["conv.patterns"] = patterns
p16 = patterns.to(torch.int16)  # wraps to the same 16 bits
out["conv.f16_float"] = p16.view(torch.float16).float()
out["conv.bf16_float"] = p16.view(torch.bfloat16).float()

# ---------------------------------------------------------------- programs


def saved_output(forward, backward):
    """An op whose gradient PyTorch computes from its saved 16-bit output y (tanh, sigmoid,
    exp, softmax): forward and backward in float32, y and the input gradient rounded."""
    class Op(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, *extra):
            y = forward(x.float(), *extra).to(x.dtype)
            ctx.save_for_backward(y)
            ctx.extra = extra
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            gx = backward(g.float(), y.float(), *ctx.extra).to(y.dtype)
            return (gx,) + (None,) * len(ctx.extra)
    return Op.apply


SAVED_OUTPUT = {
    torch.tanh: saved_output(torch.tanh, lambda g, y: g * (1 - y * y)),
    torch.sigmoid: saved_output(torch.sigmoid, lambda g, y: g * y * (1 - y)),
    torch.exp: saved_output(torch.exp, lambda g, y: g * y),
    torch.softmax: saved_output(torch.softmax,
                                lambda g, y, d: y * (g - (g * y).sum(d, keepdim=True))),
}


class GradIn(torch.autograd.Function):
    """Identity whose gradient is rounded to dtype: the gradient that a 16-bit op gives an
    input of another dtype (a 0-dimensional float32 tensor) is computed in the op's dtype."""
    @staticmethod
    def forward(ctx, x, dtype):
        ctx.dtype = dtype
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return g.to(ctx.dtype).to(g.dtype), None


def emulate(dtype):
    """op(f, *args): f on float32 copies of the 16-bit arguments, rounded to dtype."""
    def native(f, *args):
        return f(*args)

    def via_float(f, *args):
        if f in SAVED_OUTPUT:
            return SAVED_OUTPUT[f](*args)
        a = [x if not torch.is_tensor(x) else x.float() if x.dtype == dtype else
             GradIn.apply(x, dtype) for x in args]
        return f(*a).to(dtype)
    return native if dtype == torch.bfloat16 else via_float


def record(name, program, inputs, grad, dtypes=None):
    for tag, dtype in (("f16", torch.float16), ("bf16", torch.bfloat16)):
        op = emulate(dtype)
        leaves = {}
        for k, v in inputs.items():
            dt = (dtypes or {}).get(k, dtype)
            leaves[k] = v.to(dt).clone().requires_grad_(k in grad)
        y = program(op, **leaves)
        w = (torch.rand(y.shape) + 0.5).to(y.dtype)
        y.backward(w)
        key = f"{name}.{tag}"
        out[f"{key}.w"] = w
        out[f"{key}.out"] = y.detach()
        for k in inputs:
            out[f"{key}.{k}"] = leaves[k].detach()
        for k in grad:
            out[f"{key}.grad_{k}"] = leaves[k].grad
            assert leaves[k].grad.dtype == leaves[k].dtype


def n(*shape):
    return torch.randn(*shape)


def arith(op, a, b, c):
    num = op(torch.add, op(torch.mul, a, b), c)
    den = op(torch.add, op(torch.mul, b, b), 1.0)
    return op(torch.sum, op(torch.div, num, den), 1)


def mlp(op, x, w1, b1, w2, b2):
    h = op(F.relu, op(F.linear, x, w1, b1))
    return op(torch.tanh, op(F.linear, h, w2, b2))


def softmax_exp(op, a, b):
    s = op(torch.softmax, op(torch.mul, a, 0.5), -1)
    return op(torch.mean, op(torch.mul, s, op(torch.exp, b)), 0)


def matmul_sigmoid(op, a, b):
    return op(torch.sigmoid, op(torch.matmul, a, b))


def promotion(op, a, b, s):
    # a (16-bit) with b (float32): float32; with the 0-dim float32 s: a's dtype
    return torch.add(op(torch.mul, a, s), b)


record("arith", arith, {"a": n(3, 4), "b": n(4), "c": n(3, 1)}, ["a", "b", "c"])
record("mlp", mlp, {"x": n(5, 6), "w1": n(4, 6) * 0.5, "b1": n(4), "w2": n(3, 4) * 0.5,
                    "b2": n(3)}, ["x", "w1", "b1", "w2", "b2"])
record("softmax_exp", softmax_exp, {"a": n(2, 3, 5) * 2, "b": n(3, 5)}, ["a", "b"])
record("matmul_sigmoid", matmul_sigmoid, {"a": n(2, 4, 8), "b": n(8, 3)}, ["a", "b"])
record("promotion", promotion, {"a": n(3, 4), "b": n(4), "s": torch.tensor(1.75)},
       ["a", "b", "s"], dtypes={"b": torch.float32, "s": torch.float32})

write_gold(os.path.join(os.path.dirname(__file__), "autograd_half.gold"), out)
