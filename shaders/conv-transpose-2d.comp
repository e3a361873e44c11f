#version 450
// conv_transpose_2d (padding 0): d[ox, oy, oc, n] = sum over ic, kx, ky with
// ox = ix * s + kx, oy = iy * s + ky of x[ix, iy, ic, n] * k[kx, ky, oc, ic].
// One invocation per output element, gathering its contributions.
#include "types.glsl"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer K { STORAGE_T(A_TYPE) data_k[]; };
layout(binding = 1) readonly buffer X { float data_x[]; };
layout(binding = 2) writeonly buffer D { float data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_conv_transpose_2d);

void main() {
    const uint idx = linear_id(256);
    if (idx >= p.OW * p.OH * p.OC * p.N) return;
    const uint r = idx / p.OW;
    const uint ox = idx % p.OW, oy = r % p.OH, oc = (r / p.OH) % p.OC, n = r / (p.OH * p.OC);
    float sum = 0.0;
    for (uint ky = oy % p.s; ky < p.KH; ky += p.s) {
        if (ky > oy) break;
        const uint iy = (oy - ky) / p.s;
        if (iy >= p.IH) continue;
        for (uint kx = ox % p.s; kx < p.KW; kx += p.s) {
            if (kx > ox) break;
            const uint ix = (ox - kx) / p.s;
            if (ix >= p.IW) continue;
            for (uint ic = 0; ic < p.IC; ic++)
                sum += data_x[p.off_x + ix * p.nx0 + iy * p.nx1 + ic * p.nx2 + n * p.nx3] *
                       TO_F32(A_TYPE, data_k[p.off_k + kx * p.nk0 + ky * p.nk1 + oc * p.nk2 + ic * p.nk3]);
        }
    }
    data_d[p.off_d + ox * p.nd0 + oy * p.nd1 + oc * p.nd2 + n * p.nd3] = sum;
}
