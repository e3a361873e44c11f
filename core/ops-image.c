/*
 * ops-image.c - constructors of the image-shaped operators: pooling,
 * resampling (upscale/interpolate), padding, roll, timestep embeddings and
 * the window / relative-position helpers of SAM.
 */
#include "ggml-impl.h"

static bool require_f32(const char *func, const struct ggml_tensor *a) {
    if (a->type == GGML_TYPE_F32) return true;
    ggmlc__op_fail(GGMLC_ERR_TYPE, func, "operand must be F32, not %s", ggml_type_name(a->type));
    return false;
}

/* Pooling reads F32 or F16 (as ggml does) and always produces F32. */
static bool require_f32_or_f16(const char *func, const struct ggml_tensor *a) {
    if (a->type == GGML_TYPE_F32 || a->type == GGML_TYPE_F16) return true;
    ggmlc__op_fail(GGMLC_ERR_TYPE, func, "operand must be F32 or F16, not %s", ggml_type_name(a->type));
    return false;
}

/* ---------------------------------------------------------------- pooling */

/* ggml's pooled length: the float padding takes part in the size, truncated towards zero. */
static int64_t pool_out_size(int64_t in, int k, int s, float p) {
    return (int64_t)((float)(in + 2 * p - k) / (float)s) + 1;
}

static bool pool_args_ok(const char *func, enum ggml_op_pool op, const int *k, const int *s, const float *p, int n) {
    if ((unsigned)op >= GGML_OP_POOL_COUNT) {
        ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, func, "unknown pooling op %d", (int)op);
        return false;
    }
    for (int i = 0; i < n; i++) {
        if (k[i] <= 0 || s[i] <= 0 || p[i] < 0) {
            ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, func, "kernel %d and stride %d must be positive, padding %g not negative",
                          k[i], s[i], (double)p[i]);
            return false;
        }
    }
    return true;
}

struct ggml_tensor *ggml_pool_1d(struct ggml_context *ctx, struct ggml_tensor *a, enum ggml_op_pool op, int k0, int s0, int p0) {
    GGMLC_CHECK_SRC(a);
    if (!require_f32_or_f16(__func__, a) || !pool_args_ok(__func__, op, &k0, &s0, &(float){(float)p0}, 1)) return NULL;
    const int64_t OL = pool_out_size(a->ne[0], k0, s0, (float)p0);
    char sa[GGMLC_SHAPE_STR];
    if (OL <= 0) return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "kernel %d is larger than the padded input %s", k0, ggmlc__shape_str(a, sa));
    struct ggml_tensor *r = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, OL, a->ne[1], a->ne[2], a->ne[3]);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params(r, (int32_t[]){op, k0, s0, p0}, 4 * sizeof(int32_t));
    ggmlc__node_set(r, GGML_OP_POOL_1D, a, NULL, NULL);
    return r;
}

static struct ggml_tensor *new_pool_2d(struct ggml_context *ctx, const char *func, struct ggml_tensor *shape_of, enum ggml_op_pool op,
                                       int k0, int k1, int s0, int s1, float p0, float p1) {
    if (!pool_args_ok(func, op, (int[]){k0, k1}, (int[]){s0, s1}, (float[]){p0, p1}, 2)) return NULL;
    const int64_t OW = pool_out_size(shape_of->ne[0], k0, s0, p0), OH = pool_out_size(shape_of->ne[1], k1, s1, p1);
    char sa[GGMLC_SHAPE_STR];
    if (OW <= 0 || OH <= 0)
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, func, "kernel %dx%d is larger than the padded input %s", k0, k1, ggmlc__shape_str(shape_of, sa));
    struct ggml_tensor *r = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, OW, OH, shape_of->ne[2], shape_of->ne[3]);
    GGMLC_CHECK_SRC(r);
    /* ggml keeps the paddings as integers in op_params */
    ggmlc__set_op_params(r, (int32_t[]){op, k0, k1, s0, s1, (int32_t)p0, (int32_t)p1}, 7 * sizeof(int32_t));
    return r;
}

