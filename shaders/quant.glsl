// quant.glsl - dequantization of ggml's block formats read from a uint16_t
// array named data_a (declared by the includer).  QTYPE is the ggml type id.
// 32-value blocks: 2 q4_0 (d, 16 nibble bytes), 3 q4_1 (d, m, nibbles),
// 6 q5_0 (d, qh[4], nibbles), 7 q5_1 (d, m, qh[4], nibbles), 8 q8_0 (d, 32 int8);
// elements 0..15 are the low nibbles of bytes 0..15, 16..31 the high nibbles.
// 256-value K-quant super-blocks (byte layouts as in core/quants.h):
// 10 q2_K (scales[16], qs[64], d, dmin), 11 q3_K (hmask[32], qs[64], scales[12], d),
// 12 q4_K (d, dmin, scales[12], qs[128]), 13 q5_K (d, dmin, scales[12], qh[32], qs[128]),
// 14 q6_K (ql[128], qh[64], int8 scales[16], d).  The non-linear 4-bit formats map
// each nibble through ggml's 16-level table: 20 iq4_nl (d, nibbles, as q4_0), 23 iq4_xs
// (d, scales_h, scales_l[4], qs[128]: eight 32-value sub-blocks of 6-bit scales stored
// +32, the low nibbles in scales_l, the top two bits in scales_h).  Every block size but
// one is even, so a block starts on a 16-bit word (sizes in qblock.glsl).  The exception,
// 39 mxfp4 (e, 16 nibble bytes: 17 bytes, mxfp4-levels.glsl), is read as bytes, so w counts
// bytes there.
#include "qblock.glsl"
#if QTYPE == 20 || QTYPE == 23
#include "iq4-levels.glsl"
#elif QTYPE == 39
#include "mxfp4-levels.glsl"
#endif

float q_half(uint w) { return unpackHalf2x16(uint(data_a[w])).x; }

// byte b of the block's quant area starting at word w (at byte w for MXFP4)
#if QTYPE == 39
uint q_byte(uint w, uint b) { return uint(data_a[w + b]); }
#else
uint q_byte(uint w, uint b) { return (uint(data_a[w + b / 2]) >> (8 * (b & 1))) & 0xffu; }
#endif

uint q_nibble(uint w, uint j) { return j < 16 ? q_byte(w, j) & 0xfu : q_byte(w, j - 16) >> 4; }

#if QK == 32
// element j (0..31) of the block starting at word w
float dq(uint w, uint j) {
#if QTYPE == 2
    return q_half(w) * (float(q_nibble(w + 1, j)) - 8.0);
#elif QTYPE == 3
    return q_half(w) * float(q_nibble(w + 2, j)) + q_half(w + 1);
#elif QTYPE == 6
    const uint qh = uint(data_a[w + 1]) | (uint(data_a[w + 2]) << 16);
    return q_half(w) * (float(q_nibble(w + 3, j) | (((qh >> j) & 1u) << 4)) - 16.0);
#elif QTYPE == 7
    const uint qh = uint(data_a[w + 2]) | (uint(data_a[w + 3]) << 16);
    return q_half(w) * float(q_nibble(w + 4, j) | (((qh >> j) & 1u) << 4)) + q_half(w + 1);
#elif QTYPE == 20
    return q_half(w) * IQ4_LEVELS[q_nibble(w + 1, j)];
#elif QTYPE == 39
    return mxfp4_scale(q_byte(w, 0)) * MXFP4_LEVELS[q_nibble(w + 1, j)];
#else
    return q_half(w) * float(int(q_byte(w + 1, j) << 24) >> 24);
#endif
}

