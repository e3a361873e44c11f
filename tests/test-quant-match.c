/*
 * test-quant-match.c - Q8_0, Q4_0, the K-quants and IQ4_XS mul_mat on the CPU backend gives ggml's
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
/* The levels of IQ4_NL and of MXFP4 (E2M1 values doubled; its E8M0 scale is taken halved). */
static const int8_t iq4_nl_levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                         1,    13,   25,  38,  53,  69,  89,  113};
static const int8_t mxfp4_levels[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/* 2^(e - 128): an E8M0 scale halved, as a float (e 0 and 1 subnormal). */
static float e8m0_half(uint8_t e) {
    const uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static void weight_levels(enum ggml_type type, const void *row, float *d, int8_t *q) {
    for (int b = 0; b < K / 32; b++) {
        const uint8_t *blk = (const uint8_t *)row + b * ggml_type_size(type);
        if (type == GGML_TYPE_MXFP4) { /* e, qs[16] */
            d[b] = e8m0_half(blk[0]);
            for (int j = 0; j < 32; j++)
                q[32 * b + j] = mxfp4_levels[j < 16 ? blk[1 + j] & 15 : blk[1 + j - 16] >> 4];
            continue;
        }
        ggml_fp16_t h;
        memcpy(&h, blk, sizeof h);
        d[b] = ggml_fp16_to_fp32(h);
        for (int j = 0; j < 32; j++) {
            const int nibble = j < 16 ? blk[2 + j] & 15 : blk[2 + j - 16] >> 4;
            q[32 * b + j] = type == GGML_TYPE_Q8_0     ? (int8_t)blk[2 + j]
                            : type == GGML_TYPE_IQ4_NL ? iq4_nl_levels[nibble]
                                                       : (int8_t)(nibble - 8);
        }
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

/* ggml's x86 vec_dot of IQ4_NL and MXFP4: blocks in pairs, even blocks into one set of eight
 * lanes and odd blocks into another, the lanes of their sum added as eight_lanes adds them;
 * an odd last block's whole sum in one more fma. */
static float block_pairs(const float *dw, const int8_t *qw, const float *dx, const int8_t *qx) {
    float acc[2][8] = {{0}}, v[8];
    int b = 0;
    for (; b + 1 < K / 32; b += 2)
        for (int h = 0; h < 2; h++)
            for (int k = 0; k < 8; k++) {
                int lane = 0;
                for (int j = 32 * (b + h) + 4 * k; j < 32 * (b + h) + 4 * k + 4; j++)
                    lane += qw[j] * qx[j];
                acc[h][k] = fmaf(dw[b + h] * dx[b + h], (float)lane, acc[h][k]);
            }
    for (int k = 0; k < 8; k++) v[k] = acc[0][k] + acc[1][k];
    float r = ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]));
    if (b < K / 32) {
        int sum = 0;
        for (int j = 32 * b; j < 32 * b + 32; j++) sum += qw[j] * qx[j];
        r = fmaf(dw[b] * dx[b], (float)sum, r);
    }
    return r;
}

enum order { EIGHT_LANES, BLOCK_SERIAL, BLOCK_PAIRS };
static const char *const order_names[] = {"eight-lane", "block-serial", "vec_dot block-pair"};

struct operands {
    float w[MAX_ROWS * K], x[MAX_COLS * K];
};

/* The expected product (cols columns of rows) of weights wq (quantized) and op->x. */
static void expected(enum ggml_type type, const void *wq, int rows, enum order order,
                     const struct operands *op, float *out) {
    static float dw[MAX_ROWS][K / 32], dx[K / 32];
    static int8_t qw[MAX_ROWS][K], qx[K];
    for (int r = 0; r < rows; r++) weight_levels(type, (const char *)wq + r * ggml_row_size(type, K), dw[r], qw[r]);
    for (int c = 0; c < MAX_COLS; c++) {
        quantize_activations(op->x + c * K, dx, qx);
        for (int r = 0; r < rows; r++)
            out[c * rows + r] = order == BLOCK_SERIAL  ? block_serial(dw[r], qw[r], dx, qx)
                                : order == BLOCK_PAIRS ? block_pairs(dw[r], qw[r], dx, qx)
                                                       : eight_lanes(dw[r], qw[r], dx, qx);
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
 * cols columns of op->x on n_threads; with experts, through mul_mat_id: a stack of two
 * experts holding w, the columns taking them in turn. */
static bool product_of(enum ggml_type type, int k, int rows, const struct operands *op, int cols,
                       int n_threads, bool repacked, bool experts, float *dst) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){16 << 20, NULL, false});
    struct ggml_context *wctx = ggml_init((struct ggml_init_params){ggml_tensor_overhead(), NULL, true});
    struct ggml_tensor *w =
        ggml_new_tensor_3d(repacked ? wctx : ctx, type, k, rows, experts ? 2 : 1);
    struct ggml_tensor *x = experts ? ggml_new_tensor_3d(ctx, GGML_TYPE_F32, k, 1, cols)
                                    : ggml_new_tensor_2d(ctx, GGML_TYPE_F32, k, cols);
    ggml_backend_buffer_t wbuf = repacked && repack_buft() ? ggml_backend_alloc_ctx_tensors_from_buft(wctx, repack_buft()) : NULL;
    if (repacked && !wbuf) {
        tap_diag("no CPU_REPACK buffer: %s", ggmlc_last_error());
        ggml_free(wctx);
        ggml_free(ctx);
        return false;
    }
    void *wq = malloc(ggml_nbytes(w));
    ggml_quantize_chunk(type, op->w, wq, 0, rows, k, NULL);
    if (experts) memcpy((char *)wq + ggml_nbytes(w) / 2, wq, ggml_nbytes(w) / 2);
    if (w->buffer) ggml_backend_tensor_set(w, wq, 0, ggml_nbytes(w));
    else memcpy(w->data, wq, ggml_nbytes(w)); /* context memory: ggml's tensor_set needs a buffer */
    free(wq);
    memcpy(x->data, op->x, (size_t)cols * k * sizeof(float));
    struct ggml_tensor *ids = experts ? ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 1, cols) : NULL;
    for (int c = 0; ids && c < cols; c++) ((int32_t *)ids->data)[c] = c % 2;
    struct ggml_tensor *out = experts ? ggml_mul_mat_id(ctx, w, x, ids) : ggml_mul_mat(ctx, w, x);
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

