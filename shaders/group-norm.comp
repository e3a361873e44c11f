#version 450
// group_norm: channels (ne2) split into n_groups groups of ceil(ne2/n_groups);
// each group of each i3 is normalised to zero mean, unit variance (+eps).
// One workgroup per (group, i3).
#include "types.glsl"

layout(constant_id = 0) const uint BLOCK = 256;
layout(local_size_x_id = 0) in;
layout(binding = 0) readonly buffer A { STORAGE_T(A_TYPE) data_a[]; };
layout(binding = 1) writeonly buffer D { STORAGE_T(D_TYPE) data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_group_norm);

shared float sh[BLOCK];

float block_sum(float v) {
    const uint t = gl_LocalInvocationID.x;
    barrier();
    sh[t] = v;
    barrier();
    for (uint s = BLOCK / 2; s > 0; s >>= 1) {
        if (t < s) sh[t] += sh[t + s];
        barrier();
    }
    return sh[0];
}

void main() {
    const uint g = gl_WorkGroupID.x, i3 = gl_WorkGroupID.y;
    const uint per_group = (p.ne02 + p.n_groups - 1) / p.n_groups;
    const uint c0 = g * per_group, c1 = min(c0 + per_group, p.ne02);
    if (c0 >= c1) return;
    const uint plane = p.ne00 * p.ne01, n = plane * (c1 - c0);
    const uint t = gl_LocalInvocationID.x;
    float acc = 0.0;
    for (uint k = t; k < n; k += BLOCK) {
        const uint i0 = k % p.ne00, i1 = (k / p.ne00) % p.ne01, i2 = c0 + k / plane;
        acc += TO_F32(A_TYPE, data_a[p.off_a + i0 * p.nb00 + i1 * p.nb01 + i2 * p.nb02 + i3 * p.nb03]);
    }
    const float mean = block_sum(acc) / float(n);
    float var = 0.0;
    for (uint k = t; k < n; k += BLOCK) {
        const uint i0 = k % p.ne00, i1 = (k / p.ne00) % p.ne01, i2 = c0 + k / plane;
        const float v = TO_F32(A_TYPE, data_a[p.off_a + i0 * p.nb00 + i1 * p.nb01 + i2 * p.nb02 + i3 * p.nb03]) - mean;
        var += v * v;
    }
    const float scale = inversesqrt(block_sum(var) / float(n) + p.eps);
    for (uint k = t; k < n; k += BLOCK) {
        const uint i0 = k % p.ne00, i1 = (k / p.ne00) % p.ne01, i2 = c0 + k / plane;
        const float v = TO_F32(A_TYPE, data_a[p.off_a + i0 * p.nb00 + i1 * p.nb01 + i2 * p.nb02 + i3 * p.nb03]) - mean;
        data_d[p.off_d + i0 * p.nb0 + i1 * p.nb1 + i2 * p.nb2 + i3 * p.nb3] = FROM_F32(D_TYPE, v * scale);
    }
}
