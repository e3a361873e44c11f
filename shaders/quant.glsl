// quant.glsl - dequantization of ggml's 32-value blocks read from a uint16_t
// array named data_a (declared by the includer).  QTYPE is the ggml type id:
// 2 q4_0 (d, 16 nibble bytes), 3 q4_1 (d, m, nibbles), 6 q5_0 (d, qh[4],
// nibbles), 7 q5_1 (d, m, qh[4], nibbles), 8 q8_0 (d, 32 int8).
// Elements 0..15 are the low nibbles of bytes 0..15, 16..31 the high nibbles.
#if QTYPE == 2
#define QWORDS 9
#elif QTYPE == 3
#define QWORDS 10
#elif QTYPE == 6
#define QWORDS 11
#elif QTYPE == 7
#define QWORDS 12
#else
#define QWORDS 17
#endif

float q_half(uint w) { return unpackHalf2x16(uint(data_a[w])).x; }

// byte b of the block's quant area starting at word w
uint q_byte(uint w, uint b) { return (uint(data_a[w + b / 2]) >> (8 * (b & 1))) & 0xffu; }

uint q_nibble(uint w, uint j) { return j < 16 ? q_byte(w, j) & 0xfu : q_byte(w, j - 16) >> 4; }

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
#else
    return q_half(w) * float(int(q_byte(w + 1, j) << 24) >> 24);
#endif
}

// dot of the whole block at word w with 32 consecutive f32 values of data_b at bi
float dq_dot32(uint w, uint bi) {
    float s = 0.0;
#if QTYPE == 2 || QTYPE == 3
    // each 16-bit word holds bytes 2i and 2i+1: low nibbles are elements 2i, 2i+1,
    // high nibbles elements 2i+16, 2i+17; the offset (-8 or +m) is applied once
    const uint qs = w + (QTYPE == 2 ? 1 : 2);
    float bsum = 0.0;
    [[unroll]] for (uint i = 0; i < 8; i++) {
        const uint v = uint(data_a[qs + i]);
        const float x0 = data_b[bi + 2 * i], x1 = data_b[bi + 2 * i + 1];
        const float x2 = data_b[bi + 2 * i + 16], x3 = data_b[bi + 2 * i + 17];
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
        s += float(int(v << 24) >> 24) * data_b[bi + 2 * i] + float(int(v << 16) >> 24) * data_b[bi + 2 * i + 1];
    }
    return d * s;
#else
    [[unroll]] for (uint j = 0; j < 32; j++) s += dq(w, j) * data_b[bi + j];
    return s;
#endif
}
