#version 450
// get_rows: d[i0, i10, i11, i12] = a[i0, idx[i10, i11, i12], i11, i12]; a may be
// quantized (QTYPE, see quant.glsl).  MOVE: d has a's type (i32) and takes its
// values as they are, not through f32.  An index outside a's rows is reported
// (index-check.glsl) and its row of d written as zeros.
#include "types.glsl"

layout(local_size_x = 256) in;
#ifdef QTYPE
layout(binding = 0) readonly buffer A { QUNIT_T data_a[]; };   // quant blocks, strides in 16-bit words (bytes: MXFP4)
#else
layout(binding = 0) readonly buffer A { STORAGE_T(A_TYPE) data_a[]; };
#endif
layout(binding = 1) readonly buffer I { int data_i[]; };
layout(binding = 2) writeonly buffer D { STORAGE_T(D_TYPE) data_d[]; };
#define INDEX_CHECK_BINDING 3
#include "index-check.glsl"
#ifdef QTYPE
float data_b[1]; // quant.glsl's block dot is unused here
#include "quant.glsl"
#endif

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_getrows);

void main() {
    const uint idx = linear_id(256);
    if (idx >= p.ne0 * p.ne1 * p.ne2 * p.ne3) return;
    const uint r = idx / p.ne0;
    const uint i0 = idx % p.ne0, i1 = r % p.ne1, i2 = (r / p.ne1) % p.ne2, i3 = r / (p.ne1 * p.ne2);
    const int v = data_i[p.off_i + i1 * p.nbi0 + i2 * p.nbi1 + i3 * p.nbi2];
    const uint d_at = p.off_d + i0 * p.nb0 + i1 * p.nb1 + i2 * p.nb2 + i3 * p.nb3;
    if (!index_in_range(r, v, p.rows_a)) { // r: the index's position
        data_d[d_at] = FROM_F32(D_TYPE, 0.0);
        return;
    }
    const uint row = uint(v);
#ifdef QTYPE
    data_d[d_at] = FROM_F32(D_TYPE, dq(p.off_a + row * p.nb01 + i2 * p.nb02 + i3 * p.nb03 + (i0 / QK) * QWORDS, i0 % QK));
#elif defined(MOVE)
    data_d[d_at] = data_a[p.off_a + i0 * p.nb00 + row * p.nb01 + i2 * p.nb02 + i3 * p.nb03];
#else
    data_d[d_at] = FROM_F32(D_TYPE, TO_F32(A_TYPE, data_a[p.off_a + i0 * p.nb00 + row * p.nb01 + i2 * p.nb02 + i3 * p.nb03]));
#endif
}
