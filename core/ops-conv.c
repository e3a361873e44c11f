/*
 * ops-conv.c - constructors of the convolution operators: im2col (1-D, 2-D,
 * 3-D) and its gradient, col2im_1d, and the convolutions built on them or
 * computed directly.  Layouts are ggml's: the innermost dimension first, e.g.
 * a 2-D kernel is [KW, KH, IC, OC] and an image batch [W, H, C, N].
 */
#include "ggml-impl.h"

/* Output length of a convolution along one dimension (may be <= 0 when the input is too small). */
static int64_t conv_out_size(int64_t in, int64_t k, int s, int p, int d) {
    return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

static bool conv_args_ok(const char *func, const int *s, const int *p, const int *d, int n) {
    for (int i = 0; i < n; i++) {
        if (s[i] <= 0 || d[i] <= 0 || p[i] < 0) {
            ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, func, "stride %d and dilation %d must be positive, padding %d not negative",
                          s[i], d[i], p[i]);
            return false;
        }
    }
    return true;
}

static bool is_f32_or_f16(enum ggml_type t) { return t == GGML_TYPE_F32 || t == GGML_TYPE_F16; }

/* ---------------------------------------------------------------- im2col */

struct ggml_tensor *ggml_im2col(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
                                int s0, int s1, int p0, int p1, int d0, int d1, bool is_2D, enum ggml_type dst_type) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    if (!is_f32_or_f16(b->type) || !is_f32_or_f16(dst_type))
        return ggmlc__op_fail(GGMLC_ERR_TYPE, __func__, "data must be F32/F16 and the result type F32/F16, not %s -> %s",
                             ggml_type_name(b->type), ggml_type_name(dst_type));
    if (!conv_args_ok(__func__, (int[]){s0, s1}, (int[]){p0, p1}, (int[]){d0, d1}, is_2D ? 2 : 1)) return NULL;
    if (is_2D ? a->ne[2] != b->ne[2] : (a->ne[1] != b->ne[1] || b->ne[3] != 1))
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "kernel and data must have the same number of input channels", a, b);
    const int64_t OW = conv_out_size(b->ne[0], a->ne[0], s0, p0, d0);
    const int64_t OH = is_2D ? conv_out_size(b->ne[1], a->ne[1], s1, p1, d1) : 1;
    if (OW <= 0 || OH <= 0)
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "the data is smaller than the dilated kernel", a, b);
    struct ggml_tensor *r = is_2D
        ? ggml_new_tensor_4d(ctx, dst_type, a->ne[0] * a->ne[1] * a->ne[2], OW, OH, b->ne[3])
        : ggml_new_tensor_4d(ctx, dst_type, a->ne[0] * a->ne[1], OW, b->ne[2], 1);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params(r, (int32_t[]){s0, s1, p0, p1, d0, d1, is_2D}, 7 * sizeof(int32_t));
    ggmlc__node_set(r, GGML_OP_IM2COL, a, b, NULL);
    return r;
}

struct ggml_tensor *ggml_im2col_back(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, int64_t *ne,
                                     int s0, int s1, int p0, int p1, int d0, int d1, bool is_2D) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    if (ne == NULL) return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "the input shape ne is NULL");
    if (b->type != GGML_TYPE_F32) return ggmlc__op_fail(GGMLC_ERR_TYPE, __func__, "the patch gradient must be F32");
    if (!conv_args_ok(__func__, (int[]){s0, s1}, (int[]){p0, p1}, (int[]){d0, d1}, is_2D ? 2 : 1)) return NULL;
    const int64_t OW = conv_out_size(ne[0], a->ne[0], s0, p0, d0);
    const int64_t OH = is_2D ? conv_out_size(ne[1], a->ne[1], s1, p1, d1) : 1;
    const int64_t K = is_2D ? a->ne[0] * a->ne[1] * ne[2] : a->ne[0] * ne[1];
    const bool fits = is_2D ? (b->ne[0] == K && b->ne[1] == OW && b->ne[2] == OH && b->ne[3] == ne[3])
                            : (b->ne[0] == K && b->ne[1] == OW && b->ne[2] == ne[2] && ne[3] == 1);
    if (!fits) return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "the patch gradient does not fit the input shape", a, b);
    struct ggml_tensor *r = ggml_new_tensor(ctx, GGML_TYPE_F32, GGML_MAX_DIMS, ne);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params(r, (int32_t[]){s0, s1, p0, p1, d0, d1, is_2D}, 7 * sizeof(int32_t));
    ggmlc__node_set(r, GGML_OP_IM2COL_BACK, a, b, NULL);
    return r;
}

