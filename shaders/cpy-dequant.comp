#version 450
// A block format (QTYPE, quant.glsl) into F32 (D_TYPE 0): d's values in
// row-major order are a's, whatever the two shapes (ggml's cpy), one value per
// invocation.
#include "types.glsl"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer A { uint16_t data_a[]; };    // blocks, rows on 16-bit words
layout(binding = 1) writeonly buffer D { STORAGE_T(D_TYPE) data_d[]; };
float data_b[1]; // quant.glsl's block dot is unused here
#include "quant.glsl"

// a: shape and row strides in 16-bit words; d: shape and strides in its elements
layout(push_constant) uniform PC {
    uint ne00, ne01, ne02, ne03, nb01, nb02, nb03;
    uint ne0, ne1, ne2, ne3, nb0, nb1, nb2, nb3;
    uint off_a, off_d;
} p;

void main() {
    const uint f = linear_id(256);
    if (f >= p.ne0 * p.ne1 * p.ne2 * p.ne3) return;
    const uint a0 = f % p.ne00, ra = f / p.ne00;
    const uint a1 = ra % p.ne01, a2 = (ra / p.ne01) % p.ne02, a3 = ra / (p.ne01 * p.ne02);
    const float v = dq(p.off_a + a1 * p.nb01 + a2 * p.nb02 + a3 * p.nb03 + (a0 / QK) * QWORDS, a0 % QK);
    const uint d0 = f % p.ne0, rd = f / p.ne0;
    const uint d1 = rd % p.ne1, d2 = (rd / p.ne1) % p.ne2, d3 = rd / (p.ne1 * p.ne2);
    data_d[p.off_d + d0 * p.nb0 + d1 * p.nb1 + d2 * p.nb2 + d3 * p.nb3] = FROM_F32(D_TYPE, v);
}
