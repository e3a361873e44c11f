/*
 * test-quants-rows.c - the CPU plugin's multi-row dot products (part of
 * test-quants): one weight row against 1..8 activation rows, on every path,
 * each row's result against the portable single-row vec_dot and against the
 * double-precision dot of the dequantized rows.  Block counts with and
 * without tails, padded row strides and a strided output.  The column kernels
 * of Q8_0 and Q4_0 (quant-match.h) bit for bit against the portable kernels
 * of the same order (eight lanes).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quant-dot.h"
#include "quant-match.h"
#include "testutil.h"

void quants_test_dot_rows(void);

static const enum ggml_type row_types[] = {GGML_TYPE_Q4_0, GGML_TYPE_Q5_0, GGML_TYPE_Q8_0, GGML_TYPE_IQ4_NL,
                                           GGML_TYPE_MXFP4, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K,
                                           GGML_TYPE_Q4_1, GGML_TYPE_Q5_1, GGML_TYPE_Q2_K, GGML_TYPE_Q3_K,
                                           GGML_TYPE_IQ4_XS};

/* Types whose multi-row kernels (quant-dot-rows-k*.c) give each row the bits of the same
 * path's single-row vec_dot. */
static bool exact_on_path(enum ggml_type type) {
    return type == GGML_TYPE_Q4_1 || type == GGML_TYPE_Q5_1 || type == GGML_TYPE_Q2_K || type == GGML_TYPE_Q3_K ||
           type == GGML_TYPE_Q4_K || type == GGML_TYPE_Q5_K || type == GGML_TYPE_Q6_K || type == GGML_TYPE_IQ4_XS;
}
static const char *const path_names[CPU_QUANT_PATHS] = {"generic", "avx2", "avx512-vnni"};

enum { NMAX = 32 * 133, ROWS = CPU_QUANT_MAX_ROWS, QS_PAD = 64, D_PAD = 3, S_STRIDE = 3 };

/* One weight row and ROWS activation rows of n values, in every form the checks need. */
struct rows_case {
    int n;
    void *qx;                     /* the weight row */
    void *qy[ROWS];               /* the activation rows as Q8_0, Q8_1 or Q8_K blocks */
    int8_t *qs;                   /* Q8_0: ... and as planes, with padded strides; else rows with padded stride */
    float *d;
    int32_t *sums;
    double ref[ROWS], mag[ROWS];  /* dequantized dot products, sum of |products| */
    float single[ROWS];           /* portable single-row vec_dot */
};

/* The activation rows as the kernels of type read them (struct cpu_q8_rows). */
static struct cpu_q8_rows rows_of(const struct rows_case *c, enum ggml_type type, int nrows) {
    const enum ggml_type vt = cpu_type_traits_on_path(type, CPU_QUANT_GENERIC)->vec_dot_type;
    if (vt != GGML_TYPE_Q8_0) return (struct cpu_q8_rows){c->qs, ggml_row_size(vt, c->n) + QS_PAD, NULL, 0, NULL, nrows};
    return (struct cpu_q8_rows){c->qs, (size_t)c->n + QS_PAD, c->d, (size_t)c->n / 32 + D_PAD, c->sums, nrows};
}

/* Q4_1 and Q5_1 add each block's offset m times the activation block's sum as Q8_1 stores
 * it, s = fp16(d * sum of levels), not the sum of the dequantized values y: the difference
 * m * (s - sum y) summed over the blocks, to add to the dequantized dot. */
static double q8_1_sum_correction(enum ggml_type type, const void *qx, const void *qy, const float *y, int n) {
    double c = 0;
    for (int j = 0; j < n / 32; j++) {
        ggml_fp16_t m, s; /* the second half of both block types */
        memcpy(&m, (const char *)qx + j * ggml_type_size(type) + sizeof m, sizeof m);
        memcpy(&s, (const char *)qy + j * ggml_type_size(GGML_TYPE_Q8_1) + sizeof s, sizeof s);
        double sum = 0;
        for (int i = 0; i < 32; i++) sum += y[32 * j + i];
        c += (double)ggml_fp16_to_fp32(m) * ((double)ggml_fp16_to_fp32(s) - sum);
    }
    return c;
}