struct ggml_tensor *ggml_im2col_3d(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, int64_t IC,
                                   int s0, int s1, int s2, int p0, int p1, int p2, int d0, int d1, int d2, enum ggml_type dst_type) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    if (!is_f32_or_f16(b->type) || !is_f32_or_f16(dst_type))
        return ggmlc__op_fail(GGMLC_ERR_TYPE, __func__, "data and result must be F32 or F16");
    if (!conv_args_ok(__func__, (int[]){s0, s1, s2}, (int[]){p0, p1, p2}, (int[]){d0, d1, d2}, 3)) return NULL;
    if (IC <= 0) return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "IC = %lld must be positive", (long long)IC);
    /* As in ggml, only the kernel's spatial dims matter (its dim 3 is not read), and the data's
     * dim 3 holds N = b->ne[3] / IC whole groups of IC channels: a remainder is not read, and
     * fewer than IC channels give an empty result. */
    const int64_t N = b->ne[3] / IC;
    const int64_t OW = conv_out_size(b->ne[0], a->ne[0], s0, p0, d0);
    const int64_t OH = conv_out_size(b->ne[1], a->ne[1], s1, p1, d1);
    const int64_t OD = conv_out_size(b->ne[2], a->ne[2], s2, p2, d2);
    if (OW <= 0 || OH <= 0 || OD <= 0)
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "the data is smaller than the dilated kernel", a, b);
    struct ggml_tensor *r = ggml_new_tensor_4d(ctx, dst_type, a->ne[0] * a->ne[1] * a->ne[2] * IC, OW, OH, OD * N);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params(r, (int32_t[]){(int32_t)IC, s0, s1, s2, p0, p1, p2, d0, d1, d2}, 10 * sizeof(int32_t));
    ggmlc__node_set(r, GGML_OP_IM2COL_3D, a, b, NULL);
    return r;
}

struct ggml_tensor *ggml_col2im_1d(struct ggml_context *ctx, struct ggml_tensor *a, int s0, int oc, int p0) {
    GGMLC_CHECK_SRC(a);
    if (!ggmlc__is_float_type(a->type)) return ggmlc__op_fail(GGMLC_ERR_TYPE, __func__, "columns must be F32, F16 or BF16");
    if (s0 <= 0 || oc <= 0 || p0 < 0)
        return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "stride %d and channels %d must be positive, padding %d not negative", s0, oc, p0);
    char sa[GGMLC_SHAPE_STR];
    if (a->ne[0] % oc != 0 || a->ne[3] != 1)
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "columns %s must be [K*%d, T, N]", ggmlc__shape_str(a, sa), oc);
    const int64_t K = a->ne[0] / oc, L = (a->ne[1] - 1) * s0 + K - 2 * p0;
    if (L <= 0) return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "padding %d leaves no output for %s", p0, ggmlc__shape_str(a, sa));
    struct ggml_tensor *r = ggml_new_tensor_3d(ctx, a->type, L, oc, a->ne[2]);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params(r, (int32_t[]){s0, oc, p0}, 3 * sizeof(int32_t));
    ggmlc__node_set(r, GGML_OP_COL2IM_1D, a, NULL, NULL);
    return r;
}

