/*
 * quants.h - the core's reference (de)quantization of ggml's block formats,
 * whose layouts are public (include/ggmlc-blocks.h).  GGMLC_QUANT_TO_FLOAT(q4_0) names the row
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
#include "ggmlc-blocks.h" /* the block layouts, level tables and QK* constants */

#define GGMLC_QUANT_TO_FLOAT(name)   ggmlc__dequantize_row_##name
#define GGMLC_QUANT_FROM_FLOAT(name) ggmlc__quantize_row_##name##_ref

/* Round to nearest, ties to even, as ggml's quantizers do (|x| < 2^22). */
static inline int ggmlc_nearest_int(float x) {
    return (int)lrintf(x);
}

/* ------------------------------------------------- row (de)quantizers */

#define GGMLC_DECLARE_QUANT(name) \
    __attribute__((visibility("hidden"))) void ggmlc__dequantize_row_##name(const void *GGML_RESTRICT x, float *GGML_RESTRICT y, int64_t k); \
    __attribute__((visibility("hidden"))) void ggmlc__quantize_row_##name##_ref(const float *GGML_RESTRICT x, void *GGML_RESTRICT y, int64_t k);

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
GGMLC_DECLARE_QUANT(q1_0)
GGMLC_DECLARE_QUANT(q2_0)
GGMLC_DECLARE_QUANT(nvfp4)

/* The nearest doubled E2M1 level's code (0..15) to x / d, the first on ties (MXFP4, NVFP4). */
__attribute__((visibility("hidden"))) uint8_t ggmlc__nearest_e2m1(float x, float d);

/* Quantize nrow rows of n_per_row values with per-column importance
 * weights qw (n_per_row floats, may be NULL = plain reference quantizer).
 * Return the bytes written. */
typedef size_t (*ggmlc_quantize_fn)(const float *src, void *dst, int64_t nrow, int64_t n_per_row, const float *qw);
__attribute__((visibility("hidden"))) size_t ggmlc__quantize_q4_0(const float *, void *, int64_t, int64_t, const float *);
__attribute__((visibility("hidden"))) size_t ggmlc__quantize_q4_1(const float *, void *, int64_t, int64_t, const float *);
__attribute__((visibility("hidden"))) size_t ggmlc__quantize_q5_0(const float *, void *, int64_t, int64_t, const float *);
__attribute__((visibility("hidden"))) size_t ggmlc__quantize_q5_1(const float *, void *, int64_t, int64_t, const float *);
__attribute__((visibility("hidden"))) size_t ggmlc__quantize_q2_K(const float *, void *, int64_t, int64_t, const float *);
__attribute__((visibility("hidden"))) size_t ggmlc__quantize_q3_K(const float *, void *, int64_t, int64_t, const float *);
__attribute__((visibility("hidden"))) size_t ggmlc__quantize_q4_K(const float *, void *, int64_t, int64_t, const float *);
__attribute__((visibility("hidden"))) size_t ggmlc__quantize_q5_K(const float *, void *, int64_t, int64_t, const float *);
__attribute__((visibility("hidden"))) size_t ggmlc__quantize_q6_K(const float *, void *, int64_t, int64_t, const float *);
__attribute__((visibility("hidden"))) size_t ggmlc__quantize_iq4_nl(const float *, void *, int64_t, int64_t, const float *);
__attribute__((visibility("hidden"))) size_t ggmlc__quantize_iq4_xs(const float *, void *, int64_t, int64_t, const float *);

/* ------------------------------------- shared scale-search helpers
 * (quants.c).  L receives the chosen integer levels. */

/* Symmetric levels in [-nmax, nmax) stored +nmax; weights w (NULL: chosen by rmse_type). */
__attribute__((visibility("hidden"))) float ggmlc__make_qx_quants(int n, int nmax, const float *x, int8_t *L, int rmse_type, const float *w);
/* Asymmetric levels in [0, nmax] with min; *the_min receives -min. */
__attribute__((visibility("hidden"))) float ggmlc__make_qkx_quants(int n, int nmax, const float *x, const float *w, uint8_t *L,
                                                                  float *the_min, uint8_t *Laux, float rmin, float rdelta,
                                                                  int nstep, bool use_mad);
/* Positive scales quantized to [0, nmax] with weights w. */
__attribute__((visibility("hidden"))) float ggmlc__make_qp_quants(int n, int nmax, const float *x, uint8_t *L, const float *w);

#endif /* GGMLC_QUANTS_H */
