/*
 * test-ops-sd.c - operators stable-diffusion.cpp and ggml's newest types need, on the CPU:
 *  - mul_mat with Q1_0, Q2_0 and NVFP4 weights (Q8_0 activations, as ggml): one row,
 *    several rows and broadcast batches give each element the bits of the type's vec_dot
 *    of that weight row with the Q8_0 activation row, and agree with a double-precision
 *    product of the dequantized operands;
 *  - ggml_quantize_i8_convrot: a hand-worked row, then rows against a double-precision
 *    rotation written as a matrix (the Kronecker power of ggml's 4 x 4 butterfly);
 *  - ggml_mul_mat_i8_tensorwise: float and pre-quantized activations give the same bits,
 *    equal to the integer dot scaled in double; and the errors of both constructors;
 *  - ggml_interpolate with GGML_SCALE_FLAG_ANTIALIAS (sd.cpp's antialiased latent upscalers):
 *    a hand-worked row, then shrinking and enlarging against PyTorch's separable algorithm
 *    (F.interpolate(..., mode="bilinear", antialias=True)) written in double;
 *  - ggml_lightning_indexer (DeepSeek) against its definition in double, F32 and F16 keys.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-cpu.h"
#include "ggml.h"
#include "ggmlc.h"
#include "testutil.h"

static struct ggml_context *new_ctx(void) {
    struct ggml_init_params p = {64 << 20, NULL, false};
    return ggml_init(p);
}

static bool compute(struct ggml_context *ctx, struct ggml_tensor *out, int threads) {
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    return ggml_graph_compute_with_ctx(ctx, gf, threads) == GGML_STATUS_SUCCESS;
}

/* ------------------------------------------------------ low-bit weights */

/* w [K, N, wb] of `type` against x [K, M, xb] (xb a multiple of wb): every element against
 * vec_dot (bits) and the double product of the dequantized operands (1e-5 of sum |w x|). */
static void check_lowbit(enum ggml_type type, int K, int N, int wb, int M, int xb, int threads) {
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *w = ggml_new_tensor_3d(ctx, type, K, N, wb);
    struct ggml_tensor *x = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, K, M, xb);
    const size_t nw = (size_t)K * N * wb, nx = (size_t)K * M * xb;
    float *wf = malloc(nw * sizeof *wf), *xf = malloc(nx * sizeof *xf), *xd = malloc((size_t)K * sizeof *xd);
    float *res = malloc((size_t)N * M * xb * sizeof *res);
    void *xq = malloc(ggml_row_size(GGML_TYPE_Q8_0, K));
    test_seed(300 + type);
    test_fill_uniform(wf, nw, -1.0f, 1.0f);
    test_fill_uniform(xf, nx, -2.0f, 2.0f);
    ggml_quantize_chunk(type, wf, w->data, 0, (int64_t)N * wb, K, NULL);
    ggml_get_type_traits(type)->to_float(w->data, wf, (int64_t)nw); /* the weights as stored */
    memcpy(x->data, xf, nx * sizeof *xf);
    struct ggml_tensor *out = ggml_mul_mat(ctx, w, x);
    const char *name = ggml_type_name(type);
    if (!tap_ok(out && compute(ctx, out, threads), "mul_mat %s [%d,%d,%d] x [%d,%d,%d] computes (%d threads)", name, K, N,
                wb, K, M, xb, threads))
        goto done;
    tensor_get_f32(out, res);
    const struct ggml_type_traits_cpu *q8 = ggml_get_type_traits_cpu(GGML_TYPE_Q8_0);
    int bit_mismatch = 0;
    double worst = 0;
    for (int b = 0; b < xb; b++)
        for (int m = 0; m < M; m++) {
            const float *xrow = xf + ((size_t)b * M + m) * K;
            q8->from_float(xrow, xq, K);
            ggml_get_type_traits(GGML_TYPE_Q8_0)->to_float(xq, xd, K);
            for (int n = 0; n < N; n++) {
                const size_t wrow = ((size_t)(b / (xb / wb)) * N + n);
                float dot;
                ggml_get_type_traits_cpu(type)->vec_dot(K, &dot, 0, (const char *)w->data + wrow * w->nb[1], 0, xq, 0, 1);
                double ref = 0, mag = 0;
                for (int k = 0; k < K; k++) {
                    ref += (double)wf[wrow * K + k] * xd[k];
                    mag += fabs((double)wf[wrow * K + k] * xd[k]);
                }
                const float got = res[((size_t)b * M + m) * N + n];
                bit_mismatch += memcmp(&got, &dot, sizeof got) != 0;
                const double err = fabs(got - ref) / (mag + 1e-30);
                worst = err > worst ? err : worst;
            }
        }
    tap_ok(bit_mismatch == 0, "mul_mat %s, %d activation rows x %d batches: every element has the bits of vec_dot (%d differ)",
           name, M, xb, bit_mismatch);
    tap_ok(worst < 1e-5, "mul_mat %s, %d rows x %d batches: within %.2g of the double product of the dequantized operands",
           name, M, xb, worst);
