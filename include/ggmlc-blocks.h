/*
 * ggmlc-blocks.h - the byte layouts of ggml's quantized types, and the scalar
 * conversions of its half-precision types, for backend plugins.
 *
 * These are stable data, not library internals: the block structs are byte for
 * byte those of ggml's GGUF files (little-endian, no padding), so a tensor
 * written by ggml loads into ggmlc and the other way round.  A plugin that
 * computes on quantized tensors reads their blocks through these types;
 * the sizes are pinned by static assertions below, and ggml_type_size()
 * gives the same numbers at run time.
 *
 * Everything here is a macro, a type, a constant table or a static inline
 * function: including the header adds no link-time dependency.
 */
#ifndef GGMLC_BLOCKS_H
#define GGMLC_BLOCKS_H

#include <stdint.h>
#include <string.h>

#include "ggml.h"

#ifdef __cplusplus
extern "C" {
#    define GGMLC_BLOCKS_ASSERT(cond, msg) static_assert(cond, msg)
#else
#    define GGMLC_BLOCKS_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

/* ------------------------------------------------------ block lengths */

/* Values per block of each type (QK_K: per super-block of the k-quants). */
#define QK4_0    32
#define QK4_1    32
#define QK5_0    32
#define QK5_1    32
#define QK8_0    32
#define QK8_1    32
#define QK4_NL   32
#define QK_MXFP4 32
#define QK1_0    128
#define QK2_0    64
#define QK_NVFP4 64
#define QK_NVFP4_SUB 16 /* values per UE4M3 scale of NVFP4 */
#ifndef QK_K
#    define QK_K 256
#endif
/* Bytes of the packed 6-bit scales and mins of Q4_K and Q5_K. */
#define K_SCALE_SIZE 12

/* ---------------------------------------------------- 32-value blocks */

typedef struct {
    ggml_fp16_t d;
    uint8_t qs[QK4_0 / 2];
} block_q4_0; /* x = d * (q - 8) */
typedef struct {
    ggml_fp16_t d, m;
    uint8_t qs[QK4_1 / 2];
} block_q4_1; /* x = d * q + m */
typedef struct {
    ggml_fp16_t d;
    uint8_t qh[4];
    uint8_t qs[QK5_0 / 2];
} block_q5_0; /* 5th bit in qh */
typedef struct {
    ggml_fp16_t d, m;
    uint8_t qh[4];
    uint8_t qs[QK5_1 / 2];
} block_q5_1;
typedef struct {
    ggml_fp16_t d;
    int8_t qs[QK8_0];
} block_q8_0;
typedef struct {
    ggml_fp16_t d, s;
    int8_t qs[QK8_1];
} block_q8_1; /* s = d * sum(qs) */
typedef struct {
    ggml_fp16_t d;
    uint8_t qs[QK4_NL / 2];
} block_iq4_nl; /* x = d * table[q] */
typedef struct {
    uint8_t e;
    uint8_t qs[QK_MXFP4 / 2];
} block_mxfp4; /* E8M0 scale, E2M1 values */

/* Blocks of ggml's newest types (reference conversions in core/quants-lowbit.c). */
typedef struct {
    ggml_fp16_t d;
    uint8_t qs[QK1_0 / 8];
} block_q1_0; /* 1 bit per value */
typedef struct {
    ggml_fp16_t d;
    uint8_t qs[QK2_0 / 4];
} block_q2_0; /* 2 bits per value */
typedef struct {
    uint8_t d[QK_NVFP4 / QK_NVFP4_SUB];
    uint8_t qs[QK_NVFP4 / 2];
} block_nvfp4; /* UE4M3 scales, E2M1 values */

/* ---------------------------------------------- 256-value super-blocks */

typedef struct {
    uint8_t scales[QK_K / 16]; /* 4-bit scale and 4-bit min per 16 values */
    uint8_t qs[QK_K / 4];      /* 2-bit levels */
    ggml_fp16_t d, dmin;
} block_q2_K;
typedef struct {
    uint8_t hmask[QK_K / 8]; /* high bit of each level */
    uint8_t qs[QK_K / 4];    /* low 2 bits */
    uint8_t scales[12];      /* 6-bit scales, packed */
    ggml_fp16_t d;
} block_q3_K;
typedef struct {
    ggml_fp16_t d, dmin;
    uint8_t scales[K_SCALE_SIZE]; /* 6-bit scales and mins, packed */
    uint8_t qs[QK_K / 2];
} block_q4_K;
typedef struct {
    ggml_fp16_t d, dmin;
    uint8_t scales[K_SCALE_SIZE];
    uint8_t qh[QK_K / 8]; /* 5th bit of each level */
    uint8_t qs[QK_K / 2];
} block_q5_K;
typedef struct {
    uint8_t ql[QK_K / 2];     /* low 4 bits */
    uint8_t qh[QK_K / 4];     /* high 2 bits */
    int8_t scales[QK_K / 16]; /* 8-bit scale per 16 values */
    ggml_fp16_t d;
} block_q6_K;
typedef struct {
    float d; /* the only float scale: an intermediate type of dot products */
    int8_t qs[QK_K];
    int16_t bsums[QK_K / 16]; /* sums of qs per 16 values */
} block_q8_K;
typedef struct {
    ggml_fp16_t d;
    uint16_t scales_h;           /* high 2 bits of the eight 6-bit scales */
    uint8_t scales_l[QK_K / 64]; /* low 4 bits */
    uint8_t qs[QK_K / 2];
} block_iq4_xs;

GGMLC_BLOCKS_ASSERT(sizeof(block_q4_0) == 18 && sizeof(block_q4_1) == 20, "q4 block size");
GGMLC_BLOCKS_ASSERT(sizeof(block_q5_0) == 22 && sizeof(block_q5_1) == 24, "q5 block size");
GGMLC_BLOCKS_ASSERT(sizeof(block_q8_0) == 34 && sizeof(block_q8_1) == 36, "q8 block size");
GGMLC_BLOCKS_ASSERT(sizeof(block_iq4_nl) == 18 && sizeof(block_mxfp4) == 17,
                    "iq4_nl/mxfp4 block size");
GGMLC_BLOCKS_ASSERT(sizeof(block_q2_K) == 84 && sizeof(block_q3_K) == 110, "q2_K/q3_K block size");
GGMLC_BLOCKS_ASSERT(sizeof(block_q4_K) == 144 && sizeof(block_q5_K) == 176, "q4_K/q5_K block size");
GGMLC_BLOCKS_ASSERT(sizeof(block_q6_K) == 210 && sizeof(block_q8_K) == 292, "q6_K/q8_K block size");
GGMLC_BLOCKS_ASSERT(sizeof(block_iq4_xs) == 136, "iq4_xs block size");
GGMLC_BLOCKS_ASSERT(sizeof(block_q1_0) == 18 && sizeof(block_q2_0) == 18 &&
                        sizeof(block_nvfp4) == 36,
                    "q1_0/q2_0/nvfp4 block size");

/* ------------------------------------------------------ level tables */

/* The 16 levels a nibble of IQ4_NL and IQ4_XS stands for (times the block scale). */
static const int8_t ggmlc_kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                               1,    13,   25,  38,  53,  69,  89,  113};
/* The E2M1 values {0, 0.5, 1, 1.5, 2, 3, 4, 6} and their negatives, doubled to integers
 * (MXFP4); ggmlc_e8m0_to_fp32_half() gives the matching halved scale. */
