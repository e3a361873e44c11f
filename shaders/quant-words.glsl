// quant-words.glsl - dot products of one 32-value quantized block (ggml's
// layouts, see quant.glsl) with 32 floats, the block read from a shared-memory
// copy of its rows held in 32-bit words.  The includer declares
//   shared uint sa[];   (the staged words)      float xb[32];   (the b values)
// A block starts at halfword `par` (0 or 1) of word sa[i0]; par is passed as a
// literal so that each call compiles to straight-line code.
// Quants become floats through quant-float.glsl (CONVERT).
// Adding a type: a dot_<type> function and a case in block_dot().

#include "quant-float.glsl"

// 16 bits at halfword o of the block
uint hw16(uint i0, uint par, uint o) {
    const uint h = par + o;
    return (sa[i0 + (h >> 1)] >> (16 * (h & 1u))) & 0xffffu;
}

// 32 bits starting at halfword o of the block
uint hw32(uint i0, uint par, uint o) {
    const uint h = par + o, lo = sa[i0 + (h >> 1)];
    return (h & 1u) == 0u ? lo : (lo >> 16) | (sa[i0 + (h >> 1) + 1] << 16);
}

float half_at(uint i0, uint par, uint o) { return unpackHalf2x16(hw16(i0, par, o)).x; }


// sum over the 16 bytes of quant words at halfwords o, o+2, o+4, o+6: low
// nibble of byte i times xb[i] and high nibble times xb[i + 16], each nibble
// minus `offset` (exact: everything is a small integer until the multiply)
float nibble_dot(uint i0, uint par, uint o, float offset) {
    float s0 = 0.0, s1 = 0.0;
    [[unroll]] for (uint j = 0; j < 4; j++) {
        const uint q = hw32(i0, par, o + 2 * j);
        const uint lo = q & 0x0f0f0f0fu, hi = (q >> 4) & 0x0f0f0f0fu;
        [[unroll]] for (uint k = 0; k < 4; k++) {
            s0 = fma(quant_f((lo >> (8 * k)) & 0xffu, offset), xb[4 * j + k], s0);
            s1 = fma(quant_f((hi >> (8 * k)) & 0xffu, offset), xb[16 + 4 * j + k], s1);
        }
    }
    return s0 + s1;
}

// as nibble_dot, with the fifth bit of element i taken from bit i of qh
float nibble5_dot(uint i0, uint par, uint o, uint qh, float offset) {
    float s0 = 0.0, s1 = 0.0;
    [[unroll]] for (uint j = 0; j < 4; j++) {
        const uint q = hw32(i0, par, o + 2 * j);
        [[unroll]] for (uint k = 0; k < 4; k++) {
            const uint e = 4 * j + k;
            const uint lo = ((q >> (8 * k)) & 0xfu) | (((qh >> e) << 4) & 0x10u);
            const uint hi = ((q >> (8 * k + 4)) & 0xfu) | (((qh >> (e + 16)) << 4) & 0x10u);
            s0 = fma(quant_f(lo, offset), xb[e], s0);
            s1 = fma(quant_f(hi, offset), xb[16 + e], s1);
        }
    }
    return s0 + s1;
}

float dot_q4_0(uint i0, uint par) { return half_at(i0, par, 0) * nibble_dot(i0, par, 1, 8.0); }
float dot_q4_1(uint i0, uint par, float xsum) {
    return half_at(i0, par, 0) * nibble_dot(i0, par, 2, 0.0) + half_at(i0, par, 1) * xsum;
}
float dot_q5_0(uint i0, uint par) { return half_at(i0, par, 0) * nibble5_dot(i0, par, 3, hw32(i0, par, 1), 16.0); }
float dot_q5_1(uint i0, uint par, float xsum) {
    return half_at(i0, par, 0) * nibble5_dot(i0, par, 4, hw32(i0, par, 2), 0.0) + half_at(i0, par, 1) * xsum;
}

// q8_0: signed bytes; XOR 0x80 makes them v + 128 in 0..255 for the magic conversion
float dot_q8_0(uint i0, uint par) {
    float s0 = 0.0, s1 = 0.0;
    [[unroll]] for (uint j = 0; j < 8; j++) {
        const uint q = hw32(i0, par, 1 + 2 * j);
        [[unroll]] for (uint k = 0; k < 4; k++) {
            const float v = CONVERT == 1 ? float(bitfieldExtract(int(q), int(8 * k), 8))
                                         : quant_f(((q ^ 0x80808080u) >> (8 * k)) & 0xffu, 128.0);
            if (k % 2 == 0) s0 = fma(v, xb[4 * j + k], s0);
            else s1 = fma(v, xb[4 * j + k], s1);
        }
    }
    return half_at(i0, par, 0) * (s0 + s1);
}

// QTYPE's block at halfword par of sa[i0]; xsum = the sum of xb (types with a min)
float block_dot(uint i0, uint par, float xsum) {
#if QTYPE == 2
    return dot_q4_0(i0, par);
#elif QTYPE == 3
    return dot_q4_1(i0, par, xsum);
#elif QTYPE == 6
    return dot_q5_0(i0, par);
#elif QTYPE == 7
    return dot_q5_1(i0, par, xsum);
#elif QTYPE == 8
    return dot_q8_0(i0, par);
#else
#error "quant-words.glsl: no block_dot for this QTYPE"
#endif
}
