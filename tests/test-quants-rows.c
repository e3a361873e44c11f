/*
 * test-quants-rows.c - the CPU plugin's multi-row dot products (part of
 * test-quants): one weight row against 1..8 activation rows, on every path,
 * each row's result against the portable single-row vec_dot and against the
 * double-precision dot of the dequantized rows.  Block counts with and
 * without tails, padded row strides and a strided output.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quant-dot.h"
#include "testutil.h"

void quants_test_dot_rows(void);

static const enum ggml_type row_types[] = {GGML_TYPE_Q4_0, GGML_TYPE_Q5_0, GGML_TYPE_Q8_0, GGML_TYPE_IQ4_NL, GGML_TYPE_MXFP4};
static const char *const path_names[CPU_QUANT_PATHS] = {"generic", "avx2", "avx512-vnni"};

enum { NMAX = 32 * 133, ROWS = CPU_QUANT_MAX_ROWS, QS_PAD = 64, D_PAD = 3, S_STRIDE = 3 };

/* One weight row and ROWS activation rows of n values, in every form the checks need. */
struct rows_case {
    int n;
    void *qx;                     /* the weight row */
    block_q8_0 *qy[ROWS];         /* the activation rows as Q8_0 blocks */
    int8_t *qs;                   /* ... and as planes, with padded strides */
    float *d;
    double ref[ROWS], mag[ROWS];  /* dequantized dot products, sum of |products| */
    float single[ROWS];           /* portable single-row vec_dot */
};

static void prepare_case(struct rows_case *c, enum ggml_type type, int n, const float *x, const float *y) {
    const struct cpu_type_traits *tr = cpu_type_traits_on_path(type, CPU_QUANT_GENERIC);
    const size_t qs_stride = (size_t)n + QS_PAD, d_stride = (size_t)n / 32 + D_PAD;
    float *dx = malloc((size_t)n * sizeof *dx), *dy = malloc((size_t)n * sizeof *dy);
    c->n = n;
    tr->from_float(x, c->qx, n);
    ggml_get_type_traits(type)->to_float(c->qx, dx, n);
    for (int r = 0; r < ROWS; r++) {
        cpu_type_traits_on_path(GGML_TYPE_Q8_0, CPU_QUANT_GENERIC)->from_float(y + (size_t)r * NMAX, c->qy[r], n);
        cpu_q8_0_to_planes(c->qy[r], n / 32, c->qs + r * qs_stride, c->d + r * d_stride);
        ggml_get_type_traits(GGML_TYPE_Q8_0)->to_float(c->qy[r], dy, n);
        c->ref[r] = c->mag[r] = 0;
        for (int i = 0; i < n; i++) {
            c->ref[r] += (double)dx[i] * dy[i];
            c->mag[r] += fabs((double)dx[i] * dy[i]);
        }
        tr->vec_dot(n, &c->single[r], 0, c->qx, 0, c->qy[r], 0, 1);
    }
    free(dx);
    free(dy);
}

/* The path's kernel for nrows = 1..ROWS: every row within rounding of both references,
 * the output slots between strides untouched. */
static void check_path(const struct rows_case *c, enum ggml_type type, enum cpu_quant_path path) {
    const cpu_vec_dot_rows_t kernel = cpu_vec_dot_rows_on_path(type, path);
    if (!kernel) {
        tap_ok(false, "%s has a multi-row kernel on the %s path", ggml_type_name(type), path_names[path]);
        return;
    }
    bool ok = true;
    double worst = 0;
    for (int nrows = 1; nrows <= ROWS && ok; nrows++) {
        const struct cpu_q8_rows y = {c->qs, (size_t)c->n + QS_PAD, c->d, (size_t)c->n / 32 + D_PAD, nrows};
        float s[ROWS * S_STRIDE];
        for (int i = 0; i < ROWS * S_STRIDE; i++) s[i] = -12345.0f;
        kernel(c->n, c->qx, &y, s, S_STRIDE);
        for (int i = 0; i < ROWS * S_STRIDE; i++) {
            const int r = i / S_STRIDE;
            if (i % S_STRIDE != 0 || r >= nrows) {
                ok = ok && s[i] == -12345.0f;
                continue;
            }
            const double err_single = fabs(s[i] - c->single[r]), err_ref = fabs(s[i] - c->ref[r]);
            ok = ok && isfinite(s[i]) && err_single <= 2e-6 * c->mag[r] + 1e-6 && err_ref <= 2e-5 * c->mag[r] + 1e-6;
            if (err_single / (c->mag[r] + 1e-30) > worst) worst = err_single / (c->mag[r] + 1e-30);
        }
    }
    tap_ok(ok, "%s multi-row (1..%d rows, n=%d) on the %s path = portable vec_dot and dequantized dot (worst rel. %.2g)",
           ggml_type_name(type), ROWS, c->n, path_names[path], worst);
}

void quants_test_dot_rows(void) {
    float *x = malloc(NMAX * sizeof *x), *y = malloc((size_t)ROWS * NMAX * sizeof *y);
    struct rows_case c;
    c.qx = malloc(NMAX * 2);
    c.qs = malloc((size_t)ROWS * (NMAX + QS_PAD));
    c.d = malloc((size_t)ROWS * (NMAX / 32 + D_PAD) * sizeof *c.d);
    for (int r = 0; r < ROWS; r++) c.qy[r] = malloc(NMAX / 32 * sizeof(block_q8_0));
    test_seed(4711);
    for (int i = 0; i < NMAX; i++) x[i] = test_normal() * (i % 89 == 0 ? 10.0f : 1.0f); /* outliers */
    for (int i = 0; i < ROWS * NMAX; i++) y[i] = test_uniform(-4.0f, 4.0f) * (i % 61 == 0 ? 30.0f : 1.0f);
    /* 133 blocks: 33 steps of four and one left over; 7: one step and three; 3: no full step */
    const int sizes[] = {32 * 133, 32 * 7, 32 * 3};
    for (size_t t = 0; t < sizeof row_types / sizeof row_types[0]; t++)
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            prepare_case(&c, row_types[t], sizes[k], x, y);
            for (int p = 0; p < CPU_QUANT_PATHS; p++) {
                if (!cpu_quant_path_available((enum cpu_quant_path)p)) {
                    tap_skip("the CPU lacks it", "%s multi-row on the %s path", ggml_type_name(row_types[t]), path_names[p]);
                    continue;
                }
                check_path(&c, row_types[t], (enum cpu_quant_path)p);
            }
        }
    tap_ok(!cpu_vec_dot_rows_on_path(GGML_TYPE_Q4_K, CPU_QUANT_GENERIC) && !cpu_vec_dot_rows_on_path(GGML_TYPE_F32, CPU_QUANT_AVX512VNNI),
           "types without a multi-row kernel report none");
    free(x);
    free(y);
    free(c.qx);
    free(c.qs);
    free(c.d);
    for (int r = 0; r < ROWS; r++) free(c.qy[r]);
}
