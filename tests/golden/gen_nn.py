"""Golden data for tests/test-ops-nn*.c: normalisations, softmax (+ back), rope in
every mode, flash attention (+ back), cross-entropy and optimizer steps.

References are plain PyTorch (float64 where the formula is written out here);
run with /usr/bin/python3 from tests/golden/:  OPENBLAS_NUM_THREADS=2 /usr/bin/python3 gen_nn.py
Tensors are stored in ggml order (see goldfile.py): a torch tensor of shape
[n3, n2, n1, n0] is a ggml tensor with ne = [n0, n1, n2, n3].  Scalar arguments
of each case are stored too ("*_args"), so the C side has one source of truth.
"""
import math
import os

import torch
import torch.nn.functional as F

from goldfile import write_gold

HERE = os.path.dirname(os.path.abspath(__file__))
D = torch.float64


def f32(t):
    return t.detach().to(torch.float32).clone()  # a copy: optimizers update in place


def args(*values):
    return torch.tensor(values, dtype=torch.float32)


def mixed(shape, spread=3.0, offset=0.0):
    """Random values with negative, small and a few large entries."""
    x = torch.randn(*shape, dtype=D) * spread + offset
    flat = x.view(-1)
    flat[:: 7] *= 10.0
    return x


def fp16_round(t):
    return t.to(torch.float16).to(D)


def alibi_slopes(n_head, max_bias):
    if max_bias <= 0:
        return torch.ones(n_head, dtype=D)
    n_log2 = 2 ** int(math.floor(math.log2(n_head)))
    m0 = 2.0 ** (-max_bias / n_log2)
    m1 = 2.0 ** (-(max_bias / 2.0) / n_log2)
    return torch.tensor([m0 ** (h + 1) if h < n_log2 else m1 ** (2 * (h - n_log2) + 1) for h in range(n_head)], dtype=D)


# ----------------------------------------------------------------- softmax

def softmax_ref(x, mask, scale, max_bias, sinks=None):
    """x [n3, n2, n1, n0]; mask [m3, m2, >= n1, n0] broadcast by repetition over dims 2, 3."""
    n3, n2, n1, n0 = x.shape
    w = x * scale
    if mask is not None:
        m = mask[:, :, :n1, :].repeat(n3 // mask.shape[0], n2 // mask.shape[1], 1, 1)
        w = w + alibi_slopes(n2, max_bias).view(1, n2, 1, 1) * m
    if sinks is not None:
        s = sinks.view(1, n2, 1, 1).expand(n3, n2, n1, 1)
        return torch.softmax(torch.cat([w, s], dim=-1), dim=-1)[..., :n0]
    return torch.softmax(w, dim=-1)


def random_mask(shape):
    m = torch.round(torch.randn(*shape, dtype=D) * 16) / 8  # exact in f16
    m[torch.rand(*shape) < 0.2] = -math.inf
    return m


def gen_softmax():
    g = {}
    x = mixed((2, 6, 5, 37))
    mask = random_mask((1, 3, 7, 37))
    sinks = torch.randn(6, dtype=D)
    g["x"], g["mask"], g["sinks"] = f32(x), f32(mask), f32(sinks)
    g["plain"] = f32(torch.softmax(x * 1.0, dim=-1))
    g["masked_args"] = args(0.7, 0.0)
    g["masked"] = f32(softmax_ref(x, mask, 0.7, 0.0))
    g["alibi_args"] = args(0.35, 8.0)
    g["alibi"] = f32(softmax_ref(x, mask, 0.35, 8.0))
    g["sinks_args"] = args(0.5, 4.0)
    g["with_sinks"] = f32(softmax_ref(x, mask, 0.5, 4.0, sinks))
    # gradient through scale, mask and ALiBi: torch autograd of the forward
    xs = x.clone().requires_grad_(True)
    y = softmax_ref(xs, mask, 0.35, 8.0)
    dy = torch.randn_like(y)
    (y * dy).sum().backward()
    g["back_dy"], g["back_y"], g["back_dx"] = f32(dy), f32(y), f32(xs.grad)
    write_gold(os.path.join(HERE, "nn_softmax.gold"), g)


# ------------------------------------------------------------------- norms

def gen_norm():
    g = {}
    x = mixed((2, 3, 7, 33), spread=4.0, offset=50.0)
    g["x"] = f32(x)
    g["norm"] = f32(F.layer_norm(x, (33,), eps=1e-5))
    g["rms"] = f32(x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-6))
    g["l2"] = f32(F.normalize(x, dim=-1, eps=1e-12))
    xg = mixed((2, 6, 4, 5), spread=2.0, offset=-20.0)  # ggml [W=5, H=4, C=6, N=2]
    g["gx"] = f32(xg)
    g["group"] = f32(F.group_norm(xg, 3, eps=1e-6))
    # gradients (upstream gradient first, as ggml orders them)
    xs = x.clone().requires_grad_(True)
    y = xs / torch.sqrt((xs * xs).mean(-1, keepdim=True) + 1e-6)
    dy = torch.randn_like(y)
    (y * dy).sum().backward()
    g["dy"], g["rms_dx"] = f32(dy), f32(xs.grad)
    xs = (x / 10 - 5).clone().requires_grad_(True)
    (F.silu(xs) * dy).sum().backward()
    g["silu_x"], g["silu_dx"] = f32(xs.detach()), f32(xs.grad)
    write_gold(os.path.join(HERE, "nn_norm.gold"), g)


