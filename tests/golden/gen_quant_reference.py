"""Reference encodings of ggml's Q4_0, Q8_0, Q4_K and Q6_K blocks.

Each quantizer is written from the published description of ggml's
reference quantization (block layouts in ggml-common.h, formulas of the
*_ref quantizers) in plain Python with numpy float32 scalars, in the same
order of float operations, so that the encoded bytes must match ggmlc's C
implementation exactly.  Output: tests/golden/quant_reference.gold with,
per type, the input values (<type>.x, f32) and the expected bytes
(<type>.bytes, one i32 per byte).

Run: OPENBLAS_NUM_THREADS=2 /usr/bin/python3 tests/golden/gen_quant_reference.py
"""
import math
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from goldfile import write_gold  # noqa: E402

F = np.float32
QK_K = 256


def f16_bytes(v):
    return struct.pack("<e", float(np.float16(F(v))))


def f16_value(v):
    return F(np.float16(F(v)))


def nearest_int(v):
    return int(np.rint(F(v)))


def clamp(v, lo, hi):
    return lo if v < lo else hi if v > hi else v


def signed_absmax(x):
    amax, mx = F(0), F(0)
    for v in x:
        if abs(v) > amax:
            amax, mx = abs(v), v
    return amax, mx


# ---------------------------------------------------------------- Q4_0, Q8_0

