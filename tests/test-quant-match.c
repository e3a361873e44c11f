/*
 * test-quant-match.c - Q8_0 and Q4_0 mul_mat on the CPU backend gives ggml's
 * bits (its x86 build, AVX2 or better), at 1 to 9, 13, 16, 17, 20, 21, 24, 64, 136 and
 * 160 columns (the multi-row, tile and column kernels, 8 and 16 rows wide), on 1, 2 and 3
 * threads, for an odd number of blocks per row and even and odd row counts.  The expected values
 * come from a scalar model of ggml's arithmetic written out here:
 *  - activations quantized as ggml's AVX quantize_row_q8_0: d = amax / 127
 *    stored as f16, levels = x * (127 / amax) rounded half to even;
 *  - eight lanes (ggml's vec_dot and tinyBLAS GEMM: Q8_0, and Q4_0 matrices
 *    it does not repack): lane k sums the products of values 4k..4k+3 of a
 *    block, acc_k = fma(dx * dy, lane_k, acc_k), and the lanes are added as
 *    ((0+4)+(2+6))+((1+5)+(3+7));
 *  - block-serial (ggml's repacked Q4_0 GEMV/GEMM, for 2-D Q4_0 matrices of
 *    8k rows in its CPU_REPACK buffer): acc = fma(dx * dy, block sum, acc).
 *    The same matrices in a plain buffer take the eight lanes, in ggml (its
 *    AVX-512 build, checked on the H200 host's Xeon on 2026-12-03: this test
 *    built against llama.cpp 0a50d99's ggml) and in ggmlc.
 * These were checked against llama.cpp c198af4d's bundled ggml (per-node
 * dumps of a Q8_0 and a Q4_0 llama model, the projections' outputs equal).
 * Block-serial Q4_0 weights are multiplied from the CPU_REPACK buffer type
 * (eight rows interleaved, plugins/cpu/repack.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggmlc.h"
#include "testutil.h"

enum { K = 32 * 37, MAX_ROWS = 40, MAX_COLS = 160 };

/* ggml's x86 Q8_0 quantization of one activation row: scales d, levels q. */
static void quantize_activations(const float *x, float *d, int8_t *q) {
    for (int b = 0; b < K / 32; b++) {
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[32 * b + j]));
        d[b] = ggml_fp16_to_fp32(ggml_fp32_to_fp16(amax / 127.0f));
        const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        for (int j = 0; j < 32; j++) q[32 * b + j] = (int8_t)rintf(x[32 * b + j] * id);
    }
}

/* The weights as levels and block scales, read from the quantized bytes. */
static void weight_levels(enum ggml_type type, const void *row, float *d, int8_t *q) {
    for (int b = 0; b < K / 32; b++) {
        const uint8_t *blk = (const uint8_t *)row + b * ggml_type_size(type);
        ggml_fp16_t h;
        memcpy(&h, blk, sizeof h);
        d[b] = ggml_fp16_to_fp32(h);
        for (int j = 0; j < 32; j++)
            q[32 * b + j] = type == GGML_TYPE_Q8_0 ? (int8_t)blk[2 + j]
                                                   : (int8_t)((j < 16 ? blk[2 + j] & 15 : blk[2 + j - 16] >> 4) - 8);
    }
}