static bool product(enum ggml_type type, int k, int rows, const struct operands *op, int cols,
                    int n_threads, bool repacked, float *dst) {
    return product_of(type, k, rows, op, cols, n_threads, repacked, false, dst);
}

/* A stack of experts in CPU_REPACK: every column in ggml's repacked GEMV order (want), as
 * ggml's repacked MUL_MAT_ID sums them. */
static void check_experts(enum ggml_type type, int k, int rows, const struct operands *op,
                          const float *want) {
    static float got[MAX_COLS * MAX_ROWS];
    const int col_counts[] = {1, 5, 9, 40};
    for (int t = 1; t <= 2; t++)
        for (size_t i = 0; i < sizeof col_counts / sizeof *col_counts; i++) {
            const int cols = col_counts[i];
            int differ = -1;
            if (product_of(type, k, rows, op, cols, t, true, true, got)) {
                differ = 0;
                for (int j = 0; j < cols * rows; j++)
                    differ += memcmp(&got[j], &want[j], sizeof(float)) != 0;
            }
            tap_ok(
                differ == 0,
                "%s (CPU_REPACK) experts, %d rows x %d columns, %d thread(s): ggml's GEMV order, bit for bit (%d differ)",
                ggml_type_name(type), rows, cols, t, differ);
        }
}

/* Every column count and thread count of one weight type and row count, the weights in a
 * plain buffer (eight lanes) and, where repacked (Q4_0 of 8k rows), in a CPU_REPACK buffer
 * (block-serial). */
