/*
 * ops-conv.c - image ops: im2col (convolutions run as im2col + mul_mat),
 * conv_2d and conv_2d_dw (direct), conv_transpose_1d / 2d, Mamba's ssm_conv,
 * pool_1d / pool_2d and upscale (nearest, bilinear, bicubic); the gradients
 * im2col_back and pool_2d_back, and col2im_1d.
 */
#include "vk-impl.h"

/* ------------------------------------------------------------- im2col */

static bool im2col_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *b = node->src[1];
    const int32_t *op = node->op_params;
    for (int i = 0; i < 6; i++)
        if (op[i] < 0) return false;
    return (b->type == GGML_TYPE_F32 || b->type == GGML_TYPE_F16) && (node->type == GGML_TYPE_F32 || node->type == GGML_TYPE_F16) &&
           vk_type_ok(d, b->type) && vk_type_ok(d, node->type) && vk_shape_fits(b) && vk_shape_fits(node) &&
           node->nb[0] == ggml_type_size(node->type);
}

static enum ggml_status im2col_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    const int32_t *op = node->op_params;
    const bool is_2d = op[6] != 0;
    const size_t tb = ggml_type_size(b->type), td = ggml_type_size(node->type);
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("im2col_%s_%s", ggml_type_name(b->type), ggml_type_name(node->type)));
    /* a 1-D im2col is the 2-D one with a height of 1: b [IW, IC, N], d [K, OW, N] */
    const uint32_t push[23] = {
        (uint32_t)b->ne[0], is_2d ? (uint32_t)b->ne[1] : 1, (uint32_t)b->ne[is_2d ? 2 : 1], (uint32_t)a->ne[0],
        is_2d ? (uint32_t)a->ne[1] : 1, (uint32_t)node->ne[1], is_2d ? (uint32_t)node->ne[2] : 1, (uint32_t)(is_2d ? node->ne[3] : node->ne[2]),
        (uint32_t)op[0], is_2d ? (uint32_t)op[1] : 1, (uint32_t)op[4], is_2d ? (uint32_t)op[5] : 1,
        (uint32_t)op[2], is_2d ? (uint32_t)op[3] : 0,
        (uint32_t)(b->nb[0] / tb), is_2d ? (uint32_t)(b->nb[1] / tb) : 0, (uint32_t)(b->nb[is_2d ? 2 : 1] / tb), (uint32_t)(b->nb[is_2d ? 3 : 2] / tb),
        (uint32_t)(node->nb[1] / td), is_2d ? (uint32_t)(node->nb[2] / td) : 0, (uint32_t)(node->nb[is_2d ? 3 : 2] / td), 0, 0,
    };
    memcpy(ds.push, push, sizeof push);
    vk_dispatch_bind(&ds, b, false, (uint32_t)tb, 21);
    vk_dispatch_bind(&ds, node, true, (uint32_t)td, 22);
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(node), 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

/* --------------------------------------------------------------- pool */

static bool pool_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    const int32_t *op = node->op_params;
    const int n = node->op == GGML_OP_POOL_2D ? 7 : 4;
    for (int i = 1; i < n; i++)
        if (op[i] < 0 || (i <= (n == 7 ? 4 : 2) && op[i] == 0)) return false; /* kernel and stride >= 1, padding >= 0 */
    return (op[0] == GGML_OP_POOL_MAX || op[0] == GGML_OP_POOL_AVG) && (a->type == GGML_TYPE_F32 || a->type == GGML_TYPE_F16) &&
           vk_type_ok(d, a->type) && node->type == GGML_TYPE_F32 && vk_shape_fits(a) && vk_shape_fits(node);
}

static enum ggml_status pool_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    const int32_t *op = node->op_params;
    const bool two = node->op == GGML_OP_POOL_2D;
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("pool_%s", ggml_type_name(a->type)));
    vk_push_shape(ds.push, 0, a);
    vk_push_shape(ds.push, 8, node);
    ds.push[18] = op[0] == GGML_OP_POOL_AVG;
    ds.push[19] = (uint32_t)op[1];                 /* k0 */
    ds.push[20] = two ? (uint32_t)op[2] : 1;       /* k1 */
    ds.push[21] = (uint32_t)op[two ? 3 : 2];       /* s0 */
    ds.push[22] = two ? (uint32_t)op[4] : 1;       /* s1 */
    ds.push[23] = (uint32_t)op[two ? 5 : 3];       /* p0 */
    ds.push[24] = two ? (uint32_t)op[6] : 0;       /* p1 */
    vk_dispatch_bind(&ds, a, false, ggml_type_size(a->type), 16);
    vk_dispatch_bind(&ds, node, true, 4, 17);
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(node), 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