// dot of the whole block at word w with 32 consecutive values of data_b at bi
float dq_dot32(uint w, uint bi) {
    float s = 0.0;
#if QTYPE == 2 || QTYPE == 3
    // each 16-bit word holds bytes 2i and 2i+1: low nibbles are elements 2i, 2i+1,
    // high nibbles elements 2i+16, 2i+17; the offset (-8 or +m) is applied once
    const uint qs = w + (QTYPE == 2 ? 1 : 2);
    float bsum = 0.0;
    [[unroll]] for (uint i = 0; i < 8; i++) {
        const uint v = uint(data_a[qs + i]);
        const float x0 = float(data_b[bi + 2 * i]), x1 = float(data_b[bi + 2 * i + 1]); // float(): f16 b too (mm.comp)
        const float x2 = float(data_b[bi + 2 * i + 16]), x3 = float(data_b[bi + 2 * i + 17]);
        s += float(v & 0xfu) * x0 + float((v >> 8) & 0xfu) * x1 + float((v >> 4) & 0xfu) * x2 + float(v >> 12) * x3;
        bsum += (x0 + x1) + (x2 + x3);
    }
#if QTYPE == 2
    return q_half(w) * (s - 8.0 * bsum);
#else
    return q_half(w) * s + q_half(w + 1) * bsum;
#endif
#elif QTYPE == 8
    const float d = q_half(w);
    [[unroll]] for (uint i = 0; i < 16; i++) {
        const uint v = uint(data_a[w + 1 + i]);
        s += float(int(v << 24) >> 24) * float(data_b[bi + 2 * i]) + float(int(v << 16) >> 24) * float(data_b[bi + 2 * i + 1]);
    }
    return d * s;
#elif QTYPE == 39
    // byte i holds elements i (low nibble) and i + 16 (high); the scale is applied once
    [[unroll]] for (uint i = 0; i < 16; i++) {
        const uint v = q_byte(w + 1, i);
        s += MXFP4_LEVELS[v & 0xfu] * float(data_b[bi + i]) + MXFP4_LEVELS[v >> 4] * float(data_b[bi + i + 16]);
    }
    return mxfp4_scale(q_byte(w, 0)) * s;
#else
    [[unroll]] for (uint j = 0; j < 32; j++) s += dq(w, j) * float(data_b[bi + j]);
    return s;
#endif
}
#endif // QK == 32

#if QK == 256
// Q3_K's 16 six-bit scales (stored +32): low nibbles in bytes 0-7 (scales 0-7) and
// their high nibbles (scales 8-15), the top two bits of scale j at bit 2*(j/4) of byte 8+j%4.
int q3k_scale(uint s, uint j) {
    const uint low = j < 8 ? q_byte(s, j) & 0xfu : q_byte(s, j - 8) >> 4;
    return int(low | (((q_byte(s, 8 + j % 4) >> (2 * (j / 4))) & 3u) << 4)) - 32;
}

// Q4_K/Q5_K: scale (x) and min (y) of 32-value sub-block j from the 12 bytes at word s:
// sub-blocks 0-3 in the low 6 bits of bytes 0-3 (scales) and 4-7 (mins); 4-7 as the
// nibbles of bytes 8-11 with their top two bits in the high bits of bytes 0-3 / 4-7.
uvec2 k4_scale_min(uint s, uint j) {
    if (j < 4) return uvec2(q_byte(s, j) & 63u, q_byte(s, j + 4) & 63u);
    return uvec2((q_byte(s, j + 4) & 0xfu) | ((q_byte(s, j - 4) >> 6) << 4), (q_byte(s, j + 4) >> 4) | ((q_byte(s, j) >> 6) << 4));
}

// IQ4_XS: the scale of 32-value sub-block ib of the super-block at word w (6 bits, stored +32)
float iq4xs_scale(uint w, uint ib) {
    const uint ls = ((q_byte(w + 2, ib / 2) >> (4 * (ib % 2))) & 0xfu) | (((uint(data_a[w + 1]) >> (2 * ib)) & 3u) << 4);
    return q_half(w) * float(int(ls) - 32);
}

