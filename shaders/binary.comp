#version 450
// Elementwise a (op) b with b broadcast (repeated) over a's shape; d has a's shape.  EPT elements
// per invocation, WALK_STEP apart (elem-walk.glsl).
#include "types.glsl"
#include "op-codes.h"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer A { STORAGE_T(A_TYPE) data_a[]; };
layout(binding = 1) readonly buffer B { STORAGE_T(B_TYPE) data_b[]; };
layout(binding = 2) writeonly buffer D { STORAGE_T(D_TYPE) data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_binary);
#include "elem-walk.glsl"

void main() {
    const uint n = p.ne0 * p.ne1 * p.ne2 * p.ne3, first = walk_first();
    if (first >= n) return;
    // Every load before any store (walk_gather): a store may alias a later load, so interleaved they
    // would wait for each other, a memory round trip per element.
    uvec4 c[EPT];
    walk_gather(c, first, p.ne0, p.ne1, p.ne2);
    float as[EPT], bs[EPT];
    [[unroll]] for (uint e = 0; e < EPT; e++) {
        if (first + e * WALK_STEP >= n) break;
        // a has d's shape; b repeats over it
        as[e] = TO_F32(A_TYPE, data_a[p.off_a + c[e].x * p.nb00 + c[e].y * p.nb01 + c[e].z * p.nb02 + c[e].w * p.nb03]);
        bs[e] = TO_F32(B_TYPE, data_b[p.off_b + repeat_at(c[e].x, p.ne10, p.ne0) * p.nb10 + repeat_at(c[e].y, p.ne11, p.ne1) * p.nb11 +
                                       repeat_at(c[e].z, p.ne12, p.ne2) * p.nb12 + repeat_at(c[e].w, p.ne13, p.ne3) * p.nb13]);
    }
    [[unroll]] for (uint e = 0; e < EPT; e++) {
        if (first + e * WALK_STEP >= n) break;
        const float a = as[e], b = bs[e];
        float v;
        switch (p.op) {
        case VK_BIN_ADD: v = a + b; break;
        case VK_BIN_SUB: v = a - b; break;
        case VK_BIN_MUL: v = a * b; break;
        case VK_BIN_SILU_BACK: { const float sg = 1.0 / (1.0 + exp(-b)); v = a * sg * (1.0 + b * (1.0 - sg)); break; }
        default: v = a / b; break;
        }
        data_d[p.off_d + c[e].x * p.nb0 + c[e].y * p.nb1 + c[e].z * p.nb2 + c[e].w * p.nb3] = FROM_F32(D_TYPE, v);
    }
}
