/* ops-conv.c - convolution kernels: im2col (1-D, 2-D, 3-D) and its gradient,
 * col2im_1d and the direct depthwise convolution.  Every kernel gathers: each
 * output element is written by one task, so tasks never race.  CONV_2D,
 * CONV_3D and the transposed convolutions use the GEMM (ops-conv-gemm.c). */
#include "cpu-convops.h"
#include "ops-ew.h"

/* ------------------------------------------------------------- im2col */

/* Patch values KW taps of input row `row` (f32; NULL: a padding row) for output column ow. */
static inline void gather_taps_f32(const float *row, int64_t ow, int s0, int p0, int d0, int64_t IW,
                                   int64_t KW, float *out) {
    for (int64_t kw = 0, iw = ow * s0 - p0; kw < KW; kw++, iw += d0)
        out[kw] = row && iw >= 0 && iw < IW ? row[iw] : 0.0f;
}

/* Patches gathered as f32 and converted to f16 this many at a time: converting value by value
 * made an f16 im2col 2.8x slower than an f32 one (51 against 18 ms a node of an SD VAE). */
#define IM2COL_F16_CHUNK 1024

static enum ggml_status im2col(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
    const struct ggmlc_conv2d_params geo = ggmlc_conv2d_params_of(dst);
    const int s0 = geo.s0, s1 = geo.s1, p0 = geo.p0, p1 = geo.p1, d0 = geo.d0, d1 = geo.d1;
    const bool is_2d = geo.is_2d != 0;
    /* 1-D is 2-D with one row: b [IL, IC, N] and dst [IC*K, OL, N] */
    const int64_t KW = a->ne[0], KH = is_2d ? a->ne[1] : 1;
    const int64_t IW = b->ne[0], IH = is_2d ? b->ne[1] : 1, IC = is_2d ? b->ne[2] : b->ne[1];
    const int64_t OW = dst->ne[1], OH = is_2d ? dst->ne[2] : 1, N = is_2d ? dst->ne[3] : dst->ne[2];
    /* the common cases (f32 rows in, f32 or f16 rows out) copy without per-element type dispatch */
    const bool f32_in = b->type == GGML_TYPE_F32 && b->nb[0] == sizeof(float);
    const bool f32_rows = f32_in && dst->type == GGML_TYPE_F32 && dst->nb[0] == sizeof(float);
    const bool f16_rows = f32_in && dst->type == GGML_TYPE_F16 &&
                          dst->nb[0] == sizeof(ggml_fp16_t) && KW <= IM2COL_F16_CHUNK;
    float chunk[IM2COL_F16_CHUNK];
    int64_t r0, r1;
    cpu_split_range(OW * OH * N, call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t ow = r % OW, oh = (r / OW) % OH, n = r / (OW * OH);
        char *col = is_2d ? cpu_elem_ptr(dst, 0, ow, oh, n) : cpu_elem_ptr(dst, 0, ow, n, 0);
        int64_t held = 0, done = 0; /* f16_rows: values in chunk, values converted */
        for (int64_t ic = 0; ic < IC; ic++)
            for (int64_t kh = 0; kh < KH; kh++) {
                const int64_t ih = cpu_tap_pos(oh, kh, s1, p1, d1, IH), c0 = (ic * KH + kh) * KW;
                const char *row = ih < 0 ? NULL : is_2d ? cpu_elem_ptr(b, 0, ih, ic, n) : cpu_elem_ptr(b, 0, ic, n, 0);
                if (f32_rows) {
                    gather_taps_f32((const float *)row, ow, s0, p0, d0, IW, KW, (float *)col + c0);
                    continue;
                }
                if (f16_rows) {
                    if (held + KW > IM2COL_F16_CHUNK) {
                        ew_f32_to_f16_row(held, (ggml_fp16_t *)col + done, chunk);
                        done += held, held = 0;
                    }
                    gather_taps_f32((const float *)row, ow, s0, p0, d0, IW, KW, chunk + held);
                    held += KW;
                    continue;
                }
                for (int64_t kw = 0; kw < KW; kw++) {
                    const int64_t iw = cpu_tap_pos(ow, kw, s0, p0, d0, IW);
                    const float v = row && iw >= 0 ? cpu_load_f32(b->type, row + iw * b->nb[0]) : 0.0f;
                    cpu_store_f32(dst->type, col + (c0 + kw) * dst->nb[0], v);
                }
            }
        if (held) ew_f32_to_f16_row(held, (ggml_fp16_t *)col + done, chunk);
    }
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status im2col_back(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0], *g = dst->src[1];
    const struct ggmlc_conv2d_params geo = ggmlc_conv2d_params_of(dst);
    const int s0 = geo.s0, s1 = geo.s1, p0 = geo.p0, p1 = geo.p1, d0 = geo.d0, d1 = geo.d1;
    const bool is_2d = geo.is_2d != 0;
    const int64_t KW = a->ne[0], KH = is_2d ? a->ne[1] : 1;
    const int64_t IW = dst->ne[0], IH = is_2d ? dst->ne[1] : 1, IC = is_2d ? dst->ne[2] : dst->ne[1];
    const int64_t N = is_2d ? dst->ne[3] : dst->ne[2], OW = g->ne[1], OH = is_2d ? g->ne[2] : 1;
    int64_t r0, r1;
    cpu_split_range(IW * IH * IC * N, call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t iw = r % IW, ih = (r / IW) % IH, ic = (r / (IW * IH)) % IC, n = r / (IW * IH * IC);
        float sum = 0.0f;
        for (int64_t kh = 0; kh < KH; kh++) {
            const int64_t oh = is_2d ? cpu_tap_out(ih, kh, s1, p1, d1, OH) : 0;
            if (oh < 0) continue;
            for (int64_t kw = 0; kw < KW; kw++) {
                const int64_t ow = cpu_tap_out(iw, kw, s0, p0, d0, OW);
                if (ow < 0) continue;
                const int64_t c = (ic * KH + kh) * KW + kw;
                sum += is_2d ? cpu_get_f32(g, c, ow, oh, n) : cpu_get_f32(g, c, ow, n, 0);
            }
        }
        if (is_2d) *(float *)cpu_elem_ptr(dst, iw, ih, ic, n) = sum;
        else *(float *)cpu_elem_ptr(dst, iw, ic, n, 0) = sum;
    }
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status im2col_3d(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
    const struct ggmlc_conv3d_params g = ggmlc_im2col_3d_params_of(dst);
    const int64_t IC = g.ic;
    const int32_t *s = g.s, *p = g.p, *d = g.d;
    const int64_t KW = a->ne[0], KH = a->ne[1], KD = a->ne[2];
    /* N may be 0 (fewer data channels than IC): then the result is empty */
    const int64_t OW = dst->ne[1], OH = dst->ne[2], N = b->ne[3] / IC, OD = N > 0 ? dst->ne[3] / N : 0;
    int64_t r0, r1;
    cpu_split_range(OW * OH * OD * N, call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t ow = r % OW, oh = (r / OW) % OH, od = (r / (OW * OH)) % OD, n = r / (OW * OH * OD);
        char *col = cpu_elem_ptr(dst, 0, ow, oh, n * OD + od);
        int64_t c = 0;
        for (int64_t ic = 0; ic < IC; ic++)
            for (int64_t kd = 0; kd < KD; kd++) {
                const int64_t id = cpu_tap_pos(od, kd, s[2], p[2], d[2], b->ne[2]);
                for (int64_t kh = 0; kh < KH; kh++) {
                    const int64_t ih = cpu_tap_pos(oh, kh, s[1], p[1], d[1], b->ne[1]);
                    for (int64_t kw = 0; kw < KW; kw++, c++) {
                        const int64_t iw = cpu_tap_pos(ow, kw, s[0], p[0], d[0], b->ne[0]);
                        const float v = iw >= 0 && ih >= 0 && id >= 0 ? cpu_get_f32(b, iw, ih, id, n * IC + ic) : 0.0f;
                        cpu_store_f32(dst->type, col + c * dst->nb[0], v);
                    }
                }
            }
    }
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status col2im_1d(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0];
    const struct ggmlc_conv1d_params g = ggmlc_col2im_1d_params_of(dst);
    const int s0 = g.s0, OC = g.oc, p0 = g.p0;
    const int64_t K = a->ne[0] / OC, T = a->ne[1], L = dst->ne[0];
    int64_t r0, r1;
    cpu_split_range(L * OC * dst->ne[2], call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t l = r % L, c = (r / L) % OC, n = r / (L * OC);
        float sum = 0.0f;
        for (int64_t k = 0; k < K; k++) {
            const int64_t t = cpu_tap_out(l, k, s0, p0, 1, T);
            if (t >= 0) sum += cpu_get_f32(a, k + K * c, t, n, 0);
        }
        cpu_set_f32(dst, l, c, n, 0, sum);
    }
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status conv_2d_dw(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
    const struct ggmlc_conv2d_params geo = ggmlc_conv2d_params_of(dst);
    const int s0 = geo.s0, s1 = geo.s1, p0 = geo.p0, p1 = geo.p1, d0 = geo.d0, d1 = geo.d1;
    const int64_t KW = a->ne[0], KH = a->ne[1], OW = dst->ne[0], OH = dst->ne[1], C = dst->ne[2];
    int64_t r0, r1;
    cpu_split_range(OW * OH * C * dst->ne[3], call->ith, call->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t ow = r % OW, oh = (r / OW) % OH, c = (r / (OW * OH)) % C, n = r / (OW * OH * C);
        float sum = 0.0f;
        for (int64_t kh = 0; kh < KH; kh++) {
            const int64_t ih = cpu_tap_pos(oh, kh, s1, p1, d1, b->ne[1]);
            if (ih < 0) continue;
            for (int64_t kw = 0; kw < KW; kw++) {
                const int64_t iw = cpu_tap_pos(ow, kw, s0, p0, d0, b->ne[0]);
                if (iw >= 0) sum += cpu_get_f32(a, kw, kh, 0, c) * cpu_get_f32(b, iw, ih, c, n);
            }
        }
        *(float *)cpu_elem_ptr(dst, ow, oh, c, n) = sum;
    }
    return GGML_STATUS_SUCCESS;
}

void cpu_ops_conv_register(struct cpu_op_table *t) {
    t->compute[GGML_OP_IM2COL] = im2col;
    t->compute[GGML_OP_IM2COL_BACK] = im2col_back;
    t->compute[GGML_OP_IM2COL_3D] = im2col_3d;
    t->compute[GGML_OP_COL2IM_1D] = col2im_1d;
    t->compute[GGML_OP_CONV_2D_DW] = conv_2d_dw;
    cpu_ops_conv_gemm_register(t);
    cpu_ops_pool_register(t);
    cpu_ops_image_register(t);
}
