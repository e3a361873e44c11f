#version 450
// A block format (QTYPE, quant.glsl) into F32 (D_TYPE 0): d's values in
// row-major order are a's, whatever the two shapes (ggml's cpy), one value per
// invocation.  Into F16 (D_TYPE 1, the weights of the cooperative-matrix products):
// d contiguous, 8 values (one 16-byte word, within one block) per invocation, so that
// the block's header is decoded once for them and the stores are whole words.
#include "types.glsl"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer A { QUNIT_T data_a[]; };    // blocks, rows on 16-bit words (bytes: MXFP4)
#if D_TYPE == 1
layout(binding = 1) writeonly buffer D { uvec4 data_d[]; };
#else
layout(binding = 1) writeonly buffer D { STORAGE_T(D_TYPE) data_d[]; };
#endif
float data_b[1]; // quant.glsl's block dot is unused here
#include "quant.glsl"

// a: shape and row strides in 16-bit words; d: shape and strides in its elements
#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_cpy_dequant);

#if D_TYPE == 1
void main() {
    const uint c = linear_id(256), row_words = p.ne00 / 8;
    if (c >= row_words * p.ne01 * p.ne02 * p.ne03) return;
    const uint ra = c / row_words, e0 = (c % row_words) * 8;
    const uint a1 = ra % p.ne01, a2 = (ra / p.ne01) % p.ne02, a3 = ra / (p.ne01 * p.ne02);
    const uint w = p.off_a + a1 * p.nb01 + a2 * p.nb02 + a3 * p.nb03 + (e0 / QK) * QWORDS, j0 = e0 % QK;
    float v[8];
    dq8(w, j0, v);
    uvec4 h;
    [[unroll]] for (uint i = 0; i < 4; i++) h[i] = packHalf2x16(vec2(v[2 * i], v[2 * i + 1]));
    data_d[p.off_d / 8 + c] = h;
}
#else
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
#endif