static void prepare_case(struct rows_case *c, enum ggml_type type, int n, const float *x, const float *y) {
    const struct cpu_type_traits *tr = cpu_type_traits_on_path(type, CPU_QUANT_GENERIC);
    const enum ggml_type vt = tr->vec_dot_type;
    const size_t qs_stride = (size_t)n + QS_PAD, d_stride = (size_t)n / 32 + D_PAD;
    const size_t q8k_stride = ggml_row_size(vt, n) + QS_PAD; /* Q8_K or Q8_1 rows */
    float *dx = malloc((size_t)n * sizeof *dx), *dy = malloc((size_t)n * sizeof *dy);
    c->n = n;
    tr->from_float(x, c->qx, n);
    ggml_get_type_traits(type)->to_float(c->qx, dx, n);
    for (int r = 0; r < ROWS; r++) {
        cpu_type_traits_on_path(vt, CPU_QUANT_GENERIC)->from_float(y + (size_t)r * NMAX, c->qy[r], n);
        if (vt != GGML_TYPE_Q8_0) memcpy(c->qs + r * q8k_stride, c->qy[r], ggml_row_size(vt, n));
        else cpu_q8_0_to_planes(c->qy[r], n / 32, c->qs + r * qs_stride, c->d + r * d_stride, c->sums + r * d_stride);
        ggml_get_type_traits(vt)->to_float(c->qy[r], dy, n);
        c->ref[r] = c->mag[r] = 0;
        for (int i = 0; i < n; i++) {
            c->ref[r] += (double)dx[i] * dy[i];
            c->mag[r] += fabs((double)dx[i] * dy[i]);
        }
        if (vt == GGML_TYPE_Q8_1) c->ref[r] += q8_1_sum_correction(type, c->qx, c->qy[r], dy, n);
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
    bool ok = true, same_bits = true, portable_bits = true;
    double worst = 0;
    float on_path[ROWS]; /* the path's single-row vec_dot */
    for (int r = 0; r < ROWS; r++)
        cpu_type_traits_on_path(type, path)->vec_dot(c->n, &on_path[r], 0, c->qx, 0, c->qy[r], 0, 1);
    for (int nrows = 1; nrows <= ROWS && ok; nrows++) {
        const struct cpu_q8_rows y = rows_of(c, type, nrows);
        float s[ROWS * S_STRIDE], portable[ROWS];
        for (int i = 0; i < ROWS * S_STRIDE; i++) s[i] = -12345.0f;
        kernel(c->n, c->qx, &y, s, S_STRIDE);
        cpu_vec_dot_rows_on_path(type, CPU_QUANT_GENERIC)(c->n, c->qx, &y, portable, 1);
        for (int r = 0; r < nrows; r++) portable_bits = portable_bits && memcmp(&s[r * S_STRIDE], &portable[r], sizeof(float)) == 0;
        for (int i = 0; i < ROWS * S_STRIDE; i++) {
            const int r = i / S_STRIDE;
            if (i % S_STRIDE != 0 || r >= nrows) {
                ok = ok && s[i] == -12345.0f;
                continue;
            }
            const double err_single = fabs(s[i] - c->single[r]), err_ref = fabs(s[i] - c->ref[r]);
            ok = ok && isfinite(s[i]) && err_single <= 2e-6 * c->mag[r] + 1e-6 && err_ref <= 2e-5 * c->mag[r] + 1e-6;
            same_bits = same_bits && memcmp(&s[i], &on_path[r], sizeof(float)) == 0;
            if (err_single / (c->mag[r] + 1e-30) > worst) worst = err_single / (c->mag[r] + 1e-30);
        }
    }
    tap_ok(ok, "%s multi-row (1..%d rows, n=%d) on the %s path = portable vec_dot and dequantized dot (worst rel. %.2g)",
           ggml_type_name(type), ROWS, c->n, path_names[path], worst);
    /* Q8_0, Q4_0, Q4_K, Q5_K, Q6_K: ggml's eight lanes on every path, one row (the mat-vec) included */
    if (cpu_qmatch_type(type) || cpu_qmatch_k_type(type))
        tap_ok(ok && portable_bits, "%s multi-row (1..%d rows, n=%d) on the %s path: the portable eight-lane kernel's bits",
               ggml_type_name(type), ROWS, c->n, path_names[path]);
    if (exact_on_path(type))
        tap_ok(ok && same_bits, "%s multi-row (1..%d rows, n=%d) on the %s path: the bits of the path's single-row vec_dot",
               ggml_type_name(type), ROWS, c->n, path_names[path]);
}

/* The column kernels of Q8_0 and Q4_0 (eight-lane order) of a path (AVX2 or AVX-512 VNNI):
 * two weight rows (x and a shifted copy, padded stride) and one at a time,
 * against 1..ROWS activation rows interleaved from c's Q8_0 rows; every result the bits of
 * the portable kernel of the same order, outputs outside the rows x weight rows untouched. */
static void check_cols(const struct rows_case *c, enum ggml_type type, const float *x, enum cpu_quant_path path) {
    enum { W = CPU_QMATCH_COLS_WROWS, OUT_STRIDE = W + 3 };
    const cpu_vec_dot_cols_t cols = cpu_qmatch_cols_on_path(type, path);
    if (!cpu_quant_path_available(path)) {
        tap_skip("the CPU lacks it", "%s eight-lane column kernel on the %s path (n=%d)", ggml_type_name(type), path_names[path], c->n);
        return;
    }
    if (!cols) {
        tap_ok(false, "%s has an eight-lane column kernel on the %s path", ggml_type_name(type), path_names[path]);
        return;
    }
    const cpu_vec_dot_rows_t ref = cpu_vec_dot_rows_on_path(type, CPU_QUANT_GENERIC);
    const int nblocks = c->n / 32;
    const size_t x_stride = ggml_row_size(type, c->n) + 40;
    char *qx = malloc(x_stride * W);
    for (int j = 0; j < W; j++) cpu_type_traits_on_path(type, CPU_QUANT_GENERIC)->from_float(x + (size_t)j * 97, qx + j * x_stride, c->n);
    void *mem = malloc(cpu_q8_cols_size(nblocks, CPU_QUANT_MAX_ROWS));
    bool ok = true;
    for (int nrows = 1; nrows <= ROWS && ok; nrows++) {
        const struct cpu_q8_cols group = cpu_q8_cols_at(mem, nblocks, CPU_QUANT_MAX_ROWS);
        for (int r = 0; r < ROWS; r++) cpu_q8_0_to_cols(r < nrows ? c->qy[r] : NULL, nblocks, r, &group);
        struct cpu_q8_rows y = rows_of(c, type, nrows);
        float want[ROWS * W];
        for (int j = 0; j < W; j++) ref(c->n, qx + j * x_stride, &y, want + j, W);
        y.cols = &group;
        for (int nw = 1; nw <= W; nw++) {
            float s[ROWS * OUT_STRIDE];
            for (int i = 0; i < ROWS * OUT_STRIDE; i++) s[i] = -12345.0f;
            cols(c->n, qx, x_stride, nw, &y, s, OUT_STRIDE);
            for (int i = 0; i < ROWS * OUT_STRIDE; i++) {
                const int r = i / OUT_STRIDE, j = i % OUT_STRIDE;
                ok = ok && (j >= nw || r >= nrows ? s[i] == -12345.0f : memcmp(&s[i], &want[r * W + j], sizeof(float)) == 0);
            }
        }
    }
    tap_ok(ok, "%s eight-lane column kernel on the %s path (1 and %d weight rows x 1..%d rows, n=%d): the portable kernel's bits",
           ggml_type_name(type), path_names[path], W, ROWS, c->n);
    free(mem);
    free(qx);
}

/* check_cols on the AVX2 and AVX-512 VNNI paths, in both orders for Q4_0. */
static void check_cols_paths(const struct rows_case *c, enum ggml_type type, const float *x) {
    for (int p = CPU_QUANT_AVX2; p <= CPU_QUANT_AVX512VNNI; p++) check_cols(c, type, x, (enum cpu_quant_path)p);
}

void quants_test_dot_rows(void) {
    float *x = malloc((NMAX + 97 * 16) * sizeof *x), *y = malloc((size_t)ROWS * NMAX * sizeof *y);
    struct rows_case c;
    c.qx = malloc(NMAX * 2);
    const size_t qy_size = ggml_row_size(GGML_TYPE_Q8_1, NMAX); /* the largest activation row */
    c.qs = malloc((size_t)ROWS * (qy_size + QS_PAD));
    c.d = malloc((size_t)ROWS * (NMAX / 32 + D_PAD) * sizeof *c.d);
    c.sums = malloc((size_t)ROWS * (NMAX / 32 + D_PAD) * sizeof *c.sums);
    for (int r = 0; r < ROWS; r++) c.qy[r] = malloc(qy_size);
    test_seed(4711);
    for (int i = 0; i < NMAX + 97 * 16; i++) x[i] = test_normal() * (i % 89 == 0 ? 10.0f : 1.0f); /* outliers */
    for (int i = 0; i < ROWS * NMAX; i++) y[i] = test_uniform(-4.0f, 4.0f) * (i % 61 == 0 ? 30.0f : 1.0f);
    /* 133 blocks: 33 steps of four and one left over (and two full passes of the AVX2
     * eight-lane column kernels, 64 blocks each, and a short one); 7: one step and three;
     * 3: no full step (K-quants: 16, 3 and 1 super-blocks) */
    const int sizes[] = {32 * 133, 32 * 7, 32 * 3}, k_sizes[] = {256 * 16, 256 * 3, 256};
    for (size_t t = 0; t < sizeof row_types / sizeof row_types[0]; t++)
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            prepare_case(&c, row_types[t], ggml_blck_size(row_types[t]) == 256 ? k_sizes[k] : sizes[k], x, y);
            for (int p = 0; p < CPU_QUANT_PATHS; p++) {
                if (!cpu_quant_path_available((enum cpu_quant_path)p)) {
                    tap_skip("the CPU lacks it", "%s multi-row on the %s path", ggml_type_name(row_types[t]), path_names[p]);
                    continue;
                }
                check_path(&c, row_types[t], (enum cpu_quant_path)p);
            }
            if (cpu_qmatch_type(row_types[t])) check_cols_paths(&c, row_types[t], x);
        }
    for (int t = 0; t < 2; t++) { /* the column kernels on rows of a single block */
        const enum ggml_type type = t ? GGML_TYPE_Q4_0 : GGML_TYPE_Q8_0;
        prepare_case(&c, type, 32, x, y);
        check_cols_paths(&c, type, x);
    }
    tap_ok(!cpu_vec_dot_rows_on_path(GGML_TYPE_Q8_1, CPU_QUANT_GENERIC) && !cpu_vec_dot_rows_on_path(GGML_TYPE_F32, CPU_QUANT_AVX512VNNI),
           "types without a multi-row kernel report none");
    tap_ok(!cpu_qmatch_cols_on_path(GGML_TYPE_Q5_0, CPU_QUANT_AVX512VNNI) && !cpu_qmatch_cols_on_path(GGML_TYPE_Q8_0, CPU_QUANT_GENERIC),
           "types and paths without a column kernel report none");
    free(x);
    free(y);
    free(c.qx);
    free(c.qs);
    free(c.d);
    free(c.sums);
    for (int r = 0; r < ROWS; r++) free(c.qy[r]);
}