/* ------------------------------------------------------------- upscale */

/* op_params[0]: mode (nearest, bilinear, bicubic) | GGML_SCALE_FLAG_ALIGN_CORNERS. */
static bool upscale_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    const uint32_t mode = (uint32_t)vk_param_i32(node, 0);
    return a->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 && (mode & 0xff) < GGML_SCALE_MODE_COUNT &&
           (mode & ~0xffu & ~(uint32_t)GGML_SCALE_FLAG_ALIGN_CORNERS) == 0 && vk_shape_fits(a) && vk_shape_fits(node);
}

static enum ggml_status upscale_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    const uint32_t mode = (uint32_t)vk_param_i32(node, 0);
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("upscale_f32"));
    vk_push_shape(ds.push, 0, a);
    vk_push_shape(ds.push, 8, node);
    ds.push[18] = mode & 0xff;
    ds.push[19] = (mode & GGML_SCALE_FLAG_ALIGN_CORNERS) != 0;
    vk_dispatch_bind(&ds, a, false, 4, 16);
    vk_dispatch_bind(&ds, node, true, 4, 17);
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(node), 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

/* --------------------------------------------------- conv_transpose_2d */

/* a: kernel [KW, KH, OC, IC] (f32/f16), b: input [IW, IH, IC, N] (f32), op_params[0]: stride. */
static bool conv_transpose_2d_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *k = node->src[0], *x = node->src[1];
    return (k->type == GGML_TYPE_F32 || k->type == GGML_TYPE_F16) && vk_type_ok(d, k->type) && x->type == GGML_TYPE_F32 &&
           node->type == GGML_TYPE_F32 && vk_param_i32(node, 0) > 0 && k->ne[3] == x->ne[2] && vk_shape_fits(k) &&
           vk_shape_fits(x) && vk_shape_fits(node);
}

static enum ggml_status conv_transpose_2d_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *k = node->src[0], *x = node->src[1];
    const size_t tk = ggml_type_size(k->type);
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("conv_transpose_2d_%s", ggml_type_name(k->type)));
    for (int i = 0; i < 4; i++) {
        ds.push[i] = (uint32_t)k->ne[i];
        ds.push[4 + i] = (uint32_t)(k->nb[i] / tk);
        ds.push[11 + i] = (uint32_t)(x->nb[i] / 4);
        ds.push[17 + i] = (uint32_t)(node->nb[i] / 4);
    }
    ds.push[8] = (uint32_t)x->ne[0];
    ds.push[9] = (uint32_t)x->ne[1];
    ds.push[10] = (uint32_t)x->ne[3];
    ds.push[15] = (uint32_t)node->ne[0];
    ds.push[16] = (uint32_t)node->ne[1];
    ds.push[24] = (uint32_t)vk_param_i32(node, 0);
    vk_dispatch_bind(&ds, k, false, (uint32_t)tk, 21);
    vk_dispatch_bind(&ds, x, false, 4, 22);
    vk_dispatch_bind(&ds, node, true, 4, 23);
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(node), 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

/* ------------------------------------------------------ conv_2d (direct) */

/* a: kernel [KW, KH, IC, OC] (f32/f16; depthwise [KW, KH, 1, C]), b: data [W, H, IC, N] (f32),
 * any strides (ggml's channels-innermost CWHN layout is a permuted view); op_params: s0, s1, p0, p1, d0, d1. */
static bool conv_2d_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *k = node->src[0], *x = node->src[1];
    for (int i = 0; i < 6; i++)
        if (vk_param_i32(node, i) < (i < 2 || i >= 4 ? 1 : 0)) return false; /* strides and dilations >= 1, padding >= 0 */
    const bool channels_ok = node->op == GGML_OP_CONV_2D_DW ? k->ne[2] == 1 && k->ne[3] == x->ne[2] : k->ne[2] == x->ne[2];
    return (k->type == GGML_TYPE_F32 || k->type == GGML_TYPE_F16) && vk_type_ok(d, k->type) && x->type == GGML_TYPE_F32 &&
           node->type == GGML_TYPE_F32 && channels_ok && node->ne[2] == k->ne[3] && node->ne[3] == x->ne[3] && vk_shape_fits(k) &&
           vk_shape_fits(x) && vk_shape_fits(node);
}