# -------------------------------------------------------------------- rope

def yarn_corr_dims(n_dims, n_ctx_orig, base, beta_fast, beta_slow):
    def corr_dim(n_rot):
        return n_dims * math.log(n_ctx_orig / (n_rot * 2 * math.pi)) / (2 * math.log(base))
    return max(0.0, math.floor(corr_dim(beta_fast))), min(n_dims - 1.0, math.ceil(corr_dim(beta_slow)))


def rope_angles(pos_row, n_pairs, p, ff):
    """cos/sin scale of each pair k for one sequence index: pos_row = its 1 or 4 positions."""
    n_dims, mode, sections = p["n_dims"], p["mode"], p.get("sections")
    base, fs, ext, attn = p["base"], p["freq_scale"], p["ext_factor"], p["attn_factor"]
    if ext != 0.0:
        low, high = yarn_corr_dims(n_dims, p["n_ctx_orig"], base, p["beta_fast"], p["beta_slow"])
    thetas, mscales = [], []
    for k in range(n_pairs):
        comp, expo = 0, k
        if sections is not None:
            s = sections
            sector = k % sum(s)
            start = [0, s[0], s[0] + s[1], s[0] + s[1] + s[2]]
            if mode == 40:  # interleaved
                if sector % 3 == 1 and sector < 3 * s[1]:
                    comp = 1
                elif sector % 3 == 2 and sector < 3 * s[2]:
                    comp = 2
                elif sector % 3 == 0 and sector < 3 * s[0]:
                    comp = 0
                else:
                    comp = 3
            else:
                comp = 0 if sector < start[1] else 1 if sector < start[2] else 2 if sector < start[3] else 3
            if mode == 24:  # vision: each section restarts the frequencies
                expo = sector - start[comp]
        extrap = pos_row[comp] * base ** (-2.0 * expo / n_dims) / (ff[k] if ff is not None else 1.0)
        interp = fs * extrap
        theta, msc = interp, attn
        if ext != 0.0:
            ramp = 1.0 - min(1.0, max(0.0, (k - low) / max(0.001, high - low)))
            mix = ramp * ext
            theta = interp * (1 - mix) + extrap * mix
            msc = attn * (1.0 + 0.1 * math.log(1.0 / fs))
        thetas.append(theta)
        mscales.append(msc)
    return torch.tensor(thetas, dtype=D), torch.tensor(mscales, dtype=D)