done:
    free(wf);
    free(xf);
    free(xd);
    free(res);
    free(xq);
    ggml_free(ctx);
}

/* Q1_0 worked by hand: d = 1 (f16 0x3C00), signs + for the first 64 values and - after;
 * activations 1 for the first 32 values, -1 for the next 96 (Q8_0 scale 1/127, levels
 * +-127; 1/127 as f16 is 0x2008).  Dot = 127 * f16(1/127) * (32 - 32 + 64) = 64 * 127 * d_y. */
static void check_q1_0_by_hand(void) {
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *w = ggml_new_tensor_2d(ctx, GGML_TYPE_Q1_0, 128, 1);
    struct ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 128, 1);
    uint8_t *blk = w->data;
    const uint16_t one = 0x3C00;
    memcpy(blk, &one, 2);
    for (int i = 0; i < 16; i++) blk[2 + i] = i < 8 ? 0xFF : 0x00;
    for (int i = 0; i < 128; i++) ((float *)x->data)[i] = i < 32 ? 1.0f : -1.0f;
    struct ggml_tensor *out = ggml_mul_mat(ctx, w, x);
    const double want = 64.0 * 127.0 * ggml_fp16_to_fp32(0x2008);
    tap_ok(out && compute(ctx, out, 1) && ((float *)out->data)[0] == (float)want,
           "mul_mat q1_0 by hand: %.9g = 64 * 127 * f16(1/127) = %.9g", out ? ((float *)out->data)[0] : NAN, want);
    ggml_free(ctx);
}

static void test_lowbit(void) {
    const enum ggml_type types[] = {GGML_TYPE_Q1_0, GGML_TYPE_Q2_0, GGML_TYPE_NVFP4};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        check_lowbit(types[t], 512, 13, 1, 1, 1, 1);   /* one row */
        check_lowbit(types[t], 512, 13, 1, 5, 1, 2);   /* several rows */
        check_lowbit(types[t], 1024, 37, 2, 11, 4, 2); /* broadcast batches, rows past 8 */
        check_lowbit(types[t], 256, 9, 1, 300, 1, 2);  /* many rows: no dequantizing GEMM, as ggml */
    }
    check_q1_0_by_hand();
}

/* ------------------------------------------------------------ int8 ops */

/* Entry (i, j) of the rotation of a group of n = 4^d values: the product over base-4 digits of
 * ggml's butterfly matrix (output r, input c: -1 where r + c == 3, else 1), over sqrt(n). */
static double rotation_entry(int n, int i, int j) {
    double v = 1.0 / sqrt((double)n);
    for (int s = 1; s < n; s *= 4)
        if ((i / s) % 4 + (j / s) % 4 == 3) v = -v;
    return v;
}

/* The rotated values of a row (groups of n; n = 0: the row as it is), in double. */
static void rotate_ref(const float *row, int k, int n, double *out) {
    for (int i = 0; i < k; i++) {
        if (n == 0) {
            out[i] = row[i];
            continue;
        }
        const int g = i / n * n;
        double acc = 0;
        for (int j = 0; j < n; j++) acc += rotation_entry(n, i - g, j) * row[g + j];
        out[i] = acc;
    }
}

/* [1, 0, 0, 0] in one group of 4: halved, the butterfly gives [0.5, 0.5, 0.5, -0.5]; scale
 * 0.5 / 127, levels [127, 127, 127, -127].  A zero row: scale 0, levels 0.  Packed: 4 rows
 * (2 of padding, zero), then 2 rows of 4 bytes for the two scales. */
