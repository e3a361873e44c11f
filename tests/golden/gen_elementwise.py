"""Golden data for tests/test-ops-elementwise.c: broadcasting arithmetic, activations,
gated linear units, reductions, copies between types, set/acc, repeat, concat and the
position-dependent ops (tri, diag masks, diag, arange).

Run from tests/golden/:  OPENBLAS_NUM_THREADS=2 /usr/bin/python3 gen_elementwise.py
Every case NAME stores its inputs NAME.in0, NAME.in1, ... and the expected result
NAME.out, all in ggml order (see goldfile.py).  An input the C side views
transposed (ggml_transpose) is stored as the storage tensor; the reference uses its
transpose.  References are computed in float64 from the stored float32 inputs.
"""
import math
import os

import torch
import torch.nn.functional as F

from goldfile import write_gold

HERE = os.path.dirname(os.path.abspath(__file__))
D = torch.float64
torch.manual_seed(20261129)

gold = {}


def rand(ne, lo=-3.0, hi=3.0):
    """float32 uniform values of ggml shape ne (ne[0] innermost)."""
    return (torch.rand(*reversed(ne), dtype=D) * (hi - lo) + lo).to(torch.float32)


def wide(ne):
    """Mixed magnitudes: negative, small and large (up to ~3e4) values."""
    x = torch.randn(*reversed(ne), dtype=D) * 3.0
    x.view(-1)[::5] *= 1e4 / 3.0
    return x.to(torch.float32)


def away_from_zero(ne):
    x = rand(ne, 0.5, 2.0)
    return x * torch.where(torch.rand(x.shape) < 0.5, -1.0, 1.0)


def case(name, inputs, out):
    for i, t in enumerate(inputs):
        gold[f"{name}.in{i}"] = t
    gold[f"{name}.out"] = out if out.dtype in (torch.int32, torch.int64) else out.to(torch.float32)


def T(t):
    """The reference view of an input the C side transposes."""
    return t.transpose(-1, -2)


