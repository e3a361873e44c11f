#version 450
// count_equal: the number of equal elements of two I32 tensors of one shape,
// written as an I64 (two 32-bit words, low first).  One workgroup.
#include "types.glsl"

layout(constant_id = 0) const uint BLOCK = 256;
layout(local_size_x_id = 0) in;
layout(binding = 0) readonly buffer A { int data_a[]; };
layout(binding = 1) readonly buffer B { int data_b[]; };
layout(binding = 2) writeonly buffer D { uint data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_count_equal);

shared uint sh[BLOCK];

void main() {
    const uint t = gl_LocalInvocationID.x, n = p.ne0 * p.ne1 * p.ne2 * p.ne3;
    uint count = 0;
    for (uint idx = t; idx < n; idx += BLOCK) {
        const uint i0 = idx % p.ne0, r = idx / p.ne0;
        const uint i1 = r % p.ne1, i2 = (r / p.ne1) % p.ne2, i3 = r / (p.ne1 * p.ne2);
        const int a = data_a[p.off_a + i0 * p.na0 + i1 * p.na1 + i2 * p.na2 + i3 * p.na3];
        const int b = data_b[p.off_b + i0 * p.nb0 + i1 * p.nb1 + i2 * p.nb2 + i3 * p.nb3];
        count += a == b ? 1u : 0u;
    }
    sh[t] = count;
    barrier();
    for (uint s = BLOCK / 2; s > 0; s >>= 1) {
        if (t < s) sh[t] += sh[t + s];
        barrier();
    }
    if (t == 0) {
        data_d[p.off_d] = sh[0];
        data_d[p.off_d + 1] = 0u;
    }
}