struct ggml_tensor *ggml_pool_2d(struct ggml_context *ctx, struct ggml_tensor *a, enum ggml_op_pool op,
                                 int k0, int k1, int s0, int s1, float p0, float p1) {
    GGMLC_CHECK_SRC(a);
    if (!require_f32_or_f16(__func__, a)) return NULL;
    struct ggml_tensor *r = new_pool_2d(ctx, __func__, a, op, k0, k1, s0, s1, p0, p1);
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, GGML_OP_POOL_2D, a, NULL, NULL);
    return r;
}

struct ggml_tensor *ggml_pool_2d_back(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *af, enum ggml_op_pool op,
                                      int k0, int k1, int s0, int s1, float p0, float p1) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(af);
    if (!require_f32(__func__, a) || !require_f32_or_f16(__func__, af)) return NULL;
    struct ggml_tensor *fwd = new_pool_2d(ctx, __func__, af, op, k0, k1, s0, s1, p0, p1); /* the forward result's shape */
    GGMLC_CHECK_SRC(fwd);
    if (!ggml_are_same_shape(fwd, a))
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, __func__, "the gradient must have the pooled shape of the input", a, af);
    struct ggml_tensor *r = ggml_new_tensor(ctx, GGML_TYPE_F32, GGML_MAX_DIMS, af->ne);
    GGMLC_CHECK_SRC(r);
    memcpy(r->op_params, fwd->op_params, sizeof r->op_params);
    ggmlc__node_set(r, GGML_OP_POOL_2D_BACK, a, af, NULL);
    return r;
}

/* -------------------------------------------------------------- resampling */

struct ggml_tensor *ggml_interpolate(struct ggml_context *ctx, struct ggml_tensor *a,
                                     int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3, uint32_t mode) {
    GGMLC_CHECK_SRC(a);
    if (!require_f32(__func__, a)) return NULL;
    const uint32_t flags = GGML_SCALE_FLAG_ALIGN_CORNERS | GGML_SCALE_FLAG_ANTIALIAS;
    if ((mode & 0xff) >= GGML_SCALE_MODE_COUNT || (mode & ~0xffu & ~flags))
        return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "unknown scale mode 0x%x", mode);
    if ((mode & GGML_SCALE_FLAG_ANTIALIAS) && (mode & 0xff) != GGML_SCALE_MODE_BILINEAR) /* as ggml */
        return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "GGML_SCALE_FLAG_ANTIALIAS needs the bilinear mode");
    if (ne0 <= 0 || ne1 <= 0 || ne2 <= 0 || ne3 <= 0)
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "target shape [%lld, %lld, %lld, %lld] must be positive",
                             (long long)ne0, (long long)ne1, (long long)ne2, (long long)ne3);
    struct ggml_tensor *r = ggml_new_tensor_4d(ctx, a->type, ne0, ne1, ne2, ne3);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params_i32(r, 0, (int32_t)mode);
    ggmlc__node_set(r, GGML_OP_UPSCALE, a, NULL, NULL);
    return r;
}

struct ggml_tensor *ggml_upscale(struct ggml_context *ctx, struct ggml_tensor *a, int scale_factor, enum ggml_scale_mode mode) {
    GGMLC_CHECK_SRC(a);
    if (scale_factor <= 0) return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "scale factor %d must be positive", scale_factor);
    return ggml_interpolate(ctx, a, a->ne[0] * scale_factor, a->ne[1] * scale_factor, a->ne[2], a->ne[3], mode);
}

struct ggml_tensor *ggml_upscale_ext(struct ggml_context *ctx, struct ggml_tensor *a, int ne0, int ne1, int ne2, int ne3,
                                     enum ggml_scale_mode mode) {
    return ggml_interpolate(ctx, a, ne0, ne1, ne2, ne3, mode);
}

/* ----------------------------------------------------------------- padding */

