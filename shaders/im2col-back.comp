#version 450
// im2col_back: the gradient of im2col, gathered per input element (iw, ih,
// ic, n): the sum of the patch-matrix gradients of every kernel tap that read
// it, kh then kw ascending (the CPU's order).  A 1-D im2col is the 2-D one
// with a height of 1.
#include "types.glsl"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer G { float data_g[]; };
layout(binding = 1) writeonly buffer D { float data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_im2col_back);

// Output position whose tap k reads input position i, or -1.
int tap_out(int i, int k, int s, int pad, int dil, int n_out) {
    const int num = i + pad - k * dil;
    if (num < 0 || num % s != 0) return -1;
    return num / s < n_out ? num / s : -1;
}

void main() {
    const uint idx = linear_id(256);
    if (idx >= p.IW * p.IH * p.IC * p.N) return;
    const uint iw = idx % p.IW, r = idx / p.IW;
    const uint ih = r % p.IH, ic = (r / p.IH) % p.IC, n = r / (p.IH * p.IC);
    float sum = 0.0;
    for (uint kh = 0; kh < p.KH; kh++) {
        const int oh = tap_out(int(ih), int(kh), p.s1, p.p1, p.d1, int(p.OH));
        if (oh < 0) continue;
        for (uint kw = 0; kw < p.KW; kw++) {
            const int ow = tap_out(int(iw), int(kw), p.s0, p.p0, p.d0, int(p.OW));
            if (ow < 0) continue;
            const uint c = (ic * p.KH + kh) * p.KW + kw;
            sum += data_g[p.off_g + c * p.ng0 + uint(ow) * p.ng1 + uint(oh) * p.ng2 + n * p.ng3];
        }
    }
    data_d[p.off_d + iw * p.nd0 + ih * p.nd1 + ic * p.nd2 + n * p.nd3] = sum;
}
