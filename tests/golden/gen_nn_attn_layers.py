#!/usr/bin/python3
"""Golden data for tests/test-nn-attn.c: attention, Transformer and Stable-Diffusion blocks of
ggmlc-nn against PyTorch 1.13.

Each case is a small functional model: every input that carries data goes through a Dense
layer ("pre", so that its weights' gradients check the gradient reaching the block's input),
then the block.  Stored per case: the inputs x0 (x1), a target y, the initial weights w0 in
ggmlc's order (layers in the order applied, parameters as each layer declares them), the output
and the weights w1 after one SGD step (lr 0.1) on the mean squared error.
Where torch.nn has the module (TransformerEncoderLayer, TransformerDecoderLayer,
MultiheadAttention) the reference written here is checked against it before use.
Run: OPENBLAS_NUM_THREADS=2 /usr/bin/python3 tests/golden/gen_nn_attn_layers.py
"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from goldfile import write_gold  # noqa: E402

torch.manual_seed(22)
torch.set_default_dtype(torch.float32)
LR = 0.1
N = 3
out = {}


def lin(i, o, bias=True):
    m = nn.Linear(i, o, bias=bias)
    with torch.no_grad():  # larger than the default init, so that attention is not uniform
        m.weight.uniform_(-0.6, 0.6)
        if bias:
            m.bias.uniform_(-0.2, 0.2)
    return m


def lin_params(m):
    return [m.weight] + ([m.bias] if m.bias is not None else [])


def alibi_slopes(n_head, max_bias):
    """ggml's ALiBi slopes: 2^(-max_bias (h+1) / n) for the first n = 2^floor(log2 H) heads."""
    n = 2 ** int(math.floor(math.log2(n_head)))
    m0, m1 = 2.0 ** (-max_bias / n), 2.0 ** (-max_bias / 2.0 / n)
    return torch.tensor([m0 ** (h + 1) if h < n else m1 ** (2 * (h - n) + 1) for h in range(n_head)])


def rope_neox(x, base):
    """x [N, H, T, hd]: pairs (i, i + hd/2) rotated by t * base^(-2i/hd)."""
    hd = x.shape[-1]
    half = hd // 2
    t = torch.arange(x.shape[2], dtype=torch.float64)[:, None]
    theta = t * base ** (-2.0 * torch.arange(half, dtype=torch.float64) / hd)
    c, s = torch.cos(theta).float(), torch.sin(theta).float()
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1)


class Attention(nn.Module):
    """Multi-head attention as ggmlc defines it (grouped-query heads, rope, ALiBi, masks)."""

    def __init__(self, d, h, hkv=None, d_src=None, bias=True, fused=False, out_bias=None):
        super().__init__()
        self.h, self.hkv, self.hd = h, hkv or h, d // h
        d_src = d_src or d
        qw, kvw = self.h * self.hd, self.hkv * self.hd
        self.fused = fused
        if fused:
            self.qkv = lin(d, qw + 2 * kvw, bias)
        else:
            self.q, self.k, self.v = lin(d, qw, bias), lin(d_src, kvw, bias), lin(d_src, kvw, bias)
        self.o = lin(qw, d, bias if out_bias is None else out_bias)
        self.causal, self.rope, self.max_bias = False, False, 0.0

    def params(self):
        mods = [self.qkv] if self.fused else [self.q, self.k, self.v]
        return sum((lin_params(m) for m in mods + [self.o]), [])

    def forward(self, x, src=None, pad=None):
        self_attn = src is None
        src = x if src is None else src
        n, t, s = x.shape[0], x.shape[1], src.shape[1]
        if self.fused:
            qw, kvw = self.h * self.hd, self.hkv * self.hd
            q, k, v = self.qkv(x).split([qw, kvw, kvw], -1)
        else:
            q, k, v = self.q(x), self.k(src), self.v(src)
        q = q.reshape(n, t, self.h, self.hd).transpose(1, 2)
        k = k.reshape(n, s, self.hkv, self.hd).transpose(1, 2)
        v = v.reshape(n, s, self.hkv, self.hd).transpose(1, 2)
        if self.rope and self_attn:
            q, k = rope_neox(q, 10000.0), rope_neox(k, 10000.0)
        r = self.h // self.hkv
        k, v = k.repeat_interleave(r, 1), v.repeat_interleave(r, 1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.hd)  # [N, H, T, S]
        if self.max_bias > 0 and self_attn:
            dist = -(torch.arange(s)[None, :] - torch.arange(t)[:, None]).abs().float()
            scores = scores + alibi_slopes(self.h, self.max_bias)[:, None, None] * dist
        if self.causal and self_attn:
            scores = scores.masked_fill(torch.ones(t, s, dtype=torch.bool).triu(1), float("-inf"))
        if pad is not None:
            scores = scores.masked_fill(pad[:, None, None, :] == 0, float("-inf"))
        o = (scores.softmax(-1) @ v).transpose(1, 2).reshape(n, t, self.h * self.hd)
        return self.o(o)


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(d)), eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def norm_params(m):
    return [m.weight] + ([m.bias] if getattr(m, "bias", None) is not None else [])


