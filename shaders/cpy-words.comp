#version 450
// Block-format copy between tensors of one type and row length: row r of d (in
// row-major order) is row r of a, moved as 16-bit words (every block size is even);
// strides of both sides in words.
#include "types.glsl"

layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer A { uint16_t data_a[]; };
layout(binding = 1) writeonly buffer D { uint16_t data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_cpy_words);

void main() {
    const uint idx = linear_id(256);
    if (idx >= p.ne0 * p.ne1 * p.ne2 * p.ne3) return;
    const uint r = idx / p.ne0;
    const uint i0 = idx % p.ne0, i1 = r % p.ne1, i2 = (r / p.ne1) % p.ne2, i3 = r / (p.ne1 * p.ne2);
    const uint a1 = r % p.ne01, a2 = (r / p.ne01) % p.ne02, a3 = r / (p.ne01 * p.ne02);
    data_d[p.off_d + i0 + i1 * p.nb1 + i2 * p.nb2 + i3 * p.nb3] = data_a[p.off_a + i0 + a1 * p.nb01 + a2 * p.nb02 + a3 * p.nb03];
}