static void check_case(enum ggml_type type, int rows, bool repacked, const struct operands *op) {
    static float want[MAX_COLS * MAX_ROWS], want1[MAX_COLS * MAX_ROWS], got[MAX_COLS * MAX_ROWS];
    void *wq = malloc(ggml_row_size(type, K) * rows);
    ggml_quantize_chunk(type, op->w, wq, 0, rows, K, NULL);
    /* plain IQ4_NL: ggml's vec_dot for one column, tinyBLAS (eight lanes) for more; plain
     * MXFP4: its vec_dot at every column count */
    const enum order order = repacked                  ? BLOCK_SERIAL
                             : type == GGML_TYPE_MXFP4 ? BLOCK_PAIRS
                                                       : EIGHT_LANES;
    const enum order order1 = !repacked && type == GGML_TYPE_IQ4_NL ? BLOCK_PAIRS : order;
    expected(type, wq, rows, order, op, want);
    expected(type, wq, rows, order1, op, want1);
    free(wq);
    /* 17, 20, 21, 24: a group of 16 (the wide column kernel) then a last one of 1, 4, 5, 8 rows */
    const int col_counts[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 16, 17, 20, 21, 24, 64, 136, MAX_COLS};
    for (int t = 1; t <= 3; t++) /* 3 threads: odd shares of weight rows */
        for (size_t i = 0; i < sizeof col_counts / sizeof *col_counts; i++) {
            const int cols = col_counts[i];
            int differ = -1;
            const float *w = cols == 1 ? want1 : want;
            if (product(type, K, rows, op, cols, t, repacked, got)) {
                differ = 0;
                for (int j = 0; j < cols * rows; j++)
                    differ += memcmp(&got[j], &w[j], sizeof(float)) != 0;
            }
            tap_ok(
                differ == 0,
                "%s%s %d rows x %d columns, %d thread(s): ggml's %s order, bit for bit (%d differ)",
                ggml_type_name(type), repacked ? " (CPU_REPACK)" : "", rows, cols, t,
                order_names[cols == 1 ? order1 : order], differ);
        }
    if (repacked) check_experts(type, K, rows, op, want);
}

/* ------------------------------------------------ K-quants and IQ4_XS
 *
 * ggml's x86 K-quant dots (its AVX2 vec_dot, also in its AVX-512 builds; ggml never
 * dequantizes them into a GEMM there), written out: activations quantized as its
 * quantize_row_q8_K (iscale = -127 / the value of largest magnitude, levels rounded half to
 * even, capped at 127, sums of each 16); per super-block eight integer lanes, lane k the
 * products of values 4k..4k+3 of every 32 times their scale, acc_k = fma(y.d * x.d, lane_k,
 * acc_k), the lanes added as ((0+4)+(2+6))+((1+5)+(3+7)); Q2_K FMAs its mins' lanes
 * (m[2k] bsum[2k] + m[2k+1] bsum[2k+1], times -y.d * x.dmin) into the same lanes first,
 * Q3_K's levels are signed (-4..3), IQ4_XS scales IQ4_NL levels.  Q6_K takes levels 0..63 and
 * subtracts 32 * (sc[2k] * bsum[2k] + sc[2k+1] * bsum[2k+1]) from lane k.  The mins times
 * -y.d * x.dmin: Q4_K in four fused lanes (lane k: sub-blocks 2k, 2k+1) added as
 * (0+2)+(1+3), Q5_K in one fused sum.  Checked against llama.cpp 0a50d99's ggml (x86,
 * AVX-512 build) bit for bit at 1 to 400 columns on 2026-12-05. */
enum { KK = 1024 };

struct q8k_row {
    float d[KK / 256];
    int8_t q[KK];
    int bsum[KK / 16];
};

static void quantize_q8_K(const float *x, struct q8k_row *y) {
    for (int b = 0; b < KK / 256; b++) {
        float amax = 0, max = 0;
        for (int j = 256 * b; j < 256 * b + 256; j++)
            if (fabsf(x[j]) > amax) amax = fabsf(x[j]), max = x[j];
        const float iscale = amax != 0 ? -127.0f / max : 0;
        for (int j = 256 * b; j < 256 * b + 256; j++) {
            const float v = rintf(iscale * x[j]);
            y->q[j] = (int8_t)(v > 127 ? 127 : v);
        }
        for (int g = 16 * b; g < 16 * b + 16; g++) {
            y->bsum[g] = 0;
            for (int j = 16 * g; j < 16 * g + 16; j++) y->bsum[g] += y->q[j];
        }
        y->d[b] = amax != 0 ? 1 / iscale : 0;
    }
}

