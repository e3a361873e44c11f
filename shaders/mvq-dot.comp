#version 450
// Matrix-vector product (N <= 8 columns of b) with q4_0 or q8_0 weights on
// 8-bit integer dot products (SPV_KHR_integer_dot_product: one instruction per
// 4 weights), against b already quantized per 32-value block by
// quantize-q8.comp (ggml's Q8_0 rounding, as the CPU backend does it).
// A workgroup computes RW rows of d; thread t takes blocks t, t + WG, ... of
// each row, so a subgroup reads consecutive blocks of a row (a contiguous run)
// and each b block it loads (from L1: every workgroup reads the same few KB)
// serves RW rows.  A block starts on any halfword: a thread loads the 16-byte
// words that hold it and shifts its halfwords into place with selects (no
// dynamic register indexing).  Partial sums: subgroup sums, then shared memory.
// With fewer workgroups than groups of RW rows, each takes every so many.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_spirv_intrinsics : require
#include "types.glsl"
#define MM_PUSH_EXTRA uint off_s; // where b's block scales start (vec2 units); off_b: its quants (uvec4 units)
#include "mm-push.glsl"

layout(constant_id = 0) const uint WG = 128;
layout(constant_id = 1) const uint RW = 2;    // rows of d per workgroup
layout(constant_id = 2) const uint NC = 1;    // columns of b = N (1..8)
layout(local_size_x_id = 0) in;

#if QTYPE == 2
#define BLOCK_HALVES 9u  // the f16 scale, then 16 bytes of nibbles
#define WINDOW 2         // 16-byte words holding a block at any halfword offset
#elif QTYPE == 8
#define BLOCK_HALVES 17u // the scale, then 32 signed bytes
#define WINDOW 3
#else
#error "mvq-dot.comp: q4_0 (2) or q8_0 (8) only"
#endif
#define WWORDS (4 * WINDOW)
#define QWORDS (BLOCK_HALVES / 2) // 32-bit words of quants per block

// OpSDot on two 32-bit words of four signed bytes each (PackedVectorFormat4x8Bit = 0)
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int dot4x8(uint a, uint b, spirv_literal int packed_format);

layout(binding = 0) readonly buffer A { uvec4 data_a[]; }; // offsets and strides in halfwords
layout(binding = 1) readonly buffer Q { uvec4 data_q[]; }; // b's quants: 2 per block
layout(binding = 1) readonly buffer S { vec2 data_s[]; };  // b's (scale, sum of quants) per block
layout(binding = 2) writeonly buffer D { float data_d[]; };

shared float red[(WG / 8) * RW * NC]; // per subgroup (8 lanes or more), row and column

// The scale (low 16 bits) and quant words of the block starting at halfword x of a.
void block_words(uint x, out uint scale, out uint q[QWORDS]) {
    uint w[WWORDS];
    [[unroll]] for (uint v = 0; v < WINDOW; v++) {
        const uvec4 u = data_a[(x >> 3) + v];
        w[4 * v] = u.x; w[4 * v + 1] = u.y; w[4 * v + 2] = u.z; w[4 * v + 3] = u.w;
    }
    const uint h = x & 7u;
    // shift the window down by h halfwords: 2 words, 1 word, then 16 bits
    uint t[QWORDS + 2], u[QWORDS + 1];
    [[unroll]] for (uint i = 0; i < QWORDS + 2; i++) t[i] = (h & 4u) != 0 ? w[i + 2] : w[i];
    [[unroll]] for (uint i = 0; i < QWORDS + 1; i++) u[i] = (h & 2u) != 0 ? t[i + 1] : t[i];
    const bool odd = (h & 1u) != 0;
    scale = odd ? u[0] >> 16 : u[0] & 0xffffu;
    [[unroll]] for (uint i = 0; i < QWORDS; i++) q[i] = odd ? u[i + 1] : (u[i] >> 16) | (u[i + 1] << 16);
}

// The integer dot product of a block's quants with b's block (values 0-15 in lo, 16-31 in hi).
int block_dot(const uint q[QWORDS], const uvec4 lo, const uvec4 hi) {
    int s = 0;
#if QTYPE == 2
    [[unroll]] for (uint i = 0; i < 4; i++) {
        s += dot4x8(q[i] & 0x0f0f0f0fu, lo[i], 0);
        s += dot4x8((q[i] >> 4) & 0x0f0f0f0fu, hi[i], 0);
    }
#else
    [[unroll]] for (uint i = 0; i < 4; i++) {
        s += dot4x8(q[i], lo[i], 0);
        s += dot4x8(q[i + 4], hi[i], 0);
    }
#endif
    return s;
}

// RW rows of d from m0 on
void rows(const uint m0) {
    const uint b2 = gl_WorkGroupID.z % p.ne12, b3 = gl_WorkGroupID.z / p.ne12, blocks = p.K / 32;
    const uint a_base = p.off_a + (b2 / p.r2) * p.nb02 + (b3 / p.r3) * p.nb03;
    const uint col0 = gl_WorkGroupID.z * NC; // b's first column of this batch
    float acc[RW][NC];
    [[unroll]] for (uint r = 0; r < RW; r++)
        [[unroll]] for (uint j = 0; j < NC; j++) acc[r][j] = 0.0;
    for (uint k = gl_LocalInvocationID.x; k < blocks; k += WG) {
        uint scale[RW], q[RW][QWORDS];
        // rows past the end re-read the last one; their sums are not stored
        [[unroll]] for (uint r = 0; r < RW; r++) block_words(a_base + min(m0 + r, p.M - 1) * p.nb01 + k * BLOCK_HALVES, scale[r], q[r]);
        [[unroll]] for (uint j = 0; j < NC; j++) {
            const uint blk = (col0 + j) * blocks + k;
            const uvec4 lo = data_q[p.off_b + 2 * blk], hi = data_q[p.off_b + 2 * blk + 1];
            const vec2 sb = data_s[p.off_s + blk];
            [[unroll]] for (uint r = 0; r < RW; r++) {
#if QTYPE == 2
                const int dot = block_dot(q[r], lo, hi) - 8 * int(sb.y); // nibbles are quants + 8
#else
                const int dot = block_dot(q[r], lo, hi);
#endif
                acc[r][j] = fma(unpackHalf2x16(scale[r]).x * sb.x, float(dot), acc[r][j]);
            }
        }
    }
    const uint per = RW * NC, tid = gl_LocalInvocationID.x;
    [[unroll]] for (uint r = 0; r < RW; r++)
        [[unroll]] for (uint j = 0; j < NC; j++) {
            const float v = subgroupAdd(acc[r][j]);
            if (subgroupElect()) red[gl_SubgroupID * per + r * NC + j] = v;
        }
    barrier();
    if (tid < per) {
        const uint r = tid / NC, j = tid % NC;
        float total = 0.0;
        for (uint s = 0; s < gl_NumSubgroups; s++) total += red[s * per + tid];
        if (m0 + r < p.M) data_d[p.off_d + b2 * p.nb2 + b3 * p.nb3 + j * p.nb1 + m0 + r] = total;
    }
}

// Fewer workgroups than row groups (a tuning choice) take every so many in turn.
void main() {
    const uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * RW;
    for (uint m0 = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * RW; m0 < p.M; m0 += stride) {
        rows(m0);
        barrier(); // red is taken again
    }
}
