#version 450
// set_rows: d[i0, idx[i1, i2 % ni1, i3 % ni2], i2, i3] = b[i0, i1, i2, i3] (d is a view of a).
// Indices are i32, or i64 (I64 define); one outside d's rows is reported (index-check.glsl)
// and its row of b not stored.
#include "types.glsl"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer B { STORAGE_T(A_TYPE) data_b[]; };
layout(binding = 1) readonly buffer I { int data_i[]; };
layout(binding = 2) writeonly buffer D { STORAGE_T(D_TYPE) data_d[]; };
#define INDEX_CHECK_BINDING 3
#include "index-check.glsl"

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_setrows);

void main() {
    const uint idx = linear_id(256);
    if (idx >= p.ne10 * p.ne11 * p.ne12 * p.ne13) return;
    const uint r = idx / p.ne10;
    const uint i0 = idx % p.ne10, i1 = r % p.ne11, i2 = (r / p.ne11) % p.ne12, i3 = r / (p.ne11 * p.ne12);
    const uint at = p.off_i + i1 * p.nbi0 + (i2 % p.nei1) * p.nbi1 + (i3 % p.nei2) * p.nbi2;
    const uint pos = i1 + p.ne11 * ((i2 % p.nei1) + p.nei1 * (i3 % p.nei2)); // the index's position
#ifdef I64
    if (!index64_in_range(pos, uint(data_i[2 * at]), uint(data_i[2 * at + 1]), p.rows_d)) return;
    const uint row = uint(data_i[2 * at]);
#else
    if (!index_in_range(pos, data_i[at], p.rows_d)) return;
    const uint row = uint(data_i[at]);
#endif
    const float v = TO_F32(A_TYPE, data_b[p.off_b + i0 * p.nb10 + i1 * p.nb11 + i2 * p.nb12 + i3 * p.nb13]);
    data_d[p.off_d + i0 * p.nb0 + row * p.nb1 + i2 * p.nb2 + i3 * p.nb3] = FROM_F32(D_TYPE, v);
}
