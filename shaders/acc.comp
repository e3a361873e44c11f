#version 450
// acc / set: b added to (or written over) a strided view of d, d already
// holding a's values.  The view: element offset off_view, element strides 1,
// v1, v2, v3 (its cells never overlap: checked on the C side).  f32, or i32
// (A_TYPE 3) for set only, values moved as they are.
#include "types.glsl"
#ifndef A_TYPE
#define A_TYPE 0
#endif

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer B { STORAGE_T(A_TYPE) data_b[]; };
layout(binding = 1) buffer D { STORAGE_T(A_TYPE) data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_acc);

void main() {
    const uint idx = linear_id(256);
    if (idx >= p.ne0 * p.ne1 * p.ne2 * p.ne3) return;
    const uint i0 = idx % p.ne0, r = idx / p.ne0;
    const uint i1 = r % p.ne1, i2 = (r / p.ne1) % p.ne2, i3 = r / (p.ne1 * p.ne2);
    const STORAGE_T(A_TYPE) v = data_b[p.off_b + i0 * p.nb0 + i1 * p.nb1 + i2 * p.nb2 + i3 * p.nb3];
    const uint at = p.off_d + p.off_view + i0 + i1 * p.v1 + i2 * p.v2 + i3 * p.v3;
#if A_TYPE == 0
    data_d[at] = p.assign != 0 ? v : data_d[at] + v;
#else
    data_d[at] = v;
#endif
}
