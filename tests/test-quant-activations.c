/*
 * test-quant-activations.c - quantized mul_mat on the CPU backend rounds its
 * activations as ggml does: each activation row is quantized to the weight
 * type's vec_dot_type (Q8_0, Q8_1 or Q8_K) before the dot product, on every
 * path.  So a column's result does not depend on how many columns the product
 * has (1, 8 and 64 give bit-identical columns), and every result agrees with
 * a reference built from the library's public conversions only: quantize the
 * activation row with the vec_dot_type's from_float, dequantize both operands,
 * dot in double precision.  336 columns take the dequantizing GEMM path,
 * whose float sums are ordered differently: it must agree with the same
 * reference as tightly, which it cannot with unrounded activations.  Every
 * column of products with 2, 3, 8 and 16 columns is its one-column product, bit for bit,
 * and a one-column product split between 3 or 4 threads gives 1 thread's bits.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-cpu.h"
#include "ggmlc.h"
#include "testutil.h"

enum { K = 512, ROWS = 40, MAX_COLS = 336 }; /* from 320 columns every type takes the GEMM */

static const enum ggml_type types[] = {
    GGML_TYPE_Q4_0,   GGML_TYPE_Q4_1,  GGML_TYPE_Q5_0,   GGML_TYPE_Q5_1, GGML_TYPE_Q8_0,
    GGML_TYPE_IQ4_NL, GGML_TYPE_MXFP4, GGML_TYPE_Q2_K,   GGML_TYPE_Q3_K, GGML_TYPE_Q4_K,
    GGML_TYPE_Q5_K,   GGML_TYPE_Q6_K,  GGML_TYPE_IQ4_XS,
};

/* ggml's vec_dot_type of each weight type (its CPU type traits). */
static enum ggml_type expected_vec_dot_type(enum ggml_type t) {
    switch (t) {
    case GGML_TYPE_Q4_1:
    case GGML_TYPE_Q5_1: return GGML_TYPE_Q8_1;
    case GGML_TYPE_Q4_0:
    case GGML_TYPE_Q5_0:
    case GGML_TYPE_Q8_0:
    case GGML_TYPE_IQ4_NL:
    case GGML_TYPE_MXFP4: return GGML_TYPE_Q8_0;
    default: return GGML_TYPE_Q8_K;
    }
}

/* Weights (quantized from a smooth random row) and activations with a wide range. */
struct operands {
    float w[ROWS * K], x[MAX_COLS * K];
};

static void fill_operands(struct operands *op) {
    test_seed(20);
    for (int i = 0; i < ROWS * K; i++) op->w[i] = test_normal();
    for (int i = 0; i < MAX_COLS * K; i++) op->x[i] = test_normal() * (1.0f + (float)(i % 7));
}

/* Compute out (cols columns of ROWS) with 2 threads into dst, free ctx; false (with a
 * diagnostic naming `what`) on failure. */
static bool compute_into(struct ggml_context *ctx, struct ggml_tensor *out, const char *what,
                         int cols, float *dst) {
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    const bool ok = ggml_graph_compute_with_ctx(ctx, gf, 2) == GGML_STATUS_SUCCESS;
    if (ok)
        memcpy(dst, out->data, (size_t)cols * ROWS * sizeof(float));
    else
        tap_diag("%s x %d columns: %s", what, cols, ggmlc_last_error());
    ggml_free(ctx);
    return ok;
}

/* dst = w x b[:, 0:cols] through mul_mat. */
static bool product(enum ggml_type type, const struct operands *op, int cols, float *dst) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){16 << 20, NULL, false});
    struct ggml_tensor *w = ggml_new_tensor_2d(ctx, type, K, ROWS);
    struct ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, cols);
    ggml_quantize_chunk(type, op->w, w->data, 0, ROWS, K, NULL);
    memcpy(x->data, op->x, (size_t)cols * K * sizeof(float));
    return compute_into(ctx, ggml_mul_mat(ctx, w, x), ggml_type_name(type), cols, dst);
}

