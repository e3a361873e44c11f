/*
 * quants.h - ggml's block formats and their reference (de)quantization.
 *
 * The block structs below are byte for byte those of ggml's GGUF files
 * (little-endian, no padding), so that a tensor written by ggml loads here
 * and the other way round.  GGMLC_QUANT_TO_FLOAT(q4_0) names the row
 * dequantizer of a type and GGMLC_QUANT_FROM_FLOAT(q4_0) its reference
 * quantizer, for the type table in types.c.
 *
 * The reference quantizers follow ggml's published formulas exactly
 * (round-half-to-even via nearest_int, the same search grids and the same
 * float accumulation order), so that encoded bytes match ggml's.
 */
#ifndef GGMLC_QUANTS_H
#define GGMLC_QUANTS_H

#include <assert.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>
#include <stdint.h>

#include "ggml.h"

#define GGMLC_QUANT_TO_FLOAT(name)   ggmlc_dequantize_row_##name
#define GGMLC_QUANT_FROM_FLOAT(name) ggmlc_quantize_row_##name##_ref

#define QK4_0  32
#define QK4_1  32
#define QK5_0  32
#define QK5_1  32
#define QK8_0  32
#define QK8_1  32
#define QK4_NL 32
#define QK_MXFP4 32
#define QK1_0 128
#define QK2_0 64
#define QK_NVFP4 64
#define QK_NVFP4_SUB 16
#ifndef QK_K
#define QK_K 256
#endif
#define K_SCALE_SIZE 12

/* ---------------------------------------------------- 32-value blocks */

typedef struct { ggml_fp16_t d; uint8_t qs[QK4_0 / 2]; } block_q4_0;              /* x = d * (q - 8) */
typedef struct { ggml_fp16_t d, m; uint8_t qs[QK4_1 / 2]; } block_q4_1;           /* x = d * q + m */
typedef struct { ggml_fp16_t d; uint8_t qh[4]; uint8_t qs[QK5_0 / 2]; } block_q5_0; /* 5th bit in qh */
typedef struct { ggml_fp16_t d, m; uint8_t qh[4]; uint8_t qs[QK5_1 / 2]; } block_q5_1;
typedef struct { ggml_fp16_t d; int8_t qs[QK8_0]; } block_q8_0;
typedef struct { ggml_fp16_t d, s; int8_t qs[QK8_1]; } block_q8_1;                /* s = d * sum(qs) */
typedef struct { ggml_fp16_t d; uint8_t qs[QK4_NL / 2]; } block_iq4_nl;           /* x = d * table[q] */
typedef struct { uint8_t e; uint8_t qs[QK_MXFP4 / 2]; } block_mxfp4;             /* E8M0 scale, E2M1 values */

/* Blocks of ggml's newest types: layout only (ggmlc has no conversions for them yet). */
typedef struct { ggml_fp16_t d; uint8_t qs[QK1_0 / 8]; } block_q1_0;              /* 1 bit per value */
typedef struct { ggml_fp16_t d; uint8_t qs[QK2_0 / 4]; } block_q2_0;              /* 2 bits per value */
typedef struct { uint8_t d[QK_NVFP4 / QK_NVFP4_SUB]; uint8_t qs[QK_NVFP4 / 2]; } block_nvfp4; /* UE4M3 scales */

/* ---------------------------------------------- 256-value super-blocks */

typedef struct { uint8_t scales[QK_K / 16]; uint8_t qs[QK_K / 4]; ggml_fp16_t d, dmin; } block_q2_K;
typedef struct { uint8_t hmask[QK_K / 8]; uint8_t qs[QK_K / 4]; uint8_t scales[12]; ggml_fp16_t d; } block_q3_K;
typedef struct { ggml_fp16_t d, dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qs[QK_K / 2]; } block_q4_K;
typedef struct { ggml_fp16_t d, dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qh[QK_K / 8]; uint8_t qs[QK_K / 2]; } block_q5_K;
typedef struct { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; ggml_fp16_t d; } block_q6_K;
typedef struct { float d; int8_t qs[QK_K]; int16_t bsums[QK_K / 16]; } block_q8_K;
typedef struct { ggml_fp16_t d; uint16_t scales_h; uint8_t scales_l[QK_K / 64]; uint8_t qs[QK_K / 2]; } block_iq4_xs;

static_assert(sizeof(block_q4_0) == 18 && sizeof(block_q4_1) == 20, "q4 block size");
static_assert(sizeof(block_q5_0) == 22 && sizeof(block_q5_1) == 24, "q5 block size");
static_assert(sizeof(block_q8_0) == 34 && sizeof(block_q8_1) == 36, "q8 block size");
static_assert(sizeof(block_q1_0) == 18 && sizeof(block_q2_0) == 18 && sizeof(block_nvfp4) == 36, "new block sizes");
static_assert(sizeof(block_iq4_nl) == 18 && sizeof(block_mxfp4) == 17, "iq4_nl/mxfp4 block size");
static_assert(sizeof(block_q2_K) == 84 && sizeof(block_q3_K) == 110, "q2_K/q3_K block size");
static_assert(sizeof(block_q4_K) == 144 && sizeof(block_q5_K) == 176, "q4_K/q5_K block size");
static_assert(sizeof(block_q6_K) == 210 && sizeof(block_q8_K) == 292, "q6_K/q8_K block size");
static_assert(sizeof(block_iq4_xs) == 136, "iq4_xs block size");

