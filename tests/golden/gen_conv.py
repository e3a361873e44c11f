"""Golden data for tests/test-ops-conv.c and tests/test-ops-image.c: im2col
(vs F.unfold), im2col_back (F.fold), im2col_3d, col2im_1d (F.fold), the 1-, 2-
and 3-D convolutions and transposed convolutions (torch.nn.functional),
pooling (count_include_pad averages, as ggml), interpolate, pad, reflection
padding, roll, the Stable Diffusion timestep embedding and SAM's window and
relative-position helpers.

Run: OPENBLAS_NUM_THREADS=2 /usr/bin/python3 tests/golden/gen_conv.py
Tensors are in torch order (the last torch dim is ggml's ne[0]).
"""
import math
import os

import torch
import torch.nn.functional as F

from goldfile import write_gold

torch.manual_seed(99)
HERE = os.path.dirname(os.path.abspath(__file__))
g = {}


def im2col_ref(x, kh, kw, s, p, d):
    """x (N, C, H, W) -> (N, OH, OW, C*kh*kw), column index c*kh*kw + y*kw + x (ggml's order)."""
    cols = F.unfold(x, (kh, kw), dilation=d, padding=p, stride=s)  # (N, C*kh*kw, OH*OW)
    oh = (x.shape[2] + 2 * p[0] - d[0] * (kh - 1) - 1) // s[0] + 1
    ow = (x.shape[3] + 2 * p[1] - d[1] * (kw - 1) - 1) // s[1] + 1
    return cols.transpose(1, 2).reshape(x.shape[0], oh, ow, -1)


# ---- im2col 2-D: kernel [KW=3, KH=2, IC=3, OC=2], data [W=7, H=6, IC=3, N=2]; s=(2,1) p=(1,0) d=(1,2) (ggml order)
x2 = torch.randn(2, 3, 6, 7) * 5
g["im2col.x"] = x2
g["im2col.out"] = im2col_ref(x2, 2, 3, s=(1, 2), p=(0, 1), d=(2, 1))
# ---- im2col 1-D: data [L=11, IC=2, N=2], K=3, s0=2 p0=2 d0=2 -> [IC*K, OL, N]
x1 = torch.randn(2, 2, 11)
g["im2col1d.x"] = x1
g["im2col1d.out"] = im2col_ref(x1[:, :, None, :], 1, 3, s=(1, 2), p=(0, 2), d=(1, 2))[:, 0]
# ---- im2col_back: gradient of the 2-D patches -> input gradient (fold sums overlapping patches)
gcol = torch.randn(2, 5, 4, 18)  # (N, OH, OW, C*kh*kw) for x [W=7, H=6, C=3], kernel KW=3 KH=2, s0=2 s1=1 p0=1 p1=0
g["im2col_back.g"] = gcol
g["im2col_back.out"] = F.fold(gcol.reshape(2, 20, 18).transpose(1, 2), (6, 7), (2, 3), dilation=(1, 1), padding=(0, 1), stride=(1, 2))

# ---- im2col_3d: kernel [KW=2, KH=2, KD=2, IC*OC], data [W=5, H=4, D=3, IC=2 * N=2]; s=(1,2,1) p=(1,0,1) d=(1,1,2)
x3 = torch.randn(2, 2, 3, 4, 5)
s3, p3, d3 = (1, 2, 1), (1, 0, 1), (2, 1, 1)  # torch order (D, H, W)
xp = F.pad(x3, (p3[2], p3[2], p3[1], p3[1], p3[0], p3[0]))
OD = (3 + 2 * p3[0] - d3[0] - 1) // s3[0] + 1
OH = (4 + 2 * p3[1] - d3[1] - 1) // s3[1] + 1
OW = (5 + 2 * p3[2] - d3[2] - 1) // s3[2] + 1
cols = torch.zeros(2, OD, OH, OW, 2, 2, 2, 2)  # (N, OD, OH, OW, IC, KD, KH, KW)
for kd in range(2):
    for kh in range(2):
        for kw in range(2):
            sl = xp[:, :, kd * d3[0]::s3[0], kh * d3[1]::s3[1], kw * d3[2]::s3[2]][:, :, :OD, :OH, :OW]
            cols[:, :, :, :, :, kd, kh, kw] = sl.permute(0, 2, 3, 4, 1)
