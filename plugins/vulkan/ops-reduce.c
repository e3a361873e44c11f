/*
 * ops-reduce.c - reductions over rows (sum, sum_rows, mean, argmax, cumsum),
 * count_equal, row normalisations (norm, rms_norm, l2_norm), group_norm,
 * soft_max_ext (mask, ALiBi, sinks), and the gradients soft_max_back and
 * rms_norm_back.
 * One workgroup per row; the workgroup size is a specialization constant.
 */
#include <math.h>

#include "vk-impl.h"
#include "op-codes.h"

/* Workgroup size of the row kernels: a power of two the device allows. */
static uint32_t row_block(const struct vk_device *d) {
    uint32_t b = 256;
    while (b > d->props.limits.maxComputeWorkGroupInvocations || b > d->props.limits.maxComputeWorkGroupSize[0]) b /= 2;
    return b;
}

static bool rows_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    if (a->type != GGML_TYPE_F32 || !vk_shape_fits(a) || !vk_shape_fits(node)) return false;
    switch (node->op) {
    case GGML_OP_SUM: return node->type == GGML_TYPE_F32 && ggml_is_contiguous(a);
    case GGML_OP_ARGMAX: return node->type == GGML_TYPE_I32 && node->ne[0] == a->ne[1] && ggml_nrows(a) == a->ne[1];
    case GGML_OP_SUM_ROWS: case GGML_OP_MEAN:
        return node->type == GGML_TYPE_F32 && node->ne[0] == 1 && node->ne[1] == a->ne[1] && node->ne[2] == a->ne[2] &&
               node->ne[3] == a->ne[3];
    default: return node->type == GGML_TYPE_F32 && ggml_are_same_shape(a, node);
    }
}

static uint32_t rows_code(enum ggml_op op) {
    switch (op) {
    case GGML_OP_MEAN: return VK_ROW_MEAN;
    case GGML_OP_NORM: return VK_ROW_NORM;
    case GGML_OP_RMS_NORM: return VK_ROW_RMS_NORM;
    case GGML_OP_L2_NORM: return VK_ROW_L2_NORM;
    case GGML_OP_ARGMAX: return VK_ROW_ARGMAX;
    case GGML_OP_CUMSUM: return VK_ROW_CUMSUM;
    default: return VK_ROW_SUM; /* SUM, SUM_ROWS */
    }
}

static enum ggml_status rows_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find(node->op == GGML_OP_ARGMAX ? "argmax_f32" : "rows_f32"));
    ds.spec[0] = row_block(rec->d);
    ds.n_spec = 1;
    vk_push_shape(ds.push, 0, a);
    vk_push_shape(ds.push, 8, node);
    if (node->op == GGML_OP_SUM) { /* the whole (contiguous) tensor as one row */
        const uint32_t whole[8] = {(uint32_t)ggml_nelements(a), 1, 1, 1, 1, 0, 0, 0};
        memcpy(ds.push, whole, sizeof whole);
    } else if (node->op == GGML_OP_ARGMAX) { /* one value per row: d's rows are its elements */
        ds.push[13] = ds.push[12];
    }
    ds.push[18] = rows_code(node->op);
    ds.push[19] = vk_f32_bits(node->op == GGML_OP_NORM || node->op == GGML_OP_RMS_NORM || node->op == GGML_OP_L2_NORM
                                  ? vk_param_f32(node, 0) : 0.0f);
    vk_dispatch_bind(&ds, a, false, ggml_type_size(a->type), 16);
    vk_dispatch_bind(&ds, node, true, ggml_type_size(node->type), 17);
    vk_groups_1d(rec->d, node->op == GGML_OP_SUM ? 1 : (uint64_t)ggml_nrows(a), 1, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

/* ----------------------------------------------------------- count_equal */

static bool count_equal_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    return a->type == GGML_TYPE_I32 && b->type == GGML_TYPE_I32 && node->type == GGML_TYPE_I64 && ggml_are_same_shape(a, b) &&
           ggml_nelements(node) == 1 && vk_shape_fits(a) && vk_shape_fits(b);
}

