// quantize.glsl - encoding 32 f32 values into one of ggml's 32-value block formats,
// written as 16-bit words into a uint16_t array named data_d (declared by the includer).
// QTYPE is the ggml type id: 2 q4_0, 3 q4_1, 6 q5_0, 7 q5_1, 8 q8_0, 20 iq4_nl (layouts in
// quant.glsl).
// The arithmetic follows the CPU reference quantizer (core/quants.c) step for step, with
// products rounded on their own (rounded() below) and f16 scales rounded to nearest even by
// hand, so the device produces the CPU's bytes.
// The includer defines QUANT_OPAQUE_ZERO: a uint that is 0 at run time but unknown to the
// compiler (a push word the host leaves 0).
#include "qblock.glsl"
#if QTYPE == 3 || QTYPE == 7
#define QSCALE_WORDS 2
#else
#define QSCALE_WORDS 1
#endif

// f32 -> f16 bits, round to nearest even (subnormals too); overflow gives infinity
uint f32_to_f16_rne(float v) {
    const uint u = floatBitsToUint(v);
    const uint sign = (u >> 16) & 0x8000u;
    const uint a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7e00u;
    if (a >= 0x477ff000u) return sign | 0x7c00u; // rounds past the largest half
    if (a < 0x38800000u) {                       // a half subnormal (or zero)
        const uint m = (a & 0x7fffffu) | 0x800000u, shift = 126u - (a >> 23);
        if (shift > 24u) return sign;
        const uint h = m >> shift, rest = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
        return sign | (h + uint(rest > halfway || (rest == halfway && (h & 1u) != 0u)));
    }
    const uint r = a - 0x38000000u; // rebias the exponent from 127 to 15
    return sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13);
}

// v as it stands, a float rounded once: OR-ing in a zero the compiler cannot see makes a product
// the input of an integer operation, so that no driver can fuse it with the add or subtract
// that follows.  NoContraction (precise) should be enough, but NVIDIA's driver (580) and Mesa
// 26's lavapipe fuse such operations anyway: x * id + 8.5 then truncated differently from the
// CPU, in 6 of 32768 q4_0 blocks of f16 inputs on an H200.
float rounded(float v) { return uintBitsToFloat(floatBitsToUint(v) | QUANT_OPAQUE_ZERO); }

// a / b correctly rounded in practice even where the device's division is not
// (Vulkan allows 2.5 ulp): one remainder step corrects the quotient.  The remainder
// a - q b is computed exactly from rounded products and sums (Dekker's product, with
// Veltkamp's split by 2^12 + 1), not with fma(), which SPIR-V does not promise to fuse
// (lavapipe does not, and the quotient then came out 1 ulp off in about 1 block in
// 20000 of f16 inputs); the products that a fused add would change are rounded().  Quotients too large to split (only from subnormal scales), infinite
// or NaN are returned as they are.
float div_rn(float a, float b) {
    const float q = a / b;
    if (!(abs(q) < 1.0e30)) return q;
    precise const float p = rounded(q * b);
    precise const float cq = rounded(4097.0 * q), qh = cq - (cq - q), ql = q - qh;
    precise const float cb = rounded(4097.0 * b), bh = cb - (cb - b), bl = b - bh;
    precise const float e = ((qh * bh - p) + qh * bl + ql * bh) + ql * bl; // q b = p + e exactly
    precise const float r = (a - p) - e;
    precise const float c = q + rounded(r * (1.0 / b));
    return c;
}

// C's (int)x for the in-range values the encoders produce: truncation toward zero
int trunc_int(float x) { return int(x); }

// C's roundf: halfway cases away from zero
float round_away(float x) {
    const float t = trunc(x);
    return abs(x - t) >= 0.5 ? t + sign(x) : t;
}

// Pack 32 levels (0..15, or 0..31 with the fifth bit in qh) at word w of data_d.
void put_nibbles(uint w, int L[32]) {
    [[unroll]] for (uint i = 0; i < 8; i++) {
        const uint b0 = uint(L[2 * i] & 15) | (uint(L[2 * i + 16] & 15) << 4);
        const uint b1 = uint(L[2 * i + 1] & 15) | (uint(L[2 * i + 17] & 15) << 4);
        data_d[w + i] = uint16_t(b0 | (b1 << 8));
    }
}

void put_high_bits(uint w, int L[32]) {
    uint qh = 0u;
    [[unroll]] for (uint j = 0; j < 32; j++) qh |= uint((L[j] >> 4) & 1) << j;
    data_d[w] = uint16_t(qh & 0xffffu);
    data_d[w + 1] = uint16_t(qh >> 16);
}

#if QTYPE == 20
// IQ4_NL: the scale that fits ggml's 16 levels best (weights x^2) among -max/127 and 15 inverse
// scales near it, then each value's nearest level; core/quants-iq.c's search, operation for operation.
#include "iq4-levels.glsl"

