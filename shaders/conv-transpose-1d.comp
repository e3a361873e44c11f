#version 450
// conv_transpose_1d: d[o, oc, n] = sum over k, ic of k[k, oc, ic] * x[l, ic, n]
// where o + p0 = l * s0 + k * d0 (each output gathers the taps that reach it).
// Kernel f32 or f16 (A_TYPE), data and result f32.
#include "types.glsl"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer K { STORAGE_T(A_TYPE) data_k[]; };
layout(binding = 1) readonly buffer X { float data_x[]; };
layout(binding = 2) writeonly buffer D { float data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_conv_transpose_1d);

void main() {
    const uint idx = linear_id(256);
    if (idx >= p.OL * p.OC * p.N) return;
    const uint o = idx % p.OL, oc = (idx / p.OL) % p.OC, n = idx / (p.OL * p.OC);
    float sum = 0.0;
    for (uint k = 0; k < p.K; k++) {
        const int num = int(o) + p.p0 - int(k) * p.d0;
        if (num < 0 || num % p.s0 != 0 || num / p.s0 >= int(p.L)) continue;
        const uint l = uint(num / p.s0);
        for (uint ic = 0; ic < p.IC; ic++)
            sum += TO_F32(A_TYPE, data_k[p.off_k + k * p.nk0 + oc * p.nk1 + ic * p.nk2]) * data_x[p.off_x + l * p.nx0 + ic * p.nx1 + n * p.nx2];
    }
    data_d[p.off_d + o * p.nd0 + oc * p.nd1 + n * p.nd2] = sum;
}
