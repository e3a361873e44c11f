// mvq-dot.glsl - what the integer-dot matrix-vector kernels share (mvq-dot.comp for the
// 32-value block formats, mvq-dot-k.comp for the K-quants): b quantized per 32-value block by
// quantize-q8.comp (quants, and per block its scale and the sum of its quants), OpSDot, and
// the loop over a workgroup's rows.  A workgroup computes RW rows of d; thread t takes units
// t, t + WG, ... of each row (a unit: UNIT_VALUES consecutive values of a row, one or two b
// blocks), so a subgroup reads consecutive units of a row (a contiguous run) and each b block
// it loads (from L1: every workgroup reads the same few KB) serves RW rows.  Partial sums:
// subgroup sums, then shared memory.  With fewer workgroups than groups of RW rows, each takes
// every so many.
// The includer defines UNIT_VALUES (32 or 64), includes this file, defines
//   struct unit { ... };                                  a unit of a row, loaded
//   void unit_load(uint row, uint u, out unit x);         unit u of the row at halfword row of a
//   float unit_term(const unit x, uint u, const b_blocks b);  its share of d against b's blocks
// and then includes mvq-dot-rows.glsl (the row loop and main).
// With MVQ_SELF_Q8 b comes as f32 and each workgroup quantizes it into shared memory first.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_spirv_intrinsics : require
#include "types.glsl"
#ifdef MVQ_ID // mul_mat_id: a workgroup's rows of one (slot, token) pair, with its expert's weights
#define MM_ID_OWN_A
#include "mm-id-push.glsl"
#else
#include "mm-push.glsl"
layout(binding = 2) writeonly buffer D { float data_d[]; };
#include "mv-store.glsl"
#endif

layout(constant_id = 0) const uint WG = 128;
layout(constant_id = 1) const uint RW = 2;    // rows of d per workgroup
layout(constant_id = 2) const uint NC = 1;    // columns of b = N (1..8)
layout(local_size_x_id = 0) in;

// OpSDot on two 32-bit words of four signed bytes each (PackedVectorFormat4x8Bit = 0)
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int dot4x8(uint a, uint b, spirv_literal int packed_format);

shared float red[(WG / 8) * RW * NC]; // per subgroup (8 lanes or more), row and column

#ifdef MVQ_SELF_Q8
// b as f32 at binding 1, quantized by every workgroup into shared memory before its rows
// (quantize_b_shared): the products of a decode graph then need no quantize-q8.comp dispatch,
// and no barrier between it and them.  KB: blocks of 32 values in a column of b (K / 32).
layout(constant_id = 3) const uint KB = 24;
layout(binding = 1) readonly buffer BF { float data_bf[]; };
layout(binding = 1) readonly buffer BF4 { vec4 data_bf4[]; };
shared uvec4 sh_q[2 * KB * NC]; // the batch's NC columns, as quantize-q8.comp lays them out
shared vec2 sh_s[KB * NC];
#define B_FIRST_COL(col0) 0u    // the batch's first column is the first in shared memory
#else
layout(binding = 1) readonly buffer Q { uvec4 data_q[]; }; // b's quants: 2 per block
layout(binding = 1) readonly buffer S { vec2 data_s[]; };  // b's (scale, sum of quants) per block
#define B_FIRST_COL(col0) (col0)
#endif

#define UNIT_BLOCKS (UNIT_VALUES / 32)
// b's blocks of a unit, in one column: quants (values 0-15, 16-31 of each block), (scale, sum of quants)
struct b_blocks {
    uvec4 q[2 * UNIT_BLOCKS];
    vec2 s[UNIT_BLOCKS];
};

b_blocks load_b(uint blk) {
    b_blocks b;
    [[unroll]] for (uint i = 0; i < UNIT_BLOCKS; i++) {
#ifdef MVQ_SELF_Q8
        b.q[2 * i] = sh_q[2 * (blk + i)];
        b.q[2 * i + 1] = sh_q[2 * (blk + i) + 1];
        b.s[i] = sh_s[blk + i];
#else
        b.q[2 * i] = data_q[p.off_b + 2 * (blk + i)];
        b.q[2 * i + 1] = data_q[p.off_b + 2 * (blk + i) + 1];
        b.s[i] = data_s[p.off_s + blk + i];
#endif
    }
    return b;
}

#ifdef MVQ_SELF_Q8
// The 32 values of b from at on (in floats), 16 bytes at a time where at is so aligned.
void load_block(const uint at, out vec4 x[8]) {
    if (at % 4u == 0u) {
        [[unroll]] for (uint v = 0; v < 8; v++) x[v] = data_bf4[at / 4u + v];
    } else {
        [[unroll]] for (uint v = 0; v < 8; v++)
            x[v] = vec4(data_bf[at + 4 * v], data_bf[at + 4 * v + 1], data_bf[at + 4 * v + 2], data_bf[at + 4 * v + 3]);
    }
}

