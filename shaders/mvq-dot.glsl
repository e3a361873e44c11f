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

layout(binding = 1) readonly buffer Q { uvec4 data_q[]; }; // b's quants: 2 per block
layout(binding = 1) readonly buffer S { vec2 data_s[]; };  // b's (scale, sum of quants) per block

shared float red[(WG / 8) * RW * NC]; // per subgroup (8 lanes or more), row and column

#define UNIT_BLOCKS (UNIT_VALUES / 32)
// b's blocks of a unit, in one column: quants (values 0-15, 16-31 of each block), (scale, sum of quants)
struct b_blocks {
    uvec4 q[2 * UNIT_BLOCKS];
    vec2 s[UNIT_BLOCKS];
};

b_blocks load_b(uint blk) {
    b_blocks b;
    [[unroll]] for (uint i = 0; i < UNIT_BLOCKS; i++) {
        b.q[2 * i] = data_q[p.off_b + 2 * (blk + i)];
        b.q[2 * i + 1] = data_q[p.off_b + 2 * (blk + i) + 1];
        b.s[i] = data_s[p.off_s + blk + i];
    }
    return b;
}

#if QTYPE == 20 || QTYPE == 23 || QTYPE == 39
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