// element e (0..255) of the super-block starting at word w
float dq(uint w, uint e) {
    const uint half_ = e / 128, l = e % 32, quarter = (e % 128) / 32;
#if QTYPE == 23
    return iq4xs_scale(w, e / 32) * IQ4_LEVELS[q_nibble(w + 4 + 8 * (e / 32), l)];
#elif QTYPE == 10
    const uint sc = q_byte(w, e / 16);
    const uint q = (q_byte(w + 8, 32 * half_ + l) >> (2 * quarter)) & 3u;
    return q_half(w + 40) * float(sc & 0xfu) * float(q) - q_half(w + 41) * float(sc >> 4);
#elif QTYPE == 11
    const uint q = (q_byte(w + 16, 32 * half_ + l) >> (2 * quarter)) & 3u;
    const uint high = (q_byte(w, l) >> (e / 32)) & 1u;
    return q_half(w + 54) * float(q3k_scale(w + 48, e / 16)) * float(int(q) - (high != 0u ? 0 : 4));
#elif QTYPE == 12 || QTYPE == 13
    const uvec2 sm = k4_scale_min(w + 2, e / 32);
#if QTYPE == 12
    const uint q = (q_byte(w + 8, 32 * (e / 64) + l) >> (4 * ((e / 32) & 1u))) & 0xfu;
#else
    const uint q = ((q_byte(w + 24, 32 * (e / 64) + l) >> (4 * ((e / 32) & 1u))) & 0xfu) | (((q_byte(w + 8, l) >> (e / 32)) & 1u) << 4);
#endif
    return q_half(w) * float(sm.x) * float(q) - q_half(w + 1) * float(sm.y);
#else // q6_K
    const uint b = q_byte(w, 64 * half_ + l + 32 * (quarter & 1u));
    const uint low = quarter < 2 ? b & 0xfu : b >> 4;
    const uint high = (q_byte(w + 64, 32 * half_ + l) >> (2 * quarter)) & 3u;
    const int sc = int(q_byte(w + 96, e / 16) << 24) >> 24;
    return q_half(w + 104) * float(sc) * float(int(low | (high << 4)) - 32);
#endif
}

// Dot of the 16 values 16s..16s+15 (slice s, 0..15) of the super-block at word w
// with data_b[bi..bi+16).  In every K-quant a slice comes from 16 consecutive bytes
// (8 words) of each quant array and has one scale (and min), applied once:
// scale * sum(q * b) - offset * sum(b).
float dq_dot16(uint w, uint s, uint bi) {
    const uint pair = 8 * (s & 1u); // second 16 of a 32-value group: 8 words on
    float sq = 0.0, sb = 0.0, scale, offset = 0.0;
#if QTYPE == 23
    // slice s: low (even s) or high (odd s) nibbles of the sub-block's 16 bytes
    scale = iq4xs_scale(w, s / 2);
    [[unroll]] for (uint i = 0; i < 16; i++) sq += IQ4_LEVELS[q_nibble(w + 4 + 8 * (s / 2), 16 * (s & 1u) + i)] * float(data_b[bi + i]);
#elif QTYPE == 10 || QTYPE == 11
    const uint shift = 2 * ((s % 8) / 2);
#if QTYPE == 10
    const uint qs = w + 8 + 16 * (s / 8) + pair, sc = q_byte(w, s);
    scale = q_half(w + 40) * float(sc & 0xfu);
    offset = q_half(w + 41) * float(sc >> 4);
#else
    const uint qs = w + 16 + 16 * (s / 8) + pair, hm = w + pair, hbit = s / 2;
    scale = q_half(w + 54) * float(q3k_scale(w + 48, s));
#endif
    [[unroll]] for (uint i = 0; i < 8; i++) {
        const uint u = uint(data_a[qs + i]) >> shift;
        const float b0 = float(data_b[bi + 2 * i]), b1 = float(data_b[bi + 2 * i + 1]);
#if QTYPE == 10
        sq += float(u & 3u) * b0 + float((u >> 8) & 3u) * b1;
        sb += b0 + b1;
#else
        const uint h = uint(data_a[hm + i]) >> hbit; // a clear high bit means level - 4
        sq += float(int(u & 3u) - int((~h & 1u) << 2)) * b0 + float(int((u >> 8) & 3u) - int((~h >> 6) & 4u)) * b1;
#endif
    }
#elif QTYPE == 12 || QTYPE == 13
    const uint j = s / 2, shift = 4 * (j & 1u);
    const uvec2 sm = k4_scale_min(w + 2, j);
    scale = q_half(w) * float(sm.x);
    offset = q_half(w + 1) * float(sm.y);
#if QTYPE == 12
    const uint qs = w + 8 + 16 * (s / 4) + pair;
#else
    const uint qs = w + 24 + 16 * (s / 4) + pair, qh = w + 8 + pair;
#endif
    [[unroll]] for (uint i = 0; i < 8; i++) {
        const uint u = uint(data_a[qs + i]) >> shift;
        uint q0 = u & 0xfu, q1 = (u >> 8) & 0xfu;
#if QTYPE == 13
        const uint h = uint(data_a[qh + i]) >> j;
        q0 |= (h & 1u) << 4;
        q1 |= (h >> 4) & 16u;
#endif
        const float b0 = float(data_b[bi + 2 * i]), b1 = float(data_b[bi + 2 * i + 1]);
        sq += float(q0) * b0 + float(q1) * b1;
        sb += b0 + b1;
    }
#else // q6_K
    const uint half_ = s / 8, quarter = (s % 8) / 2;
    const uint ql = w + 32 * half_ + 16 * (quarter & 1u) + pair, qh = w + 64 + 16 * half_ + pair;
    const uint lshift = quarter < 2 ? 0u : 4u, hshift = 2 * quarter;
    scale = q_half(w + 104) * float(int(q_byte(w + 96, s) << 24) >> 24);
    [[unroll]] for (uint i = 0; i < 8; i++) {
        const uint u = uint(data_a[ql + i]) >> lshift, h = uint(data_a[qh + i]) >> hshift;
        sq += float(int((u & 0xfu) | ((h & 3u) << 4)) - 32) * float(data_b[bi + 2 * i]) +
              float(int(((u >> 8) & 0xfu) | (((h >> 8) & 3u) << 4)) - 32) * float(data_b[bi + 2 * i + 1]);
    }
#endif
    return scale * sq - offset * sb;
}
#endif // QK == 256