/* ------------------------------------------ convolutions via im2col + mul_mat
 * The kernel is the mul_mat weight (any type the matrix product takes), the
 * patches the activations: y = W x gives [OC, positions], transposed back to
 * the [positions, OC] layout of the result. */

/* The patches' type for kernel a: f16 for an f16 kernel, as ggml rounds them (half the
 * memory of f32 patches, the largest tensor of a convolution: a Stable Diffusion VAE's
 * decode planned 704 MB of compute buffer with f32 patches against ggml's 416), else f32. */
static enum ggml_type patch_type(const struct ggml_tensor *a) {
    return a->type == GGML_TYPE_F16 ? GGML_TYPE_F16 : GGML_TYPE_F32;
}

/* t itself when contiguous, else a contiguous copy (reshapes need one). */
static struct ggml_tensor *contiguous(struct ggml_context *ctx, struct ggml_tensor *t) {
    return ggml_is_contiguous(t) ? t : ggml_cont(ctx, t);
}

/* y [OC, P, N] -> [P, OC, N] contiguous. */
static struct ggml_tensor *channels_last_to_first(struct ggml_context *ctx, struct ggml_tensor *y, int64_t P, int64_t N) {
    return ggml_cont(ctx, ggml_transpose(ctx, ggml_reshape_3d(ctx, y, y->ne[0], P, N)));
}

/* ------------------------------------------------------- 1-D convolution */

struct ggml_tensor *ggml_conv_1d(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, int s0, int p0, int d0) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    if (a->ne[1] != b->ne[1] || a->ne[3] != 1 || b->ne[3] != 1)
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "kernel [K, IC, OC] and data [L, IC, N] must share IC", a, b);
    a = contiguous(ctx, a);
    struct ggml_tensor *im =
        ggml_im2col(ctx, a, b, s0, 1, p0, 0, d0, 1, false, patch_type(a)); /* [IC*K, OL, N] */
    GGMLC_CHECK_SRC(im);
    const int64_t OL = im->ne[1], N = im->ne[2];
    struct ggml_tensor *y = ggml_mul_mat(ctx, ggml_reshape_2d(ctx, a, a->ne[0] * a->ne[1], a->ne[2]),
                                         ggml_reshape_2d(ctx, im, im->ne[0], OL * N)); /* [OC, OL*N] */
    GGMLC_CHECK_SRC(y);
    return channels_last_to_first(ctx, y, OL, N); /* [OL, OC, N] */
}

struct ggml_tensor *ggml_conv_1d_ph(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, int s, int d) {
    GGMLC_CHECK_SRC(a);
    return ggml_conv_1d(ctx, a, b, s, (int)(a->ne[0] / 2), d);
}

/* Depthwise: kernel a [K, 1, C], data b [L, C, N] -> [OL, C, N], one filter per channel. */
struct ggml_tensor *ggml_conv_1d_dw(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, int s0, int p0, int d0) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    if (a->ne[1] != 1 || a->ne[2] != b->ne[1] || a->ne[3] != 1 || b->ne[3] != 1)
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "kernel must be [K, 1, C] for data [L, C, N]", a, b);
    a = contiguous(ctx, a);
    b = contiguous(ctx, b);
    struct ggml_tensor *a4 = ggml_reshape_4d(ctx, a, a->ne[0], 1, 1, a->ne[2]);
    struct ggml_tensor *b4 = ggml_reshape_4d(ctx, b, b->ne[0], 1, b->ne[1], b->ne[2]);
    struct ggml_tensor *y = ggml_conv_2d_dw_direct(ctx, a4, b4, s0, 1, p0, 0, d0, 1);
    GGMLC_CHECK_SRC(y);
    return ggml_reshape_3d(ctx, y, y->ne[0], y->ne[2], y->ne[3]); /* contiguous: b4 is not channels-last */
}