/* The 16 levels of IQ4_NL/IQ4_XS, and the E2M1 values {0, 0.5, 1, 1.5, 2, 3, 4, 6}
 * and their negatives doubled to integers (MXFP4).  In the header so that the CPU
 * plugin shares them (a static const array is unused-warning free in a header). */
static const int8_t ggmlc_kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
static const int8_t ggmlc_kvalues_mxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/* The float an E8M0 exponent byte stands for, halved (MXFP4 levels are doubled). */
static inline float ggmlc_e8m0_to_fp32_half(uint8_t e) {
    /* e < 2 gives a subnormal float; otherwise the exponent field is e - 1 */
    const uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Round to nearest, ties to even, as ggml's quantizers do (|x| < 2^22). */
static inline int ggmlc_nearest_int(float x) {
    return (int)lrintf(x);
}

/* ------------------------------------------------- row (de)quantizers */

#define GGMLC_DECLARE_QUANT(name) \
    __attribute__((visibility("hidden"))) void ggmlc_dequantize_row_##name(const void *GGML_RESTRICT x, float *GGML_RESTRICT y, int64_t k); \
    __attribute__((visibility("hidden"))) void ggmlc_quantize_row_##name##_ref(const float *GGML_RESTRICT x, void *GGML_RESTRICT y, int64_t k);

GGMLC_DECLARE_QUANT(q4_0)
GGMLC_DECLARE_QUANT(q4_1)
GGMLC_DECLARE_QUANT(q5_0)
GGMLC_DECLARE_QUANT(q5_1)
GGMLC_DECLARE_QUANT(q8_0)
GGMLC_DECLARE_QUANT(q8_1)
GGMLC_DECLARE_QUANT(q2_K)
GGMLC_DECLARE_QUANT(q3_K)
GGMLC_DECLARE_QUANT(q4_K)
GGMLC_DECLARE_QUANT(q5_K)
GGMLC_DECLARE_QUANT(q6_K)
GGMLC_DECLARE_QUANT(q8_K)
GGMLC_DECLARE_QUANT(iq4_nl)
GGMLC_DECLARE_QUANT(iq4_xs)
GGMLC_DECLARE_QUANT(mxfp4)

/* Quantize nrow rows of n_per_row values with per-column importance
 * weights qw (n_per_row floats, may be NULL = plain reference quantizer).
 * Return the bytes written. */
typedef size_t (*ggmlc_quantize_fn)(const float *src, void *dst, int64_t nrow, int64_t n_per_row, const float *qw);
__attribute__((visibility("hidden"))) size_t ggmlc_quantize_q4_0(const float *, void *, int64_t, int64_t, const float *);
__attribute__((visibility("hidden"))) size_t ggmlc_quantize_q4_1(const float *, void *, int64_t, int64_t, const float *);
__attribute__((visibility("hidden"))) size_t ggmlc_quantize_q5_0(const float *, void *, int64_t, int64_t, const float *);
__attribute__((visibility("hidden"))) size_t ggmlc_quantize_q5_1(const float *, void *, int64_t, int64_t, const float *);
__attribute__((visibility("hidden"))) size_t ggmlc_quantize_q2_K(const float *, void *, int64_t, int64_t, const float *);
__attribute__((visibility("hidden"))) size_t ggmlc_quantize_q3_K(const float *, void *, int64_t, int64_t, const float *);
__attribute__((visibility("hidden"))) size_t ggmlc_quantize_q4_K(const float *, void *, int64_t, int64_t, const float *);
__attribute__((visibility("hidden"))) size_t ggmlc_quantize_q5_K(const float *, void *, int64_t, int64_t, const float *);
__attribute__((visibility("hidden"))) size_t ggmlc_quantize_q6_K(const float *, void *, int64_t, int64_t, const float *);
__attribute__((visibility("hidden"))) size_t ggmlc_quantize_iq4_nl(const float *, void *, int64_t, int64_t, const float *);
__attribute__((visibility("hidden"))) size_t ggmlc_quantize_iq4_xs(const float *, void *, int64_t, int64_t, const float *);

/* ------------------------------------- shared scale-search helpers
 * (quants.c).  L receives the chosen integer levels. */

/* Symmetric levels in [-nmax, nmax) stored +nmax; weights w (NULL: chosen by rmse_type). */
__attribute__((visibility("hidden"))) float ggmlc_make_qx_quants(int n, int nmax, const float *x, int8_t *L, int rmse_type, const float *w);
/* Asymmetric levels in [0, nmax] with min; *the_min receives -min. */
__attribute__((visibility("hidden"))) float ggmlc_make_qkx_quants(int n, int nmax, const float *x, const float *w, uint8_t *L,
                                                                  float *the_min, uint8_t *Laux, float rmin, float rdelta,
                                                                  int nstep, bool use_mad);
/* Positive scales quantized to [0, nmax] with weights w. */
__attribute__((visibility("hidden"))) float ggmlc_make_qp_quants(int n, int nmax, const float *x, uint8_t *L, const float *w);

#endif /* GGMLC_QUANTS_H */