static enum ggml_status count_equal_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("count_equal_i32"));
    ds.spec[0] = row_block(rec->d);
    ds.n_spec = 1;
    for (int i = 0; i < 4; i++) {
        ds.push[i] = (uint32_t)a->ne[i];
        ds.push[4 + i] = (uint32_t)(a->nb[i] / 4);
        ds.push[8 + i] = (uint32_t)(b->nb[i] / 4);
    }
    vk_dispatch_bind(&ds, a, false, 4, 12);
    vk_dispatch_bind(&ds, b, false, 4, 13);
    vk_dispatch_bind(&ds, node, true, 4, 14); /* the I64 result as two 32-bit words */
    return vk_record_dispatch(rec, &ds);
}

/* ------------------------------------------------------------ group_norm */

static bool group_norm_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    return a->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 && ggml_are_same_shape(a, node) && vk_shape_fits(a) &&
           vk_shape_fits(node) && vk_param_i32(node, 0) > 0 && (uint64_t)vk_param_i32(node, 0) <= 65535 && a->ne[3] <= 65535;
}

static enum ggml_status group_norm_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("group_norm_f32"));
    ds.spec[0] = row_block(rec->d);
    ds.n_spec = 1;
    vk_push_shape(ds.push, 0, a);
    vk_push_shape(ds.push, 8, node);
    ds.push[18] = (uint32_t)vk_param_i32(node, 0);
    ds.push[19] = vk_f32_bits(vk_param_f32(node, 1));
    vk_dispatch_bind(&ds, a, false, 4, 16);
    vk_dispatch_bind(&ds, node, true, 4, 17);
    ds.groups[0] = ds.push[18];
    ds.groups[1] = (uint32_t)a->ne[3];
    return vk_record_dispatch(rec, &ds);
}

/* --------------------------------------------------------------- softmax */

static bool softmax_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *m = node->src[1], *sinks = node->src[2];
    if (sinks && (sinks->type != GGML_TYPE_F32 || !ggml_is_contiguous(sinks) || ggml_nelements(sinks) < a->ne[2])) return false;
    if (a->type != GGML_TYPE_F32 || node->type != GGML_TYPE_F32 || !ggml_are_same_shape(a, node)) return false;
    if (!vk_shape_fits(a) || !vk_shape_fits(node) || node->nb[0] != 4) return false;
    if (!m) return true;
    return (m->type == GGML_TYPE_F32 || (m->type == GGML_TYPE_F16 && vk_type_ok(d, m->type))) && vk_shape_fits(m) &&
           m->nb[0] == ggml_type_size(m->type) && m->ne[0] == a->ne[0] && m->ne[1] >= a->ne[1] && a->ne[2] % m->ne[2] == 0 &&
           a->ne[3] % m->ne[3] == 0;
}

