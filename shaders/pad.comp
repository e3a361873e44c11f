#version 450
// pad: d[i] = a[i - lp] inside a's extent, else 0 (lp: left padding per dim).
#include "types.glsl"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer A { STORAGE_T(A_TYPE) data_a[]; };
layout(binding = 1) writeonly buffer D { STORAGE_T(A_TYPE) data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_pad);

void main() {
    const uint idx = linear_id(256);
    if (idx >= p.ne0 * p.ne1 * p.ne2 * p.ne3) return;
    const uint r = idx / p.ne0;
    const uint i0 = idx % p.ne0, i1 = r % p.ne1, i2 = (r / p.ne1) % p.ne2, i3 = r / (p.ne1 * p.ne2);
    // unsigned wrap-around makes "i < lp" land outside too
    const uint j0 = i0 - p.lp0, j1 = i1 - p.lp1, j2 = i2 - p.lp2, j3 = i3 - p.lp3;
    const bool inside = j0 < p.ne00 && j1 < p.ne01 && j2 < p.ne02 && j3 < p.ne03;
    data_d[p.off_d + i0 * p.nb0 + i1 * p.nb1 + i2 * p.nb2 + i3 * p.nb3] =
        inside ? data_a[p.off_a + j0 * p.nb00 + j1 * p.nb01 + j2 * p.nb02 + j3 * p.nb03] : FROM_F32(A_TYPE, 0.0);
}