class Block(nn.Module):
    """ggmlc's Transformer encoder/decoder block."""

    def __init__(self, d, h, ff, hkv=None, pre=False, rms=False, swiglu=False, decoder=False, d_mem=None):
        super().__init__()
        mk_norm = (lambda: RMSNorm(d, 1e-5)) if rms else (lambda: nn.LayerNorm(d, eps=1e-5))
        self.pre, self.swiglu, self.decoder = pre, swiglu, decoder
        self.n_attn, self.attn = mk_norm(), Attention(d, h, hkv)
        self.attn.causal = decoder
        self.cross = d_mem is not None
        if self.cross:
            self.n_xattn, self.xattn = mk_norm(), Attention(d, h, hkv, d_src=d_mem)
        self.n_mlp = mk_norm()
        self.fc1, self.fc2 = lin(d, 2 * ff if swiglu else ff), lin(ff, d)
        with torch.no_grad():
            for m in self.norms():
                m.weight.uniform_(0.5, 1.5)
                if getattr(m, "bias", None) is not None:
                    m.bias.uniform_(-0.3, 0.3)

    def norms(self):
        return [self.n_attn] + ([self.n_xattn] if self.cross else []) + [self.n_mlp]

    def params(self):
        p = norm_params(self.n_attn) + self.attn.params()
        if self.cross:
            p += norm_params(self.n_xattn) + self.xattn.params()
        return p + norm_params(self.n_mlp) + lin_params(self.fc1) + lin_params(self.fc2)

    def mlp(self, x):
        h = self.fc1(x)
        if self.swiglu:
            a, g = h.chunk(2, -1)
            h = F.silu(a) * g
        else:
            h = F.gelu(h)
        return self.fc2(h)

    def part(self, x, norm, f):
        return x + f(norm(x)) if self.pre else norm(x + f(x))

    def forward(self, x, mem=None, pad=None):
        x = self.part(x, self.n_attn, lambda z: self.attn(z, pad=pad))
        if self.cross:
            x = self.part(x, self.n_xattn, lambda z: self.xattn(z, mem))
        return self.part(x, self.n_mlp, self.mlp)


class UNetRes(nn.Module):
    """SD's ResBlock: GroupNorm-SiLU-conv, + Linear(SiLU(emb)), GroupNorm-SiLU-conv, + skip."""

    def __init__(self, c, oc, e, groups):
        super().__init__()
        self.gn1, self.conv1 = nn.GroupNorm(groups, c, eps=1e-5), nn.Conv2d(c, oc, 3, padding=1)
        self.emb = lin(e, oc)
        self.gn2, self.conv2 = nn.GroupNorm(groups, oc, eps=1e-5), nn.Conv2d(oc, oc, 3, padding=1)
        self.skip = nn.Conv2d(c, oc, 1) if c != oc else None
        with torch.no_grad():
            for g in (self.gn1, self.gn2):
                g.weight.uniform_(0.5, 1.5)
                g.bias.uniform_(-0.3, 0.3)

    def params(self):
        p = [self.gn1.weight, self.gn1.bias, self.conv1.weight, self.conv1.bias] + lin_params(self.emb)
        p += [self.gn2.weight, self.gn2.bias, self.conv2.weight, self.conv2.bias]
        return p + ([self.skip.weight, self.skip.bias] if self.skip is not None else [])

    def forward(self, x, emb):
        h = self.conv1(F.silu(self.gn1(x)))
        h = h + self.emb(F.silu(emb))[:, :, None, None]
        h = self.conv2(F.silu(self.gn2(h)))
        return h + (self.skip(x) if self.skip is not None else x)


