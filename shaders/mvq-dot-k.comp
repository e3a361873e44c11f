#version 450
// Matrix-vector product (N <= 8 columns of b) with K-quant weights (q2_K .. q6_K) or iq4_xs
// (IQ4_NL's levels with a 6-bit scale per 32 values, in 256-value super-blocks) on 8-bit
// integer dot products, against b quantized per 32-value block (mvq-dot.glsl).  The CPU
// takes b as Q8_K (one scale per 256 values), so the two agree to b's rounding, not exactly.
// A thread's unit is half a super-block (128 values, four of b's blocks): all its loads are
// issued together and independent, and the bytes the format shares between the quarters of
// a half (q2_K's, q3_K's and q6_K's packed bits, the scales) are read once, not once per
// 32 values.  At K = 4096 a subgroup of 32 takes a row in one step.  q4_K / q5_K are read as
// 16-byte words (the host checks a's 16-byte alignment); q2_K, q3_K, q6_K and iq4_xs as
// 32-bit words at any halfword.
#define UNIT_VALUES 128
#include "mvq-dot.glsl"

#if QTYPE == 12 || QTYPE == 13
layout(binding = 0) readonly buffer A { uvec4 data_a[]; }; // offsets and strides in halfwords
#if QTYPE == 12
#define SB_WORDS 9u  // 16-byte words of a q4_K super-block: d, dmin, scales; 128 bytes of nibbles
#else
#define SB_WORDS 11u // q5_K: d, dmin, scales; 32 bytes of fifth bits; nibbles
#endif

struct unit {
    uvec4 head; // d, dmin (f16), then the 12 bytes of 6-bit scales and minimums
    uvec4 q[4]; // the half's two pairs of sub-blocks, 32 bytes each: low nibbles, high nibbles
#if QTYPE == 13
    uvec4 qh[2]; // the super-block's fifth bits
#endif
};

// unit u: half u % 2 of super-block u / 2 (sub-blocks 4 (u % 2) .. + 3)
void unit_load(uint row, uint u, out unit x) {
    const uint at = row / 8 + (u / 2) * SB_WORDS;
    x.head = data_a[at];
#if QTYPE == 12
    const uint q_at = at + 1 + 4 * (u % 2);
#else
    x.qh[0] = data_a[at + 1];
    x.qh[1] = data_a[at + 2];
    const uint q_at = at + 3 + 4 * (u % 2);
#endif
    [[unroll]] for (uint i = 0; i < 4; i++) x.q[i] = data_a[q_at + i];
}

// byte i of the 12 scale bytes (header bytes 4..15); the word chosen by selects, not by a
// dynamic index, which could put the header in local memory
uint scale_byte(const uvec4 head, const uint i) {
    const uint w = i < 4 ? head.y : i < 8 ? head.z : head.w;
    return (w >> (8 * (i % 4))) & 255u;
}

// sub-block j's 6-bit scale and minimum (ggml's packing: j < 4 in the low 6 bits of bytes j and
// j + 4; j >= 4 in the nibbles of byte j + 4 with the top bits of bytes j - 4 and j)
uvec2 scale_min(const uvec4 head, const uint j) {
    if (j < 4) return uvec2(scale_byte(head, j) & 63u, scale_byte(head, j + 4) & 63u);
    const uint b = scale_byte(head, j + 4);
    return uvec2((b & 15u) | ((scale_byte(head, j - 4) >> 6) << 4), (b >> 4) | ((scale_byte(head, j) >> 6) << 4));
}

float unit_term(const unit x, uint u, const b_blocks b) {
    const vec2 dm = unpackHalf2x16(x.head.x);
    float t = 0.0;
    [[unroll]] for (uint p = 0; p < 2; p++) { // pair 2 (u % 2) + p: sub-blocks (of the unit) 2 p, 2 p + 1
        const uint pair = 2 * (u % 2) + p;
        int dot[2] = int[2](0, 0);
        [[unroll]] for (uint i = 0; i < 8; i++) {
            const uint q = x.q[2 * p + i / 4][i % 4];
            uint q_lo = q & 0x0f0f0f0fu, q_hi = (q >> 4) & 0x0f0f0f0fu;
#if QTYPE == 13
            const uint h = x.qh[i / 4][i % 4];
            q_lo |= ((h >> (2 * pair)) & 0x01010101u) << 4;
            q_hi |= ((h >> (2 * pair + 1)) & 0x01010101u) << 4;
#endif
            dot[0] += dot4x8(q_lo, b.q[4 * p + i / 4][i % 4], 0);     // the low nibbles: b's block 2 p
            dot[1] += dot4x8(q_hi, b.q[4 * p + 2 + i / 4][i % 4], 0); // the high ones: block 2 p + 1
        }
        [[unroll]] for (uint s = 0; s < 2; s++) {
            const uvec2 sm = scale_min(x.head, 2 * pair + s);
            const vec2 bs = b.s[2 * p + s];
            t += bs.x * (dm.x * float(sm.x) * float(dot[s]) - dm.y * float(sm.y) * bs.y);
        }
    }
    return t;
}
#else
layout(binding = 0) readonly buffer A { uint data_a[]; }; // offsets and strides in halfwords