static enum ggml_status conv_2d_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *k = node->src[0], *x = node->src[1];
    const size_t tk = ggml_type_size(k->type);
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("conv2d_%s", ggml_type_name(k->type)));
    const uint32_t push[25] = {
        (uint32_t)k->ne[0], (uint32_t)k->ne[1], (uint32_t)k->ne[2], (uint32_t)k->ne[3],
        (uint32_t)(k->nb[1] / tk), (uint32_t)(k->nb[2] / tk), (uint32_t)(k->nb[3] / tk),
        (uint32_t)x->ne[0], (uint32_t)x->ne[1], (uint32_t)x->ne[3], (uint32_t)(x->nb[1] / 4), (uint32_t)(x->nb[2] / 4), (uint32_t)(x->nb[3] / 4),
        (uint32_t)node->ne[0], (uint32_t)node->ne[1],
        (uint32_t)(node->nb[0] / 4), (uint32_t)(node->nb[1] / 4), (uint32_t)(node->nb[2] / 4), (uint32_t)(node->nb[3] / 4),
    };
    memcpy(ds.push, push, sizeof push);
    for (int i = 0; i < 6; i++) ds.push[19 + i] = (uint32_t)vk_param_i32(node, i);
    ds.push[28] = node->op == GGML_OP_CONV_2D_DW;
    ds.push[29] = (uint32_t)(k->nb[0] / tk);
    ds.push[30] = (uint32_t)(x->nb[0] / 4);
    vk_dispatch_bind(&ds, k, false, (uint32_t)tk, 25);
    vk_dispatch_bind(&ds, x, false, 4, 26);
    vk_dispatch_bind(&ds, node, true, 4, 27);
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(node), 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

/* -------------------------------------------------------- im2col_back */

/* src[0]: the kernel (its shape only), src[1]: the patch gradient (f32); op_params: s0, s1, p0, p1, d0, d1, is_2D. */
static bool im2col_back_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *g = node->src[1];
    const int n_dims = vk_param_i32(node, 6) != 0 ? 2 : 1; /* a 1-D one has no vertical parameters */
    for (int i = 0; i < n_dims; i++)
        if (vk_param_i32(node, i) < 1 || vk_param_i32(node, 2 + i) < 0 || vk_param_i32(node, 4 + i) < 1) return false;
    return g->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 && vk_shape_fits(g) && vk_shape_fits(node);
}

/* Gather patch columns g back onto the image node (im2col-back.comp): spd = s0, s1, p0, p1, d0, d1.
 * 1-D: the result [IW, IC, N] and columns [K*IC, OW, N] get a height of 1. */
static enum ggml_status gather_columns(struct vk_rec *rec, const struct ggml_tensor *node, const struct ggml_tensor *g, uint32_t kw,
                                       uint32_t kh, const int32_t *spd, bool is_2d) {
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("im2col_back_f32"));
    const uint32_t push[16] = {
        (uint32_t)node->ne[0], is_2d ? (uint32_t)node->ne[1] : 1, (uint32_t)node->ne[is_2d ? 2 : 1], (uint32_t)node->ne[is_2d ? 3 : 2],
        kw, is_2d ? kh : 1, (uint32_t)g->ne[1], is_2d ? (uint32_t)g->ne[2] : 1,
        (uint32_t)(g->nb[0] / 4), (uint32_t)(g->nb[1] / 4), is_2d ? (uint32_t)(g->nb[2] / 4) : 0, (uint32_t)(g->nb[is_2d ? 3 : 2] / 4),
        (uint32_t)(node->nb[0] / 4), is_2d ? (uint32_t)(node->nb[1] / 4) : 0, (uint32_t)(node->nb[is_2d ? 2 : 1] / 4),
        (uint32_t)(node->nb[is_2d ? 3 : 2] / 4),
    };
    memcpy(ds.push, push, sizeof push);
    for (int i = 0; i < 6; i++) ds.push[16 + i] = (uint32_t)spd[i];
    if (!is_2d) { /* no vertical taps: stride and dilation 1, no padding */
        ds.push[17] = 1;
        ds.push[19] = 0;
        ds.push[21] = 1;
    }
    vk_dispatch_bind(&ds, g, false, 4, 22);
    vk_dispatch_bind(&ds, node, true, 4, 23);
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(node), 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