struct ggml_tensor *ggml_conv_1d_dw_ph(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, int s0, int d0) {
    GGMLC_CHECK_SRC(a);
    return ggml_conv_1d_dw(ctx, a, b, s0, (int)(a->ne[0] / 2), d0);
}

struct ggml_tensor *ggml_conv_transpose_1d(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, int s0, int p0, int d0) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    if (!is_f32_or_f16(a->type) || b->type != GGML_TYPE_F32)
        return ggmlc_op_fail_shapes(GGMLC_ERR_TYPE, __func__, "kernel must be F32/F16 and data F32", a, b);
    if (!conv_args_ok(__func__, &s0, &p0, &d0, 1)) return NULL;
    if (a->ne[2] != b->ne[1] || a->ne[3] != 1 || b->ne[3] != 1)
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "kernel [K, OC, IC] and data [L, IC, N] must share IC", a, b);
    const int64_t OL = (b->ne[0] - 1) * s0 - 2 * p0 + d0 * (a->ne[0] - 1) + 1;
    if (OL <= 0) return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "padding leaves no output", a, b);
    struct ggml_tensor *r = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, OL, a->ne[1], b->ne[2]);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params(r, (int32_t[]){s0, p0, d0}, 3 * sizeof(int32_t));
    ggmlc__node_set(r, GGML_OP_CONV_TRANSPOSE_1D, a, b, NULL);
    return r;
}

/* ------------------------------------------------------- 2-D convolution */

struct ggml_tensor *ggml_conv_2d(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
                                 int s0, int s1, int p0, int p1, int d0, int d1) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    if (a->ne[2] != b->ne[2])
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "kernel [KW, KH, IC, OC] and data [W, H, IC, N] must share IC", a, b);
    a = contiguous(ctx, a);
    struct ggml_tensor *im = ggml_im2col(ctx, a, b, s0, s1, p0, p1, d0, d1, true,
                                         patch_type(a)); /* [IC*KH*KW, OW, OH, N] */
    GGMLC_CHECK_SRC(im);
    const int64_t OW = im->ne[1], OH = im->ne[2], N = im->ne[3];
    struct ggml_tensor *y = ggml_mul_mat(ctx, ggml_reshape_2d(ctx, a, a->ne[0] * a->ne[1] * a->ne[2], a->ne[3]),
                                         ggml_reshape_2d(ctx, im, im->ne[0], OW * OH * N)); /* [OC, OW*OH*N] */
    GGMLC_CHECK_SRC(y);
    struct ggml_tensor *r = channels_last_to_first(ctx, y, OW * OH, N);
    GGMLC_CHECK_SRC(r);
    return ggml_reshape_4d(ctx, r, OW, OH, a->ne[3], N);
}

struct ggml_tensor *ggml_conv_2d_sk_p0(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b) {
    GGMLC_CHECK_SRC(a);
    return ggml_conv_2d(ctx, a, b, (int)a->ne[0], (int)a->ne[1], 0, 0, 1, 1);
}

struct ggml_tensor *ggml_conv_2d_s1_ph(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b) {
    GGMLC_CHECK_SRC(a);
    return ggml_conv_2d(ctx, a, b, 1, 1, (int)(a->ne[0] / 2), (int)(a->ne[1] / 2), 1, 1);
}

struct ggml_tensor *ggml_conv_2d_dw(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
                                    int s0, int s1, int p0, int p1, int d0, int d1) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    if (a->ne[2] != 1 || a->ne[3] != b->ne[2])
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "kernel must be [KW, KH, 1, C] for data [W, H, C, N]", a, b);
    const int64_t C = b->ne[2], N = b->ne[3];
    a = contiguous(ctx, a);
    b = contiguous(ctx, b);
    /* every channel becomes a one-channel image whose patches meet its own filter in a batched mul_mat */
    struct ggml_tensor *im =
        ggml_im2col(ctx, a, ggml_reshape_4d(ctx, b, b->ne[0], b->ne[1], 1, C * N), s0, s1, p0, p1,
                    d0, d1, true, patch_type(a)); /* [KW*KH, OW, OH, C*N] */
    GGMLC_CHECK_SRC(im);
    const int64_t OW = im->ne[1], OH = im->ne[2];
    struct ggml_tensor *filters = ggml_reshape_4d(ctx, a, a->ne[0] * a->ne[1], 1, C, 1);
    struct ggml_tensor *y = ggml_mul_mat(ctx, filters, ggml_reshape_4d(ctx, im, im->ne[0], OW * OH, C, N)); /* [1, OW*OH, C, N] */
    GGMLC_CHECK_SRC(y);
    return ggml_reshape_4d(ctx, y, OW, OH, C, N);
}