// the 32-bit word at halfword x of a
uint word_at(uint x) {
    const uint lo = data_a[x / 2];
    return (x & 1u) != 0 ? (lo >> 16) | (data_a[x / 2 + 1] << 16) : lo;
}

// the 8 32-bit words from halfword x of a on: 9 loads and a 16-bit shift where x is odd
void words8_at(uint x, out uint w[8]) {
    uint v[9];
    [[unroll]] for (uint i = 0; i < 9; i++) v[i] = data_a[x / 2 + i];
    const bool odd = (x & 1u) != 0;
    [[unroll]] for (uint i = 0; i < 8; i++) w[i] = odd ? (v[i] >> 16) | (v[i + 1] << 16) : v[i];
}

// the 16-bit word at halfword x of a
uint half_at(uint x) {
    const uint w = data_a[x / 2];
    return (x & 1u) != 0 ? w >> 16 : w & 0xffffu;
}

// b's sums of the 16-value halves of its block g of the unit
ivec2 b_half_sums(const b_blocks b, const uint g) {
    const int low = b_half_sum(b.q[2 * g]);
    return ivec2(low, int(b.s[g].y) - low);
}
#endif

// In the formats below a unit's 128 values are four groups of 32 (b's blocks g = 0..3), each two
// 16-value sub-blocks with scales of their own.
#if QTYPE == 10
#define SB_HALVES 42u // q2_K: 16 bytes of 4-bit scales and minimums, 64 bytes of 2-bit quants, d, dmin

struct unit {
    uint q[8];  // the half's 32 bytes of quants: value 32 g + l in bits 2 g of byte l
    uint sm[2]; // its 8 (scale, minimum) bytes, two per group
    vec2 dm;    // d, dmin
};

// unit u: half u % 2 of super-block u / 2
void unit_load(uint row, uint u, out unit x) {
    const uint sb = row + (u / 2) * SB_HALVES, n = u % 2;
    words8_at(sb + 8 + 16 * n, x.q);
    x.sm[0] = word_at(sb + 4 * n);
    x.sm[1] = word_at(sb + 4 * n + 2);
    x.dm = unpackHalf2x16(word_at(sb + 40));
}

float unit_term(const unit x, uint u, const b_blocks b) {
    float t = 0.0;
    [[unroll]] for (uint g = 0; g < 4; g++) {
        int dot[2] = int[2](0, 0);
        [[unroll]] for (uint i = 0; i < 8; i++) dot[i / 4] += dot4x8((x.q[i] >> (2 * g)) & 0x03030303u, b.q[2 * g + i / 4][i % 4], 0);
        const ivec2 sums = b_half_sums(b, g);
        const uint sm = x.sm[g / 2] >> (16 * (g % 2)), s0 = sm & 255u, s1 = (sm >> 8) & 255u; // low nibble: scale; high: minimum
        const int scaled = int(s0 & 15u) * dot[0] + int(s1 & 15u) * dot[1], mins = int(s0 >> 4) * sums.x + int(s1 >> 4) * sums.y;
        t += b.s[g].x * (x.dm.x * float(scaled) - x.dm.y * float(mins));
    }
    return t;
}
#elif QTYPE == 11
#define SB_HALVES 55u // q3_K: 32 bytes of high bits, 64 bytes of 2-bit quants, 12 bytes of 6-bit scales, d

struct unit {
    uint q[8];  // the half's 32 bytes of 2-bit quants: value 32 g + l in bits 2 g of byte l
    uint hm[8]; // the super-block's 32 bytes of high bits: value 32 g + l of half h in bit 4 h + g of byte l
    uint r[3];  // the 12 bytes of scales
    float d;
};

// 6-bit scale i (0..15) of the 12 bytes r0, r1, r2: the low nibbles of r0 / r1 (i < 8) or their high
// nibbles, with 2 bits of r2 above them (ggml's packing), less 32
int q3_scale(const uint r0, const uint r1, const uint r2, const uint i) {
    const uint w = i / 4, byte = i % 4;
    const uint lo = ((((w & 1u) != 0 ? r1 : r0) >> (8 * byte + (w >= 2 ? 4u : 0u))) & 15u);
    const uint hi = (r2 >> (8 * byte + 2 * w)) & 3u;
    return int(lo | (hi << 4)) - 32;
}

void unit_load(uint row, uint u, out unit x) {
    const uint sb = row + (u / 2) * SB_HALVES;
    words8_at(sb + 16 + 16 * (u % 2), x.q);
    words8_at(sb, x.hm);
    [[unroll]] for (uint i = 0; i < 3; i++) x.r[i] = word_at(sb + 48 + 2 * i);
    x.d = unpackHalf2x16(half_at(sb + 54)).x;
}