g["im2col3d.x"] = x3.reshape(4, 3, 4, 5)
g["im2col3d.out"] = cols.reshape(2 * OD, OH, OW, 16)

# ---- col2im_1d: columns [K*OC = 3*2, T=5, N=2], s0=2, p0=1 -> [(T-1)*2 + 3 - 2 = 9, OC, N]
c2 = torch.randn(2, 5, 6)
g["col2im.a"] = c2
g["col2im.out"] = F.fold(c2.transpose(1, 2), (1, 9), (1, 3), padding=(0, 1), stride=(1, 2))[:, :, 0]

# ---- convolutions
x = torch.randn(2, 3, 8, 9)
w = torch.randn(4, 3, 3, 2)
g["conv2d.x"], g["conv2d.w"] = x, w
g["conv2d.out"] = F.conv2d(x, w, stride=(2, 1), padding=(0, 1), dilation=(1, 2))  # s0=1 s1=2 p0=1 p1=0 d0=2 d1=1
g["conv2d.sk_p0"] = F.conv2d(x, w, stride=(3, 2))  # stride = kernel size
g["conv2d.s1_ph"] = F.conv2d(x, w, padding=(1, 1))  # stride 1, half padding
xd, wd = torch.randn(2, 3, 7, 8), torch.randn(3, 1, 3, 3)
g["conv2d_dw.x"], g["conv2d_dw.w"] = xd, wd
g["conv2d_dw.out"] = F.conv2d(xd, wd, stride=(2, 1), padding=(1, 1), dilation=(1, 2), groups=3)  # s0=1 s1=2 d0=2 d1=1
x1c, w1c = torch.randn(2, 3, 12), torch.randn(4, 3, 3)
g["conv1d.x"], g["conv1d.w"] = x1c, w1c
g["conv1d.out"] = F.conv1d(x1c, w1c, stride=2, padding=1, dilation=2)
g["conv1d.ph"] = F.conv1d(x1c, w1c, stride=2, padding=1)  # half padding
w1dw = torch.randn(3, 1, 3)
g["conv1d_dw.w"] = w1dw
g["conv1d_dw.out"] = F.conv1d(x1c, w1dw, stride=1, padding=1, groups=3)
xt, wt = torch.randn(2, 3, 7), torch.randn(3, 4, 3)  # weight (IC, OC, K)
g["convt1d.x"], g["convt1d.w"] = xt, wt
g["convt1d.out"] = F.conv_transpose1d(xt, wt, stride=2, padding=1, dilation=2)
g["convt1d.out_p0"] = F.conv_transpose1d(xt, wt, stride=3)
xt2, wt2 = torch.randn(2, 3, 5, 4), torch.randn(3, 2, 3, 2)  # weight (IC, OC, KH, KW)
g["convt2d.x"], g["convt2d.w"] = xt2, wt2
g["convt2d.out"] = F.conv_transpose2d(xt2, wt2, stride=2)
x3c, w3c = torch.randn(2, 2, 5, 6, 7), torch.randn(3, 2, 2, 3, 2)
g["conv3d.x"], g["conv3d.w"] = x3c.reshape(4, 5, 6, 7), w3c.reshape(6, 2, 3, 2)
y3 = F.conv3d(x3c, w3c, stride=(1, 2, 1), padding=(1, 0, 1), dilation=(2, 1, 1))  # (N, OC, OD, OH, OW)
g["conv3d.out"] = y3.reshape(6, *y3.shape[2:])

# ---- pooling (ggml: p pads both sides; avg divides by the window size)
xpool = torch.randn(2, 3, 7, 9) * 4
g["pool2d.x"] = xpool
g["pool2d.max"] = F.max_pool2d(xpool, (2, 3), (1, 2), (1, 1))  # k0=3 k1=2 s0=2 s1=1 p0=1 p1=1
g["pool2d.avg"] = F.avg_pool2d(xpool, (2, 3), (1, 2), (1, 1), count_include_pad=True)
xg = xpool.clone().requires_grad_(True)
dy = torch.randn_like(g["pool2d.max"])
(F.max_pool2d(xg, (2, 3), (1, 2), (1, 1)) * dy).sum().backward()
g["pool2d.dy"], g["pool2d.back_max"] = dy, xg.grad.clone()
xg.grad = None
(F.avg_pool2d(xg, (2, 3), (1, 2), (1, 1), count_include_pad=True) * dy).sum().backward()
g["pool2d.back_avg"] = xg.grad.clone()
x1p = torch.randn(3, 4, 11)
g["pool1d.x"] = x1p
g["pool1d.max"] = F.max_pool1d(x1p, 3, 2, 1)
g["pool1d.avg"] = F.avg_pool1d(x1p, 3, 2, 1, count_include_pad=True)

