#version 450
// f32 activations to 8-bit integers per block of 32 values, as ggml's CPU backend
// quantizes them to Q8_0 for its quantized dot products (d = max |x| / 127,
// q = round(x / d) half away from zero, d rounded to f16), for the integer-dot
// kernels (mvq-dot.comp).  Column c = (b3 * ne12 + b2) * N + j of b becomes
// words [8 * (c * blocks + k) .. + 8) of quants and the pair (d, sum of the
// quants) at c * blocks + k of the scale view, both in one scratch binding.
// A lane quantizes 4 values; the 8 lanes of a block are neighbouring
// invocations of one subgroup (subgroups of 8 lanes or more).
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

float max8(float v) {
    v = max(v, subgroupShuffleXor(v, 1));
    v = max(v, subgroupShuffleXor(v, 2));
    return max(v, subgroupShuffleXor(v, 4));
}
int sum8(int v) {
    v += subgroupShuffleXor(v, 1);
    v += subgroupShuffleXor(v, 2);
    return v + subgroupShuffleXor(v, 4);
}

void main() {
    const uint per_col = p.K / 4;
    const uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 128 + gl_LocalInvocationID.x;
    if (i >= p.cols * per_col) return; // the bound is a multiple of 8: whole blocks leave together
    const uint c = i / per_col, r = i % per_col, j = c % p.N, b23 = c / p.N;
    const uint at = p.off_b + (b23 / p.ne12) * p.nb13 + (b23 % p.ne12) * p.nb12 + j * p.nb11 + 4 * r;
    const vec4 x = load_b4(at);
    const float d = max8(max(max(abs(x.x), abs(x.y)), max(abs(x.z), abs(x.w)))) / 127.0, id = d != 0.0 ? 1.0 / d : 0.0;
    const ivec4 q = ivec4(trunc(x * id + sign(x) * 0.5));
    const int sum = sum8(q.x + q.y + q.z + q.w);
    data_q[p.off_q + c * per_col + r] = uint(q.x & 0xff) | uint(q.y & 0xff) << 8 | uint(q.z & 0xff) << 16 | uint(q.w) << 24;
    if (r % 8 == 0) data_s[p.off_s + c * (p.K / 32) + r / 8] = vec2(unpackHalf2x16(packHalf2x16(vec2(d, 0.0))).x, float(sum));
}
