#version 450
// Gated linear units: d = f(x) * g over rows; x and g are rows of two bindings
// (the two halves of one tensor, or two tensors for the split form); EPT elements per invocation,
// WALK_STEP apart (elem-walk.glsl).
#include "types.glsl"
#include "op-codes.h"
#include "activations.glsl"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer A { STORAGE_T(A_TYPE) data_a[]; };
layout(binding = 1) readonly buffer B { STORAGE_T(A_TYPE) data_b[]; };
layout(binding = 2) writeonly buffer D { STORAGE_T(D_TYPE) data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_glu);
#include "elem-walk.glsl"

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
        float x = xs[e], g = gs[e], v;
        switch (p.op) {
        case VK_GLU_REGLU: v = max(x, 0.0) * g; break;
        case VK_GLU_GEGLU: v = gelu_tanh(x) * g; break;
        case VK_GLU_SWIGLU: v = x / (1.0 + exp(-x)) * g; break;
        case VK_GLU_SWIGLU_OAI:
            x = min(x, p.limit);
            g = clamp(g, -p.limit, p.limit);
            v = x / (1.0 + exp(-p.alpha * x)) * (g + 1.0);
            break;
        case VK_GLU_GEGLU_ERF: v = 0.5 * x * (1.0 + erf_approx(x * 0.7071067811865476)) * g; break;
        default: v = x / (1.0 + exp(-1.702 * x)) * g; break; // GEGLU_QUICK
        }
        data_d[p.off_d + c[e].x + c[e].y * p.nb1 + c[e].z * p.nb2 + c[e].w * p.nb3] = FROM_F32(D_TYPE, v);
    }
}