struct ggml_tensor *ggml_conv_2d_dw_direct(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
                                           int stride0, int stride1, int pad0, int pad1, int dilation0, int dilation1) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    if (!is_f32_or_f16(a->type) || b->type != GGML_TYPE_F32)
        return ggmlc_op_fail_shapes(GGMLC_ERR_TYPE, __func__, "kernel must be F32/F16 and data F32", a, b);
    if (!conv_args_ok(__func__, (int[]){stride0, stride1}, (int[]){pad0, pad1}, (int[]){dilation0, dilation1}, 2)) return NULL;
    if (a->ne[2] != 1 || a->ne[3] != b->ne[2])
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "kernel must be [KW, KH, 1, C] for data [W, H, C, N]", a, b);
    const int64_t OW = conv_out_size(b->ne[0], a->ne[0], stride0, pad0, dilation0);
    const int64_t OH = conv_out_size(b->ne[1], a->ne[1], stride1, pad1, dilation1);
    if (OW <= 0 || OH <= 0) return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "the data is smaller than the dilated kernel", a, b);
    struct ggml_tensor *r = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, OW, OH, b->ne[2], b->ne[3]);
    GGMLC_CHECK_SRC(r);
    if (ggml_is_contiguous_channels(b)) {
        /* channels-last input (a permuted WHCN view of CWHN data): the result keeps that layout */
        const size_t ts = ggml_type_size(r->type);
        r->nb[0] = (size_t)r->ne[2] * ts;
        r->nb[1] = (size_t)r->ne[0] * r->nb[0];
        r->nb[2] = ts;
    }
    ggmlc__set_op_params(r, (int32_t[]){stride0, stride1, pad0, pad1, dilation0, dilation1}, 6 * sizeof(int32_t));
    ggmlc__node_set(r, GGML_OP_CONV_2D_DW, a, b, NULL);
    return r;
}

struct ggml_tensor *ggml_conv_2d_direct(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
                                        int s0, int s1, int p0, int p1, int d0, int d1) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    if (!is_f32_or_f16(a->type) || b->type != GGML_TYPE_F32)
        return ggmlc_op_fail_shapes(GGMLC_ERR_TYPE, __func__, "kernel must be F32/F16 and data F32", a, b);
    if (!conv_args_ok(__func__, (int[]){s0, s1}, (int[]){p0, p1}, (int[]){d0, d1}, 2)) return NULL;
    if (a->ne[2] != b->ne[2])
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "kernel [KW, KH, IC, OC] and data [W, H, IC, N] must share IC", a, b);
    const int64_t OW = conv_out_size(b->ne[0], a->ne[0], s0, p0, d0);
    const int64_t OH = conv_out_size(b->ne[1], a->ne[1], s1, p1, d1);
    if (OW <= 0 || OH <= 0) return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "the data is smaller than the dilated kernel", a, b);
    struct ggml_tensor *r = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, OW, OH, a->ne[3], b->ne[3]);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params(r, (int32_t[]){s0, s1, p0, p1, d0, d1}, 6 * sizeof(int32_t));
    ggmlc__node_set(r, GGML_OP_CONV_2D, a, b, NULL);
    return r;
}