float unit_term(const unit x, uint u, const b_blocks b) {
    float t = 0.0;
    [[unroll]] for (uint g = 0; g < 4; g++) {
        const uint j = 4 * (u % 2) + g; // the group in the super-block
        int dot[2] = int[2](0, 0);
        [[unroll]] for (uint i = 0; i < 8; i++) {
            const uint q = ((x.q[i] >> (2 * g)) & 0x03030303u) | (((x.hm[i] >> j) & 0x01010101u) << 2);
            dot[i / 4] += dot4x8(q, b.q[2 * g + i / 4][i % 4], 0);
        }
        // quants are taken plus 4: less 4 times b's sum of each 16-value half
        const ivec2 sums = b_half_sums(b, g);
        const int sc0 = q3_scale(x.r[0], x.r[1], x.r[2], 2 * j), sc1 = q3_scale(x.r[0], x.r[1], x.r[2], 2 * j + 1);
        t += b.s[g].x * float(sc0 * (dot[0] - 4 * sums.x) + sc1 * (dot[1] - 4 * sums.y));
    }
    return x.d * t;
}
#elif QTYPE == 14
#define SB_HALVES 105u // q6_K: 128 bytes of low nibbles, 64 of 2-bit high parts, 16 int8 scales, d

struct unit {
    uint ql[2][8]; // the half's 64 bytes of nibbles: group g in the nibbles g / 2 of bytes 32 (g % 2) ..
    uint qh[8];    // its 32 bytes of high parts: group g in bits 2 g
    uint sc[2];    // its 8 int8 scales, two per group
    float d;
};

// unit u: values 128 (u % 2) .. + 127 of super-block u / 2
void unit_load(uint row, uint u, out unit x) {
    const uint sb = row + (u / 2) * SB_HALVES, n = u % 2;
    words8_at(sb + 32 * n, x.ql[0]);
    words8_at(sb + 32 * n + 16, x.ql[1]);
    words8_at(sb + 64 + 16 * n, x.qh);
    x.sc[0] = word_at(sb + 96 + 4 * n);
    x.sc[1] = word_at(sb + 98 + 4 * n);
    x.d = unpackHalf2x16(half_at(sb + 104)).x;
}

float unit_term(const unit x, uint u, const b_blocks b) {
    float t = 0.0;
    [[unroll]] for (uint g = 0; g < 4; g++) {
        int dot[2] = int[2](0, 0);
        [[unroll]] for (uint i = 0; i < 8; i++) {
            const uint q = ((x.ql[g % 2][i] >> (4 * (g / 2))) & 0x0f0f0f0fu) | (((x.qh[i] >> (2 * g)) & 0x03030303u) << 4);
            dot[i / 4] += dot4x8(q, b.q[2 * g + i / 4][i % 4], 0);
        }
        // quants are stored plus 32: less 32 times b's sum of each 16-value half
        const ivec2 sums = b_half_sums(b, g);
        const uint sc = x.sc[g / 2] >> (16 * (g % 2));
        const int sc_lo = int(sc << 24) >> 24, sc_hi = int(sc << 16) >> 24;
        t += b.s[g].x * float(sc_lo * (dot[0] - 32 * sums.x) + sc_hi * (dot[1] - 32 * sums.y));
    }
    return x.d * t;
}
#elif QTYPE == 23
#define SB_HALVES 68u // iq4_xs: d, the scales' high bits (16 bits), their low nibbles (4 bytes), 128 bytes of nibbles

struct unit {
    uint q[2][8]; // the half's four sub-blocks' 64 bytes of nibbles (16 each: values 0-15 low, 16-31 high)
    uint lo;      // the low nibbles of their scales (2 bytes)
    uint hi;      // the super-block's scales' high bits (2 each)
    float d;
};

// unit u: sub-blocks 4 (u % 2) .. + 3 of super-block u / 2
void unit_load(uint row, uint u, out unit x) {
    const uint sb = row + (u / 2) * SB_HALVES, h = u % 2;
    words8_at(sb + 4 + 32 * h, x.q[0]);
    words8_at(sb + 20 + 32 * h, x.q[1]);
    const uint head = word_at(sb);
    x.d = unpackHalf2x16(head).x;
    x.hi = head >> 16;
    x.lo = half_at(sb + 2 + h);
}

float unit_term(const unit x, uint u, const b_blocks b) {
    float t = 0.0;
    [[unroll]] for (uint s = 0; s < 4; s++) {
        int dot = 0;
        [[unroll]] for (uint i = 0; i < 4; i++) {
            uint q_lo, q_hi;
            nibble_levels(x.q[s / 2][4 * (s % 2) + i], q_lo, q_hi);
            dot += dot4x8(q_lo, b.q[2 * s][i], 0) + dot4x8(q_hi, b.q[2 * s + 1][i], 0);
        }
        const uint scale = ((x.lo >> (4 * s)) & 15u) | (((x.hi >> (2 * (4 * (u % 2) + s))) & 3u) << 4);
        t += float(int(scale) - 32) * b.s[s].x * float(dot);
    }
    return x.d * t;
}
#elif QTYPE != 12 && QTYPE != 13
#error "mvq-dot-k.comp: q2_K (10), q3_K (11), q4_K (12), q5_K (13), q6_K (14) or iq4_xs (23)"
#endif

#include "mvq-dot-rows.glsl"