class Spatial(nn.Module):
    """SD 1.x SpatialTransformer of depth 1 (1x1 convolutions as projections)."""

    def __init__(self, c, heads, hd, groups, d_ctx):
        super().__init__()
        inner = heads * hd
        self.gn = nn.GroupNorm(groups, c, eps=1e-6)
        self.proj_in = nn.Conv2d(c, inner, 1)
        self.n1, self.attn1 = nn.LayerNorm(inner), Attention(inner, heads, bias=False, out_bias=True)
        self.n2, self.attn2 = nn.LayerNorm(inner), Attention(inner, heads, d_src=d_ctx, bias=False, out_bias=True)
        self.n3, self.geglu, self.ff_out = nn.LayerNorm(inner), lin(inner, 8 * inner), lin(4 * inner, inner)
        self.proj_out = nn.Conv2d(inner, c, 1)
        with torch.no_grad():
            for m in (self.gn, self.n1, self.n2, self.n3):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.3, 0.3)

    def params(self):
        p = [self.gn.weight, self.gn.bias, self.proj_in.weight, self.proj_in.bias]
        p += norm_params(self.n1) + self.attn1.params() + norm_params(self.n2) + self.attn2.params()
        p += norm_params(self.n3) + lin_params(self.geglu) + lin_params(self.ff_out)
        return p + [self.proj_out.weight, self.proj_out.bias]

    def forward(self, x, ctx):
        n, c, h, w = x.shape
        t = self.proj_in(self.gn(x)).flatten(2).transpose(1, 2)  # [N, HW, inner]
        t = t + self.attn1(self.n1(t))
        t = t + self.attn2(self.n2(t), ctx)
        a, gate = self.geglu(self.n3(t)).chunk(2, -1)
        t = t + self.ff_out(a * F.gelu(gate))
        t = t.transpose(1, 2).reshape(n, -1, h, w)
        return self.proj_out(t) + x


def flat(params):
    return torch.cat([p.detach().reshape(-1) for p in params])


def case(name, block, inputs, pre_dims, call=None):
    """inputs: list of tensors; pre_dims[i]: width of input i's Dense, None for none (a mask)."""
    pres = [lin(x.shape[-1], d) if d else None for x, d in zip(inputs, pre_dims)]
    params = sum((lin_params(p) for p in pres if p), []) + block.params()

    def fwd():
        z = [p(x) if p else x for p, x in zip(pres, inputs)]
        return call(block, z) if call else block(*z)

    with torch.no_grad():
        y_out = fwd()
    for i, x in enumerate(inputs):
        out[f"{name}.x{i}"] = x
    target = torch.rand(y_out.shape) * 2 - 1
    out[f"{name}.y"] = target
    out[f"{name}.out"] = y_out
    out[f"{name}.w0"] = flat(params)
    opt = torch.optim.SGD(params, lr=LR)
    opt.zero_grad()
    F.mse_loss(fwd(), target).backward()
    opt.step()
    out[f"{name}.w1"] = flat(params)


class TinyLM(nn.Module):
    """Embedding, learned positions, a GPT block, Dense to the vocabulary: per-token logits."""

    def __init__(self, vocab, t, d):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.rand(t, d) - 0.5)
        self.block = Block(d, 2, 12, pre=True, decoder=True)
        self.head = lin(d, vocab)

    def params(self):
        return [self.emb.weight, self.pos] + self.block.params() + lin_params(self.head)

    def forward(self, ids):
        return self.head(self.block(self.emb(ids) + self.pos))


def lm_case():
    """Per-token cross-entropy (PyTorch's CrossEntropyLoss over N*T tokens), one SGD step."""
    vocab, t, d = 7, 5, 8
    model = TinyLM(vocab, t, d)
    ids = torch.randint(0, vocab, (N, t))
    labels = torch.randint(0, vocab, (N, t))
    with torch.no_grad():  # the first two positions labelled with the prediction: accuracy 6/15 or more
        labels[:, :2] = model(ids).argmax(-1)[:, :2]
    params = model.params()
    out["lm.x0"] = ids.float()
    out["lm.y"] = labels.float()
    with torch.no_grad():
        out["lm.out"] = model(ids).softmax(-1)
    out["lm.w0"] = flat(params)
    opt = torch.optim.SGD(params, lr=LR)
    opt.zero_grad()
    loss = F.cross_entropy(model(ids).reshape(-1, vocab), labels.reshape(-1))
    out["lm.loss"] = loss.detach().reshape(1)
    loss.backward()
    opt.step()
    out["lm.w1"] = flat(params)


def rand(*shape):
    return torch.rand(*shape) * 2 - 1