static float half(const uint8_t *p) {
    ggml_fp16_t h;
    memcpy(&h, p, sizeof h);
    return ggml_fp16_to_fp32(h);
}

/* A super-block's levels (0..63 unsigned), per-value scales and per-32 mins. */
struct kblock {
    int level[256], scale[256], min32[8], min16[16];
    float d, dmin;
};

/* Q2_K, Q3_K (signed levels -4..3) and IQ4_XS. */
static void decode_k_more(enum ggml_type type, const uint8_t *p, struct kblock *kb) {
    if (type == GGML_TYPE_IQ4_XS) { /* d, scales_h (16 bits), scales_l[4], qs[128] */
        const int sh = p[2] | p[3] << 8;
        kb->d = half(p);
        for (int e = 0; e < 256; e++) {
            const int ib = e / 32, j = e % 32;
            const uint8_t b = p[8 + 16 * ib + j % 16];
            kb->level[e] = iq4_nl_levels[j < 16 ? b & 15 : b >> 4];
            kb->scale[e] =
                (((p[4 + ib / 2] >> (4 * (ib % 2))) & 15) | ((sh >> (2 * ib)) & 3) << 4) - 32;
        }
        return;
    }
    if (type == GGML_TYPE_Q2_K) { /* scales[16] (scale | min << 4), qs[64], d, dmin */
        for (int e = 0; e < 256; e++) {
            kb->level[e] = (p[16 + (e / 128) * 32 + e % 32] >> (2 * ((e % 128) / 32))) & 3;
            kb->scale[e] = p[e / 16] & 15;
        }
        for (int j = 0; j < 16; j++) kb->min16[j] = p[j] >> 4;
        kb->d = half(p + 80);
        kb->dmin = half(p + 82);
        return;
    }
    /* Q3_K: hmask[32], qs[64], scales[12] (6 bits, + 32), d */
    const uint8_t *sc = p + 96;
    for (int e = 0; e < 256; e++) {
        const int j = e / 16, low = j < 8 ? sc[j] & 15 : sc[j - 8] >> 4;
        const int high = (p[e % 32] >> (e / 32)) & 1;
        kb->level[e] =
            ((p[32 + (e / 128) * 32 + e % 32] >> (2 * ((e % 128) / 32))) & 3) - (high ? 0 : 4);
        kb->scale[e] = (low | ((sc[8 + j % 4] >> (2 * (j / 4))) & 3) << 4) - 32;
    }
    kb->d = half(p + 108);
}

static void decode_k(enum ggml_type type, const uint8_t *p, struct kblock *kb) {
    if (type == GGML_TYPE_Q2_K || type == GGML_TYPE_Q3_K || type == GGML_TYPE_IQ4_XS) {
        decode_k_more(type, p, kb);
        return;
    }
    if (type == GGML_TYPE_Q6_K) { /* ql[128] qh[64] scales[16] d */
        for (int e = 0; e < 256; e++) {
            const int h = e / 128, r = e % 128, l = r % 32, quarter = r / 32;
            const uint8_t b = p[64 * h + l + 32 * (quarter & 1)];
            kb->level[e] =
                (quarter < 2 ? b & 15 : b >> 4) | ((p[128 + 32 * h + l] >> (2 * quarter)) & 3) << 4;
            kb->scale[e] = (int8_t)p[192 + e / 16];
        }
        kb->d = half(p + 208);
        return;
    }
    /* Q4_K / Q5_K: d, dmin, scales[12], (Q5_K: qh[32]), qs[128] */
    const uint8_t *sc = p + 4, *qh = type == GGML_TYPE_Q5_K ? p + 16 : NULL,
                  *qs = p + (qh ? 48 : 16);
    kb->d = half(p);
    kb->dmin = half(p + 2);
    for (int j = 0; j < 8; j++) {
        const int s = j < 4 ? sc[j] & 63 : (sc[j + 4] & 15) | (sc[j - 4] >> 6) << 4;
        kb->min32[j] = j < 4 ? sc[j + 4] & 63 : (sc[j + 4] >> 4) | (sc[j] >> 6) << 4;
        for (int l = 0; l < 32; l++) {
            const int e = 32 * j + l, b = qs[32 * (j / 2) + l];
            kb->level[e] = (j % 2 ? b >> 4 : b & 15) | (qh ? ((qh[l] >> j) & 1) << 4 : 0);
            kb->scale[e] = s;
        }
    }
}