static void check_convrot_by_hand(void) {
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 2);
    const float xv[8] = {1, 0, 0, 0, 0, 0, 0, 0};
    memcpy(x->data, xv, sizeof xv);
    struct ggml_tensor *q = ggml_quantize_i8_convrot(ctx, x, 4);
    if (!tap_ok(q && q->type == GGML_TYPE_I8 && q->ne[0] == 4 && q->ne[1] == 6 && compute(ctx, q, 1),
                "quantize_i8_convrot of [4, 2] is I8 [4, 6] and computes")) {
        ggml_free(ctx);
        return;
    }
    const int8_t want[16] = {127, 127, 127, -127};
    float scales[2];
    memcpy(scales, (const int8_t *)q->data + 16, sizeof scales);
    tap_ok(memcmp(q->data, want, 16) == 0, "quantize_i8_convrot by hand: levels 127 127 127 -127, then zeros");
    tap_ok(scales[0] == 0.5f / 127.0f && scales[1] == 0.0f, "quantize_i8_convrot by hand: scales %.9g = 0.5/127 and %g",
           scales[0], scales[1]);
    ggml_free(ctx);
}

/* Rows of k against the double rotation: the scale is amax / 127 and each level is within
 * half a step of the rotated value (the rounding), at most 127 in magnitude. */
static void check_convrot(int k, int rows, int group) {
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *x = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, k, rows, 1);
    float *xf = malloc((size_t)k * rows * sizeof *xf);
    double *rot = malloc((size_t)k * sizeof *rot);
    test_seed(41 + group);
    for (int i = 0; i < k * rows; i++) xf[i] = test_normal() * (i % 53 == 0 ? 6.0f : 1.0f);
    memcpy(x->data, xf, (size_t)k * rows * sizeof *xf);
    struct ggml_tensor *q = ggml_quantize_i8_convrot(ctx, x, group);
    if (!tap_ok(q && compute(ctx, q, 2), "quantize_i8_convrot k=%d rows=%d group=%d computes", k, rows, group)) goto done;
    const int padded = (rows + 3) / 4 * 4;
    const float *scales = (const float *)((const int8_t *)q->data + (size_t)k * padded);
    int bad_scale = 0, bad_level = 0, bad_pad = 0;
    for (int r = 0; r < rows; r++) {
        rotate_ref(xf + (size_t)r * k, k, group, rot);
        double amax = 0;
        for (int i = 0; i < k; i++) amax = fabs(rot[i]) > amax ? fabs(rot[i]) : amax;
        bad_scale += fabs(scales[r] - amax / 127) > 1e-6 * amax / 127;
        for (int i = 0; i < k; i++) {
            const int level = ((const int8_t *)q->data)[(size_t)r * k + i];
            bad_level += abs(level) > 127 || fabs(level * (double)scales[r] - rot[i]) > 0.5001 * scales[r];
        }
    }
    for (size_t i = (size_t)k * rows; i < (size_t)k * padded; i++) bad_pad += ((const int8_t *)q->data)[i] != 0;
    tap_ok(bad_scale == 0 && bad_level == 0 && bad_pad == 0,
           "quantize_i8_convrot k=%d group=%d: scales, levels and padding as the double rotation (%d, %d, %d off)", k, group,
           bad_scale, bad_level, bad_pad);
done:
    free(xf);
    free(rot);
    ggml_free(ctx);
}

/* w I8 [k, n], x F32 [k, m, 2]: the product of x and of quantize_i8_convrot(x) agree in every
 * bit, and each element is (integer dot of w's row and the packed levels) * row scale *
 * weight scale + bias, computed in double. */
