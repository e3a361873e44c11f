#version 450
// pool_1d / pool_2d: max or average over k0 x k1 windows (stride s, padding p);
// padded positions are skipped by max and count as zeros for the average,
// whose divisor is the window size (as in ggml).
#include "types.glsl"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer A { STORAGE_T(A_TYPE) data_a[]; };
layout(binding = 1) writeonly buffer D { float data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_pool);

void main() {
    const uint idx = linear_id(256);
    if (idx >= p.ne0 * p.ne1 * p.ne2 * p.ne3) return;
    const uint r = idx / p.ne0;
    const uint ox = idx % p.ne0, oy = r % p.ne1, i2 = (r / p.ne1) % p.ne2, i3 = r / (p.ne1 * p.ne2);
    const int x0 = int(ox * p.s0) - p.p0, y0 = int(oy * p.s1) - p.p1;
    float acc = p.is_avg != 0 ? 0.0 : -3.402823466e38;
    for (int y = y0; y < y0 + int(p.k1); y++) {
        if (y < 0 || y >= int(p.ne01)) continue;
        for (int x = x0; x < x0 + int(p.k0); x++) {
            if (x < 0 || x >= int(p.ne00)) continue;
            const float v = TO_F32(A_TYPE, data_a[p.off_a + uint(x) * p.nb00 + uint(y) * p.nb01 + i2 * p.nb02 + i3 * p.nb03]);
            acc = p.is_avg != 0 ? acc + v : max(acc, v);
        }
    }
    if (p.is_avg != 0) acc /= float(p.k0 * p.k1);
    data_d[p.off_d + ox * p.nb0 + oy * p.nb1 + i2 * p.nb2 + i3 * p.nb3] = acc;
}
