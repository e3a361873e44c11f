#version 450
// f32 activations to Q8_0 blocks in scratch memory for the integer-dot kernels (q8-lanes.glsl):
// column c = (b3 * ne12 + b2) * N + j of b becomes words [8 * (c * blocks + k) .. + 8) of quants
// and the pair (d, sum of the quants) at c * blocks + k of the scale view, both in one scratch
// binding.  A lane quantizes 4 values.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "types.glsl"

layout(local_size_x = 128) in;

layout(binding = 0) readonly buffer B { float data_b[]; };
layout(binding = 0) readonly buffer B4 { vec4 data_b4[]; };
layout(binding = 1) writeonly buffer Q { uint data_q[]; };
layout(binding = 1) writeonly buffer S { vec2 data_s[]; };

#include "push-constants.h"
VK_PUSH_BLOCK(vk_pc_quantize_q8);

vec4 load_b4(uint at) {
    if (p.bvec == 1) return data_b4[at / 4];
    return vec4(data_b[at], data_b[at + 1], data_b[at + 2], data_b[at + 3]);
}

#include "q8-lanes.glsl"

void main() {
    const uint per_col = p.K / 4;
    const uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 128 + gl_LocalInvocationID.x;
    if (i >= p.cols * per_col) return; // the bound is a multiple of 8: whole blocks leave together
    const uint c = i / per_col, r = i % per_col, j = c % p.N, b23 = c / p.N;
    const uint at = p.off_b + (b23 / p.ne12) * p.nb13 + (b23 % p.ne12) * p.nb12 + j * p.nb11 + 4 * r;
    q8_store4(load_b4(at), p.off_q + c * per_col, p.off_s + c * (p.K / 32), r);
}