write_gold(os.path.join(HERE, "conv.gold"), g)
print("wrote conv.gold")

# ------------------------------------------------------------------ image ops
g = {}
xi = torch.randn(2, 3, 5, 4) * 3
g["interp.x"] = xi
g["interp.nearest_x2"] = F.interpolate(xi, scale_factor=2, mode="nearest")
g["interp.nearest_down"] = F.interpolate(xi, size=(3, 7), mode="nearest")
for ac in (False, True):
    sfx = "_ac" if ac else ""
    g["interp.bilinear" + sfx] = F.interpolate(xi, size=(7, 11), mode="bilinear", align_corners=ac)
    g["interp.bicubic" + sfx] = F.interpolate(xi, size=(9, 6), mode="bicubic", align_corners=ac)
    g["interp.bilinear_down" + sfx] = F.interpolate(xi, size=(3, 3), mode="bilinear", align_corners=ac)
g["interp.nearest_3d"] = F.interpolate(xi[:, None], size=(5, 4, 6), mode="nearest")[:, 0]  # channels 3 -> 5
xpad = torch.randn(2, 3, 4, 5)
g["pad.x"] = xpad
g["pad.ext"] = F.pad(xpad, (1, 2, 0, 3, 2, 1, 1, 0))
g["pad.end"] = F.pad(xpad, (0, 3, 0, 1, 0, 0, 0, 2))  # ggml_pad(x, 3, 1, 0, 2)
xr = torch.randn(2, 3, 7)
g["reflect.x"], g["reflect.out"] = xr, F.pad(xr, (3, 2), mode="reflect")
g["roll.out"] = torch.roll(xpad, shifts=(1, -2, 3, 7), dims=(0, 1, 2, 3))  # shift0=7 shift1=3 shift2=-2 shift3=1
ts = torch.tensor([0.0, 1.0, 17.5, 999.0, 250.0, 3.25])


def timestep_embedding(t, dim, max_period=10000):  # Stable Diffusion's ldm/modules/diffusionmodules/util.py
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(0, half, dtype=torch.float32) / half)
    args = t[:, None].float() * freqs[None]
    emb = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
    if dim % 2:
        emb = torch.cat([emb, torch.zeros_like(emb[:, :1])], dim=-1)
    return emb


g["timestep.t"], g["timestep.even"], g["timestep.odd"] = ts, timestep_embedding(ts, 10), timestep_embedding(ts, 7, 100)
# SAM windows: image [C=3, W=7, H=5] (torch (H, W, C)), w = 3
img = torch.randn(5, 7, 3)
w = 3
pimg = F.pad(img, (0, 0, 0, 2, 0, 1))  # (6, 9, 3)
win = pimg.view(2, 3, 3, 3, 3).permute(0, 2, 1, 3, 4).reshape(6, 3, 3, 3)  # (npy*npx, wy, wx, C)
g["win.img"], g["win.part"] = img, win
wins = torch.randn(6, 3, 3, 3)
g["win.wins"] = wins
g["win.unpart"] = wins.view(2, 3, 3, 3, 3).permute(0, 2, 1, 3, 4).reshape(6, 9, 3)[:5, :7]
# SAM relative positions: table [C=4, 2*5-1], q = k = 5
table = torch.randn(9, 4)
q = torch.arange(5)[:, None]
k = torch.arange(5)[None, :]
g["relpos.table"], g["relpos.out"] = table, table[(q - k + 4).reshape(-1)].reshape(5, 5, 4)
K, Qw, Qh, B = 3, 4, 2, 2
attn = torch.randn(B, Qh, Qw, K, K)
pw, ph = torch.randn(B, Qh, Qw, K), torch.randn(B, Qh, Qw, K)
g["relpos.attn"], g["relpos.pw"], g["relpos.ph"] = attn.reshape(B, Qh * Qw, K * K), pw, ph
g["relpos.added"] = (attn + pw[:, :, :, None, :] + ph[:, :, :, :, None]).reshape(B, Qh * Qw, K * K)
write_gold(os.path.join(HERE, "image.gold"), g)
print("wrote image.gold")
