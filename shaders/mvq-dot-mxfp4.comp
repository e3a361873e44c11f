#version 450
// Matrix-vector product (N <= 8 columns of b) with MXFP4 weights on 8-bit integer dot
// products, as mvq-dot.comp does for the other 32-value formats: b quantized per 32-value
// block by quantize-q8.comp, each nibble's doubled E2M1 level by arithmetic (e2m1_levels;
// MXFP4_TABLE: mvq-dot.glsl's shared table), one OpSDot per 4 weights, the block's scale 2^(e - 128) times b's applied once.
// A thread's unit is one block: 17 bytes at any byte, so it lies in the two 16-byte words
// from the one holding its first byte on; a thread loads them and shifts its 16 quant bytes
// into four words with selects and one funnel shift (no dynamic register indexing), and
// takes the exponent byte through a byte view of the same binding.
#define UNIT_VALUES 32
#include "mvq-dot.glsl"
#include "mxfp4-levels.glsl" // mxfp4_scale

layout(binding = 0) readonly buffer A { uvec4 data_a[]; };     // offsets and strides in bytes
layout(binding = 0) readonly buffer A8 { uint8_t data_a8[]; }; // the same bytes: the exponents

struct unit {
    uint e;    // the exponent byte
    uint q[4]; // the 16 quant bytes: byte j holds element j (low nibble) and j + 16 (high)
};

// block u of the row at byte row of a
void unit_load(uint row, uint u, out unit x) {
    const uint at = row + u * 17u, s = (at & 15u) + 1u; // s: the quants' first byte in the window (1..16)
    const uvec4 w0 = data_a[at >> 4], w1 = data_a[(at >> 4) + 1u];
    const uint w[12] = uint[12](w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w, 0u, 0u, 0u, 0u);
    // down by s bytes: 4, 2 and 1 words as s's bits say, then s % 4 bytes
    uint a[8], b[6], c[5];
    [[unroll]] for (uint i = 0; i < 8; i++) a[i] = (s & 16u) != 0 ? w[i + 4] : w[i];
    [[unroll]] for (uint i = 0; i < 6; i++) b[i] = (s & 8u) != 0 ? a[i + 2] : a[i];
    [[unroll]] for (uint i = 0; i < 5; i++) c[i] = (s & 4u) != 0 ? b[i + 1] : b[i];
    const uint k = 8u * (s & 3u);
    [[unroll]] for (uint i = 0; i < 4; i++) x.q[i] = k == 0u ? c[i] : (c[i] >> k) | (c[i + 1] << (32u - k));
    x.e = uint(data_a8[at]);
}

// The doubled E2M1 values of the nibbles in bits 0-3 of each byte of q (the rest ignored), as 4
// int8, by arithmetic instead of the shared table (whose lookups at random bytes collide in its
// banks): magnitude m (bits 0-2) is m below 4, 2 m - 4 for 4 and 5, 4 m - 16 for 6 and 7, that is
// m plus m & 3 where bit 2 is set plus 2 more for 7; bit 3 negates it (0x80 - m does not borrow
// across bytes for m <= 12, and xor 0x80 then gives 256 - m, or 0 for 0).
uint e2m1_levels(const uint q) {
    const uint m = q & 0x07070707u, big = (m >> 2) & 0x01010101u, seven = big & (m >> 1) & m;
    const uint mag = m + ((m & 0x03030303u) & (big * 255u)) + (seven << 1);
    const uint neg = ((q >> 3) & 0x01010101u) * 255u, negated = (0x80808080u - mag) ^ 0x80808080u;
    return (mag & ~neg) | (negated & neg);
}

float unit_term(const unit x, uint u, const b_blocks b) {
    int dot = 0;
    [[unroll]] for (uint i = 0; i < 4; i++) {
#ifdef MXFP4_TABLE
        uint lo, hi;
        nibble_levels(x.q[i], lo, hi);
#else
        const uint lo = e2m1_levels(x.q[i]), hi = e2m1_levels(x.q[i] >> 4);
#endif
        dot += dot4x8(lo, b.q[0][i], 0) + dot4x8(hi, b.q[1][i], 0);
    }
    return mxfp4_scale(x.e) * b.s[0].x * float(dot);
}

#include "mvq-dot-rows.glsl"