/* The same product through mul_mat_id: two experts holding the same weights, the tokens
 * (columns) alternating between them. */
static bool product_id(enum ggml_type type, const struct operands *op, int cols, float *dst) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){16 << 20, NULL, false});
    struct ggml_tensor *w = ggml_new_tensor_3d(ctx, type, K, ROWS, 2);
    struct ggml_tensor *x = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, K, 1, cols);
    struct ggml_tensor *ids = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 1, cols);
    for (int e = 0; e < 2; e++)
        ggml_quantize_chunk(type, op->w, (char *)w->data + e * w->nb[2], 0, ROWS, K, NULL);
    memcpy(x->data, op->x, (size_t)cols * K * sizeof(float));
    for (int c = 0; c < cols; c++) ((int32_t *)ids->data)[c] = c % 2;
    return compute_into(ctx, ggml_mul_mat_id(ctx, w, x, ids), "mul_mat_id", cols, dst);
}

/* Q4_1 and Q5_1 add each block's offset m times the activation block's sum, which ggml's
 * Q8_1 carries as s = fp16(d * sum of its levels): the dot uses that rounded s, not the sum
 * of the dequantized values.  The correction of weight row wq (Q4_1 or Q5_1 blocks, whose
 * second half is m) against activation row xq (Q8_1 blocks: d, s, 32 levels) for block j
 * whose dequantized activations are x: m * (s - sum x). */
static double q8_1_sum_correction(enum ggml_type type, const void *wq, const void *xq,
                                  const float *x) {
    const size_t wblock = ggml_type_size(type), xblock = ggml_type_size(GGML_TYPE_Q8_1);
    double c = 0;
    for (int j = 0; j < K / 32; j++) {
        ggml_fp16_t m, s;
        memcpy(&m, (const char *)wq + j * wblock + sizeof(ggml_fp16_t), sizeof m);
        memcpy(&s, (const char *)xq + j * xblock + sizeof(ggml_fp16_t), sizeof s);
        double sum = 0;
        for (int i = 0; i < 32; i++) sum += x[32 * j + i];
        c += (double)ggml_fp16_to_fp32(m) * ((double)ggml_fp16_to_fp32(s) - sum);
    }
    return c;
}

/* The reference of every column: activations rounded through the vec_dot_type, double dots.
 * tol[i] bounds the float rounding of a kernel's sum: 1e-5 of the sum of |terms|. */
static void reference(enum ggml_type type, const struct operands *op, double *ref, double *tol) {
    const enum ggml_type vt = ggml_get_type_traits_cpu(type)->vec_dot_type;
    static float wd[ROWS * K], xr[K];
    const size_t wrow = ggml_row_size(type, K);
    char *wq = malloc(ROWS * wrow), *q = malloc(ggml_row_size(vt, K));
    ggml_quantize_chunk(type, op->w, wq, 0, ROWS, K, NULL);
    for (int r = 0; r < ROWS; r++)
        ggml_get_type_traits(type)->to_float(wq + r * wrow, wd + r * K, K);
    for (int c = 0; c < MAX_COLS; c++) {
        ggml_get_type_traits_cpu(vt)->from_float(op->x + c * K, q, K);
        ggml_get_type_traits(vt)->to_float(q, xr, K);
        for (int r = 0; r < ROWS; r++) {
            double s = 0, a = 0;
            for (int i = 0; i < K; i++) {
                s += (double)wd[r * K + i] * xr[i];
                a += fabs((double)wd[r * K + i] * xr[i]);
            }
            if (vt == GGML_TYPE_Q8_1) s += q8_1_sum_correction(type, wq + r * wrow, q, xr);
            ref[c * ROWS + r] = s;
            tol[c * ROWS + r] = 1e-5 * a + 1e-30;
        }
    }
    free(q);
    free(wq);
}