static float k_dot(enum ggml_type type, const uint8_t *row, const struct q8k_row *y) {
    float acc[8] = {0}, accm[4] = {0}, summs = 0;
    for (int b = 0; b < KK / 256; b++) {
        struct kblock kb = {0}; /* the fields a type lacks stay 0 (Q6_K has no mins) */
        decode_k(type, row + b * ggml_type_size(type), &kb);
        int lane[8] = {0};
        for (int e = 0; e < 256; e++)
            lane[(e % 32) / 4] += kb.scale[e] * kb.level[e] * y->q[256 * b + e];
        const int *bs = y->bsum + 16 * b;
        if (type == GGML_TYPE_Q6_K)
            for (int k = 0; k < 8; k++)
                lane[k] -=
                    32 * (kb.scale[32 * k] * bs[2 * k] + kb.scale[32 * k + 16] * bs[2 * k + 1]);
        const float d = y->d[b] * kb.d, dmin = -y->d[b] * kb.dmin;
        if (type == GGML_TYPE_Q2_K) /* the mins first, into the same lanes */
            for (int k = 0; k < 8; k++)
                acc[k] =
                    fmaf(dmin,
                         (float)(kb.min16[2 * k] * bs[2 * k] + kb.min16[2 * k + 1] * bs[2 * k + 1]),
                         acc[k]);
        for (int k = 0; k < 8; k++) acc[k] = fmaf(d, (float)lane[k], acc[k]);
        int m4[4];
        for (int k = 0; k < 4; k++)
            m4[k] = kb.min32[2 * k] * (bs[4 * k] + bs[4 * k + 1]) +
                    kb.min32[2 * k + 1] * (bs[4 * k + 2] + bs[4 * k + 3]);
        for (int k = 0; k < 4; k++) accm[k] = fmaf(dmin, (float)m4[k], accm[k]);
        summs = fmaf(dmin, (float)(m4[0] + m4[1] + m4[2] + m4[3]), summs);
    }
    const float lanes =
        ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
    if (type == GGML_TYPE_Q4_K) return lanes + ((accm[0] + accm[2]) + (accm[1] + accm[3]));
    return type == GGML_TYPE_Q5_K ? lanes + summs : lanes;
}

/* ggml's repacked Q4_K and Q2_K (CPU_REPACK, 8k rows) in steps of `step` values: 256 in its
 * GEMV; in its GEMM 64 (Q4_K), 128 (Q2_K).  Per step acc = fma(isum, x.d * y.d, acc), accm =
 * fma(msum, x.dmin * y.d, accm) with exact sums over the step; the result acc - accm. */
static float k_serial(enum ggml_type type, const uint8_t *row, const struct q8k_row *y, int step) {
    float acc = 0, accm = 0;
    for (int b = 0; b < KK / 256; b++) {
        struct kblock kb = {0}; /* the fields a type lacks stay 0 (Q6_K has no mins) */
        decode_k(type, row + b * ggml_type_size(type), &kb);
        for (int e0 = 0; e0 < 256; e0 += step) {
            int isum = 0, msum = 0;
            for (int e = e0; e < e0 + step; e++)
                isum += kb.scale[e] * kb.level[e] * y->q[256 * b + e];
            for (int g = e0 / 16; g < (e0 + step) / 16; g++) /* Q4_K: a min per 32 values */
                msum +=
                    (type == GGML_TYPE_Q2_K ? kb.min16[g] : kb.min32[g / 2]) * y->bsum[16 * b + g];
            acc = fmaf((float)isum, kb.d * y->d[b], acc);
            accm = fmaf((float)msum, kb.dmin * y->d[b], accm);
        }
    }
    return acc - accm;
}