def check_against_torch():
    """The references above against torch.nn's own modules, where it has them."""
    d, h, ff, t = 8, 2, 12, 5
    x, mem = rand(N, t, d), rand(N, 4, d)
    ours = Block(d, h, ff)
    ref = nn.TransformerEncoderLayer(d, h, ff, dropout=0.0, activation="gelu", batch_first=True, norm_first=False)
    dec = Block(d, h, ff, pre=True, decoder=True, d_mem=d)
    dref = nn.TransformerDecoderLayer(d, h, ff, dropout=0.0, activation="gelu", batch_first=True, norm_first=True)
    with torch.no_grad():
        copy_block(ours, ref, [ours.attn], [ref.self_attn], [ours.n_attn, ours.n_mlp], [ref.norm1, ref.norm2])
        copy_block(dec, dref, [dec.attn, dec.xattn], [dref.self_attn, dref.multihead_attn],
                   [dec.n_attn, dec.n_xattn, dec.n_mlp], [dref.norm1, dref.norm2, dref.norm3])
        assert torch.allclose(ours(x), ref(x), atol=1e-5), "encoder block differs from nn.TransformerEncoderLayer"
        causal = torch.ones(t, t, dtype=torch.bool).triu(1)
        assert torch.allclose(dec(x, mem), dref(x, mem, tgt_mask=causal), atol=1e-5), "decoder block differs"


def copy_block(ours, ref, attns, ref_attns, norms, ref_norms):
    for a, r in zip(attns, ref_attns):
        d = a.q.weight.shape[1]
        for i, m in enumerate((a.q, a.k, a.v)):
            m.weight.copy_(r.in_proj_weight[i * d:(i + 1) * d])
            m.bias.copy_(r.in_proj_bias[i * d:(i + 1) * d])
        a.o.weight.copy_(r.out_proj.weight)
        a.o.bias.copy_(r.out_proj.bias)
    for n, r in zip(norms, ref_norms):
        n.weight.copy_(r.weight)
        n.bias.copy_(r.bias)
    for m, r in ((ours.fc1, ref.linear1), (ours.fc2, ref.linear2)):
        m.weight.copy_(r.weight)
        m.bias.copy_(r.bias)


def main():
    check_against_torch()
    T, D = 5, 8
    # plain attention, 2 heads, biases
    case("mha", Attention(D, 2), [rand(N, T, D)], [D])
    # causal, fused qkv, 4 query heads over 2 key/value heads, rope, no bias
    a = Attention(16, 4, hkv=2, bias=False, fused=True)
    a.causal, a.rope = True, True
    case("mha_gqa_rope", a, [rand(N, 6, 16)], [16])
    # causal ALiBi, 4 heads (plus one not a power of two: 6 heads)
    a = Attention(12, 6)
    a.causal, a.max_bias = True, 8.0
    case("mha_alibi", a, [rand(N, T, 12)], [12])
    # key padding mask: sample n has its last n positions padded
    pad = torch.ones(N, T)
    for n in range(N):
        pad[n, T - n:] = 0
    case("mha_pad", Attention(D, 2), [rand(N, T, D), pad], [D, None], lambda b, z: b(z[0], pad=z[1]))
    # cross-attention to a {4, 6} context
    case("mha_cross", Attention(D, 2, d_src=6), [rand(N, T, D), rand(N, 4, 6)], [D, 6])
    # Transformer blocks
    case("enc_post_gelu", Block(D, 2, 12), [rand(N, T, D)], [D])
    case("enc_pre_rms_swiglu", Block(D, 4, 10, hkv=2, pre=True, rms=True, swiglu=True), [rand(N, T, D)], [D])
    case("enc_pad", Block(D, 2, 12, pre=True), [rand(N, T, D), pad], [D, None], lambda b, z: b(z[0], pad=z[1]))
    case("dec_cross", Block(D, 2, 12, pre=True, decoder=True, d_mem=6), [rand(N, T, D), rand(N, 4, 6)], [D, 6])
    case("dec_gpt", Block(D, 2, 12, pre=True, decoder=True), [rand(N, T, D)], [D])
    # Stable-Diffusion blocks; the image's Dense acts on its last axis (W), as nn.Linear does
    case("unet_res", UNetRes(4, 8, 6, 2), [rand(N, 4, 5, 5), rand(N, 6)], [5, 6])
    case("unet_res_same", UNetRes(4, 4, 6, 2), [rand(N, 4, 4, 3), rand(N, 6)], [3, 6])
    case("spatial", Spatial(8, 2, 4, 2, 6), [rand(N, 8, 3, 3), rand(N, 4, 6)], [3, 6])
    lm_case()
    write_gold(os.path.join(os.path.dirname(__file__), "nn_attn_layers.gold"), out)


if __name__ == "__main__":
    main()
