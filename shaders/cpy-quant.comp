#version 450
// F32 (or f16, bf16: A_TYPE) into a 32-value block format, one block per invocation
// (quantize.glsl); a 16-bit source is widened to f32 first, as the CPU does.
// Without SET_ROWS (cpy): d's values in row-major order are a's, whatever a's shape:
// block ib of d covers flat elements [32 ib, 32 ib + 32), located in a by its ne.
// With SET_ROWS: block (ib, i1, i2, i3) of b goes to row idx[i1, i2 % nei1, i3 % nei2]
// of d (d is a view of the destination); indices are i32, or i64; one outside d's rows is
// reported (index-check.glsl) and its block not stored.
#include "types.glsl"
#ifndef A_TYPE
#define A_TYPE 0
#endif

layout(local_size_x = 64) in;
layout(binding = 0) readonly buffer A { STORAGE_T(A_TYPE) data_a[]; };
#ifdef SET_ROWS
layout(binding = 1) readonly buffer I { int data_i[]; };
layout(binding = 2) writeonly buffer D { uint16_t data_d[]; };
#define INDEX_CHECK_BINDING 3
#include "index-check.glsl"
#else
layout(binding = 1) writeonly buffer D { uint16_t data_d[]; };
#endif

// a: source shape and strides in its elements; d: destination rows (ne0 in blocks,
// strides in 16-bit words); idx: index tensor ne1, ne2 and strides in its elements
#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_cpy_quant);

#define QUANT_OPAQUE_ZERO p.zero
#include "quantize.glsl"

void main() {
    const uint ib = linear_id(64);
    if (ib >= p.nblk0 * p.ne1 * p.ne2 * p.ne3) return;
    const uint b0 = ib % p.nblk0, r = ib / p.nblk0;
    const uint i1 = r % p.ne1, i2 = (r / p.ne1) % p.ne2, i3 = r / (p.ne1 * p.ne2);
    float x[32];
#ifdef SET_ROWS
    // b and the destination rows share ne1..ne3 (b's), so a is addressed directly
    const uint at = p.off_i + i1 * p.nbi0 + (i2 % p.nei1) * p.nbi1 + (i3 % p.nei2) * p.nbi2;
    const uint pos = i1 + p.ne1 * ((i2 % p.nei1) + p.nei1 * (i3 % p.nei2)); // the index's position
#ifdef I64
    if (!index64_in_range(pos, uint(data_i[2 * at]), uint(data_i[2 * at + 1]), p.rows_d)) return;
    const uint row = uint(data_i[2 * at]);
#else
    if (!index_in_range(pos, data_i[at], p.rows_d)) return;
    const uint row = uint(data_i[at]);
#endif
    const uint src = p.off_a + 32 * b0 * p.nb00 + i1 * p.nb01 + i2 * p.nb02 + i3 * p.nb03;
    [[unroll]] for (uint j = 0; j < 32; j++) x[j] = TO_F32(A_TYPE, data_a[src + j * p.nb00]);
    const uint w = p.off_d + b0 * QWORDS + row * p.nb1 + i2 * p.nb2 + i3 * p.nb3;
#else
    const uint flat0 = 32 * b0 + 32 * p.nblk0 * (i1 + p.ne1 * (i2 + p.ne2 * i3));
    for (uint j = 0; j < 32; j++) {
        const uint f = flat0 + j;
        const uint a0 = f % p.ne00, ra = f / p.ne00;
        const uint a1 = ra % p.ne01, a2 = (ra / p.ne01) % p.ne02, a3 = ra / (p.ne01 * p.ne02);
        x[j] = TO_F32(A_TYPE, data_a[p.off_a + a0 * p.nb00 + a1 * p.nb01 + a2 * p.nb02 + a3 * p.nb03]);
    }
    const uint w = p.off_d + b0 * QWORDS + i1 * p.nb1 + i2 * p.nb2 + i3 * p.nb3;
#endif
    quantize_block(w, x);
}
