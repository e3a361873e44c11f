#version 450
// Matrix-vector product (N <= 8 columns of b) with q4_0, q4_1, q5_0, q5_1, q8_0 or iq4_nl
// weights on 8-bit integer dot products (SPV_KHR_integer_dot_product: one instruction
// per 4 weights), against b already quantized per 32-value block by quantize-q8.comp
// (ggml's Q8_0 rounding, as the CPU backend does it), with each block's sum of quants
// for the offsets (q4_0's 8, q5_0's 16) and the minimums (q4_1, q5_1).
// A thread's unit (mvq-dot.glsl) is one block.  A block starts on any halfword: a
// thread loads the 16-byte words that hold it and shifts its halfwords into place
// with selects (no dynamic register indexing).
#define UNIT_VALUES 32
#include "mvq-dot.glsl"

// a block's halfwords: its header (f16 scale, f16 minimum, 32 high bits), then the quants from QS on
#if QTYPE == 2
#define BLOCK_HALVES 9u  // q4_0: d, 16 bytes of nibbles
#define QS 1u
#elif QTYPE == 3
#define BLOCK_HALVES 10u // q4_1: d, m, nibbles
#define QS 2u
#elif QTYPE == 6
#define BLOCK_HALVES 11u // q5_0: d, the fifth bits, nibbles
#define QS 3u
#elif QTYPE == 7
#define BLOCK_HALVES 12u // q5_1: d, m, the fifth bits, nibbles
#define QS 4u
#elif QTYPE == 8
#define BLOCK_HALVES 17u // q8_0: d, 32 signed bytes
#define QS 1u
#elif QTYPE == 20
#define BLOCK_HALVES 9u  // iq4_nl: d, 16 bytes of nibbles (level indices)
#define QS 1u
#else
#error "mvq-dot.comp: q4_0 (2), q4_1 (3), q5_0 (6), q5_1 (7), q8_0 (8) or iq4_nl (20)"
#endif
#define WINDOW ((BLOCK_HALVES + 14u) / 8u) // 16-byte words holding a block at any halfword offset
#define WWORDS (4 * WINDOW)
#define HW_WORDS ((BLOCK_HALVES + 1u) / 2u) // 32-bit words from the block's first halfword on
#define QWORDS (QTYPE == 8 ? 8u : 4u)      // 32-bit words of quants

layout(binding = 0) readonly buffer A { uvec4 data_a[]; }; // offsets and strides in halfwords

// The block starting at halfword x of a, as words from its first halfword on (past its end: junk).
void block_halves(uint x, out uint hw[HW_WORDS]) {
    uint w[WWORDS + 4];
    [[unroll]] for (uint v = 0; v < WINDOW; v++) {
        const uvec4 u = data_a[(x >> 3) + v];
        w[4 * v] = u.x; w[4 * v + 1] = u.y; w[4 * v + 2] = u.z; w[4 * v + 3] = u.w;
    }
    [[unroll]] for (uint i = WWORDS; i < WWORDS + 4; i++) w[i] = 0u;
    const uint h = x & 7u;
    // shift the window down by h halfwords: 2 words, 1 word, then 16 bits
    uint t[HW_WORDS + 2], u[HW_WORDS + 1];
    [[unroll]] for (uint i = 0; i < HW_WORDS + 2; i++) t[i] = (h & 4u) != 0 ? w[i + 2] : w[i];
    [[unroll]] for (uint i = 0; i < HW_WORDS + 1; i++) u[i] = (h & 2u) != 0 ? t[i + 1] : t[i];
    const bool odd = (h & 1u) != 0;
    [[unroll]] for (uint i = 0; i < HW_WORDS; i++) hw[i] = odd ? (u[i] >> 16) | (u[i + 1] << 16) : u[i];
}

// The 32-bit word of the block starting at its halfword `at` (a constant)
uint word_at(const uint hw[HW_WORDS], const uint at) {
    return (at & 1u) != 0 ? (hw[at / 2] >> 16) | (hw[at / 2 + 1] << 16) : hw[at / 2];
}

// four bits, one per byte (bit i to bit 8 i)
uint spread4(uint bits) {
    return (bits * 0x00204081u) & 0x01010101u;
}

// The integer dot product of a block's quants (the nibbles with their fifth bits qh for
// q5_0 / q5_1, as stored: offset by 8 or 16) with b's block (values 0-15 in lo, 16-31 in hi).
int block_dot(const uint hw[HW_WORDS], const uint qh, const uvec4 lo, const uvec4 hi) {
    int s = 0;
#if QTYPE == 8
    [[unroll]] for (uint i = 0; i < 4; i++) {
        s += dot4x8(word_at(hw, QS + 2 * i), lo[i], 0);
        s += dot4x8(word_at(hw, QS + 2 * (i + 4)), hi[i], 0);
    }
#elif QTYPE == 20
    [[unroll]] for (uint i = 0; i < 4; i++) {
        uint q_lo, q_hi;
        nibble_levels(word_at(hw, QS + 2 * i), q_lo, q_hi);
        s += dot4x8(q_lo, lo[i], 0);
        s += dot4x8(q_hi, hi[i], 0);
    }
#else
    [[unroll]] for (uint i = 0; i < 4; i++) {
        const uint q = word_at(hw, QS + 2 * i);
        uint q_lo = q & 0x0f0f0f0fu, q_hi = (q >> 4) & 0x0f0f0f0fu;
#if QTYPE == 6 || QTYPE == 7
        q_lo |= spread4((qh >> (4 * i)) & 15u) << 4;
        q_hi |= spread4((qh >> (16 + 4 * i)) & 15u) << 4;
#endif
        s += dot4x8(q_lo, lo[i], 0);
        s += dot4x8(q_hi, hi[i], 0);
    }
#endif
    return s;
}

// The block's share of d: its integer dot with b's block (scale and sum of quants sb) scaled
float block_term(const uint hw[HW_WORDS], const uvec4 lo, const uvec4 hi, const vec2 sb) {
    const vec2 dm = unpackHalf2x16(hw[0]); // d, and m for q4_1 / q5_1
#if QTYPE == 6 || QTYPE == 7
    const int dot = block_dot(hw, word_at(hw, QTYPE == 6 ? 1u : 2u), lo, hi);
#else
    const int dot = block_dot(hw, 0u, lo, hi);
#endif
#if QTYPE == 2
    return dm.x * sb.x * float(dot - 8 * int(sb.y));
#elif QTYPE == 6
    return dm.x * sb.x * float(dot - 16 * int(sb.y));
#elif QTYPE == 3 || QTYPE == 7
    return sb.x * (dm.x * float(dot) + dm.y * sb.y);
#else
    return dm.x * sb.x * float(dot);
#endif
}

struct unit {
    uint hw[HW_WORDS];
};

void unit_load(uint row, uint u, out unit x) {
    block_halves(row + u * BLOCK_HALVES, x.hw);
}

float unit_term(const unit x, uint u, const b_blocks b) {
    return block_term(x.hw, b.q[0], b.q[1], b.s[0]);
}

#include "mvq-dot-rows.glsl"
