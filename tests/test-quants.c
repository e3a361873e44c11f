/*
 * test-quants.c - ggml's block formats: byte-exact reference encodings
 * (golden data from tests/golden/gen_quant_reference.py), round-trip error
 * per type on uniform, Gaussian and heavy-tailed data, ggml_quantize_chunk
 * with offsets and importance matrices, ggml_validate_row_data, and the CPU
 * plugin's dot products (each SIMD variant against the portable one and
 * against the dequantized f32 reference).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggmlc.h"
#include "testutil.h"

/* ------------------------------------------------------ golden bytes */

/* Index of the first byte that differs from the golden i32-per-byte tensor, SIZE_MAX if none. */
static size_t first_difference(const uint8_t *got, const struct gold_tensor *want, size_t nbytes) {
    if (want->n != nbytes) return 0;
    for (size_t i = 0; i < nbytes; i++)
        if (got[i] != (uint8_t)((const int32_t *)want->data)[i]) return i;
    return SIZE_MAX;
}

static bool bytes_match(const uint8_t *got, const struct gold_tensor *want, size_t nbytes) {
    return first_difference(got, want, nbytes) == SIZE_MAX;
}

static void test_golden_bytes(void) {
    struct gold_set *set = gold_load("quant_reference.gold");
    if (!set) {
        tap_ok(false, "quant_reference.gold loads");
        return;
    }
    const enum ggml_type types[] = {GGML_TYPE_Q4_0, GGML_TYPE_Q8_0, GGML_TYPE_Q4_K, GGML_TYPE_Q6_K};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        const char *name = ggml_type_name(types[t]);
        char key[64];
        snprintf(key, sizeof key, "%s.x", name);
        const struct gold_tensor *x = gold_get(set, key);
        snprintf(key, sizeof key, "%s.bytes", name);
        const struct gold_tensor *want = gold_get(set, key);
        if (!x || !want) {
            tap_ok(false, "%s golden tensors present", name);
            continue;
        }
        const size_t nbytes = ggml_row_size(types[t], (int64_t)x->n);
        uint8_t *got = calloc(nbytes, 1);
        ggml_get_type_traits(types[t])->from_float_ref(x->data, got, (int64_t)x->n);
        const size_t diff = first_difference(got, want, nbytes);
        tap_ok(diff == SIZE_MAX, "%s: %zu values encode to the reference bytes (first difference at byte %zd)",
               name, x->n, diff == SIZE_MAX ? (ssize_t)-1 : (ssize_t)diff);
        /* also through the public chunk API, rows of one block */
        const int64_t blck = ggml_blck_size(types[t]);
        memset(got, 0xAA, nbytes);
        const size_t written = ggml_quantize_chunk(types[t], x->data, got, 0, (int64_t)x->n / blck, blck, NULL);
        tap_ok(written == nbytes && bytes_match(got, want, nbytes), "%s: ggml_quantize_chunk gives the same bytes", name);
        free(got);
    }
    gold_free(set);
}

/* --------------------------------------------------------- round trip */

static void to_float(enum ggml_type type, const void *q, float *y, int64_t n) {
    ggml_get_type_traits(type)->to_float(q, y, n);
}

enum dist { DIST_UNIFORM, DIST_GAUSS, DIST_HEAVY, DIST_COUNT };
static const char *const dist_names[DIST_COUNT] = {"uniform", "gaussian", "heavy-tailed"};

static void fill(float *x, int64_t n, enum dist d) {
    for (int64_t i = 0; i < n; i++) {
        switch (d) {
        case DIST_UNIFORM: x[i] = test_uniform(-3.0f, 5.0f); break;
        case DIST_GAUSS:   x[i] = 0.02f * test_normal(); break;
        default:           x[i] = test_normal() * expf(test_normal()); break; /* log-normal scale mixture */
        }
    }
}

/* Relative RMSE bounds (rmse / rms(x)) per type and distribution; uniform data sits at the
 * top of the range (its values fill the grid evenly), heavy tails cost the 2-3 bit types most. */
struct rt_case {
    enum ggml_type type;
    double max_rel_rmse[DIST_COUNT];
};

static const struct rt_case rt_cases[] = {
    {GGML_TYPE_Q4_0,   {0.090, 0.130, 0.180}},
    {GGML_TYPE_Q4_1,   {0.065, 0.110, 0.170}},
    {GGML_TYPE_Q5_0,   {0.045, 0.065, 0.090}},
    {GGML_TYPE_Q5_1,   {0.033, 0.055, 0.085}},
    {GGML_TYPE_Q8_0,   {0.006, 0.008, 0.012}},
    {GGML_TYPE_Q8_1,   {0.006, 0.008, 0.012}},
    {GGML_TYPE_Q2_K,   {0.300, 0.380, 0.450}},
    {GGML_TYPE_Q3_K,   {0.160, 0.200, 0.250}},
    {GGML_TYPE_Q4_K,   {0.060, 0.100, 0.140}},
    {GGML_TYPE_Q5_K,   {0.030, 0.050, 0.070}},
    {GGML_TYPE_Q6_K,   {0.016, 0.025, 0.035}},
    {GGML_TYPE_Q8_K,   {0.006, 0.009, 0.025}},
    {GGML_TYPE_IQ4_NL, {0.110, 0.100, 0.140}},
    {GGML_TYPE_IQ4_XS, {0.110, 0.100, 0.140}},
    {GGML_TYPE_MXFP4,  {0.200, 0.200, 0.260}},
};

