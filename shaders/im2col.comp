#version 450
// im2col: d[(c * KH + kh) * KW + kw, ow, oh, n] = b[ow*s0 + kw*d0 - p0, oh*s1 + kh*d1 - p1, c, n],
// zero outside b (a 1-D im2col is the 2-D one with KH = IH = OH = 1).
#include "types.glsl"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer B { STORAGE_T(A_TYPE) data_b[]; };
layout(binding = 1) writeonly buffer D { STORAGE_T(D_TYPE) data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_im2col);

void main() {
    const uint idx = linear_id(256), K = p.IC * p.KH * p.KW;
    if (idx >= K * p.OW * p.OH * p.N) return;
    const uint k = idx % K, r = idx / K;
    const uint ow = r % p.OW, oh = (r / p.OW) % p.OH, n = r / (p.OW * p.OH);
    const uint kw = k % p.KW, kh = (k / p.KW) % p.KH, c = k / (p.KW * p.KH);
    const int iw = int(ow * p.s0 + kw * p.d0) - p.p0, ih = int(oh * p.s1 + kh * p.d1) - p.p1;
    float v = 0.0;
    if (iw >= 0 && iw < int(p.IW) && ih >= 0 && ih < int(p.IH))
        v = TO_F32(A_TYPE, data_b[p.off_b + uint(iw) * p.nbw + uint(ih) * p.nbh + c * p.nbc + n * p.nbn]);
    data_d[p.off_d + k + ow * p.ndw + oh * p.ndh + n * p.ndn] = FROM_F32(D_TYPE, v);
}
