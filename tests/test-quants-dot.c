/*
 * test-quants-dot.c - the CPU plugin's dot products of every weight type
 * (part of test-quants): against the dot product of the dequantized rows
 * in double, against the exact f32 dot product with ggml's tolerance, and
 * every SIMD path (AVX2, AVX-512 VNNI) against the portable one.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quant-dot.h"
#include "testutil.h"

void quants_test_dot_products(void);

static const enum ggml_type dot_types[] = {
    GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1,
    GGML_TYPE_Q8_0, GGML_TYPE_Q8_1, GGML_TYPE_Q8_K /* with themselves, as ggml's test-quantize-fns calls them */,
    GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K,
    GGML_TYPE_IQ4_NL, GGML_TYPE_IQ4_XS, GGML_TYPE_MXFP4, GGML_TYPE_Q1_0, GGML_TYPE_Q2_0, GGML_TYPE_NVFP4,
};
static const char *const path_names[CPU_QUANT_PATHS] = {"generic", "avx2", "avx512-vnni"};

static void to_f32(enum ggml_type type, const void *q, float *out, int n) {
    if (type == GGML_TYPE_F32) memcpy(out, q, (size_t)n * sizeof *out);
    else ggml_get_type_traits(type)->to_float(q, out, n);
}

/* Quantize x as weights and y as activations of the type's vec_dot_type. */
static void prepare(enum ggml_type type, const float *x, const float *y, int n, void *qx, void *qy) {
    const struct cpu_type_traits *tr = cpu_type_traits_on_path(type, CPU_QUANT_GENERIC);
    tr->from_float(x, qx, n);
    cpu_type_traits_on_path(tr->vec_dot_type, CPU_QUANT_GENERIC)->from_float(y, qy, n);
}

/* One type on rows of n values: dequantized reference, then each path against the portable one. */
static void check_type(enum ggml_type type, int n, const float *x, const float *y, void *qx, void *qy, float *dx, float *dy) {
    const struct cpu_type_traits *tr = cpu_type_traits_on_path(type, CPU_QUANT_GENERIC);
    if (!tr->vec_dot) {
        tap_ok(false, "%s has a vec_dot", ggml_type_name(type));
        return;
    }
    prepare(type, x, y, n, qx, qy);
    to_f32(type, qx, dx, n);
    to_f32(tr->vec_dot_type, qy, dy, n);
    double ref = 0, mag = 0;
    for (int i = 0; i < n; i++) {
        ref += (double)dx[i] * dy[i];
        mag += fabs((double)dx[i] * dy[i]);
    }
    float generic;
    tr->vec_dot(n, &generic, 0, qx, 0, qy, 0, 1);
    /* the dot works on exact integers per block; only the float scaling rounds, plus (Q8_1)
     * the f16 rounding of the activation block sums s that the min term m * s uses */
    double s_rounding = 0;
    if (tr->vec_dot_type == GGML_TYPE_Q8_1 && type != GGML_TYPE_Q8_1) /* Q4_1, Q5_1: their min m */
        for (int b = 0; b < n / 32; b++) {
            ggml_fp16_t m, sy;
            memcpy(&m, (const char *)qx + b * ggml_type_size(type) + 2, 2);
            memcpy(&sy, (const char *)qy + b * ggml_type_size(GGML_TYPE_Q8_1) + 2, 2);
            s_rounding += fabs(ggml_fp16_to_fp32(m) * ggml_fp16_to_fp32(sy)) * 1e-3;
        }
    tap_ok(fabs(generic - ref) <= 2e-5 * mag + s_rounding + 1e-6, "%s x %s (n=%d): portable vec_dot %.6g = dequantized dot %.6g",
           ggml_type_name(type), ggml_type_name(tr->vec_dot_type), n, generic, ref);
    for (int p = CPU_QUANT_AVX2; p < CPU_QUANT_PATHS; p++) {
        const struct cpu_type_traits *tp = cpu_type_traits_on_path(type, (enum cpu_quant_path)p);
        if (!cpu_quant_path_available((enum cpu_quant_path)p)) {
            tap_skip("the CPU lacks it", "%s vec_dot on the %s path", ggml_type_name(type), path_names[p]);
            continue;
        }
        float simd;
        tp->vec_dot(n, &simd, 0, qx, 0, qy, 0, 1);
        tap_ok(tp->vec_dot_type == tr->vec_dot_type && fabs(simd - generic) <= 2e-6 * mag + 1e-6,
               "%s vec_dot on the %s path %.7g = portable %.7g", ggml_type_name(type), path_names[p], simd, generic);
    }
}

/* ggml's own check: 0.1 + 2 cos(i + offset) over 4096 values, |error| / n below 0.02 (its
 * other bounds: 0.04 for 2-3 bits, 0.40 for Q1_0's signs, 0.15 for Q2_0, 0.03 for NVFP4). */
static double dot_error_limit(enum ggml_type type) {
    switch (type) {
    case GGML_TYPE_Q2_K: case GGML_TYPE_Q3_K: return 0.04;
    case GGML_TYPE_Q1_0:                      return 0.40;
    case GGML_TYPE_Q2_0:                      return 0.15;
    case GGML_TYPE_NVFP4:                     return 0.03;
    default:                                  return 0.02;
    }
}

static void check_against_f32(enum ggml_type type, void *qx, void *qy) {
    enum { N = 4096 };
    static float x[N], y[N];
    for (int i = 0; i < N; i++) {
        x[i] = 0.1f + 2.0f * cosf((float)i);
        y[i] = 0.1f + 2.0f * cosf((float)i + 1.0f);
    }
    double exact = 0;
    for (int i = 0; i < N; i++) exact += (double)x[i] * y[i];
    prepare(type, x, y, N, qx, qy);
    float got;
    cpu_get_type_traits(type)->vec_dot(N, &got, 0, qx, 0, qy, 0, 1);
    const double limit = dot_error_limit(type);
    const double err = fabs(got - exact) / N;
    tap_ok(err < limit, "%s: vec_dot vs exact f32 dot, error/n %.5f < %.2f", ggml_type_name(type), err, limit);
}

void quants_test_dot_products(void) {
    enum { NMAX = 256 * 17 };
    float *x = malloc(NMAX * sizeof *x), *y = malloc(NMAX * sizeof *y);
    float *dx = malloc(NMAX * sizeof *dx), *dy = malloc(NMAX * sizeof *dy);
    void *qx = malloc(NMAX * 4), *qy = malloc(NMAX * 4);
    test_seed(2024);
    for (int i = 0; i < NMAX; i++) {
        x[i] = test_normal() * (i % 97 == 0 ? 8.0f : 1.0f); /* a few outliers */
        y[i] = test_uniform(-3.0f, 3.0f);
    }
    for (int p = 0; p < CPU_QUANT_PATHS; p++)
        tap_diag("dot-product path %s: %s", path_names[p], cpu_quant_path_available((enum cpu_quant_path)p) ? "available" : "not on this CPU");
    for (size_t t = 0; t < sizeof dot_types / sizeof dot_types[0]; t++) {
        const enum ggml_type type = dot_types[t];
        check_type(type, NMAX, x, y, qx, qy, dx, dy);
        if (ggml_blck_size(type) <= 32) check_type(type, 32 * 7, x, y, qx, qy, dx, dy); /* odd block count: tails */
        check_against_f32(type, qx, qy);
    }
    free(x);
    free(y);
    free(dx);
    free(dy);
    free(qx);
    free(qy);
}
