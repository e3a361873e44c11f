#version 450
// add_id: d[i0, i1, i2] = a[i0, i1, i2] + b[i0, ids[i1, i2]] (f32; the bias row of
// the expert each token's slot i1 uses).  An id outside b adds nothing and is reported
// (index-check.glsl).
#include "types.glsl"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer A { float data_a[]; };
layout(binding = 1) readonly buffer B { float data_b[]; };
layout(binding = 2) readonly buffer I { int data_i[]; };
layout(binding = 3) writeonly buffer D { float data_d[]; };
#define INDEX_CHECK_BINDING 4
#include "index-check.glsl"

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_add_id);

void main() {
    const uint idx = linear_id(256);
    if (idx >= p.ne0 * p.ne1 * p.ne2) return;
    const uint i0 = idx % p.ne0, r = idx / p.ne0;
    const uint i1 = r % p.ne1, i2 = r / p.ne1;
    const int id = data_i[p.off_i + i1 * p.ni0 + i2 * p.ni1];
    float v = data_a[p.off_a + i0 * p.na0 + i1 * p.na1 + i2 * p.na2];
    if (index_in_range(r, id, p.n_rows_b)) v += data_b[p.off_b + i0 * p.nb0 + uint(id) * p.nb1]; // r: the id's position
    data_d[p.off_d + i0 * p.nd0 + i1 * p.nd1 + i2 * p.nd2] = v;
}