static void check_i8_product(int k, int n, int m, int group, bool with_bias) {
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *w = ggml_new_tensor_2d(ctx, GGML_TYPE_I8, k, n);
    struct ggml_tensor *x = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, k, m, 2);
    struct ggml_tensor *ws = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n);
    struct ggml_tensor *bias = with_bias ? ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n) : NULL;
    test_seed(7 * k + n);
    for (int i = 0; i < k * n; i++) ((int8_t *)w->data)[i] = (int8_t)(test_uniform(-127.5f, 127.5f));
    test_fill_uniform(x->data, (size_t)k * m * 2, -3.0f, 3.0f);
    test_fill_uniform(ws->data, (size_t)n, 0.001f, 0.02f);
    if (bias) test_fill_uniform(bias->data, (size_t)n, -1.0f, 1.0f);
    struct ggml_tensor *q = ggml_quantize_i8_convrot(ctx, x, group ? group : 1);
    struct ggml_tensor *direct = ggml_mul_mat_i8_tensorwise(ctx, w, x, ws, bias, group);
    struct ggml_tensor *packed = ggml_mul_mat_i8_tensorwise(ctx, w, q, ws, bias, group);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    if (!tap_ok(direct && packed && direct->ne[0] == n && direct->ne[1] == m && direct->ne[2] == 2,
                "mul_mat_i8_tensorwise k=%d n=%d m=%d group=%d: result [%d, %d, 2]", k, n, m, group, n, m)) {
        ggml_free(ctx);
        return;
    }
    ggml_build_forward_expand(gf, direct);
    ggml_build_forward_expand(gf, packed);
    if (!tap_ok(ggml_graph_compute_with_ctx(ctx, gf, 2) == GGML_STATUS_SUCCESS, "both products compute")) {
        ggml_free(ctx);
        return;
    }
    const int rows = 2 * m, padded = (rows + 3) / 4 * 4;
    const int8_t *levels = q->data;
    const float *scales = (const float *)(levels + (size_t)k * padded);
    int differ = 0, off = 0;
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < n; j++) {
            const float a = ((const float *)direct->data)[r * n + j], b = ((const float *)packed->data)[r * n + j];
            differ += memcmp(&a, &b, sizeof a) != 0;
            long dot = 0;
            for (int i = 0; i < k; i++) dot += (long)((const int8_t *)w->data)[j * k + i] * levels[(size_t)r * k + i];
            double want = (double)dot * scales[r] * ((const float *)ws->data)[j];
            if (bias) want += ((const float *)bias->data)[j];
            off += fabs(a - want) > 1e-5 * (fabs(want) + 1e-3);
        }
    tap_ok(differ == 0, "mul_mat_i8_tensorwise group=%d: float and pre-quantized activations give the same bits (%d differ)",
           group, differ);
    tap_ok(off == 0, "mul_mat_i8_tensorwise group=%d%s: integer dot * scales%s in double (%d off)", group,
           bias ? " with bias" : "", bias ? " + bias" : "", off);
    ggml_free(ctx);
}

static void test_i8_errors(void) {
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *w = ggml_new_tensor_2d(ctx, GGML_TYPE_I8, 64, 8);
    struct ggml_tensor *wf = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 64, 8);
    struct ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 64, 3);
    struct ggml_tensor *ws = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 8);
    tap_expect_op_fail(ggml_quantize_i8_convrot(ctx, ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 64, 3), 16), GGMLC_ERR_TYPE,
                "ggml_quantize_i8_convrot", "quantize_i8_convrot of F16");
    tap_expect_op_fail(ggml_quantize_i8_convrot(ctx, x, 8), GGMLC_ERR_INVALID_ARG, "ggml_quantize_i8_convrot",
                "quantize_i8_convrot with a group of 8 (not a power of 4)");
    tap_expect_op_fail(ggml_quantize_i8_convrot(ctx, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 48, 3), 64), GGMLC_ERR_INVALID_ARG,
                "ggml_quantize_i8_convrot", "quantize_i8_convrot with a group longer than the row");
    tap_expect_op_fail(ggml_mul_mat_i8_tensorwise(ctx, wf, x, ws, NULL, 0), GGMLC_ERR_TYPE, "ggml_mul_mat_i8_tensorwise",
                "mul_mat_i8_tensorwise with F32 weights");
    tap_expect_op_fail(ggml_mul_mat_i8_tensorwise(ctx, w, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 32, 3), ws, NULL, 0),
                GGMLC_ERR_SHAPE, "ggml_mul_mat_i8_tensorwise", "mul_mat_i8_tensorwise with rows of another length");
    tap_expect_op_fail(ggml_mul_mat_i8_tensorwise(ctx, w, x, ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 7), NULL, 0), GGMLC_ERR_SHAPE,
                "ggml_mul_mat_i8_tensorwise", "mul_mat_i8_tensorwise with 7 scales for 8 rows");
    tap_expect_op_fail(ggml_mul_mat_i8_tensorwise(ctx, w, x, ws, ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 9), 0), GGMLC_ERR_SHAPE,
                "ggml_mul_mat_i8_tensorwise", "mul_mat_i8_tensorwise with 9 biases for 8 rows");
    tap_expect_op_fail(ggml_mul_mat_i8_tensorwise(ctx, w, x, ws, NULL, 32), GGMLC_ERR_INVALID_ARG, "ggml_mul_mat_i8_tensorwise",
                "mul_mat_i8_tensorwise with a group of 32");
    tap_expect_op_fail(ggml_mul_mat_i8_tensorwise(ctx, w, ggml_new_tensor_2d(ctx, GGML_TYPE_I8, 64, 8), ws, NULL, 16),
                GGMLC_ERR_SHAPE, "ggml_mul_mat_i8_tensorwise", "mul_mat_i8_tensorwise with I8 activations not packed");
    ggml_free(ctx);
}