def quantize_q4_0(x):
    out = b""
    for b in range(len(x) // 32):
        xb = x[32 * b:32 * b + 32]
        _, mx = signed_absmax(xb)
        d = F(mx / F(-8.0))
        idv = F(F(1.0) / d) if d != 0 else F(0)
        q = []
        for v in xb:
            level = int(F(F(v * idv) + F(8.5)))  # C truncates toward zero
            q.append(min(level, 15))
        out += f16_bytes(d) + bytes(q[j] | (q[j + 16] << 4) for j in range(16))
    return out


def quantize_q8_0(x):
    out = b""
    for b in range(len(x) // 32):
        xb = x[32 * b:32 * b + 32]
        amax, _ = signed_absmax(xb)
        d = F(amax / F(127.0))
        idv = F(F(1.0) / d) if d != 0 else F(0)
        q = []
        for v in xb:
            p = float(F(v * idv))  # roundf: half away from zero (exact in double)
            q.append(int(math.copysign(math.floor(abs(p) + 0.5), p)))
        out += f16_bytes(d) + struct.pack("<32b", *q)
    return out


# ---------------------------------------------------------------- Q4_K

def make_qkx2_quants(x, w, nmax, rmin, rdelta, nstep):
    n = len(x)
    mn, mx = x[0], x[0]
    sum_w = w[0]
    sum_x = F(sum_w * x[0])
    for i in range(1, n):
        if x[i] < mn:
            mn = x[i]
        if x[i] > mx:
            mx = x[i]
        sum_w = F(sum_w + w[i])
        sum_x = F(sum_x + F(w[i] * x[i]))
    if mn > 0:
        mn = F(0)
    if mx <= mn:
        return F(0), F(-mn), [0] * n
    iscale = F(F(nmax) / F(mx - mn))
    scale = F(F(1.0) / iscale)
    L = [clamp(nearest_int(F(iscale * F(x[i] - mn))), 0, nmax) for i in range(n)]

    def error(levels, sc, m):
        e = F(0)
        for i in range(n):
            diff = F(F(F(sc * F(levels[i])) + m) - x[i])
            e = F(e + F(w[i] * F(diff * diff)))
        return e

    best = error(L, scale, mn)
    for step in range(nstep + 1):
        iscale = F(F(F(rmin + F(F(rdelta) * F(step))) + F(nmax)) / F(mx - mn))
        sum_l = sum_l2 = sum_xl = F(0)
        Laux = []
        for i in range(n):
            lv = clamp(nearest_int(F(iscale * F(x[i] - mn))), 0, nmax)
            Laux.append(lv)
            wl = F(w[i] * F(lv))
            sum_l = F(sum_l + wl)
            sum_l2 = F(sum_l2 + F(wl * F(lv)))
            sum_xl = F(sum_xl + F(wl * x[i]))
        D = F(F(sum_w * sum_l2) - F(sum_l * sum_l))
        if D > 0:
            this_scale = F(F(F(sum_w * sum_xl) - F(sum_x * sum_l)) / D)
            this_min = F(F(F(sum_l2 * sum_x) - F(sum_l * sum_xl)) / D)
            if this_min > 0:
                this_min = F(0)
                this_scale = F(sum_xl / sum_l2)
            e = error(Laux, this_scale, this_min)
            if e < best:
                L, best, scale, mn = Laux, e, this_scale, this_min
    return scale, F(-mn), L


def k4_pack_scales(ls, lm):
    q = [0] * 12
    for j in range(8):
        if j < 4:
            q[j] = ls[j]
            q[j + 4] = lm[j]
        else:
            q[j + 4] = (ls[j] & 0xF) | ((lm[j] & 0xF) << 4)
            q[j - 4] |= (ls[j] >> 4) << 6
            q[j] |= (lm[j] >> 4) << 6
    return [v & 0xFF for v in q]


def k4_scale_min(q, j):
    if j < 4:
        return q[j] & 63, q[j + 4] & 63
    return (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4), (q[j + 4] >> 4) | ((q[j] >> 6) << 4)


def quantize_q4_K(x):
    out = b""
    for b in range(len(x) // QK_K):
        xb = x[QK_K * b:QK_K * (b + 1)]
        scales, mins, L = [], [], []
        for j in range(8):
            xs = xb[32 * j:32 * j + 32]
            s2 = F(0)
            for v in xs:
                s2 = F(s2 + F(v * v))
            av_x = F(np.sqrt(F(s2 / F(32))))
            w = [F(av_x + abs(v)) for v in xs]
            sc, m, lv = make_qkx2_quants(xs, w, 15, F(-1.0), F(0.1), 20)
            scales.append(sc)
            mins.append(m)
            L += lv
        max_scale = max([F(0)] + [s for s in scales if s > 0])
        max_min = max([F(0)] + [m for m in mins if m > 0])
        inv_scale = F(F(63) / max_scale) if max_scale > 0 else F(0)
        inv_min = F(F(63) / max_min) if max_min > 0 else F(0)
        ls = [min(nearest_int(F(inv_scale * s)), 63) for s in scales]
        lm = [min(nearest_int(F(inv_min * m)), 63) for m in mins]
        packed = k4_pack_scales(ls, lm)
        d = f16_value(F(max_scale / F(63)))
        dmin = f16_value(F(max_min / F(63)))
        for j in range(8):
            sc, m = k4_scale_min(packed, j)
            dj = F(d * F(sc))
            if dj == 0:
                continue
            dm = F(dmin * F(m))
            for i in range(32):
                L[32 * j + i] = clamp(nearest_int(F(F(xb[32 * j + i] + dm) / dj)), 0, 15)
        qs = []
        for j in range(0, QK_K, 64):
            qs += [L[j + i] | (L[j + i + 32] << 4) for i in range(32)]
        out += f16_bytes(d) + f16_bytes(dmin) + bytes(packed) + bytes(qs)
    return out


# ---------------------------------------------------------------- Q6_K

def make_qx_quants(x, nmax):
    """rmse_type 1 (weights x^2), no importance weights."""
    n = len(x)
    amax, mx = signed_absmax(x)
    if amax < F(1e-15):
        return F(0), [0] * n

    def fit(iscale):
        slx = sl2 = F(0)
        levels = []
        for v in x:
            lv = clamp(nearest_int(F(iscale * v)), -nmax, nmax - 1)
            levels.append(lv + nmax)
            wv = F(v * v)
            slx = F(slx + F(F(wv * v) * F(lv)))
            sl2 = F(sl2 + F(F(wv * F(lv)) * F(lv)))
        return slx, sl2, levels

    iscale = F(F(-nmax) / mx)
    sumlx, suml2, L = fit(iscale)
    scale = F(sumlx / suml2) if suml2 != 0 else F(0)
    best = F(scale * sumlx)
    for step in range(-9, 10):
        if step == 0:
            continue
        iscale = F(F(-F(F(nmax) + F(F(0.1) * F(step)))) / mx)
        sumlx, suml2, levels = fit(iscale)
        if suml2 > 0 and F(sumlx * sumlx) > F(best * suml2):
            L = levels
            scale = F(sumlx / suml2)
            best = F(scale * sumlx)
    return scale, L


def quantize_q6_K(x):
    out = b""
    for b in range(len(x) // QK_K):
        xb = x[QK_K * b:QK_K * (b + 1)]
        scales, L = [], []
        max_scale, max_abs = F(0), F(0)
        for ib in range(16):
            sc, lv = make_qx_quants(xb[16 * ib:16 * ib + 16], 32)
            scales.append(sc)
            L += lv
            if abs(sc) > max_abs:
                max_abs, max_scale = abs(sc), sc
        if max_abs < F(1e-15):
            out += bytes(210)
            continue
        iscale = F(F(-128.0) / max_scale)
        d = f16_value(F(F(1.0) / iscale))
        sc8 = [min(127, nearest_int(F(iscale * s))) for s in scales]
        for j in range(16):
            dj = F(d * F(sc8[j]))
            if dj == 0:
                continue
            for i in range(16):
                L[16 * j + i] = clamp(nearest_int(F(xb[16 * j + i] / dj)), -32, 31) + 32
        ql, qh = [0] * 128, [0] * 64
        for j in range(0, QK_K, 128):
            for i in range(32):
                a, b_, c, e = L[j + i], L[j + i + 32], L[j + i + 64], L[j + i + 96]
                ql[j // 2 + i] = (a & 0xF) | ((c & 0xF) << 4)
                ql[j // 2 + i + 32] = (b_ & 0xF) | ((e & 0xF) << 4)
                qh[j // 4 + i] = (a >> 4) | ((b_ >> 4) << 2) | ((c >> 4) << 4) | ((e >> 4) << 6)
        out += bytes(ql) + bytes(qh) + struct.pack("<16b", *sc8) + f16_bytes(d)
    return out


# ---------------------------------------------------------------- inputs

def inputs(n, seed):
    """Blocks of varied character: Gaussian, uniform, heavy-tailed, all-zero, constant, mixed scales."""
    g = torch.Generator().manual_seed(seed)
    parts = [torch.randn(n, generator=g),
             torch.rand(n, generator=g) * 6 - 2,
             torch.distributions.StudentT(2.0).sample((n,)) * 0.3,
             torch.zeros(n),
             torch.full((n,), -1.25),
             torch.randn(n, generator=g) * torch.logspace(-3, 2, n)]
    return torch.cat(parts).to(torch.float32)


def main():
    torch.manual_seed(7)
    here = os.path.dirname(os.path.abspath(__file__))
    tensors = {}
    for name, fn, blk in [("q4_0", quantize_q4_0, 32), ("q8_0", quantize_q8_0, 32),
                          ("q4_K", quantize_q4_K, QK_K), ("q6_K", quantize_q6_K, QK_K)]:
        n = blk * 2 if blk == 32 else blk
        x = inputs(n, seed=len(tensors) + 1)
        xs = [F(v) for v in x.numpy()]
        enc = fn(xs)
        tensors[name + ".x"] = x
        tensors[name + ".bytes"] = torch.tensor(list(enc), dtype=torch.int32)
    write_gold(os.path.join(here, "quant_reference.gold"), tensors)


if __name__ == "__main__":
    main()
