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
    uvec4 c = walk_start(first, p.ne0, p.ne1, p.ne2);
    for (uint e = 0; e < EPT && first + e * WALK_STEP < n; e++) {
        if (e > 0) c = walk_next(c, first + e * WALK_STEP, p.ne0, p.ne1, p.ne2);
        // a has d's shape; b repeats over it
        const float a = TO_F32(A_TYPE, data_a[p.off_a + c.x * p.nb00 + c.y * p.nb01 + c.z * p.nb02 + c.w * p.nb03]);
        const float b = TO_F32(B_TYPE, data_b[p.off_b + repeat_at(c.x, p.ne10, p.ne0) * p.nb10 + repeat_at(c.y, p.ne11, p.ne1) * p.nb11 +
                                               repeat_at(c.z, p.ne12, p.ne2) * p.nb12 + repeat_at(c.w, p.ne13, p.ne3) * p.nb13]);
        float v;
        switch (p.op) {
        case VK_BIN_ADD: v = a + b; break;
        case VK_BIN_SUB: v = a - b; break;
        case VK_BIN_MUL: v = a * b; break;
        case VK_BIN_SILU_BACK: { const float sg = 1.0 / (1.0 + exp(-b)); v = a * sg * (1.0 + b * (1.0 - sg)); break; }
        default: v = a / b; break;
        }
        data_d[p.off_d + c.x * p.nb0 + c.y * p.nb1 + c.z * p.nb2 + c.w * p.nb3] = FROM_F32(D_TYPE, v);
    }
}