/* One K-quant at every column count and 1 to 3 threads; repacked (Q4_K, Q2_K in CPU_REPACK): a
 * product's columns below its last multiple of four in ggml's GEMM order, the rest in its
 * GEMV order. */
static void check_k_case(enum ggml_type type, int rows, bool repacked, const struct operands *op) {
    static float want[MAX_COLS * MAX_ROWS], want_gemm[MAX_COLS * MAX_ROWS],
        got[MAX_COLS * MAX_ROWS];
    static struct q8k_row y;
    const size_t row_size = ggml_row_size(type, KK);
    uint8_t *wq = malloc(row_size * rows);
    ggml_quantize_chunk(type, op->w, wq, 0, rows, KK, NULL);
    for (int c = 0; c < MAX_COLS; c++) {
        quantize_q8_K(op->x + c * KK, &y);
        for (int r = 0; r < rows; r++) {
            const uint8_t *row = wq + r * row_size;
            want[c * rows + r] = repacked ? k_serial(type, row, &y, 256) : k_dot(type, row, &y);
            want_gemm[c * rows + r] =
                repacked ? k_serial(type, row, &y, type == GGML_TYPE_Q2_K ? 128 : 64)
                         : want[c * rows + r];
        }
    }
    free(wq);
    const int col_counts[] = {1, 2, 3, 4, 5, 8, 9, 13, 16, 17, 64, MAX_COLS};
    for (int t = 1; t <= 3; t++)
        for (size_t i = 0; i < sizeof col_counts / sizeof *col_counts; i++) {
            const int cols = col_counts[i];
            int differ = -1;
            if (product(type, KK, rows, op, cols, t, repacked, got)) {
                differ = 0;
                for (int j = 0; j < cols * rows; j++) {
                    const float *w = j / rows < cols - cols % 4 ? want_gemm : want;
                    differ += memcmp(&got[j], &w[j], sizeof(float)) != 0;
                }
            }
            tap_ok(
                differ == 0,
                "%s%s %d rows x %d columns, %d thread(s): ggml's %s order, bit for bit (%d differ)",
                ggml_type_name(type), repacked ? " (CPU_REPACK)" : "", rows, cols, t,
                repacked ? "block-serial" : "eight-lane", differ);
        }
    if (repacked) check_experts(type, KK, rows, op, want);
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
    check_case(GGML_TYPE_IQ4_NL, MAX_ROWS, true, &op); /* repacked: blocks in series */
    check_case(GGML_TYPE_MXFP4, 16, true, &op);
    check_case(GGML_TYPE_IQ4_NL, 36, false,
               &op); /* plain: vec_dot's block pairs, tinyBLAS's lanes */
    check_case(GGML_TYPE_MXFP4, 35, false, &op); /* plain: vec_dot's block pairs */
    check_k_case(GGML_TYPE_Q4_K, MAX_ROWS, false, &op);
    check_k_case(GGML_TYPE_Q4_K, MAX_ROWS, true,
                 &op);                            /* repacked: super-blocks / 64 values in series */
    check_k_case(GGML_TYPE_Q4_K, 36, false, &op); /* 36 rows: not repackable, eight lanes */
    check_k_case(GGML_TYPE_Q5_K, 35, false, &op);
    check_k_case(GGML_TYPE_Q6_K, 36, false, &op);
    check_k_case(GGML_TYPE_Q2_K, 40, false, &op);
    if (__builtin_cpu_supports("avx512f")) /* ggml repacks Q2_K only in builds for AVX-512 */
        check_k_case(GGML_TYPE_Q2_K, 40, true, &op);
    else
        tap_skip("no AVX-512: Q2_K stays out of CPU_REPACK", "q2_K (CPU_REPACK)");
    check_k_case(GGML_TYPE_Q3_K, 35, false, &op);
    check_k_case(GGML_TYPE_IQ4_XS, 36, false, &op);
    return tap_done();
}