/* Columns [0, cols) of res agree with the reference; returns the worst error / tolerance. */
static double worst_vs_reference(const float *res, const double *ref, const double *tol, int cols) {
    double worst = 0;
    for (int i = 0; i < cols * ROWS; i++) {
        const double e = fabs(res[i] - ref[i]) / tol[i];
        if (!(e <= worst)) worst = isnan(e) ? INFINITY : e;
    }
    return worst;
}

static void check_type(enum ggml_type type, const struct operands *op) {
    const char *name = ggml_type_name(type);
    tap_ok(ggml_get_type_traits_cpu(type)->vec_dot_type == expected_vec_dot_type(type),
           "%s: vec_dot_type %s", name,
           ggml_type_name(ggml_get_type_traits_cpu(type)->vec_dot_type));
    static float res[4][MAX_COLS * ROWS];
    static double ref[MAX_COLS * ROWS], tol[MAX_COLS * ROWS];
    const int cols[4] = {1, 8, 64, MAX_COLS};
    for (int i = 0; i < 4; i++)
        if (!product(type, op, cols[i], res[i])) {
            tap_ok(false, "%s: products compute", name);
            return;
        }
    reference(type, op, ref, tol);
    /* IQ4_NL: ggml sums one column (its vec_dot) and several (tinyBLAS) in two orders, both
     * checked bit for bit by test-quant-match */
    const bool one_column_apart = type == GGML_TYPE_IQ4_NL;
    if (one_column_apart)
        tap_skip("ggml's one-column order differs", "%s: column 0 of 1 and of 8 columns identical",
                 name);
    else
        tap_ok(memcmp(res[0], res[1], ROWS * sizeof(float)) == 0,
               "%s: column 0 of 1 and of 8 columns identical", name);
    tap_ok(memcmp(res[1], res[2], 8 * ROWS * sizeof(float)) == 0,
           "%s: columns 0-7 of 8 and of 64 identical", name);
    for (int i = 0; i < 4; i++) {
        const double worst = worst_vs_reference(res[i], ref, tol, cols[i]);
        tap_ok(worst <= 1,
               "%s x %d columns: activations rounded as ggml (worst error %.3g of the bound)", name,
               cols[i], worst);
    }
    if (!product_id(type, op, MAX_COLS, res[3])) {
        tap_ok(false, "%s: mul_mat_id computes", name);
        return;
    }
    /* experts in a plain buffer sum in the order of a matrix there, as ggml's do (those in
     * CPU_REPACK: test-quant-match) */
    if (one_column_apart) /* ggml's mul_mat_id takes its vec_dot order at every column count */
        tap_ok(memcmp(res[0], res[3], ROWS * sizeof(float)) == 0,
               "%s: mul_mat_id columns as mul_mat's of one column", name);
    else
        tap_ok(memcmp(res[2], res[3], 64 * ROWS * sizeof(float)) == 0,
               "%s: mul_mat_id columns as mul_mat's", name);
    const double worst = worst_vs_reference(res[3], ref, tol, MAX_COLS);
    tap_ok(worst <= 1, "%s mul_mat_id: activations rounded as ggml (worst error %.3g of the bound)",
           name, worst);
}

/* ---------------------------------------- every column count gives the same bits */

enum { ODD_ROWS = 37, MAX_K = 768, COUNT_COLS = 16 };

/* Columns col0 .. col0 + cols - 1 of x (MAX_K apart, k values each) times w (rows rows of k
 * values, quantized to type), on nth threads, into dst (cols x rows). */
static bool product_cols_on(enum ggml_type type, int k, int rows, const float *w, const float *x,
                            int col0, int cols, int nth, float *dst) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){8 << 20, NULL, false});
    struct ggml_tensor *wt = ggml_new_tensor_2d(ctx, type, k, rows);
    struct ggml_tensor *xt = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, k, cols);
    ggml_quantize_chunk(type, w, wt->data, 0, rows, k, NULL);
    for (int c = 0; c < cols; c++)
        memcpy((float *)xt->data + c * k, x + (col0 + c) * MAX_K, (size_t)k * sizeof(float));
    struct ggml_tensor *out = ggml_mul_mat(ctx, wt, xt);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    const bool ok = ggml_graph_compute_with_ctx(ctx, gf, nth) == GGML_STATUS_SUCCESS;
    if (ok)
        memcpy(dst, out->data, (size_t)cols * rows * sizeof(float));
    else tap_diag("%s x %d columns: %s", ggml_type_name(type), cols, ggmlc_last_error());
    ggml_free(ctx);
    return ok;
}