static void test_i8(void) {
    check_convrot_by_hand();
    check_convrot(64, 5, 4);
    check_convrot(256, 3, 64);
    check_convrot(512, 9, 256);
    check_convrot(48, 2, 1);
    check_i8_product(256, 12, 3, 0, true);
    check_i8_product(256, 12, 5, 64, false);
    check_i8_product(1024, 33, 4, 256, true);
    test_i8_errors();
}

/* ---------------------------------------------------- antialiased resampling */

/* PyTorch's weights of one axis (upsample bilinear, antialias): out [n_out][n_in], each row
 * normalized; the filter is the triangle widened by the scale when shrinking. */
static void aa_weights_ref(int n_in, int n_out, double *out) {
    const double scale = (double)n_in / n_out, support = scale >= 1 ? scale : 1.0, inv = scale >= 1 ? 1 / scale : 1.0;
    for (int i = 0; i < n_out; i++) {
        const double center = scale * (i + 0.5);
        int lo = (int)(center - support + 0.5), hi = (int)(center + support + 0.5);
        lo = lo < 0 ? 0 : lo;
        hi = hi > n_in ? n_in : hi;
        double total = 0;
        for (int j = 0; j < n_in; j++) {
            const double t = 1 - fabs((j - center + 0.5) * inv);
            out[i * n_in + j] = j >= lo && j < hi && t > 0 ? t : 0;
            total += out[i * n_in + j];
        }
        for (int j = 0; j < n_in; j++) out[i * n_in + j] /= total;
    }
}

/* [W, H, C] to [OW, OH, C]: every value within 1e-5 (relative to the largest) of the reference. */
static void check_antialias(int W, int H, int C, int OW, int OH) {
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *x = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, W, H, C);
    test_seed(W * 131 + OW);
    test_fill_uniform(x->data, (size_t)W * H * C, -1.0f, 1.0f);
    struct ggml_tensor *y = ggml_interpolate(ctx, x, OW, OH, C, 1, GGML_SCALE_MODE_BILINEAR | GGML_SCALE_FLAG_ANTIALIAS);
    double *wx = malloc(sizeof(double) * OW * W), *wy = malloc(sizeof(double) * OH * H);
    if (tap_ok(y && compute(ctx, y, 2), "interpolate antialias [%d, %d, %d] -> [%d, %d] computes", W, H, C, OW, OH)) {
        aa_weights_ref(W, OW, wx);
        aa_weights_ref(H, OH, wy);
        double worst = 0;
        for (int c = 0; c < C; c++)
            for (int i1 = 0; i1 < OH; i1++)
                for (int i0 = 0; i0 < OW; i0++) {
                    double ref = 0;
                    for (int s1 = 0; s1 < H; s1++)
                        for (int s0 = 0; s0 < W; s0++)
                            ref += wy[i1 * H + s1] * wx[i0 * W + s0] * ((const float *)x->data)[(c * H + s1) * W + s0];
                    const double err = fabs(((const float *)y->data)[(c * OH + i1) * OW + i0] - ref);
                    worst = err > worst ? err : worst;
                }
        tap_ok(worst < 1e-5, "interpolate antialias [%d, %d] -> [%d, %d]: within %.2g of PyTorch's algorithm in double", W, H,
               OW, OH, worst);
    }
    free(wx);
    free(wy);
    ggml_free(ctx);
}

/* [1, 2, 3, 4] to 2 values: scale 2, support 2; output 0 takes inputs 0..2 with triangle weights
 * 0.75, 0.75, 0.25 (sum 1.75): 3 / 1.75; output 1 inputs 1..3 with 0.25, 0.75, 0.75: 5.75 / 1.75. */
static void check_antialias_by_hand(void) {
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 1);
    const float xv[4] = {1, 2, 3, 4};
    memcpy(x->data, xv, sizeof xv);
    struct ggml_tensor *y = ggml_interpolate(ctx, x, 2, 1, 1, 1, GGML_SCALE_MODE_BILINEAR | GGML_SCALE_FLAG_ANTIALIAS);
    const float *v = y && compute(ctx, y, 1) ? y->data : NULL;
    tap_ok(v && fabsf(v[0] - 3.0f / 1.75f) < 1e-6f && fabsf(v[1] - 5.75f / 1.75f) < 1e-6f,
           "interpolate antialias by hand: [1 2 3 4] -> %.7g %.7g (3/1.75, 5.75/1.75)", v ? v[0] : NAN, v ? v[1] : NAN);
    ggml_free(ctx);
}