// index of the level nearest to v (ties go up)
int iq4_nearest(float v) {
    if (v <= IQ4_LEVELS[0]) return 0;
    if (v >= IQ4_LEVELS[15]) return 15;
    int lo = 0, hi = 15;
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (v < IQ4_LEVELS[mid]) hi = mid;
        else lo = mid;
    }
    precise const float below = v - IQ4_LEVELS[hi - 1], above = IQ4_LEVELS[hi] - v;
    return below < above ? hi - 1 : hi;
}

// sum of w q x and of w q q over the block's levels q for the inverse scale id
vec2 iq4_fit(float x[32], float wt[32], float id) {
    precise float sqx = 0.0, sq2 = 0.0;
    for (uint j = 0; j < 32; j++) {
        precise const float s = rounded(id * x[j]);
        const float q = IQ4_LEVELS[iq4_nearest(s)];
        precise const float wq = wt[j] * q;
        precise const float tx = rounded(wq * x[j]), tq = rounded(wq * q);
        sqx = sqx + tx;
        sq2 = sq2 + tq;
    }
    return vec2(sqx, sq2);
}

float iq4_scale(float x[32]) {
    float wt[32], amax = 0.0, vmax = 0.0;
    for (uint j = 0; j < 32; j++) {
        precise const float sq = x[j] * x[j];
        wt[j] = sq;
        if (abs(x[j]) > amax) { amax = abs(x[j]); vmax = x[j]; }
    }
    if (amax < 1e-15) return 0.0;
    const float d0 = div_rn(-vmax, IQ4_LEVELS[0]);
    vec2 f = iq4_fit(x, wt, div_rn(1.0, d0));
    float d = div_rn(f.x, f.y);
    precise float best = d * f.x;
    for (int itry = -7; itry <= 7; itry++) {
        f = iq4_fit(x, wt, div_rn(float(itry - 127), vmax));
        precise const float gain = rounded(f.x * f.x), bar = rounded(best * f.y);
        if (f.y > 0.0 && gain > bar) {
            d = div_rn(f.x, f.y);
            best = d * f.x;
        }
    }
    return d;
}
#endif

void quantize_block(uint w, float x[32]) {
    int L[32];
#if QTYPE == 20
    const float d = iq4_scale(x);
    data_d[w] = uint16_t(f32_to_f16_rne(d));
    const float id = d != 0.0 ? div_rn(1.0, d) : 0.0;
    [[unroll]] for (uint j = 0; j < 32; j++) {
        precise const float s = rounded(id * x[j]);
        L[j] = iq4_nearest(s);
    }
#elif QTYPE == 2 || QTYPE == 6 || QTYPE == 8
    float amax = 0.0, vmax = 0.0; // the signed extreme, first on ties
    [[unroll]] for (uint j = 0; j < 32; j++)
        if (abs(x[j]) > amax) { amax = abs(x[j]); vmax = x[j]; }
#if QTYPE == 2
    const float d = vmax / -8.0, bias = 8.5, top = 15.0;
#elif QTYPE == 6
    const float d = vmax / -16.0, bias = 16.5, top = 31.0;
#else
    const float d = div_rn(amax, 127.0);
#endif
    const float id = d != 0.0 ? div_rn(1.0, d) : 0.0;
    data_d[w] = uint16_t(f32_to_f16_rne(d));
    [[unroll]] for (uint j = 0; j < 32; j++) {
        precise float s = rounded(x[j] * id);
#if QTYPE == 8
        L[j] = int(round_away(s));
#else
        precise float t = s + bias;
        L[j] = min(trunc_int(t), int(top));
#endif
    }
#else
    float lo = x[0], hi = x[0];
    [[unroll]] for (uint j = 1; j < 32; j++) { lo = min(lo, x[j]); hi = max(hi, x[j]); }
    precise float range = hi - lo;
#if QTYPE == 3
    const float d = div_rn(range, 15.0);
#else
    const float d = div_rn(range, 31.0);
#endif
    const float id = d != 0.0 ? div_rn(1.0, d) : 0.0;
    data_d[w] = uint16_t(f32_to_f16_rne(d));
    data_d[w + 1] = uint16_t(f32_to_f16_rne(lo));
    [[unroll]] for (uint j = 0; j < 32; j++) {
        precise float s = rounded((x[j] - lo) * id);
        precise float t = s + 0.5;
#if QTYPE == 3
        L[j] = min(trunc_int(t), 15);
#else
        L[j] = trunc_int(t);
#endif
    }
#endif
#if QTYPE == 2 || QTYPE == 3 || QTYPE == 20
    put_nibbles(w + QSCALE_WORDS, L);
#elif QTYPE == 6 || QTYPE == 7
    put_high_bits(w + QSCALE_WORDS, L);
    put_nibbles(w + QSCALE_WORDS + 2, L);
#else
    [[unroll]] for (uint i = 0; i < 16; i++)
        data_d[w + 1 + i] = uint16_t(uint(L[2 * i] & 255) | (uint(L[2 * i + 1] & 255) << 8));
#endif
}