static enum ggml_status softmax_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *m = node->src[1], *sinks = node->src[2];
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("softmax_f32_%s", m ? ggml_type_name(m->type) : "f32"));
    ds.spec[0] = row_block(rec->d);
    ds.n_spec = 1;
    vk_push_shape(ds.push, 0, a);
    if (m) {
        const size_t ts = ggml_type_size(m->type);
        ds.push[8] = (uint32_t)m->ne[1];
        ds.push[9] = (uint32_t)m->ne[2];
        ds.push[10] = (uint32_t)m->ne[3];
        for (int i = 1; i < 4; i++) ds.push[10 + i] = (uint32_t)(m->nb[i] / ts);
    } else {
        ds.push[8] = ds.push[9] = ds.push[10] = 1;
    }
    for (int i = 1; i < 4; i++) ds.push[13 + i] = (uint32_t)(node->nb[i] / 4);
    ds.push[20] = m != NULL;
    const struct ggmlc_soft_max_params sp = ggmlc_soft_max_params_of(node);
    const float scale = sp.scale, max_bias = sp.max_bias;
    const uint32_t n_head = (uint32_t)a->ne[2];
    const uint32_t n_head_log2 = n_head ? 1u << (uint32_t)floor(log2((double)n_head)) : 1;
    ds.push[21] = vk_f32_bits(scale);
    ds.push[22] = vk_f32_bits(max_bias);
    ds.push[23] = vk_f32_bits(powf(2.0f, -max_bias / (float)n_head_log2));
    ds.push[24] = vk_f32_bits(powf(2.0f, -max_bias / 2.0f / (float)n_head_log2));
    ds.push[25] = n_head_log2;
    ds.push[26] = sinks != NULL;
    vk_dispatch_bind(&ds, a, false, 4, 17);
    vk_dispatch_bind(&ds, m ? m : a, false, m ? ggml_type_size(m->type) : 4, 18);
    vk_dispatch_bind(&ds, node, true, 4, 19);
    vk_dispatch_bind(&ds, sinks ? sinks : a, false, 4, 27); /* a stands in, unread, without sinks */
    vk_groups_1d(rec->d, (uint64_t)ggml_nrows(a), 1, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

/* ------------------------------------------------ soft_max_back, rms_norm_back */

static bool rows_back_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *dy = node->src[0], *x = node->src[1];
    /* soft_max_back: the mask and ALiBi slopes are constants added to the logits, absent from the gradient */
    return dy->type == GGML_TYPE_F32 && x->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 && ggml_are_same_shape(dy, x) &&
           ggml_are_same_shape(dy, node) && vk_shape_fits(dy) && vk_shape_fits(x) && vk_shape_fits(node);
}

static enum ggml_status rows_back_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *dy = node->src[0], *x = node->src[1];
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("rows_back_f32"));
    ds.spec[0] = row_block(rec->d);
    ds.n_spec = 1;
    vk_push_shape(ds.push, 0, dy);
    for (int i = 0; i < 4; i++) {
        ds.push[8 + i] = (uint32_t)(x->nb[i] / 4);
        ds.push[12 + i] = (uint32_t)(node->nb[i] / 4);
    }
    ds.push[19] = node->op == GGML_OP_RMS_NORM_BACK;
    ds.push[20] = vk_f32_bits(vk_param_f32(node, 0)); /* scale or eps */
    vk_dispatch_bind(&ds, dy, false, 4, 16);
    vk_dispatch_bind(&ds, x, false, 4, 17);
    vk_dispatch_bind(&ds, node, true, 4, 18);
    vk_groups_1d(rec->d, (uint64_t)ggml_nrows(dy), 1, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

void vk_ops_reduce_register(struct vk_op_kernel *t) {
    t[GGML_OP_SOFT_MAX_BACK] = (struct vk_op_kernel){rows_back_supports, rows_back_record};
    t[GGML_OP_RMS_NORM_BACK] = (struct vk_op_kernel){rows_back_supports, rows_back_record};
    static const enum ggml_op rows[] = {GGML_OP_SUM, GGML_OP_SUM_ROWS, GGML_OP_MEAN, GGML_OP_ARGMAX,
                                        GGML_OP_NORM, GGML_OP_RMS_NORM, GGML_OP_L2_NORM, GGML_OP_CUMSUM};
    t[GGML_OP_COUNT_EQUAL] = (struct vk_op_kernel){count_equal_supports, count_equal_record};
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) t[rows[i]] = (struct vk_op_kernel){rows_supports, rows_record};
    t[GGML_OP_GROUP_NORM] = (struct vk_op_kernel){group_norm_supports, group_norm_record};
    t[GGML_OP_SOFT_MAX] = (struct vk_op_kernel){softmax_supports, softmax_record};
}
