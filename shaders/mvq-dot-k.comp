#version 450
// Matrix-vector product (N <= 8 columns of b) with K-quant weights (q2_K .. q6_K) or iq4_xs
// (IQ4_NL's levels with a 6-bit scale per 32 values, in 256-value super-blocks) on 8-bit
// integer dot products, against b quantized per 32-value block (mvq-dot.glsl).  The CPU
// takes b as Q8_K (one scale per 256 values), so the two agree to b's rounding, not exactly.
// A thread's unit: q4_K / q5_K, a pair of 32-value sub-blocks of a super-block (their
// quants share 32 bytes: low nibbles, high nibbles), read as 16-byte words (the host
// checks a's 16-byte alignment); q2_K, q3_K, q6_K, 32 values (two 16-value sub-blocks
// with scales of their own), read as 32-bit words at any halfword; iq4_xs, one 32-value
// sub-block, read as the 16-byte words holding it (words4_at).  Half a super-block per
// thread (all of a row's loads at once, shared bits read once) measured slower on an H200
// (2026-12-04: q6_K 27.8 against 21.0 us, q4_K 18.6 against 13.1, 14336 x 4096): a
// subgroup's loads then span 16 super-blocks, and a thread holds more registers (q6_K: 96).
#define UNIT_VALUES (QTYPE == 12 || QTYPE == 13 ? 64 : 32)
#include "mvq-dot.glsl"

#if QTYPE == 12 || QTYPE == 13
layout(binding = 0) readonly buffer A { uvec4 data_a[]; }; // offsets and strides in halfwords
#if QTYPE == 12
#define SB_WORDS 9u  // 16-byte words of a q4_K super-block: d, dmin, scales; 128 bytes of nibbles
#else
#define SB_WORDS 11u // q5_K: d, dmin, scales; 32 bytes of fifth bits; nibbles
#endif

struct unit {
    uvec4 head;   // d, dmin (f16), then the 12 bytes of 6-bit scales and minimums
    uvec4 q[2];   // the pair's 32 bytes of nibbles
    uvec4 qh[2];  // q5_K: the super-block's fifth bits
};