def rope_ref(x, pos, p, ff=None):
    """x [n3, seq, heads, ne0] (torch order); pos: seq or 4*seq positions."""
    n3, seq, heads, ne0 = x.shape
    mode, n_dims = p["mode"], p["n_dims"]
    vision = mode == 24
    n_pairs = ne0 // 2 if vision else n_dims // 2
    out = x.clone()
    for i2 in range(seq):
        prow = [float(pos[i2 + c * seq]) for c in range(4)] if p.get("sections") else [float(pos[i2])]
        theta, msc = rope_angles(prow, n_pairs, p, ff)
        c, s = torch.cos(theta) * msc, torch.sin(theta) * msc
        k = torch.arange(n_pairs)
        if mode == 0:
            a, b = 2 * k, 2 * k + 1  # adjacent pairs (x0, x1)
        elif vision:
            a, b = k, k + n_dims
        else:
            a, b = k, k + n_dims // 2  # halves (NeoX and multi-section)
        x0, x1 = x[:, i2, :, a], x[:, i2, :, b]
        out[:, i2, :, a] = x0 * c - x1 * s
        out[:, i2, :, b] = x0 * s + x1 * c
    return out


ROPE_CASES = {
    # name: params; positions per sequence index are 1 (or 4 for multi-section modes)
    "normal": dict(n_dims=12, mode=0, base=10000.0, freq_scale=1.0, ext_factor=0.0, attn_factor=1.0,
                   beta_fast=0.0, beta_slow=0.0, n_ctx_orig=0),
    "neox_yarn": dict(n_dims=16, mode=2, base=10000.0, freq_scale=0.25, ext_factor=1.0, attn_factor=1.3,
                      beta_fast=32.0, beta_slow=1.0, n_ctx_orig=64),
    "mrope": dict(n_dims=12, mode=8, base=1000.0, freq_scale=1.0, ext_factor=0.0, attn_factor=1.0,
                  beta_fast=32.0, beta_slow=1.0, n_ctx_orig=128, sections=[2, 2, 2, 0]),
    "imrope": dict(n_dims=16, mode=40, base=5000.0, freq_scale=0.5, ext_factor=0.5, attn_factor=1.0,
                   beta_fast=32.0, beta_slow=1.0, n_ctx_orig=32, sections=[3, 3, 2, 0]),
    "vision": dict(n_dims=8, mode=24, base=10000.0, freq_scale=1.0, ext_factor=0.0, attn_factor=1.0,
                   beta_fast=32.0, beta_slow=1.0, n_ctx_orig=0, sections=[4, 4, 4, 4]),
}


def gen_rope():
    g = {}
    seq = 5
    x = mixed((1, seq, 3, 16))
    g["x"] = f32(x)
    pos1 = torch.tensor([0, 3, 17, 250, 1000], dtype=torch.int32)
    pos4 = torch.tensor([0, 3, 17, 250, 1000, 1, 1, 2, 9, 40, 5, 0, 7, 7, 31, 2, 4, 6, 8, 10], dtype=torch.int32)
    g["pos1"], g["pos4"] = pos1, pos4
    ff = torch.tensor([1.0, 1.0, 2.0, 4.0, 8.0, 1.5, 1.0, 3.0], dtype=D)
    g["ff"] = f32(ff)
    for name, p in ROPE_CASES.items():
        pos = pos4 if p.get("sections") else pos1
        secs = p.get("sections", [0, 0, 0, 0])
        g[name + "_args"] = args(p["n_dims"], p["mode"], p["n_ctx_orig"], p["base"], p["freq_scale"], p["ext_factor"],
                                 p["attn_factor"], p["beta_fast"], p["beta_slow"], *secs)
        use_ff = name in ("neox_yarn", "vision")
        g[name] = f32(rope_ref(x, pos, p, ff if use_ff else None))
    g["yarn_dims"] = args(*yarn_corr_dims(16, 64, 10000.0, 32.0, 1.0), *yarn_corr_dims(96, 4096, 500000.0, 32.0, 1.0))
    # backward of the YaRN case and of the interleaved case: autograd of the reference
    for name in ("neox_yarn", "imrope"):
        p = ROPE_CASES[name]
        xs = x.clone().requires_grad_(True)
        y = rope_ref(xs, pos4 if p.get("sections") else pos1, p, ff if name == "neox_yarn" else None)
        dy = torch.randn_like(y)
        (y * dy).sum().backward()
        g[name + "_dy"], g[name + "_dx"] = f32(dy), f32(xs.grad)
    write_gold(os.path.join(HERE, "nn_rope.gold"), g)


