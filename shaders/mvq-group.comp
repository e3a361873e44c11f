#version 450
// Matrix-vector product (N <= 8 columns of b) with q4_0 or q8_0 weights whose
// rows start 16 bytes aligned and hold a multiple of 256 values.  A thread
// owns a group of 8 consecutive blocks of one row (q4_0 144 bytes, q8_0 272:
// both whole numbers of 16-byte words) and reads them with 9 or 17 16-byte
// loads issued together, so many bytes are in flight per thread; blocks are
// then decoded from registers (a block starts on an odd or even halfword).
// Neighbouring threads take neighbouring rows at the same k, so their loads
// of b are the same addresses (one broadcast per subgroup).  A workgroup has
// RW rows and WG / RW threads per row striding along k; their partial sums
// are added through shared memory.
#include "types.glsl"
#include "mm-push.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint RW = 32;   // rows of d per workgroup (a divisor of WG)
layout(constant_id = 2) const uint NC = 1;    // columns of b = N (1..8)
layout(constant_id = 3) const uint BVEC = 0;  // 1: b's offset and strides are multiples of 4 floats
layout(constant_id = 4) const uint CONVERT = 0; // quants to floats: 0 bit tricks, 1 int-to-float (quant-float.glsl)
layout(constant_id = 5) const uint U = 1;     // groups loaded per thread before any is decoded
layout(local_size_x_id = 0) in;

#if QTYPE == 2
#define BLOCK_HALVES 9u  // halfwords per block: the f16 scale, then 16 bytes of nibbles
#define GROUP_VEC4 9     // 16-byte words per group of 8 blocks
#elif QTYPE == 8
#define BLOCK_HALVES 17u // the scale, then 32 signed bytes
#define GROUP_VEC4 17
#else
#error "mvq-group.comp: q4_0 (2) or q8_0 (8) only"
#endif

layout(binding = 0) readonly buffer A { uvec4 data_a[]; };  // offsets and strides in 16-byte words
layout(binding = 1) readonly buffer B { float data_b[]; };
layout(binding = 1) readonly buffer B4 { vec4 data_b4[]; };    // the same, 16 bytes at a time
layout(binding = 2) writeonly buffer D { float data_d[]; };

#include "quant-float.glsl"

shared float red[WG * NC]; // [column][thread]

uint w[U][GROUP_VEC4 * 4]; // this thread's groups of blocks, as 32-bit words

// the halfword h of group u (h known at compile time once loops are unrolled)
uint half_at(uint u, uint h) { return (w[u][h >> 1] >> (16 * (h & 1))) & 0xffffu; }
// the 32 bits starting at halfword h
uint word_at(uint u, uint h) { return (h & 1) == 0 ? w[u][h >> 1] : (w[u][h >> 1] >> 16) | (w[u][(h >> 1) + 1] << 16); }

vec4 load_b4(uint at) {
    if (BVEC == 1) return data_b4[at / 4];
    return vec4(data_b[at], data_b[at + 1], data_b[at + 2], data_b[at + 3]);
}

// block i of group u times the 32 b values from float index at, scaled
float block_dot(uint u, uint i, uint at) {
    const uint h = i * BLOCK_HALVES;
    float s0 = 0.0, s1 = 0.0;
#if QTYPE == 2
    [[unroll]] for (uint k = 0; k < 4; k++) {
        const uint q = word_at(u, h + 1 + 2 * k);
        const uint lo = q & 0x0f0f0f0fu, hi = (q >> 4) & 0x0f0f0f0fu;
        const vec4 xl = load_b4(at + 4 * k), xh = load_b4(at + 16 + 4 * k);
        [[unroll]] for (uint e = 0; e < 4; e++) {
            s0 = fma(quant_f((lo >> (8 * e)) & 0xffu, 8.0), xl[e], s0);
            s1 = fma(quant_f((hi >> (8 * e)) & 0xffu, 8.0), xh[e], s1);
        }
    }
#else
    [[unroll]] for (uint k = 0; k < 8; k++) {
        // XOR 0x80 makes the signed bytes v + 128 in 0..255
        const uint u = word_at(u, h + 1 + 2 * k) ^ 0x80808080u;
        const vec4 x = load_b4(at + 4 * k);
        s0 = fma(quant_f(u & 0xffu, 128.0), x.x, s0);
        s1 = fma(quant_f((u >> 8) & 0xffu, 128.0), x.y, s1);
        s0 = fma(quant_f((u >> 16) & 0xffu, 128.0), x.z, s0);
        s1 = fma(quant_f(u >> 24, 128.0), x.w, s1);
    }
#endif
    return unpackHalf2x16(half_at(u, h)).x * (s0 + s1);
}

void main() {
    const uint m0 = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * RW;
    if (m0 >= p.M) return;
    const uint tid = gl_LocalInvocationID.x, row = tid % RW, kslot = tid / RW, kslots = WG / RW;
    const uint b2 = gl_WorkGroupID.z % p.ne12, b3 = gl_WorkGroupID.z / p.ne12;
    // rows past the end re-read the last one; their sums are not stored
    const uint a_row = p.off_a + (b2 / p.r2) * p.nb02 + (b3 / p.r3) * p.nb03 + min(m0 + row, p.M - 1) * p.nb01;
    const uint b_base = p.off_b + b2 * p.nb12 + b3 * p.nb13;
    float acc[NC];
    [[unroll]] for (uint j = 0; j < NC; j++) acc[j] = 0.0;
    const uint groups = p.K / 256;
    for (uint g0 = kslot; g0 < groups; g0 += kslots * U) {
        [[unroll]] for (uint u = 0; u < U; u++) {
            const uint g = min(g0 + u * kslots, groups - 1); // past the end: re-read, not added
            [[unroll]] for (uint v = 0; v < GROUP_VEC4; v++) {
                const uvec4 q = data_a[a_row + g * GROUP_VEC4 + v];
                w[u][4 * v] = q.x; w[u][4 * v + 1] = q.y; w[u][4 * v + 2] = q.z; w[u][4 * v + 3] = q.w;
            }
        }
        [[unroll]] for (uint u = 0; u < U; u++) {
            const uint g = g0 + u * kslots;
            if (g < groups)
                [[unroll]] for (uint i = 0; i < 8; i++)
                    [[unroll]] for (uint j = 0; j < NC; j++) acc[j] += block_dot(u, i, b_base + j * p.nb11 + g * 256 + i * 32);
        }
    }
    [[unroll]] for (uint j = 0; j < NC; j++) red[j * WG + tid] = acc[j];
    barrier();
    if (tid < RW * NC && m0 + tid % RW < p.M) {
        const uint r = tid % RW, j = tid / RW;
        float total = 0.0;
        for (uint s = 0; s < kslots; s++) total += red[j * WG + s * RW + r];
        data_d[p.off_d + b2 * p.nb2 + b3 * p.nb3 + j * p.nb1 + m0 + r] = total;
    }
}