void unit_load(uint row, uint u, out unit x) {
    const uint at = row / 8 + (u / 4) * SB_WORDS, pair = u % 4;
    x.head = data_a[at];
#if QTYPE == 12
    x.q[0] = data_a[at + 1 + 2 * pair];
    x.q[1] = data_a[at + 2 + 2 * pair];
#else
    x.qh[0] = data_a[at + 1];
    x.qh[1] = data_a[at + 2];
    x.q[0] = data_a[at + 3 + 2 * pair];
    x.q[1] = data_a[at + 4 + 2 * pair];
#endif
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
    const uint pair = u % 4;
    const vec2 dm = unpackHalf2x16(x.head.x);
    int dot[2] = int[2](0, 0);
    [[unroll]] for (uint i = 0; i < 8; i++) {
        const uint q = x.q[i / 4][i % 4];
        uint q_lo = q & 0x0f0f0f0fu, q_hi = (q >> 4) & 0x0f0f0f0fu;
#if QTYPE == 13
        const uint h = x.qh[i / 4][i % 4];
        q_lo |= ((h >> (2 * pair)) & 0x01010101u) << 4;
        q_hi |= ((h >> (2 * pair + 1)) & 0x01010101u) << 4;
#endif
        dot[0] += dot4x8(q_lo, b.q[i / 4][i % 4], 0);     // sub-block 2 pair: b's first block
        dot[1] += dot4x8(q_hi, b.q[2 + i / 4][i % 4], 0); // sub-block 2 pair + 1: its second
    }
    float t = 0.0;
    [[unroll]] for (uint s = 0; s < 2; s++) {
        const uvec2 sm = scale_min(x.head, 2 * pair + s);
        t += b.s[s].x * (dm.x * float(sm.x) * float(dot[s]) - dm.y * float(sm.y) * b.s[s].y);
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

// the 2-bit quants of 32-value group g (0..7) of a q2_K / q3_K super-block: bits 2 (g % 4) of
// the 32 bytes of quants at byte 32 (g / 4) (both formats keep 64 bytes of them)
void two_bit_quants(const uint qs_at, const uint g, out uint q[8]) {
    words8_at(qs_at + 16 * (g / 4), q);
    [[unroll]] for (uint i = 0; i < 8; i++) q[i] = (q[i] >> (2 * (g % 4))) & 0x03030303u;
}
#endif

#if QTYPE == 10
#define SB_HALVES 42u // q2_K: 16 bytes of 4-bit scales and minimums, 64 bytes of 2-bit quants, d, dmin

struct unit {
    uint q[8];  // the group's 32 quants, one per byte
    uint sm;    // its two (scale, minimum) bytes
    vec2 dm;    // d, dmin
};

// unit u: group u % 8 of super-block u / 8, values 32 (u % 8) .. + 31
void unit_load(uint row, uint u, out unit x) {
    const uint sb = row + (u / 8) * SB_HALVES, g = u % 8;
    two_bit_quants(sb + 8, g, x.q);
    x.sm = half_at(sb + g);
    x.dm = unpackHalf2x16(word_at(sb + 40));
}

float unit_term(const unit x, uint u, const b_blocks b) {
    int dot[2] = int[2](0, 0);
    [[unroll]] for (uint i = 0; i < 8; i++) dot[i / 4] += dot4x8(x.q[i], b.q[i / 4][i % 4], 0);
    const int low_sum = b_half_sum(b.q[0]), high_sum = int(b.s[0].y) - low_sum;
    const uint s0 = x.sm & 255u, s1 = x.sm >> 8; // low nibble: scale; high: minimum
    const int scaled = int(s0 & 15u) * dot[0] + int(s1 & 15u) * dot[1], mins = int(s0 >> 4) * low_sum + int(s1 >> 4) * high_sum;
    return b.s[0].x * (x.dm.x * float(scaled) - x.dm.y * float(mins));
}
#elif QTYPE == 11
#define SB_HALVES 55u // q3_K: 32 bytes of high bits, 64 bytes of 2-bit quants, 12 bytes of 6-bit scales, d

struct unit {
    uint q[8];    // the group's 32 quants plus 4 where their high bit is set (0..7), one per byte
    int sc[2];    // its two scales
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
    const uint sb = row + (u / 8) * SB_HALVES, g = u % 8;
    two_bit_quants(sb + 16, g, x.q);
    uint hmask[8];
    words8_at(sb, hmask);
    [[unroll]] for (uint i = 0; i < 8; i++) x.q[i] |= ((hmask[i] >> g) & 0x01010101u) << 2;
    const uint r0 = word_at(sb + 48), r1 = word_at(sb + 50), r2 = word_at(sb + 52);
    x.sc[0] = q3_scale(r0, r1, r2, 2 * g);
    x.sc[1] = q3_scale(r0, r1, r2, 2 * g + 1);
    x.d = unpackHalf2x16(half_at(sb + 54)).x;
}

float unit_term(const unit x, uint u, const b_blocks b) {
    int dot[2] = int[2](0, 0);
    [[unroll]] for (uint i = 0; i < 8; i++) dot[i / 4] += dot4x8(x.q[i], b.q[i / 4][i % 4], 0);
    // quants are stored plus 4: take 4 times b's sum of each 16-value half
    const int low_sum = b_half_sum(b.q[0]), high_sum = int(b.s[0].y) - low_sum;
    return x.d * b.s[0].x * float(x.sc[0] * (dot[0] - 4 * low_sum) + x.sc[1] * (dot[1] - 4 * high_sum));
}
#elif QTYPE == 14
#define SB_HALVES 105u // q6_K: 128 bytes of low nibbles, 64 of 2-bit high parts, 16 int8 scales, d

struct unit {
    uint ql[8], qh[8]; // the quarter's 32 bytes of nibbles and 32 of high parts (shared by four quarters)
    uint scales;       // its two int8 scales
    float d;
};

// unit u = 4 n + g: values 128 n + 32 g .. + 31 of super-block u / 8
void unit_load(uint row, uint u, out unit x) {
    const uint sb = row + (u / 8) * SB_HALVES, n = (u / 4) % 2, g = u % 4;
    words8_at(sb + 32 * n + 16 * (g & 1u), x.ql);
    words8_at(sb + 64 + 16 * n, x.qh);
    x.scales = half_at(sb + 96 + 4 * n + g);
    x.d = unpackHalf2x16(half_at(sb + 104)).x;
}

float unit_term(const unit x, uint u, const b_blocks b) {
    const uint g = u % 4;
    int dot[2] = int[2](0, 0);
    [[unroll]] for (uint i = 0; i < 8; i++) {
        const uint q = ((x.ql[i] >> (4 * (g >> 1))) & 0x0f0f0f0fu) | (((x.qh[i] >> (2 * g)) & 0x03030303u) << 4);
        dot[i / 4] += dot4x8(q, b.q[i / 4][i % 4], 0);
    }
    // quants are stored plus 32: take 32 times b's sum of each 16-value half
    const int low_sum = b_half_sum(b.q[0]), high_sum = int(b.s[0].y) - low_sum;
    const int sc_lo = int(x.scales << 24) >> 24, sc_hi = int(x.scales << 16) >> 24;
    return x.d * b.s[0].x * float(sc_lo * (dot[0] - 32 * low_sum) + sc_hi * (dot[1] - 32 * high_sum));
}
#elif QTYPE == 23
#define SB_HALVES 68u // iq4_xs: d, the scales' high bits (16 bits), their low nibbles (4 bytes), 128 bytes of nibbles

layout(binding = 0) readonly buffer A4 { uvec4 data_a4[]; }; // the same bytes, 16 at a time

// the 4 32-bit words from halfword x of a on, from the 1 or 2 16-byte words holding them, shifted
// into place with selects (no dynamic register indexing).  iq4_xs's 16 bytes of a sub-block's
// quants and its 8-byte header so: 23.7 us against 25.6 for 14336 x 4096 on an H200 (2026-12-04);
// q2_K, q3_K and q6_K were slower reading their 32-byte runs so (3 16-byte words and more selects
// instead of 9 loads: q6_K 24.8 against 21.3 us, q3_K 23.2 against 21.5, q2_K 15.1 against 14.1)
void words4_at(uint x, out uint w[4]) {
    const uint at = x / 8, h = x % 8;
    const uvec4 v0 = data_a4[at], v1 = h != 0 ? data_a4[at + 1] : uvec4(0);
    const uint v[8] = uint[8](v0.x, v0.y, v0.z, v0.w, v1.x, v1.y, v1.z, v1.w);
    uint a[6], b[5];
    [[unroll]] for (uint i = 0; i < 6; i++) a[i] = (h & 4u) != 0 ? v[i + 2] : v[i];
    [[unroll]] for (uint i = 0; i < 5; i++) b[i] = (h & 2u) != 0 ? a[i + 1] : a[i];
    [[unroll]] for (uint i = 0; i < 4; i++) w[i] = (h & 1u) != 0 ? (b[i] >> 16) | (b[i + 1] << 16) : b[i];
}

struct unit {
    uint q[4]; // the sub-block's 16 bytes of nibbles: values 0-15 low, 16-31 high
    int scale; // its 6-bit scale, less 32
    float d;
};

// unit u: sub-block u % 8 of super-block u / 8
void unit_load(uint row, uint u, out unit x) {
    const uint sb = row + (u / 8) * SB_HALVES, g = u % 8;
    words4_at(sb + 4 + 8 * g, x.q);
    uint head[4]; // d, the scales' high bits; their low nibbles (g's: bits 4 g); 4 bytes of nibbles
    words4_at(sb, head);
    const uint lo = (head[1] >> (4 * g)) & 15u, hi = (head[0] >> (16 + 2 * g)) & 3u;
    x.scale = int(lo | (hi << 4)) - 32;
    x.d = unpackHalf2x16(head[0]).x;
}

float unit_term(const unit x, uint u, const b_blocks b) {
    int dot = 0;
    [[unroll]] for (uint i = 0; i < 4; i++) {
        uint q_lo, q_hi;
        nibble_levels(x.q[i], q_lo, q_hi);
        dot += dot4x8(q_lo, b.q[0][i], 0) + dot4x8(q_hi, b.q[1][i], 0);
    }
    return x.d * float(x.scale) * b.s[0].x * float(dot);
}
#elif QTYPE != 12 && QTYPE != 13
#error "mvq-dot-k.comp: q2_K (10), q3_K (11), q4_K (12), q5_K (13), q6_K (14) or iq4_xs (23)"
#endif

#include "mvq-dot-rows.glsl"
