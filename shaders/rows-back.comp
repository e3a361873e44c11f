#version 450
// Backward row kernels with two inputs (dy and the forward input or output),
// one workgroup per row:
//   mode 0 soft_max_back: d = scale * y * (dy - <y, dy>)
//   mode 1 rms_norm_back: d = r * dy - r^3 * x * <x, dy> / n, r = 1 / sqrt(mean(x^2) + eps)
#include "types.glsl"

layout(constant_id = 0) const uint BLOCK = 256;
layout(local_size_x_id = 0) in;
layout(binding = 0) readonly buffer DY { float dy[]; };
layout(binding = 1) readonly buffer X { float x[]; };
layout(binding = 2) writeonly buffer D { float d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_rows_back);

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
    const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (row >= p.ne1 * p.ne2 * p.ne3) return;
    const uint i1 = row % p.ne1, i2 = (row / p.ne1) % p.ne2, i3 = row / (p.ne1 * p.ne2), t = gl_LocalInvocationID.x;
    const uint g0 = p.off_dy + i1 * p.nb1 + i2 * p.nb2 + i3 * p.nb3;
    const uint x0 = p.off_x + i1 * p.nx1 + i2 * p.nx2 + i3 * p.nx3;
    const uint d0 = p.off_d + i1 * p.nd1 + i2 * p.nd2 + i3 * p.nd3;
    float dot = 0.0, sq = 0.0;
    for (uint i = t; i < p.ne0; i += BLOCK) {
        const float xv = x[x0 + i * p.nx0];
        dot += xv * dy[g0 + i * p.nb0];
        sq += xv * xv;
    }
    dot = block_sum(dot);
    if (p.mode == 0) {
        for (uint i = t; i < p.ne0; i += BLOCK)
            d[d0 + i * p.nd0] = p.param * x[x0 + i * p.nx0] * (dy[g0 + i * p.nb0] - dot);
        return;
    }
    sq = block_sum(sq);
    const float r = inversesqrt(sq / float(p.ne0) + p.param), coef = r * r * r * dot / float(p.ne0);
    for (uint i = t; i < p.ne0; i += BLOCK) d[d0 + i * p.nd0] = r * dy[g0 + i * p.nb0] - coef * x[x0 + i * p.nx0];
}