static const int8_t ggmlc_kvalues_mxfp4[16] = {0, 1,  2,  3,  4,  6,  8,  12,
                                               0, -1, -2, -3, -4, -6, -8, -12};

/* ------------------------------------------------- scalar conversions */

/* The float an E8M0 exponent byte stands for, halved (the MXFP4 levels above are doubled). */
static inline float ggmlc_e8m0_to_fp32_half(uint8_t e) {
    /* e < 2 gives a subnormal float; otherwise the exponent field is e - 1 */
    const uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* NVFP4's scale byte, unsigned E4M3 (4 exponent bits, bias 7, 3 mantissa bits, exponent 0
 * subnormal), halved like the MXFP4 scale since the E2M1 levels are doubled. 0x7F (E4M3's
 * NaN) reads as 0, as in ggml. */
static inline float ggmlc_ue4m3_to_fp32_half(uint8_t u) {
    const int exponent = (u >> 3) & 0xF, mantissa = u & 0x7;
    if (u == 0 || u == 0x7F) return 0.0f;
    if (exponent == 0) return 0.5f * (float)mantissa / 512.0f;
    /* (1 + m/8) * 2^(e-7) = (8 + m) * 2^(e-10), the power of two built from its bits */
    const uint32_t step_bits = (uint32_t)(exponent - 10 + 127) << 23;
    float step;
    memcpy(&step, &step_bits, sizeof step);
    return 0.5f * (float)(8 + mantissa) * step;
}