static bool product_cols(enum ggml_type type, int k, const float *w, const float *x, int col0,
                         int cols, float *dst) {
    return product_cols_on(type, k, ODD_ROWS, w, x, col0, cols, 2, dst);
}

/* Each column of products with 2, 3, 8 and 16 columns is, to the bit, the product of that
 * column alone: an odd number of weight rows (split unevenly between the threads) and a
 * depth with a partial step of four blocks (32-value types: 13 blocks). */
static void check_column_counts(enum ggml_type type) {
    static float w[ODD_ROWS * MAX_K], x[COUNT_COLS * MAX_K];
    if (type == GGML_TYPE_IQ4_NL) { /* ggml's one-column order differs (test-quant-match) */
        tap_skip("ggml's one-column order differs",
                 "iq4_nl: columns of several-column products = 1-column products");
        return;
    }
    static float single[COUNT_COLS][ODD_ROWS], res[COUNT_COLS * ODD_ROWS];
    const int k = ggml_blck_size(type) == 256 ? MAX_K : 32 * 13;
    test_seed(77);
    for (int i = 0; i < ODD_ROWS * MAX_K; i++) w[i] = test_normal();
    for (int i = 0; i < COUNT_COLS * MAX_K; i++) x[i] = test_normal() * (1.0f + (float)(i % 5));
    bool ok = true;
    for (int c = 0; c < COUNT_COLS && ok; c++) ok = product_cols(type, k, w, x, c, 1, single[c]);
    const int counts[] = {2, 3, 8, 16};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0] && ok; i++) {
        ok = product_cols(type, k, w, x, 0, counts[i], res);
        for (int c = 0; c < counts[i] && ok; c++) {
            ok = memcmp(res + c * ODD_ROWS, single[c], sizeof single[c]) == 0;
            if (!ok) tap_diag("column %d of %d differs from its one-column product", c, counts[i]);
        }
    }
    tap_ok(ok, "%s: every column of 2, 3, 8 and 16-column products (%d rows, k=%d) = its 1-column product, bit for bit",
           ggml_type_name(type), ODD_ROWS, k);
}

/* A decode step's product (one column) large enough to be split between threads: on 3 and 4
 * threads, the bits of 1 thread. */
enum { SPLIT_ROWS = 161 };
static void check_threads(enum ggml_type type) {
    static float w[SPLIT_ROWS * MAX_K], x[MAX_K], one[SPLIT_ROWS], many[SPLIT_ROWS];
    test_seed(91);
    for (int i = 0; i < SPLIT_ROWS * MAX_K; i++) w[i] = test_normal();
    for (int i = 0; i < MAX_K; i++) x[i] = test_normal() * (1.0f + (float)(i % 3));
    bool ok = product_cols_on(type, 512, SPLIT_ROWS, w, x, 0, 1, 1, one);
    for (int nth = 3; nth <= 4 && ok; nth++)
        ok = product_cols_on(type, 512, SPLIT_ROWS, w, x, 0, 1, nth, many) &&
             memcmp(one, many, sizeof one) == 0;
    tap_ok(ok, "%s: one column of %d rows (k=512) on 3 and 4 threads = on 1 thread, bit for bit",
           ggml_type_name(type), SPLIT_ROWS);
}

int main(void) {
    static struct operands op;
    fill_operands(&op);
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) check_type(types[i], &op);
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) check_column_counts(types[i]);
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) check_threads(types[i]);
    return tap_done();
}