# --------------------------------------------------------------- attention

def attn_ref(q, k, v, mask, scale, max_bias, softcap, sinks=None):
    """ggml layouts as torch: q [B, H, N, Dk], k [B, Hkv, M, Dk], v [B, Hkv, M, Dv],
    mask [mB, mH, >= N, M].  Returns [B, N, H, Dv] (ggml's permuted result)."""
    B, H, N, _ = q.shape
    rep = H // k.shape[1]
    kk, vv = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
    s = q @ kk.transpose(-1, -2) * scale
    if softcap != 0.0:
        s = softcap * torch.tanh(s / softcap)
    if mask is not None:
        m = mask[:, :, :N, :].repeat(B // mask.shape[0], H // mask.shape[1], 1, 1)
        s = s + alibi_slopes(H, max_bias).view(1, H, 1, 1) * m
    if sinks is not None:
        s = torch.cat([s, sinks.view(1, H, 1, 1).expand(B, H, N, 1)], dim=-1)
        a = torch.softmax(s, dim=-1)[..., :-1]
    else:
        a = torch.softmax(s, dim=-1)
    return (a @ vv).permute(0, 2, 1, 3)


def gen_attn():
    g = {}
    B, H, Hkv, N, M, Dk, Dv = 2, 6, 3, 5, 11, 40, 24
    q = torch.randn(B, H, N, Dk, dtype=D)
    k = torch.randn(B, Hkv, M, Dk, dtype=D)
    v = torch.randn(B, Hkv, M, Dv, dtype=D) * 2
    mask = random_mask((1, 1, 8, M))
    mask[..., 0] = 0.0  # every query sees at least one key
    sinks = torch.randn(H, dtype=D)
    g["q"], g["k"], g["v"], g["mask"], g["sinks"] = f32(q), f32(k), f32(v), f32(mask), f32(sinks)
    scale = 1.0 / math.sqrt(Dk)
    g["plain_args"] = args(scale, 0.0, 0.0)
    g["plain"] = f32(attn_ref(q, k, v, mask, scale, 0.0, 0.0))
    g["full_args"] = args(scale * 2, 5.0, 3.0)
    g["full"] = f32(attn_ref(q, k, v, mask, scale * 2, 5.0, 3.0, sinks))
    g["f16"] = f32(attn_ref(q, fp16_round(k), fp16_round(v), mask, scale, 0.0, 0.0))
    # more queries than one block of the kernel, causal mask, f16 K/V, one query seeing no key
    # (its output is zeros, as in ggml, where softmax over no keys would be NaN)
    Nl, Ml = 13, 20
    lq = torch.randn(1, 2, Nl, 16, dtype=D)
    lk, lv = fp16_round(torch.randn(1, 1, Ml, 16, dtype=D)), fp16_round(torch.randn(1, 1, Ml, 8, dtype=D))
    lmask = torch.zeros(1, 1, 16, Ml, dtype=D)
    lmask[0, 0][torch.ones(16, Ml, dtype=torch.bool).triu(Ml - Nl + 1)] = -math.inf
    lmask[0, 0, 4, :] = -math.inf
    g["lq"], g["lk"], g["lv"], g["lmask"] = f32(lq), f32(lk), f32(lv), f32(lmask)
    out = attn_ref(lq, lk, lv, lmask, 0.25, 0.0, 0.0)
    g["long"] = f32(torch.where(torch.isnan(out), torch.zeros_like(out), out))
    # flash_attn_back: q, d [H, N, D]; k [H, M, D]; v given transposed [H, D, M]
    Hb, Nb, Mb, Db = 2, 5, 7, 8
    qb = torch.randn(1, Hb, Nb, Db, dtype=D, requires_grad=True)
    kb = torch.randn(1, Hb, Mb, Db, dtype=D, requires_grad=True)
    vt = torch.randn(1, Hb, Db, Mb, dtype=D, requires_grad=True)
    do = torch.randn(1, Hb, Nb, Db, dtype=D)
    g["bq"], g["bk"], g["bvt"], g["bd"] = f32(qb), f32(kb), f32(vt), f32(do)
    for masked in (False, True):
        for t in (qb, kb, vt):
            t.grad = None
        s = qb @ kb.transpose(-1, -2) / math.sqrt(Db)
        if masked:
            causal = torch.ones(Nb, Mb, dtype=torch.bool).triu(Mb - Nb + 1)
            s = s.masked_fill(causal, -math.inf)
        o = torch.softmax(s, dim=-1) @ vt.transpose(-1, -2)
        (o * do).sum().backward()
        tag = "causal" if masked else "full"
        g["bdq_" + tag], g["bdk_" + tag], g["bdvt_" + tag] = f32(qb.grad), f32(kb.grad), f32(vt.grad)
    write_gold(os.path.join(HERE, "nn_attn.gold"), g)


# ----------------------------------------------------- losses, optimizers

def gen_loss():
    g = {}
    logits = mixed((3, 2, 13), spread=8.0)
    labels = torch.softmax(torch.randn(3, 2, 13, dtype=D) * 2, dim=-1)
    g["logits"], g["labels"] = f32(logits), f32(labels)
    ls = logits.clone().requires_grad_(True)
    rows = 6
    loss = -(labels * torch.log_softmax(ls, dim=-1)).sum() / rows
    (loss * 1.7).backward()
    g["loss"], g["dlogits"], g["dloss"] = f32(loss.view(1)), f32(ls.grad), args(1.7)

    # one AdamW step from a state left by two earlier steps (so the bias corrections matter)
    torch.manual_seed(7)
    w = torch.nn.Parameter(torch.randn(5, 9))
    lr, b1, b2, eps, wd = 0.01, 0.8, 0.95, 1e-6, 0.1
    opt = torch.optim.AdamW([w], lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd)
    for _ in range(2):
        w.grad = torch.randn(5, 9)
        opt.step()
    st = opt.state[w]
    g["adam_w0"], g["adam_m0"], g["adam_v0"] = f32(w), f32(st["exp_avg"]), f32(st["exp_avg_sq"])
    w.grad = torch.randn(5, 9) * 3
    g["adam_g"] = f32(w.grad)
    opt.step()
    t = 3
    g["adam_args"] = args(lr, b1, b2, eps, wd, 1.0 / (1.0 - b1 ** t), 1.0 / (1.0 - b2 ** t))
    g["adam_w1"], g["adam_m1"], g["adam_v1"] = f32(w), f32(st["exp_avg"]), f32(st["exp_avg_sq"])

    w = torch.nn.Parameter(torch.randn(4, 7) * 5)
    g["sgd_w0"] = f32(w)
    opt = torch.optim.SGD([w], lr=0.05, weight_decay=0.2)
    w.grad = torch.randn(4, 7)
    g["sgd_g"], g["sgd_args"] = f32(w.grad), args(0.05, 0.2)
    opt.step()
    g["sgd_w1"] = f32(w)
    write_gold(os.path.join(HERE, "nn_loss.gold"), g)


if __name__ == "__main__":
    torch.manual_seed(1234)
    gen_softmax()
    gen_norm()
    gen_rope()
    gen_attn()
    gen_loss()