/* The UE4M3 byte nearest above-half to x (ggml's rule: the fp32 mantissa's top 3 bits plus
 * its 4th bit as the rounding bit); x <= 0 or NaN gives 0, x >= 448 the largest, 0x7E. */
static inline uint8_t ggmlc_fp32_to_ue4m3(float x) {
    if (!(x > 0.0f)) return 0;
    x = x > 448.0f ? 448.0f : x;
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    int exponent = (int)((bits >> 23) & 0xFF) - 127 + 7;
    if (exponent <= 0) { /* subnormal: mantissa steps of 2^-9 */
        const int mantissa = (int)(x * 512.0f + 0.5f);
        return (uint8_t)(mantissa < 1 ? 0 : mantissa > 7 ? 7 : mantissa);
    }
    int mantissa = (int)((bits >> 20) & 0x7) + (int)((bits >> 19) & 1);
    if (mantissa > 7) { mantissa = 0; exponent++; }
    if (exponent >= 15) return 0x7E;
    return (uint8_t)(exponent << 3 | mantissa);
}

/* IEEE half to float, exact (subnormals, infinities and NaN included); the inline twin of
 * ggml_fp16_to_fp32() for inner loops. */
static inline float ggmlc_fp16_to_fp32(ggml_fp16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            exp = 127 - 15 + 1;
            while (!(mant & 0x400)) {
                mant <<= 1;
                exp--;
            }
            bits = sign | (exp << 23) | ((mant & 0x3ff) << 13);
        }
    } else if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Float to IEEE half, rounding to nearest even; overflow gives infinity, NaN stays a
 * quiet NaN.  The inline twin of ggml_fp32_to_fp16(). */
static inline ggml_fp16_t ggmlc_fp32_to_fp16(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    const uint32_t sign = (x >> 16) & 0x8000;
    const uint32_t absx = x & 0x7fffffffu;
    if (absx > 0x7f800000u) return (ggml_fp16_t)(sign | 0x7e00 | ((absx >> 13) & 0x3ff)); /* NaN */
    if (absx >= 0x477ff000u) return (ggml_fp16_t)(sign | 0x7c00); /* overflow -> inf */
    if (absx < 0x38800000u) {                                     /* subnormal or zero */
        if (absx < 0x33000000u) return (ggml_fp16_t)sign;
        const uint32_t e = absx >> 23, m = (absx & 0x7fffff) | 0x800000;
        const uint32_t shift = 126 - e; /* 14 + (113 - e) - 1 */
        uint32_t r = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1))) r++;
        return (ggml_fp16_t)(sign | r);
    }
    uint32_t r = ((absx - 0x38000000u) >> 13);
    const uint32_t rem = absx & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) r++;
    return (ggml_fp16_t)(sign | r);
}

/* bfloat16 to float, exact. */
static inline float ggmlc_bf16_to_fp32(ggml_bf16_t h) {
    const uint32_t bits = (uint32_t)h.bits << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Float to bfloat16, rounding to nearest even; NaN stays a quiet NaN. */
static inline ggml_bf16_t ggmlc_fp32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    ggml_bf16_t h;
    if ((x & 0x7fffffffu) > 0x7f800000u) { /* NaN: keep it a quiet NaN */
        h.bits = (uint16_t)((x >> 16) | 64);
        return h;
    }
    h.bits = (uint16_t)((x + (0x7fff + ((x >> 16) & 1))) >> 16);
    return h;
}

#ifdef __cplusplus
}
#endif

#endif /* GGMLC_BLOCKS_H */