static float eight_lanes(const float *dw, const int8_t *qw, const float *dx, const int8_t *qx) {
    float acc[8] = {0};
    for (int b = 0; b < K / 32; b++)
        for (int k = 0; k < 8; k++) {
            int lane = 0;
            for (int j = 32 * b + 4 * k; j < 32 * b + 4 * k + 4; j++) lane += qw[j] * qx[j];
            acc[k] = fmaf(dw[b] * dx[b], (float)lane, acc[k]);
        }
    return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

static float block_serial(const float *dw, const int8_t *qw, const float *dx, const int8_t *qx) {
    float acc = 0.0f;
    for (int b = 0; b < K / 32; b++) {
        int sum = 0;
        for (int j = 32 * b; j < 32 * b + 32; j++) sum += qw[j] * qx[j];
        acc = fmaf(dw[b] * dx[b], (float)sum, acc);
    }
    return acc;
}

struct operands {
    float w[MAX_ROWS * K], x[MAX_COLS * K];
};

/* The expected product (cols columns of rows) of weights wq (quantized) and op->x. */
static void expected(enum ggml_type type, const void *wq, int rows, bool serial, const struct operands *op, float *out) {
    static float dw[MAX_ROWS][K / 32], dx[K / 32];
    static int8_t qw[MAX_ROWS][K], qx[K];
    for (int r = 0; r < rows; r++) weight_levels(type, (const char *)wq + r * ggml_row_size(type, K), dw[r], qw[r]);
    for (int c = 0; c < MAX_COLS; c++) {
        quantize_activations(op->x + c * K, dx, qx);
        for (int r = 0; r < rows; r++)
            out[c * rows + r] = serial ? block_serial(dw[r], qw[r], dx, qx) : eight_lanes(dw[r], qw[r], dx, qx);
    }
}

/* The CPU device's CPU_REPACK buffer type (its first extra buffer type), or NULL. */
static ggml_backend_buffer_type_t repack_buft(void) {
    typedef ggml_backend_buffer_type_t *(*extra_bufts_fn)(ggml_backend_dev_t);
    ggml_backend_reg_t reg = ggml_backend_cpu_reg();
    extra_bufts_fn fn = reg ? (extra_bufts_fn)ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts") : NULL;
    return fn ? fn(ggml_backend_reg_dev_get(reg, 0))[0] : NULL;
}

/* w (rows x K, quantized from op->w; in a CPU_REPACK buffer when repacked) times the first
 * cols columns of op->x on n_threads. */
static bool product(enum ggml_type type, int rows, const struct operands *op, int cols, int n_threads, bool repacked,
                    float *dst) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){16 << 20, NULL, false});
    struct ggml_context *wctx = ggml_init((struct ggml_init_params){ggml_tensor_overhead(), NULL, true});
    struct ggml_tensor *w = ggml_new_tensor_2d(repacked ? wctx : ctx, type, K, rows);
    struct ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, cols);
    ggml_backend_buffer_t wbuf = repacked && repack_buft() ? ggml_backend_alloc_ctx_tensors_from_buft(wctx, repack_buft()) : NULL;
    if (repacked && !wbuf) {
        tap_diag("no CPU_REPACK buffer: %s", ggmlc_last_error());
        ggml_free(wctx);
        ggml_free(ctx);
        return false;
    }
    void *wq = malloc(ggml_nbytes(w));
    ggml_quantize_chunk(type, op->w, wq, 0, rows, K, NULL);
    if (w->buffer) ggml_backend_tensor_set(w, wq, 0, ggml_nbytes(w));
    else memcpy(w->data, wq, ggml_nbytes(w)); /* context memory: ggml's tensor_set needs a buffer */
    free(wq);
    memcpy(x->data, op->x, (size_t)cols * K * sizeof(float));
    struct ggml_tensor *out = ggml_mul_mat(ctx, w, x);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    const bool ok = ggml_graph_compute_with_ctx(ctx, gf, n_threads) == GGML_STATUS_SUCCESS;
    if (ok) memcpy(dst, out->data, (size_t)cols * rows * sizeof(float));
    else tap_diag("%s: %s", ggml_type_name(type), ggmlc_last_error());
    ggml_free(ctx);
    ggml_free(wctx);
    if (wbuf) ggml_backend_buffer_free(wbuf);
    return ok;
}

/* Every column count and thread count of one weight type and row count, the weights in a
 * plain buffer (eight lanes) and, where repacked (Q4_0 of 8k rows), in a CPU_REPACK buffer
 * (block-serial). */
static void check_case(enum ggml_type type, int rows, bool repacked, const struct operands *op) {
    static float want[MAX_COLS * MAX_ROWS], got[MAX_COLS * MAX_ROWS];
    void *wq = malloc(ggml_row_size(type, K) * rows);
    ggml_quantize_chunk(type, op->w, wq, 0, rows, K, NULL);
    expected(type, wq, rows, repacked, op, want);
    free(wq);
    /* 17, 20, 21, 24: a group of 16 (the wide column kernel) then a last one of 1, 4, 5, 8 rows */
    const int col_counts[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 16, 17, 20, 21, 24, 64, 136, MAX_COLS};
    for (int t = 1; t <= 3; t++) /* 3 threads: odd shares of weight rows */
        for (size_t i = 0; i < sizeof col_counts / sizeof *col_counts; i++) {
            const int cols = col_counts[i];
            int differ = -1;
            if (product(type, rows, op, cols, t, repacked, got)) {
                differ = 0;
                for (int j = 0; j < cols * rows; j++) differ += memcmp(&got[j], &want[j], sizeof(float)) != 0;
            }
            tap_ok(differ == 0, "%s%s %d rows x %d columns, %d thread(s): ggml's %s order, bit for bit (%d differ)",
                   ggml_type_name(type), repacked ? " (CPU_REPACK)" : "", rows, cols, t,
                   repacked ? "block-serial" : "eight-lane", differ);
        }
}

int main(void) {
    static struct operands op;
    test_seed(31);
    for (int i = 0; i < MAX_ROWS * K; i++) op.w[i] = test_normal();
    for (int i = 0; i < MAX_COLS * K; i++) op.x[i] = test_normal() * (1.0f + (float)(i % 5)) * (i % 97 == 0 ? 20.0f : 1.0f);
    check_case(GGML_TYPE_Q8_0, MAX_ROWS, false, &op);
    check_case(GGML_TYPE_Q8_0, 36, false, &op);
    check_case(GGML_TYPE_Q4_0, MAX_ROWS, false, &op); /* 40 rows in a plain buffer: eight lanes */
    check_case(GGML_TYPE_Q4_0, MAX_ROWS, true, &op);  /* repacked: blocks in series */
    check_case(GGML_TYPE_Q4_0, 16, false, &op);
    check_case(GGML_TYPE_Q4_0, 16, true, &op);
    check_case(GGML_TYPE_Q4_0, 36, false, &op);       /* 36 rows: not repackable */
    check_case(GGML_TYPE_Q8_0, 35, false, &op);       /* odd: a weight row without a partner */
    check_case(GGML_TYPE_Q4_0, 35, false, &op);
    return tap_done();
}