struct ggml_tensor *ggml_pad_ext(struct ggml_context *ctx, struct ggml_tensor *a,
                                 int lp0, int rp0, int lp1, int rp1, int lp2, int rp2, int lp3, int rp3) {
    GGMLC_CHECK_SRC(a);
    if (!require_f32(__func__, a)) return NULL;
    const int32_t pads[8] = {lp0, rp0, lp1, rp1, lp2, rp2, lp3, rp3};
    for (int i = 0; i < 8; i++)
        if (pads[i] < 0) return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "padding %d of dim %d is negative", pads[i], i / 2);
    struct ggml_tensor *r = ggml_new_tensor_4d(ctx, a->type, a->ne[0] + lp0 + rp0, a->ne[1] + lp1 + rp1,
                                               a->ne[2] + lp2 + rp2, a->ne[3] + lp3 + rp3);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params(r, pads, sizeof pads);
    ggmlc__node_set(r, GGML_OP_PAD, a, NULL, NULL);
    return r;
}

struct ggml_tensor *ggml_pad(struct ggml_context *ctx, struct ggml_tensor *a, int p0, int p1, int p2, int p3) {
    return ggml_pad_ext(ctx, a, 0, p0, 0, p1, 0, p2, 0, p3);
}

struct ggml_tensor *ggml_pad_reflect_1d(struct ggml_context *ctx, struct ggml_tensor *a, int p0, int p1) {
    GGMLC_CHECK_SRC(a);
    if (!require_f32(__func__, a)) return NULL;
    char sa[GGMLC_SHAPE_STR];
    if (p0 < 0 || p1 < 0 || p0 >= a->ne[0] || p1 >= a->ne[0])
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "paddings %d, %d must be in [0, ne0) for %s", p0, p1, ggmlc__shape_str(a, sa));
    if (a->nb[0] != sizeof(float))
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "rows of %s must be contiguous", ggmlc__shape_str(a, sa));
    struct ggml_tensor *r = ggml_new_tensor_4d(ctx, a->type, a->ne[0] + p0 + p1, a->ne[1], a->ne[2], a->ne[3]);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params(r, (int32_t[]){p0, p1}, 2 * sizeof(int32_t));
    ggmlc__node_set(r, GGML_OP_PAD_REFLECT_1D, a, NULL, NULL);
    return r;
}

struct ggml_tensor *ggml_roll(struct ggml_context *ctx, struct ggml_tensor *a, int shift0, int shift1, int shift2, int shift3) {
    GGMLC_CHECK_SRC(a);
    if (!ggmlc__is_float_type(a->type) && a->type != GGML_TYPE_I32)
        return ggmlc__op_fail(GGMLC_ERR_TYPE, __func__, "roll moves F32/F16/BF16/I32 elements, not %s", ggml_type_name(a->type));
    struct ggml_tensor *r = ggml_dup_tensor(ctx, a);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params(r, (int32_t[]){shift0, shift1, shift2, shift3}, 4 * sizeof(int32_t));
    ggmlc__node_set(r, GGML_OP_ROLL, a, NULL, NULL);
    return r;
}

struct ggml_tensor *ggml_timestep_embedding(struct ggml_context *ctx, struct ggml_tensor *timesteps, int dim, int max_period) {
    GGMLC_CHECK_SRC(timesteps);
    if (!require_f32(__func__, timesteps)) return NULL;
    char sa[GGMLC_SHAPE_STR];
    if (!ggml_is_vector(timesteps) || dim <= 0 || max_period <= 0)
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "timesteps %s must be a vector, dim %d and max_period %d positive",
                             ggmlc__shape_str(timesteps, sa), dim, max_period);
    struct ggml_tensor *r = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, dim, timesteps->ne[0]);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params(r, (int32_t[]){dim, max_period}, 2 * sizeof(int32_t));
    ggmlc__node_set(r, GGML_OP_TIMESTEP_EMBEDDING, timesteps, NULL, NULL);
    return r;
}

/* ------------------------------------------------------------------- SAM */

struct ggml_tensor *ggml_win_part(struct ggml_context *ctx, struct ggml_tensor *a, int w) {
    GGMLC_CHECK_SRC(a);
    if (!require_f32(__func__, a)) return NULL;
    char sa[GGMLC_SHAPE_STR];
    if (w <= 0 || a->ne[3] != 1)
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "window %d must be positive and %s of the form [C, W, H, 1]", w, ggmlc__shape_str(a, sa));
    const int64_t npx = (a->ne[1] + w - 1) / w, npy = (a->ne[2] + w - 1) / w;
    struct ggml_tensor *r = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, a->ne[0], w, w, npx * npy);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params(r, (int32_t[]){(int32_t)npx, (int32_t)npy, w}, 3 * sizeof(int32_t));
    ggmlc__node_set(r, GGML_OP_WIN_PART, a, NULL, NULL);
    return r;
}

