#version 450
// Gated linear units: d = f(x) * g over rows; x and g are rows of two bindings
// (the two halves of one tensor, or two tensors for the split form); EPT elements per invocation,
// WALK_STEP apart (elem-walk.glsl).
// FUSE_Q8 (glu_q8_f32): d's rows also quantized for the integer-dot products that read them
// (q8-lanes.glsl).
#ifdef FUSE_Q8
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif
#include "types.glsl"
#include "op-codes.h"
#include "activations.glsl"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer A { STORAGE_T(A_TYPE) data_a[]; };
layout(binding = 1) readonly buffer B { STORAGE_T(A_TYPE) data_b[]; };
layout(binding = 2) writeonly buffer D { STORAGE_T(D_TYPE) data_d[]; };
#ifdef FUSE_Q8
layout(binding = 3) writeonly buffer Q { uint data_q[]; };
layout(binding = 3) writeonly buffer S { vec2 data_s[]; };
#endif

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_glu);
#include "elem-walk.glsl"
#ifdef FUSE_Q8
#include "q8-lanes.glsl"
#endif

float glu_value(float x, float g) {
    switch (p.op) {
    case VK_GLU_REGLU: return max(x, 0.0) * g;
    case VK_GLU_GEGLU: return gelu_tanh(x) * g;
    case VK_GLU_SWIGLU: return x / (1.0 + exp(-x)) * g;
    case VK_GLU_SWIGLU_OAI:
        x = min(x, p.limit);
        g = clamp(g, -p.limit, p.limit);
        return x / (1.0 + exp(-p.alpha * x)) * (g + 1.0);
    case VK_GLU_GEGLU_ERF: return 0.5 * x * (1.0 + erf_approx(x * 0.7071067811865476)) * g;
    default: return x / (1.0 + exp(-1.702 * x)) * g; // GEGLU_QUICK
    }
}

#ifndef FUSE_Q8
void main() {
    const uint n = p.ne0 * p.ne1 * p.ne2 * p.ne3, first = walk_first();
    if (first >= n) return;
    // Every load before any store (walk_gather): a store may alias a later load, so interleaved they
    // would wait for each other, a memory round trip per element.
    uvec4 c[EPT];
    walk_gather(c, first, p.ne0, p.ne1, p.ne2);
    float xs[EPT], gs[EPT];
    [[unroll]] for (uint e = 0; e < EPT; e++) {
        if (first + e * WALK_STEP >= n) break;
        xs[e] = TO_F32(A_TYPE, data_a[p.off_a + p.shift_a + c[e].x + c[e].y * p.nb01 + c[e].z * p.nb02 + c[e].w * p.nb03]);
        gs[e] = TO_F32(A_TYPE, data_b[p.off_b + p.shift_b + c[e].x + c[e].y * p.nb11 + c[e].z * p.nb12 + c[e].w * p.nb13]);
    }
    [[unroll]] for (uint e = 0; e < EPT; e++) {
        if (first + e * WALK_STEP >= n) break;
        data_d[p.off_d + c[e].x + c[e].y * p.nb1 + c[e].z * p.nb2 + c[e].w * p.nb3] = FROM_F32(D_TYPE, glu_value(xs[e], gs[e]));
    }
}
#else
// 4 consecutive values of a row per invocation (rows of a multiple of 32 values), quantized too
void main() {
    const uint per_row = p.ne0 / 4;
    const uint r = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * WALK_STEP + gl_LocalInvocationID.x;
    if (r >= per_row * p.ne1 * p.ne2 * p.ne3) return; // a multiple of 8: whole blocks leave together
    const uint c = r / per_row, w = r % per_row;
    const uint i1 = c % p.ne1, i2 = (c / p.ne1) % p.ne2, i3 = c / (p.ne1 * p.ne2);
    const uint x0 = p.off_a + p.shift_a + i1 * p.nb01 + i2 * p.nb02 + i3 * p.nb03 + 4 * w;
    const uint g0 = p.off_b + p.shift_b + i1 * p.nb11 + i2 * p.nb12 + i3 * p.nb13 + 4 * w;
    const uint d0 = p.off_d + i1 * p.nb1 + i2 * p.nb2 + i3 * p.nb3 + 4 * w;
    vec4 xs, gs, v;
    [[unroll]] for (uint e = 0; e < 4; e++) xs[e] = data_a[x0 + e], gs[e] = data_b[g0 + e];
    [[unroll]] for (uint e = 0; e < 4; e++) v[e] = glu_value(xs[e], gs[e]);
    [[unroll]] for (uint e = 0; e < 4; e++) data_d[d0 + e] = v[e];
    q8_store4(v, p.off_q + c * per_row, p.off_s + c * (p.ne0 / 32), w);
}
#endif
