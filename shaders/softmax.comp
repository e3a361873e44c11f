#version 450
// soft_max_ext: d = softmax(a * scale + slope * mask) along rows, one
// workgroup per row; slope is the ALiBi slope of the row's head (i2) when
// max_bias > 0, else 1.  Without a mask, binding 1 is a and is not read.
// With attention sinks, the head's sink logit s[i2] joins the normalisation
// (it takes probability mass but has no output column).
#include "types.glsl"

layout(constant_id = 0) const uint BLOCK = 256;
layout(local_size_x_id = 0) in;
layout(binding = 0) readonly buffer A { STORAGE_T(A_TYPE) data_a[]; };
layout(binding = 1) readonly buffer M { STORAGE_T(B_TYPE) data_m[]; };
layout(binding = 2) writeonly buffer D { STORAGE_T(D_TYPE) data_d[]; };
layout(binding = 3) readonly buffer S { float data_s[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_softmax);

shared float sh[BLOCK];

float block_reduce(float v, bool is_max) {
    const uint t = gl_LocalInvocationID.x;
    barrier();
    sh[t] = v;
    barrier();
    for (uint s = BLOCK / 2; s > 0; s >>= 1) {
        if (t < s) sh[t] = is_max ? max(sh[t], sh[t + s]) : sh[t] + sh[t + s];
        barrier();
    }
    return sh[0];
}

void main() {
    const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (row >= p.ne01 * p.ne02 * p.ne03) return;
    const uint i1 = row % p.ne01, i2 = (row / p.ne01) % p.ne02, i3 = row / (p.ne01 * p.ne02);
    const uint a0 = p.off_a + i1 * p.nb01 + i2 * p.nb02 + i3 * p.nb03;
    const uint m0i = p.off_m + (i1 % p.ne11) * p.nb11 + (i2 % p.ne12) * p.nb12 + (i3 % p.ne13) * p.nb13;
    const uint d0 = p.off_d + i1 * p.nb1 + i2 * p.nb2 + i3 * p.nb3;
    const uint t = gl_LocalInvocationID.x;

    float slope = 1.0;
    if (p.max_bias > 0.0)
        slope = i2 < p.n_head_log2 ? pow(p.m0, float(i2 + 1)) : pow(p.m1, float(2 * (i2 - p.n_head_log2) + 1));

    float mx = -1.0 / 0.0;
    for (uint i = t; i < p.ne00; i += BLOCK) {
        float v = TO_F32(A_TYPE, data_a[a0 + i * p.nb00]) * p.scale;
        if (p.has_mask != 0) v += slope * TO_F32(B_TYPE, data_m[m0i + i]);
        mx = max(mx, v);
    }
    mx = block_reduce(mx, true);
    const float sink = p.has_sinks != 0 ? data_s[p.off_s + i2] : -1.0 / 0.0;
    mx = max(mx, sink);
    float sum = 0.0;
    for (uint i = t; i < p.ne00; i += BLOCK) {
        float v = TO_F32(A_TYPE, data_a[a0 + i * p.nb00]) * p.scale;
        if (p.has_mask != 0) v += slope * TO_F32(B_TYPE, data_m[m0i + i]);
        sum += mx == -1.0 / 0.0 ? 0.0 : exp(v - mx);
    }
    sum = block_reduce(sum, false);
    if (p.has_sinks != 0 && mx != -1.0 / 0.0) sum += exp(sink - mx);
    const float inv = sum > 0.0 ? 1.0 / sum : 0.0;
    for (uint i = t; i < p.ne00; i += BLOCK) {
        float v = TO_F32(A_TYPE, data_a[a0 + i * p.nb00]) * p.scale;
        if (p.has_mask != 0) v += slope * TO_F32(B_TYPE, data_m[m0i + i]);
        data_d[d0 + i] = FROM_F32(D_TYPE, mx == -1.0 / 0.0 ? 0.0 : exp(v - mx) * inv);
    }
}