struct ggml_tensor *ggml_win_unpart(struct ggml_context *ctx, struct ggml_tensor *a, int w0, int h0, int w) {
    GGMLC_CHECK_SRC(a);
    if (!require_f32(__func__, a)) return NULL;
    char sa[GGMLC_SHAPE_STR];
    if (w <= 0 || w0 <= 0 || h0 <= 0 || a->ne[1] != w || a->ne[2] != w ||
        a->ne[3] != ((int64_t)w0 + w - 1) / w * (((int64_t)h0 + w - 1) / w))
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "windows %s do not tile a %dx%d image with window %d",
                             ggmlc__shape_str(a, sa), w0, h0, w);
    struct ggml_tensor *r = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, a->ne[0], w0, h0);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params_i32(r, 0, w);
    ggmlc__node_set(r, GGML_OP_WIN_UNPART, a, NULL, NULL);
    return r;
}

struct ggml_tensor *ggml_get_rel_pos(struct ggml_context *ctx, struct ggml_tensor *a, int qh, int kh) {
    GGMLC_CHECK_SRC(a);
    if (!ggmlc__is_float_type(a->type)) return ggmlc__op_fail(GGMLC_ERR_TYPE, __func__, "the table must be F32/F16/BF16");
    char sa[GGMLC_SHAPE_STR];
    if (qh != kh || qh <= 0 || a->ne[1] != 2 * (int64_t)qh - 1 || !ggml_is_matrix(a))
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "qh %d must equal kh %d and the table %s have 2*qh - 1 rows",
                             qh, kh, ggmlc__shape_str(a, sa));
    struct ggml_tensor *r = ggml_new_tensor_3d(ctx, a->type, a->ne[0], kh, qh);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params(r, (int32_t[]){qh, kh}, 2 * sizeof(int32_t));
    ggmlc__node_set(r, GGML_OP_GET_REL_POS, a, NULL, NULL);
    return r;
}

static struct ggml_tensor *add_rel_pos_impl(struct ggml_context *ctx, const char *func, struct ggml_tensor *a,
                                            struct ggml_tensor *pw, struct ggml_tensor *ph, bool inplace) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(pw);
    GGMLC_CHECK_SRC(ph);
    if (!require_f32(func, a) || !require_f32(func, pw) || !require_f32(func, ph)) return NULL;
    if (!ggml_are_same_shape(pw, ph))
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, func, "pw and ph must have the same shape", pw, ph);
    /* a [K*K, Qw*Qh, B], pw/ph [K, Qw, Qh, B] */
    if (!ggml_is_contiguous(a) || !ggml_is_contiguous(pw) || !ggml_is_contiguous(ph) || a->ne[3] != 1 ||
        a->ne[0] != pw->ne[0] * pw->ne[0] || a->ne[1] != pw->ne[1] * pw->ne[2] || a->ne[2] != pw->ne[3])
        return ggmlc_op_fail_shapes(GGMLC_ERR_SHAPE, func, "a must be contiguous [K*K, Qw*Qh, B] for pw [K, Qw, Qh, B]", a, pw);
    struct ggml_tensor *r = inplace ? ggmlc__view_node(ctx, a) : ggml_dup_tensor(ctx, a);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params_i32(r, 0, inplace);
    ggmlc__node_set(r, GGML_OP_ADD_REL_POS, a, pw, ph);
    return r;
}

struct ggml_tensor *ggml_add_rel_pos(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *pw, struct ggml_tensor *ph) {
    return add_rel_pos_impl(ctx, __func__, a, pw, ph, false);
}

struct ggml_tensor *ggml_add_rel_pos_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *pw, struct ggml_tensor *ph) {
    return add_rel_pos_impl(ctx, __func__, a, pw, ph, true);
}