def tile_to(b, shape):
    return b.repeat(*[s // bs for s, bs in zip(shape, b.shape)])


def f16(t):
    return t.to(torch.float16).to(torch.float32)


def bf16(t):
    return t.to(torch.bfloat16).to(torch.float32)


# ------------------------------------------------------------ arithmetic

OPS = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div}
for op, fn in OPS.items():
    gen_b = away_from_zero if op == "div" else rand
    a = rand([7, 5, 3, 2])
    for tag, bne in [("same", [7, 5, 3, 2]), ("rows", [7, 1, 3, 1]), ("cols", [1, 5, 1, 2]), ("scalar", [1, 1, 1, 1]),
                     ("tile", [7, 5, 1, 1])]:
        b = gen_b(bne)
        case(f"{op}_{tag}", [a, b], fn(a.to(D), tile_to(b.to(D), a.shape)))
    # repetition along ne0 (ggml repeats, it does not only broadcast ones)
    a2 = rand([14, 3, 2])
    b2 = gen_b([7, 1, 2])
    case(f"{op}_rep0", [a2, b2], fn(a2.to(D), tile_to(b2.to(D), a2.shape)))
    # transposed first operand, wide values
    s = wide([9, 11])
    b3 = gen_b([11, 1])
    case(f"{op}_trans", [s, b3], fn(T(s).to(D), tile_to(b3.to(D), T(s).shape)))
    # f16 and bf16 first operand with an f32 second one: result in a's type
    a4 = rand([33, 4])
    b4 = gen_b([33, 1])
    case(f"{op}_f16", [a4, b4], f16(fn(f16(a4).to(D), tile_to(b4.to(D), a4.shape)).to(torch.float32)))
    case(f"{op}_bf16", [a4, b4], bf16(fn(bf16(a4).to(D), tile_to(b4.to(D), a4.shape)).to(torch.float32)))

a = rand([10, 3])
b = rand([1])
case("add1", [a, b], a.to(D) + b.to(D))
case("add_cast_f16", [a, b.reshape(1, 1)], f16((a.to(D) + b.to(D)).to(torch.float32)))

# ----------------------------------------------------------------- unary

x = rand([11, 5, 3], -4.0, 4.0)
pos = rand([11, 5, 3], 0.05, 10.0)
xd = x.to(D)
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def xielu(v, alpha_n, alpha_p, beta, eps):
    an = beta + F.softplus(torch.tensor(alpha_n, dtype=D))
    ap = F.softplus(torch.tensor(alpha_p, dtype=D))
    return torch.where(v > 0, ap * v * v + beta * v, (torch.expm1(torch.clamp(v, max=eps)) - v) * an + beta * v)


UNARY = {
    "abs": torch.abs, "sgn": torch.sign, "neg": torch.neg, "step": lambda v: (v > 0).to(D),
    "tanh": torch.tanh, "elu": F.elu, "relu": F.relu, "sigmoid": torch.sigmoid,
    "gelu": lambda v: F.gelu(v, approximate="tanh"), "gelu_erf": F.gelu,
    "gelu_quick": lambda v: v * torch.sigmoid(1.702 * v), "silu": F.silu,
    "hardswish": F.hardswish, "hardsigmoid": F.hardsigmoid, "exp": torch.exp, "expm1": torch.expm1,
    "softplus": F.softplus, "floor": torch.floor, "ceil": torch.ceil,
    "round": lambda v: torch.sign(v) * torch.floor(torch.abs(v) + 0.5),  # half away from zero, as roundf
    "trunc": torch.trunc, "sqr": lambda v: v * v, "sin": torch.sin, "cos": torch.cos,
    "xielu": lambda v: xielu(v, 0.8, 0.8, 0.5, -1e-6),
}
for name, fn in UNARY.items():
    case(f"u_{name}", [x], fn(xd))
case("u_sqrt", [pos], torch.sqrt(pos.to(D)))
case("u_log", [pos], torch.log(pos.to(D)))
# transposed operand and f16 / bf16 data (result in the operand's type)
s = rand([6, 9], -4.0, 4.0)
for name in ["relu", "gelu", "silu", "tanh"]:
    case(f"u_{name}_trans", [s], UNARY[name](T(s).to(D)))
    case(f"u_{name}_f16", [x], f16(UNARY[name](f16(x).to(D)).to(torch.float32)))
    case(f"u_{name}_bf16", [x], bf16(UNARY[name](bf16(x).to(D)).to(torch.float32)))

case("scale", [x], xd * -1.7)
case("scale_bias", [x], xd * 0.25 + 3.5)
case("clamp", [x], torch.clamp(xd, -0.5, 0.7))
case("leaky_relu", [x], F.leaky_relu(xd, 0.1))
case("fill", [x], torch.full_like(xd, 3.5))

# ---------------------------------------------------------- gated units

g_in = rand([10, 7, 2], -4.0, 4.0)
g_b = rand([5, 7, 2], -4.0, 4.0)
GLU = {
    "reglu": F.relu, "geglu": lambda v: F.gelu(v, approximate="tanh"), "swiglu": F.silu,
    "geglu_erf": F.gelu, "geglu_quick": lambda v: v * torch.sigmoid(1.702 * v),
}
gd = g_in.to(D)
first, second = gd[..., :5], gd[..., 5:]
for name, act in GLU.items():
    case(f"glu_{name}", [g_in], act(first) * second)
    case(f"glu_{name}_swapped", [g_in], act(second) * first)
    case(f"glu_{name}_split", [g_in[..., :5].contiguous(), g_b], act(g_in[..., :5].to(D)) * g_b.to(D))


def swiglu_oai(v, g, alpha, limit):
    v = torch.clamp(v, max=limit)
    g = torch.clamp(g, -limit, limit)
    return v * torch.sigmoid(alpha * v) * (g + 1.0)


oa = rand([9, 4], -10.0, 10.0)
ob = rand([9, 4], -10.0, 10.0)
case("glu_swiglu_oai", [oa, ob], swiglu_oai(oa.to(D), ob.to(D), 1.702, 7.0))

# ------------------------------------------------------------ reductions

r = wide([37, 5, 3, 2])
case("sum", [r], r.to(D).sum().reshape(1))
case("sum_rows", [r], r.to(D).sum(-1, keepdim=True))
case("mean", [r], r.to(D).mean(-1, keepdim=True))
rt = rand([8, 21])
case("sum_rows_trans", [rt], T(rt).to(D).sum(-1, keepdim=True))
cs = rand([23, 5, 2])
case("cumsum", [cs], torch.cumsum(cs.to(D), -1))
am = torch.randperm(17 * 9).reshape(9, 17).to(torch.float32) - 70.0  # no ties
case("argmax", [am], am.argmax(-1).to(torch.int32))
ia = torch.randint(0, 4, (4, 50), dtype=torch.int32)
ib = torch.randint(0, 4, (4, 50), dtype=torch.int32)
case("count_equal", [ia, ib], (ia == ib).sum().reshape(1).to(torch.int64))

# ------------------------------------------------------ repeat, concat

ra = rand([3, 2, 1, 2])
case("repeat", [ra], ra.repeat(2, 3, 2, 2).to(D))  # to ggml [6, 4, 3, 2]
rb = rand([6, 4, 3, 2])
case("repeat_back", [rb], rb.to(D).reshape(1, 2, 3, 1, 2, 2, 2, 3).sum((0, 2, 4, 6)))
for dim in range(4):
    ne_a = [4, 3, 2, 2]
    ne_b = list(ne_a)
    ne_b[dim] = 3
    ca, cb = rand(ne_a), rand(ne_b)
    case(f"concat{dim}", [ca, cb], torch.cat([ca, cb], 3 - dim).to(D))

# ------------------------------------------------- copies between types

cp = wide([9, 11])
case("cont_trans", [cp], T(cp).to(D))
case("cont_2d_trans", [cp], T(cp).contiguous().reshape(3, 33).to(D))  # ggml cont_2d(t, 33, 3)
case("dup", [cp], cp.to(D))
cx = rand([12, 5, 3], -100.0, 100.0)
case("cpy_f16", [cx], f16(cx))
case("cpy_bf16", [cx], bf16(cx))
case("cpy_i32", [cx], torch.trunc(cx).to(torch.int32))
ci = torch.randint(-100000, 100000, (3, 5, 12), dtype=torch.int32)
case("cpy_i32_f32", [ci], ci.to(D))
case("cpy_f16_trans", [cp], f16(T(cp)))
case("cast_f16", [cx], f16(cx))

# ------------------------------------------------------------- set, acc

sa = rand([10, 6])
sb = rand([4, 3])
ref = sa.to(D).clone()
ref[1:4, 2:6] = sb.to(D)
case("set", [sa, sb], ref)
ref = sa.to(D).clone()
ref[1:4, 2:6] += sb.to(D)
case("acc", [sa, sb], ref)
s1 = rand([7])
ref = sa.to(D).clone().reshape(-1)
ref[13:20] = s1.to(D)
case("set_1d", [sa, s1], ref.reshape(6, 10))

# ------------------------------------------- position-dependent operators

tq = rand([6, 6, 2])
for t, fn in enumerate([lambda m: torch.triu(m, 0), lambda m: torch.triu(m, 1), lambda m: torch.tril(m, 0), lambda m: torch.tril(m, -1)]):
    case(f"tri{t}", [tq], fn(tq.to(D)))
dm = rand([5, 4, 2])
n_past = 1
keep = torch.arange(5).view(1, 5) <= n_past + torch.arange(4).view(4, 1)
case("diag_mask_inf", [dm], torch.where(keep, dm.to(D), torch.tensor(-math.inf, dtype=D)))
case("diag_mask_zero", [dm], torch.where(keep, dm.to(D), torch.tensor(0.0, dtype=D)))
dg = rand([5, 1, 2])
case("diag", [dg], torch.diag_embed(dg.to(D).squeeze(-2)))
case("arange", [], torch.arange(-1.5, 4.0, 0.75, dtype=D))

write_gold(os.path.join(HERE, "elementwise.gold"), gold)
print(f"wrote {len(gold)} tensors to elementwise.gold")
