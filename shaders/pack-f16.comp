#version 450
// b (f32, rows starting on 16 bytes, ne0 a multiple of 4) into contiguous f16 in scratch
// memory, four values per invocation: the form the cooperative-matrix kernel reads in half
// the bytes (mm_coopmat_*_f16_f16), made once for a large product with f32 activations.
// The conversion is the kernel's own for f32 activations (packHalf2x16).
#include "types.glsl"

layout(local_size_x = 256) in;

layout(binding = 0) readonly buffer B { vec4 data_b[]; };
layout(binding = 1) writeonly buffer D { uvec2 data_d[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_pack_f16);

void main() {
    const uint i = linear_id(256);
    if (i >= p.ne0 * p.ne1 * p.ne2 * p.ne3) return;
    const uint i0 = i % p.ne0, r = i / p.ne0, i1 = r % p.ne1, i2 = (r / p.ne1) % p.ne2, i3 = r / (p.ne1 * p.ne2);
    const vec4 v = data_b[p.off_b + i3 * p.nb3 + i2 * p.nb2 + i1 * p.nb1 + i0];
    data_d[i] = uvec2(packHalf2x16(v.xy), packHalf2x16(v.zw));
}