// The workgroup's batch of b (NC columns) quantized into sh_q / sh_s, a block per thread at a
// time, with quantize-q8.comp's rounding (ggml's Q8_0: d = max |x| / 127, q = round(x / d) half
// away from zero, d rounded to f16), so that both paths compute the same products.
void quantize_b_shared() {
    const uint b2 = gl_WorkGroupID.z % p.ne12, b3 = gl_WorkGroupID.z / p.ne12;
    const uint base = p.off_b + b3 * p.nb13 + b2 * p.nb12;
    for (uint i = gl_LocalInvocationID.x; i < KB * NC; i += WG) {
        vec4 x[8];
        load_block(base + (i / KB) * p.nb11 + 32u * (i % KB), x);
        float amax = 0.0;
        [[unroll]] for (uint v = 0; v < 8; v++) amax = max(amax, max(max(abs(x[v].x), abs(x[v].y)), max(abs(x[v].z), abs(x[v].w))));
        const float d = amax / 127.0, id = d != 0.0 ? 1.0 / d : 0.0;
        uint w[8];
        int sum = 0;
        [[unroll]] for (uint v = 0; v < 8; v++) {
            const ivec4 q = ivec4(trunc(x[v] * id + sign(x[v]) * 0.5));
            sum += q.x + q.y + q.z + q.w;
            w[v] = uint(q.x & 0xff) | uint(q.y & 0xff) << 8 | uint(q.z & 0xff) << 16 | uint(q.w) << 24;
        }
        sh_q[2 * i] = uvec4(w[0], w[1], w[2], w[3]);
        sh_q[2 * i + 1] = uvec4(w[4], w[5], w[6], w[7]);
        sh_s[i] = vec2(unpackHalf2x16(packHalf2x16(vec2(d, 0.0))).x, float(sum));
    }
}
#endif

#if QTYPE == 20 || QTYPE == 23 || (QTYPE == 39 && defined(MXFP4_TABLE)) // MXFP4: by arithmetic (mvq-dot-mxfp4.comp)
// IQ4_NL / IQ4_XS / MXFP4: each nibble indexes 16 levels (small integers: ggml's non-linear
// ones, or the doubled E2M1 values, so the products stay integer dot products).  A table in
// shared memory maps a byte of nibbles to its two levels as int8 (the low nibble's in bits
// 0-7, the high one's in bits 16-23): 4 lookups per 32-bit quant word, filled once per
// workgroup (UNIT_INIT, before the row loop).
#if QTYPE == 39
#include "mxfp4-levels.glsl"
#define NIBBLE_LEVELS MXFP4_LEVELS
#else
#include "iq4-levels.glsl"
#define NIBBLE_LEVELS IQ4_LEVELS
#endif
shared uint level_pairs[256];
#define UNIT_INIT
void unit_init() {
    for (uint i = gl_LocalInvocationID.x; i < 256; i += WG)
        level_pairs[i] = (uint(int(NIBBLE_LEVELS[i & 15u])) & 255u) | ((uint(int(NIBBLE_LEVELS[i >> 4])) & 255u) << 16);
}

// the levels of the 8 nibbles of quant word q: its low nibbles' in lo, its high nibbles' in hi (4 int8 each)
void nibble_levels(const uint q, out uint lo, out uint hi) {
    const uint t0 = level_pairs[q & 255u], t1 = level_pairs[(q >> 8) & 255u], t2 = level_pairs[(q >> 16) & 255u],
               t3 = level_pairs[q >> 24];
    lo = (t0 & 255u) | ((t1 & 255u) << 8) | ((t2 & 255u) << 16) | (t3 << 24);
    hi = (t0 >> 16) | ((t1 >> 8) & 0xff00u) | (t2 & 0xff0000u) | ((t3 << 8) & 0xff000000u);
}
#endif

// the sum of the 16 quants in q (one 16-byte half of a block of b)
int b_half_sum(const uvec4 q) {
    int s = 0;
    [[unroll]] for (uint i = 0; i < 4; i++) s += dot4x8(q[i], 0x01010101u, 0);
    return s;
}

// the workgroup's sums of acc into RW rows of d from m0 on, column j at d_at + j * nb1
void store_rows(const uint m0, const uint d_at, const uint nb1, const float acc[RW][NC]) {
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
#ifdef MVQ_ID
        if (m0 + r < p.M) data_d[d_at + j * nb1 + m0 + r] = total;
#else
        if (m0 + r < p.M) store_d(d_at + j * nb1 + m0 + r, total);
#endif
    }
}