static enum ggml_status im2col_back_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *k = node->src[0];
    return gather_columns(rec, node, node->src[1], (uint32_t)k->ne[0], (uint32_t)k->ne[1], node->op_params, vk_param_i32(node, 6) != 0);
}

/* ---------------------------------------------------------- col2im_1d */

/* columns [K*OC, T, N] (f32) summed back into [L, OC, N]; op_params: s0, OC, p0. The 1-D im2col_back
 * with dilation 1. */
static bool col2im_1d_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    const int32_t oc = vk_param_i32(node, 1);
    return a->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 && vk_param_i32(node, 0) > 0 && oc > 0 && vk_param_i32(node, 2) >= 0 &&
           a->ne[0] % oc == 0 && node->ne[1] == oc && node->ne[2] == a->ne[2] && vk_shape_fits(a) && vk_shape_fits(node);
}

static enum ggml_status col2im_1d_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    const int32_t spd[6] = {vk_param_i32(node, 0), 1, vk_param_i32(node, 2), 0, 1, 1};
    return gather_columns(rec, node, a, (uint32_t)(a->ne[0] / vk_param_i32(node, 1)), 1, spd, false);
}

/* ------------------------------------------------------- pool_2d_back */

/* src[0]: gradient of the pooled result (f32), src[1]: the forward input (f32/f16); op_params as pool_2d's. */
static bool pool_2d_back_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *dy = node->src[0], *x = node->src[1];
    const int32_t *op = node->op_params;
    for (int i = 1; i < 7; i++)
        if (op[i] < 0 || (i <= 4 && op[i] == 0)) return false;
    return (op[0] == GGML_OP_POOL_MAX || op[0] == GGML_OP_POOL_AVG) && dy->type == GGML_TYPE_F32 &&
           (x->type == GGML_TYPE_F32 || x->type == GGML_TYPE_F16) && vk_type_ok(d, x->type) && node->type == GGML_TYPE_F32 &&
           ggml_are_same_shape(node, x) && dy->ne[2] == x->ne[2] && dy->ne[3] == x->ne[3] && vk_shape_fits(dy) && vk_shape_fits(x) &&
           vk_shape_fits(node);
}

static enum ggml_status pool_2d_back_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *dy = node->src[0], *x = node->src[1];
    const size_t tx = ggml_type_size(x->type);
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("pool_back_%s", ggml_type_name(x->type)));
    ds.push[0] = (uint32_t)dy->ne[0];
    ds.push[1] = (uint32_t)dy->ne[1];
    for (int i = 0; i < 4; i++) {
        ds.push[2 + i] = (uint32_t)(dy->nb[i] / 4);
        ds.push[6 + i] = (uint32_t)x->ne[i];
        ds.push[10 + i] = (uint32_t)(x->nb[i] / tx);
        ds.push[14 + i] = (uint32_t)(node->nb[i] / 4);
    }
    ds.push[18] = vk_param_i32(node, 0) == GGML_OP_POOL_AVG;
    for (int i = 1; i < 7; i++) ds.push[18 + i] = (uint32_t)vk_param_i32(node, i);
    vk_dispatch_bind(&ds, dy, false, 4, 25);
    vk_dispatch_bind(&ds, x, false, (uint32_t)tx, 26);
    vk_dispatch_bind(&ds, node, true, 4, 27);
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(node), 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

/* --------------------------------------------------- conv_transpose_1d */

/* a: kernel [K, OC, IC] (f32/f16), b: data [L, IC, N] (f32); op_params: s0, p0, d0. */
static bool conv_transpose_1d_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *k = node->src[0], *x = node->src[1];
    return (k->type == GGML_TYPE_F32 || k->type == GGML_TYPE_F16) && vk_type_ok(d, k->type) && x->type == GGML_TYPE_F32 &&
           node->type == GGML_TYPE_F32 && vk_param_i32(node, 0) > 0 && vk_param_i32(node, 1) >= 0 && vk_param_i32(node, 2) > 0 &&
           k->ne[2] == x->ne[1] && node->ne[1] == k->ne[1] && node->ne[2] == x->ne[2] && k->ne[3] == 1 && x->ne[3] == 1 &&
           vk_shape_fits(k) && vk_shape_fits(x) && vk_shape_fits(node);
}