static double rel_rmse(const float *x, const float *y, int64_t n) {
    double err = 0, norm = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(y[i])) return INFINITY;
        err += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
        norm += (double)x[i] * x[i];
    }
    return sqrt(err / (norm > 0 ? norm : 1));
}

/* ggml's own check: sqrt(sum of squared errors) / n on 0.1 + 2 cos(i) over 4096 values. */
static double ggml_style_error(enum ggml_type type, float *x, float *y, void *q) {
    const int n = 4096;
    for (int i = 0; i < n; i++) x[i] = 0.1f + 2.0f * cosf((float)i);
    ggml_get_type_traits(type)->from_float_ref(x, q, n);
    to_float(type, q, y, n);
    double sum = 0;
    for (int i = 0; i < n; i++) sum += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
    return sqrt(sum) / n;
}

static void test_round_trip(void) {
    const int64_t n = 256 * 33; /* whole blocks of every type, an odd number of super-blocks */
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    void *q = malloc(n * 2);
    for (size_t c = 0; c < sizeof rt_cases / sizeof rt_cases[0]; c++) {
        const enum ggml_type type = rt_cases[c].type;
        for (int d = 0; d < DIST_COUNT; d++) {
            test_seed(100 + c * 7 + d);
            fill(x, n, d);
            ggml_get_type_traits(type)->from_float_ref(x, q, n);
            to_float(type, q, y, n);
            const double err = rel_rmse(x, y, n);
            tap_ok(err <= rt_cases[c].max_rel_rmse[d], "%s round trip on %s data: relative RMSE %.4f <= %.3f",
                   ggml_type_name(type), dist_names[d], err, rt_cases[c].max_rel_rmse[d]);
        }
        /* ggml's thresholds: 0.0075 for 2-bit, 0.004 for 3-bit, 0.002 otherwise */
        const double limit = type == GGML_TYPE_Q2_K ? 0.0075 : type == GGML_TYPE_Q3_K ? 0.004 : 0.002;
        const double gerr = ggml_style_error(type, x, y, q);
        tap_ok(gerr < limit, "%s: ggml's total quantization error %.5f < %.4f", ggml_type_name(type), gerr, limit);
    }
    /* an all-zero row must come back as zeros, never NaN */
    for (size_t c = 0; c < sizeof rt_cases / sizeof rt_cases[0]; c++) {
        memset(x, 0, 256 * sizeof *x);
        ggml_get_type_traits(rt_cases[c].type)->from_float_ref(x, q, 256);
        to_float(rt_cases[c].type, q, y, 256);
        bool zeros = true;
        for (int i = 0; i < 256; i++) zeros &= y[i] == 0.0f;
        tap_ok(zeros, "%s: a zero row stays zero", ggml_type_name(rt_cases[c].type));
    }
    free(x);
    free(y);
    free(q);
}

/* --------------------------------------------------- chunks, imatrix */