// Values j0..j0+7 (j0 a multiple of 8) of the block at word w into v.  The K-quants in the
// dequantization's hot loop: Q4_K, Q5_K and Q6_K decode their scale (and min) once and read
// the 8 quants as 4 words, where dq() decoded the header again for each value; the same
// arithmetic per value (scale * q - offset, the products in dq's order), so the same results.
void dq8(uint w, uint j0, out float v[8]) {
#if QTYPE == 12 || QTYPE == 13
    const uint sb = j0 / 32, shift = 4 * (sb & 1u);
    const uvec2 sm = k4_scale_min(w + 2, sb);
    const float scale = q_half(w) * float(sm.x), offset = q_half(w + 1) * float(sm.y);
#if QTYPE == 12
    const uint qs = w + 8 + (32 * (j0 / 64) + j0 % 32) / 2;
#else
    const uint qs = w + 24 + (32 * (j0 / 64) + j0 % 32) / 2, qh = w + 8 + (j0 % 32) / 2;
#endif
    [[unroll]] for (uint i = 0; i < 4; i++) {
        const uint u = uint(data_a[qs + i]) >> shift;
        uint q0 = u & 0xfu, q1 = (u >> 8) & 0xfu;
#if QTYPE == 13
        const uint h = uint(data_a[qh + i]) >> sb;
        q0 |= (h & 1u) << 4;
        q1 |= (h >> 4) & 16u;
#endif
        v[2 * i] = scale * float(q0) - offset;
        v[2 * i + 1] = scale * float(q1) - offset;
    }
#elif QTYPE == 14
    const uint half_ = j0 / 128, quarter = (j0 % 128) / 32, l0 = j0 % 32;
    const uint ql = w + (64 * half_ + 32 * (quarter & 1u) + l0) / 2, qh = w + 64 + (32 * half_ + l0) / 2;
    const uint lshift = quarter < 2 ? 0u : 4u, hshift = 2 * quarter;
    const float scale = q_half(w + 104) * float(int(q_byte(w + 96, j0 / 16) << 24) >> 24);
    [[unroll]] for (uint i = 0; i < 4; i++) {
        const uint u = uint(data_a[ql + i]) >> lshift, h = uint(data_a[qh + i]) >> hshift;
        v[2 * i] = scale * float(int((u & 0xfu) | ((h & 3u) << 4)) - 32);
        v[2 * i + 1] = scale * float(int(((u >> 8) & 0xfu) | (((h >> 8) & 3u) << 4)) - 32);
    }
#else
    [[unroll]] for (uint i = 0; i < 8; i++) v[i] = dq(w, j0 + i);
#endif
}
