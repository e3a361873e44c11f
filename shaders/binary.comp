#version 450
// Elementwise a (op) b with b broadcast (repeated) over a's shape; d has a's shape.
#include "types.glsl"
#include "op-codes.h"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer A { STORAGE_T(A_TYPE) data_a[]; };
layout(binding = 1) readonly buffer B { STORAGE_T(B_TYPE) data_b[]; };
layout(binding = 2) writeonly buffer D { STORAGE_T(D_TYPE) data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_binary);

void main() {
    const uint idx = linear_id(256);
    if (idx >= p.ne0 * p.ne1 * p.ne2 * p.ne3) return;
    const uint i0 = idx % p.ne0, r = idx / p.ne0;
    const uint i1 = r % p.ne1, i2 = (r / p.ne1) % p.ne2, i3 = r / (p.ne1 * p.ne2);
    const float a = TO_F32(A_TYPE, data_a[p.off_a + (i0 % p.ne00) * p.nb00 + (i1 % p.ne01) * p.nb01 + (i2 % p.ne02) * p.nb02 + (i3 % p.ne03) * p.nb03]);
    const float b = TO_F32(B_TYPE, data_b[p.off_b + (i0 % p.ne10) * p.nb10 + (i1 % p.ne11) * p.nb11 + (i2 % p.ne12) * p.nb12 + (i3 % p.ne13) * p.nb13]);
    float v;
    switch (p.op) {
    case VK_BIN_ADD: v = a + b; break;
    case VK_BIN_SUB: v = a - b; break;
    case VK_BIN_MUL: v = a * b; break;
    case VK_BIN_SILU_BACK: { const float sg = 1.0 / (1.0 + exp(-b)); v = a * sg * (1.0 + b * (1.0 - sg)); break; }
    default: v = a / b; break;
    }
    data_d[p.off_d + i0 * p.nb0 + i1 * p.nb1 + i2 * p.nb2 + i3 * p.nb3] = FROM_F32(D_TYPE, v);
}