struct ggml_tensor *ggml_conv_transpose_2d_p0(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, int stride) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    if (!is_f32_or_f16(a->type) || b->type != GGML_TYPE_F32)
        return ggmlc_op_fail_shapes(GGMLC_ERR_TYPE, __func__, "kernel must be F32/F16 and data F32", a, b);
    if (stride <= 0) return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "stride %d must be positive", stride);
    if (a->ne[3] != b->ne[2])
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "kernel [KW, KH, OC, IC] and data [W, H, IC, N] must share IC", a, b);
    struct ggml_tensor *r = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, (b->ne[0] - 1) * stride + a->ne[0],
                                               (b->ne[1] - 1) * stride + a->ne[1], a->ne[2], b->ne[3]);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params_i32(r, 0, stride);
    ggmlc__node_set(r, GGML_OP_CONV_TRANSPOSE_2D, a, b, NULL);
    return r;
}

/* ------------------------------------------------------- 3-D convolution */

struct ggml_tensor *ggml_conv_3d(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, int64_t IC,
                                 int s0, int s1, int s2, int p0, int p1, int p2, int d0, int d1, int d2) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    a = contiguous(ctx, a);
    struct ggml_tensor *im =
        ggml_im2col_3d(ctx, a, b, IC, s0, s1, s2, p0, p1, p2, d0, d1, d2, patch_type(a));
    GGMLC_CHECK_SRC(im); /* [KW*KH*KD*IC, OW, OH, OD*N] */
    const int64_t OC = a->ne[3] / IC, N = b->ne[3] / IC, OD = im->ne[3] / N, P = im->ne[1] * im->ne[2] * OD;
    struct ggml_tensor *y = ggml_mul_mat(ctx, ggml_reshape_2d(ctx, a, im->ne[0], OC), ggml_reshape_2d(ctx, im, im->ne[0], P * N));
    GGMLC_CHECK_SRC(y); /* [OC, P*N] */
    struct ggml_tensor *r = channels_last_to_first(ctx, y, P, N);
    GGMLC_CHECK_SRC(r);
    return ggml_reshape_4d(ctx, r, im->ne[1], im->ne[2], OD, OC * N);
}

struct ggml_tensor *ggml_conv_3d_direct(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
                                        int s0, int s1, int s2, int p0, int p1, int p2, int d0, int d1, int d2,
                                        int n_channels, int n_batch, int n_channels_out) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    if (!is_f32_or_f16(a->type) || b->type != GGML_TYPE_F32)
        return ggmlc_op_fail_shapes(GGMLC_ERR_TYPE, __func__, "kernel must be F32/F16 and data F32", a, b);
    if (!conv_args_ok(__func__, (int[]){s0, s1, s2}, (int[]){p0, p1, p2}, (int[]){d0, d1, d2}, 3)) return NULL;
    if (n_channels <= 0 || n_batch <= 0 || n_channels_out <= 0 ||
        a->ne[3] != (int64_t)n_channels * n_channels_out || b->ne[3] != (int64_t)n_channels * n_batch)
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "kernel must be [KW, KH, KD, IC*OC] and data [W, H, D, IC*N]", a, b);
    const int64_t OW = conv_out_size(b->ne[0], a->ne[0], s0, p0, d0);
    const int64_t OH = conv_out_size(b->ne[1], a->ne[1], s1, p1, d1);
    const int64_t OD = conv_out_size(b->ne[2], a->ne[2], s2, p2, d2);
    if (OW <= 0 || OH <= 0 || OD <= 0)
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "the data is smaller than the dilated kernel", a, b);
    struct ggml_tensor *r = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, OW, OH, OD, (int64_t)n_channels_out * n_batch);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params(r, (int32_t[]){s0, s1, s2, p0, p1, p2, d0, d1, d2, n_channels, n_batch, n_channels_out},
                        12 * sizeof(int32_t));
    ggmlc__node_set(r, GGML_OP_CONV_3D, a, b, NULL);
    return r;
}
