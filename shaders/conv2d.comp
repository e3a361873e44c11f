#version 450
// conv_2d (direct): d[ow, oh, oc, n] = sum over ic, kh, kw of
// k[kw, kh, ic, oc] * x[ow*s0 - p0 + kw*d0, oh*s1 - p1 + kh*d1, ic, n]
// (positions outside x count as zero).  One invocation per output element;
// kernel f32 or f16 (A_TYPE), data and result f32.  Depthwise (conv_2d_dw):
// the kernel is [KW, KH, 1, C] and output channel oc reads data channel oc only.
#include "types.glsl"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer K { STORAGE_T(A_TYPE) data_k[]; };
layout(binding = 1) readonly buffer X { float data_x[]; };
layout(binding = 2) writeonly buffer D { float data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_conv2d);

void main() {
    const uint idx = linear_id(256);
    if (idx >= p.OW * p.OH * p.OC * p.N) return;
    const uint ow = idx % p.OW, r = idx / p.OW;
    const uint oh = r % p.OH, oc = (r / p.OH) % p.OC, n = r / (p.OH * p.OC);
    const int x0 = int(ow) * p.s0 - p.p0, y0 = int(oh) * p.s1 - p.p1;
    float acc = 0.0;
    for (uint ic = 0; ic < p.IC; ic++) {
        const uint kbase = p.off_k + ic * p.nk2 + oc * p.nk3, xbase = p.off_x + (p.depthwise != 0 ? oc : ic) * p.nx2 + n * p.nx3;
        for (uint kh = 0; kh < p.KH; kh++) {
            const int y = y0 + int(kh) * p.d1;
            if (y < 0 || y >= int(p.IH)) continue;
            for (uint kw = 0; kw < p.KW; kw++) {
                const int x = x0 + int(kw) * p.d0;
                if (x < 0 || x >= int(p.IW)) continue;
                acc += TO_F32(A_TYPE, data_k[kbase + kh * p.nk1 + kw * p.nk0]) * data_x[xbase + uint(y) * p.nx1 + uint(x) * p.nx0];
            }
        }
    }
    data_d[p.off_d + ow * p.nd0 + oh * p.nd1 + oc * p.nd2 + n * p.nd3] = acc;
}
