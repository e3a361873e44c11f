#version 450
// concat along dim: d takes a's elements first, then b's.
#include "types.glsl"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer A { STORAGE_T(A_TYPE) data_a[]; };
layout(binding = 1) readonly buffer B { STORAGE_T(A_TYPE) data_b[]; };
layout(binding = 2) writeonly buffer D { STORAGE_T(A_TYPE) data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_concat);

void main() {
    const uint idx = linear_id(256);
    if (idx >= p.ne0 * p.ne1 * p.ne2 * p.ne3) return;
    const uint r = idx / p.ne0;
    uint i[4] = uint[4](idx % p.ne0, r % p.ne1, (r / p.ne1) % p.ne2, r / (p.ne1 * p.ne2));
    const uint ea[4] = uint[4](p.ne00, p.ne01, p.ne02, p.ne03);
    const uint d_at = p.off_d + i[0] * p.nb0 + i[1] * p.nb1 + i[2] * p.nb2 + i[3] * p.nb3;
    if (i[p.dim] < ea[p.dim]) {
        data_d[d_at] = data_a[p.off_a + i[0] * p.nb00 + i[1] * p.nb01 + i[2] * p.nb02 + i[3] * p.nb03];
    } else {
        i[p.dim] -= ea[p.dim];
        data_d[d_at] = data_b[p.off_b + i[0] * p.nb10 + i[1] * p.nb11 + i[2] * p.nb12 + i[3] * p.nb13];
    }
}