static void test_antialias(void) {
    check_antialias_by_hand();
    check_antialias(37, 29, 2, 10, 7); /* shrink by non-integer factors */
    check_antialias(16, 16, 3, 4, 8);
    check_antialias(5, 4, 1, 11, 9); /* enlarge: support of one pixel */
    check_antialias(12, 10, 1, 12, 3);
}

/* ------------------------------------------------------ lightning indexer */

/* q [D, H, T, S], k [D, 1, n_kv, S] of k_type, weights [H, T, 1, S], mask [n_kv, T, 1, 1]. */
static void check_indexer(enum ggml_type k_type) {
    enum { D = 40, H = 4, T = 3, S = 2, NKV = 9 };
    struct ggml_context *ctx = new_ctx();
    struct ggml_tensor *q = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, D, H, T, S);
    struct ggml_tensor *k = ggml_new_tensor_4d(ctx, k_type, D, 1, NKV, S);
    struct ggml_tensor *w = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, H, T, 1, S);
    struct ggml_tensor *m = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, NKV, T, 1, 1);
    float kf[D * NKV * S];
    test_seed(99);
    test_fill_uniform(q->data, D * H * T * S, -1.0f, 1.0f);
    test_fill_uniform(kf, D * NKV * S, -1.0f, 1.0f);
    test_fill_uniform(w->data, H * T * S, 0.0f, 1.0f);
    for (int i = 0; i < D * NKV * S; i++) {
        if (k_type == GGML_TYPE_F16) {
            ((ggml_fp16_t *)k->data)[i] = ggml_fp32_to_fp16(kf[i]);
            kf[i] = ggml_fp16_to_fp32(((ggml_fp16_t *)k->data)[i]);
        } else {
            ((float *)k->data)[i] = kf[i];
        }
    }
    for (int i = 0; i < NKV * T; i++) ((ggml_fp16_t *)m->data)[i] = ggml_fp32_to_fp16(i % 4 == 3 ? -INFINITY : 0.25f * (i % 3));
    struct ggml_tensor *r = ggml_lightning_indexer(ctx, q, k, w, m);
    if (!tap_ok(r && r->ne[0] == NKV && r->ne[1] == T && r->ne[2] == 1 && r->ne[3] == S && compute(ctx, r, 2),
                "lightning_indexer with %s keys: [%d, %d, 1, %d] computes", ggml_type_name(k_type), NKV, T, S)) {
        ggml_free(ctx);
        return;
    }
    double worst = 0;
    for (int s = 0; s < S; s++)
        for (int t = 0; t < T; t++)
            for (int j = 0; j < NKV; j++) {
                double score = 0;
                for (int h = 0; h < H; h++) {
                    double qk = 0;
                    for (int d = 0; d < D; d++) qk += (double)((const float *)q->data)[((s * T + t) * H + h) * D + d] * kf[(s * NKV + j) * D + d];
                    score += (qk > 0 ? qk : 0) * ((const float *)w->data)[(s * T + t) * H + h];
                }
                const double mask = ggml_fp16_to_fp32(((const ggml_fp16_t *)m->data)[t * NKV + j]);
                const float got = ((const float *)r->data)[(s * T + t) * NKV + j];
                const double err = isinf(mask) ? (got == (float)mask ? 0 : 1) : fabs(got - (score + mask));
                worst = err > worst ? err : worst;
            }
    tap_ok(worst < 1e-5, "lightning_indexer with %s keys: sum_h relu(q.k) w + mask within %.2g of double", ggml_type_name(k_type),
           worst);
    tap_expect_op_fail(ggml_lightning_indexer(ctx, q, k, w, ggml_new_tensor_4d(ctx, GGML_TYPE_F32, NKV, T, 1, 1)), GGMLC_ERR_TYPE,
                "ggml_lightning_indexer", "lightning_indexer with an F32 mask");
    tap_expect_op_fail(ggml_lightning_indexer(ctx, q, k, ggml_new_tensor_4d(ctx, GGML_TYPE_F32, H + 1, T, 1, S), m), GGMLC_ERR_SHAPE,
                "ggml_lightning_indexer", "lightning_indexer with weights for another head count");
    ggml_free(ctx);
}

int main(void) {
    check_indexer(GGML_TYPE_F32);
    check_indexer(GGML_TYPE_F16);
    test_lowbit();
    test_i8();
    test_antialias();
    return tap_done();
}
