#version 450
// Gated linear units: d = f(x) * g over rows; x and g are rows of two bindings
// (the two halves of one tensor, or two tensors for the split form).
#include "types.glsl"
#include "op-codes.h"
#include "activations.glsl"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer A { STORAGE_T(A_TYPE) data_a[]; };
layout(binding = 1) readonly buffer B { STORAGE_T(A_TYPE) data_b[]; };
layout(binding = 2) writeonly buffer D { STORAGE_T(D_TYPE) data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_glu);

void main() {
    const uint idx = linear_id(256);
    if (idx >= p.ne0 * p.ne1 * p.ne2 * p.ne3) return;
    const uint r = idx / p.ne0;
    const uint i0 = idx % p.ne0, i1 = r % p.ne1, i2 = (r / p.ne1) % p.ne2, i3 = r / (p.ne1 * p.ne2);
    float x = TO_F32(A_TYPE, data_a[p.off_a + p.shift_a + i0 + i1 * p.nb01 + i2 * p.nb02 + i3 * p.nb03]);
    float g = TO_F32(A_TYPE, data_b[p.off_b + p.shift_b + i0 + i1 * p.nb11 + i2 * p.nb12 + i3 * p.nb13]);
    float v;
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
    data_d[p.off_d + i0 + i1 * p.nb1 + i2 * p.nb2 + i3 * p.nb3] = FROM_F32(D_TYPE, v);
}