static enum ggml_status conv_transpose_1d_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *k = node->src[0], *x = node->src[1];
    const size_t tk = ggml_type_size(k->type);
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("conv_transpose_1d_%s", ggml_type_name(k->type)));
    const uint32_t push[18] = {
        (uint32_t)k->ne[0], (uint32_t)k->ne[1], (uint32_t)k->ne[2], (uint32_t)(k->nb[0] / tk), (uint32_t)(k->nb[1] / tk), (uint32_t)(k->nb[2] / tk),
        (uint32_t)x->ne[0], (uint32_t)(x->nb[0] / 4), (uint32_t)(x->nb[1] / 4), (uint32_t)(x->nb[2] / 4),
        (uint32_t)node->ne[0], (uint32_t)node->ne[2], (uint32_t)(node->nb[0] / 4), (uint32_t)(node->nb[1] / 4), (uint32_t)(node->nb[2] / 4),
        (uint32_t)vk_param_i32(node, 0), (uint32_t)vk_param_i32(node, 1), (uint32_t)vk_param_i32(node, 2),
    };
    memcpy(ds.push, push, sizeof push);
    vk_dispatch_bind(&ds, k, false, (uint32_t)tk, 18);
    vk_dispatch_bind(&ds, x, false, 4, 19);
    vk_dispatch_bind(&ds, node, true, 4, 20);
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(node), 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

/* ------------------------------------------------------------ ssm_conv */

/* sx [d_conv - 1 + n_t, d_inner, n_s], c [d_conv, d_inner] -> [d_inner, n_t, n_s]; f32. */
static bool ssm_conv_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *sx = node->src[0], *c = node->src[1];
    return sx->type == GGML_TYPE_F32 && c->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 && sx->ne[1] == c->ne[1] &&
           node->ne[0] == c->ne[1] && node->ne[1] == sx->ne[0] - c->ne[0] + 1 && node->ne[2] == sx->ne[2] && sx->ne[3] == 1 &&
           vk_shape_fits(sx) && vk_shape_fits(c) && vk_shape_fits(node);
}

static enum ggml_status ssm_conv_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *sx = node->src[0], *c = node->src[1];
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("ssm_conv_f32"));
    const uint32_t push[12] = {
        (uint32_t)c->ne[0], (uint32_t)c->ne[1], (uint32_t)node->ne[1], (uint32_t)node->ne[2],
        (uint32_t)(sx->nb[0] / 4), (uint32_t)(sx->nb[1] / 4), (uint32_t)(sx->nb[2] / 4), (uint32_t)(c->nb[0] / 4), (uint32_t)(c->nb[1] / 4),
        (uint32_t)(node->nb[0] / 4), (uint32_t)(node->nb[1] / 4), (uint32_t)(node->nb[2] / 4),
    };
    memcpy(ds.push, push, sizeof push);
    vk_dispatch_bind(&ds, sx, false, 4, 12);
    vk_dispatch_bind(&ds, c, false, 4, 13);
    vk_dispatch_bind(&ds, node, true, 4, 14);
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(node), 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

void vk_ops_conv_register(struct vk_op_kernel *t) {
    t[GGML_OP_COL2IM_1D] = (struct vk_op_kernel){col2im_1d_supports, col2im_1d_record};
    vk_ops_conv3d_register(t);
    t[GGML_OP_CONV_TRANSPOSE_1D] = (struct vk_op_kernel){conv_transpose_1d_supports, conv_transpose_1d_record};
    t[GGML_OP_SSM_CONV] = (struct vk_op_kernel){ssm_conv_supports, ssm_conv_record};
    t[GGML_OP_IM2COL_BACK] = (struct vk_op_kernel){im2col_back_supports, im2col_back_record};
    t[GGML_OP_POOL_2D_BACK] = (struct vk_op_kernel){pool_2d_back_supports, pool_2d_back_record};
    t[GGML_OP_CONV_2D] = (struct vk_op_kernel){conv_2d_supports, conv_2d_record};
    t[GGML_OP_CONV_2D_DW] = (struct vk_op_kernel){conv_2d_supports, conv_2d_record};
    t[GGML_OP_CONV_TRANSPOSE_2D] = (struct vk_op_kernel){conv_transpose_2d_supports, conv_transpose_2d_record};
    t[GGML_OP_UPSCALE] = (struct vk_op_kernel){upscale_supports, upscale_record};
    t[GGML_OP_IM2COL] = (struct vk_op_kernel){im2col_supports, im2col_record};
    t[GGML_OP_POOL_1D] = (struct vk_op_kernel){pool_supports, pool_record};
    t[GGML_OP_POOL_2D] = (struct vk_op_kernel){pool_supports, pool_record};
}
