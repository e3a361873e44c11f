// q8-lanes.glsl - f32 activations to 8-bit integers per block of 32 values, as ggml's CPU backend
// quantizes them to Q8_0 for its quantized dot products (d = max |x| / 127, q = round(x / d) half
// away from zero, d rounded to f16), for the integer-dot kernels (mvq-dot.comp).  A column of K
// values becomes K / 4 quant words (4 quants each, the first in the low byte) in data_q and K / 32
// pairs (d, sum of the block's quants) in data_s; the includer declares both (or others it names
// Q8_QUANTS and Q8_PAIRS) and the extensions GL_KHR_shader_subgroup_basic and
// GL_KHR_shader_subgroup_shuffle.
// A lane quantizes 4 values: the 8 lanes of a block are neighbouring invocations of one subgroup
// (subgroups of 8 lanes or more), all of them active.

#ifndef Q8_QUANTS
#define Q8_QUANTS data_q
#define Q8_PAIRS data_s
#endif

float q8_max8(float v) {
    v = max(v, subgroupShuffleXor(v, 1));
    v = max(v, subgroupShuffleXor(v, 2));
    return max(v, subgroupShuffleXor(v, 4));
}

int q8_sum8(int v) {
    v += subgroupShuffleXor(v, 1);
    v += subgroupShuffleXor(v, 2);
    return v + subgroupShuffleXor(v, 4);
}

// Values [4 r, 4 r + 4) of a column, x, into quant word q0 + r and, from the block's first lane,
// its pair at s0 + r / 8.
void q8_store4(vec4 x, uint q0, uint s0, uint r) {
    const float d = q8_max8(max(max(abs(x.x), abs(x.y)), max(abs(x.z), abs(x.w)))) / 127.0, id = d != 0.0 ? 1.0 / d : 0.0;
    const ivec4 q = ivec4(trunc(x * id + sign(x) * 0.5));
    const int sum = q8_sum8(q.x + q.y + q.z + q.w);
    Q8_QUANTS[q0 + r] = uint(q.x & 0xff) | uint(q.y & 0xff) << 8 | uint(q.z & 0xff) << 16 | uint(q.w) << 24;
    if (r % 8 == 0) Q8_PAIRS[s0 + r / 8] = vec2(unpackHalf2x16(packHalf2x16(vec2(d, 0.0))).x, float(sum));
}