static void test_quantize_chunk(void) {
    const int64_t n_per_row = 512, nrows = 6;
    float *x = malloc(n_per_row * nrows * sizeof *x), *y = malloc(n_per_row * sizeof *y);
    float *imatrix = malloc(n_per_row * sizeof *imatrix);
    test_seed(5);
    fill(x, n_per_row * nrows, DIST_HEAVY);
    /* an imatrix that stresses a few columns: weighted error on those columns must drop */
    for (int64_t j = 0; j < n_per_row; j++) imatrix[j] = j % 16 == 3 ? 100.0f : 0.01f;
    const enum ggml_type types[] = {GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_Q2_K,
                                    GGML_TYPE_Q3_K, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K, GGML_TYPE_IQ4_NL,
                                    GGML_TYPE_IQ4_XS, GGML_TYPE_Q8_0, GGML_TYPE_MXFP4, GGML_TYPE_F16, GGML_TYPE_BF16};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        const enum ggml_type type = types[t];
        const size_t row = ggml_row_size(type, n_per_row);
        uint8_t *whole = malloc(row * nrows), *parts = malloc(row * nrows), *weighted = malloc(row * nrows);
        const size_t w1 = ggml_quantize_chunk(type, x, whole, 0, nrows, n_per_row, NULL);
        const size_t w2 = ggml_quantize_chunk(type, x, parts, 0, 2, n_per_row, NULL) +
                          ggml_quantize_chunk(type, x, parts, 2 * n_per_row, nrows - 2, n_per_row, NULL);
        tap_ok(w1 == row * nrows && w2 == w1 && memcmp(whole, parts, w1) == 0,
               "%s: chunks at row offsets equal one whole call (%zu bytes)", ggml_type_name(type), w1);
        ggml_quantize_chunk(type, x, weighted, 0, nrows, n_per_row, imatrix);
        double werr_plain = 0, werr_imat = 0;
        for (int64_t r = 0; r < nrows; r++) {
            float *yr = y;
            to_float(type, whole + r * row, yr, n_per_row);
            for (int64_t j = 0; j < n_per_row; j++) werr_plain += imatrix[j] * pow(x[r * n_per_row + j] - yr[j], 2);
            to_float(type, weighted + r * row, yr, n_per_row);
            for (int64_t j = 0; j < n_per_row; j++) werr_imat += imatrix[j] * pow(x[r * n_per_row + j] - yr[j], 2);
        }
        const bool uses_imatrix = type != GGML_TYPE_Q8_0 && type != GGML_TYPE_MXFP4 && type != GGML_TYPE_F16 &&
                                  type != GGML_TYPE_BF16;
        if (uses_imatrix)
            tap_ok(werr_imat < 0.9 * werr_plain, "%s: the imatrix lowers the weighted error (%.4g -> %.4g)",
                   ggml_type_name(type), werr_plain, werr_imat);
        else
            tap_ok(werr_imat == werr_plain, "%s: ignores the imatrix", ggml_type_name(type));
        tap_ok(ggml_validate_row_data(type, whole, w1), "%s: quantized rows validate", ggml_type_name(type));
        free(whole);
        free(parts);
        free(weighted);
    }
    ggmlc_clear_error();
    uint8_t buf[64];
    tap_ok(ggml_quantize_chunk(GGML_TYPE_Q4_0, x, buf, 0, 1, 33, NULL) == 0 && ggmlc_last_status() == GGMLC_ERR_SHAPE,
           "a row of 33 values is rejected for q4_0: %s", ggmlc_last_error());
    tap_ok(ggml_quantize_chunk(GGML_TYPE_IQ2_XXS, x, buf, 0, 1, 256, NULL) == 0 &&
           ggmlc_last_status() == GGMLC_ERR_UNSUPPORTED, "an unsupported target type is rejected: %s", ggmlc_last_error());
    tap_ok(ggml_quantize_requires_imatrix(GGML_TYPE_IQ2_XS) && !ggml_quantize_requires_imatrix(GGML_TYPE_Q4_K),
           "ggml_quantize_requires_imatrix");
    free(x);
    free(y);
    free(imatrix);
}

static void test_validate(void) {
    float x[256];
    for (int i = 0; i < 256; i++) x[i] = sinf((float)i);
    uint8_t q[512];
    const struct { enum ggml_type type; size_t scale_offset; } cases[] = {
        {GGML_TYPE_Q4_0, 0}, {GGML_TYPE_Q4_1, 2}, {GGML_TYPE_Q8_0, 0}, {GGML_TYPE_Q2_K, 82},
        {GGML_TYPE_Q3_K, 108}, {GGML_TYPE_Q4_K, 2}, {GGML_TYPE_Q6_K, 208}, {GGML_TYPE_IQ4_XS, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const size_t nbytes = ggml_row_size(cases[c].type, 256);
        ggml_quantize_chunk(cases[c].type, x, q, 0, 1, 256, NULL);
        tap_ok(ggml_validate_row_data(cases[c].type, q, nbytes), "%s row is valid", ggml_type_name(cases[c].type));
        q[cases[c].scale_offset] = 0x00;
        q[cases[c].scale_offset + 1] = 0x7e; /* f16 NaN */
        tap_ok(!ggml_validate_row_data(cases[c].type, q, nbytes) && ggmlc_last_status() == GGMLC_ERR_FORMAT,
               "%s with a NaN scale is rejected: %s", ggml_type_name(cases[c].type), ggmlc_last_error());
    }
    float f[4] = {1, 2, INFINITY, 3};
    tap_ok(!ggml_validate_row_data(GGML_TYPE_F32, f, sizeof f), "f32 with Inf is rejected");
    tap_ok(!ggml_validate_row_data(GGML_TYPE_Q4_0, q, 17), "a partial block is rejected: %s", ggmlc_last_error());
}

/* test-quants-dot.c */
void quants_test_dot_products(void);
/* test-quants-rows.c */
void quants_test_dot_rows(void);

int main(void) {
    test_golden_bytes();
    test_round_trip();
    test_quantize_chunk();
    test_validate();
    quants_test_dot_products();
    quants_test_dot_rows();
    return tap_done();
}
