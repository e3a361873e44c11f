/*
 * ops-reduce.c - reductions over rows (sum, sum_rows, mean, argmax, cumsum),
 * count_equal, row normalisations (norm, rms_norm, l2_norm), group_norm,
 * soft_max_ext (mask, ALiBi, sinks), and the gradients soft_max_back and
 * rms_norm_back.
 * One workgroup per row; the workgroup size is a specialization constant.
 */
#include <math.h>
#include <string.h>

#include "vk-impl.h"
#include "op-codes.h"

/* Whether the device takes workgroups of b invocations along x. */
static bool block_fits(const struct vk_device *d, uint32_t b) {
    return b <= d->props.limits.maxComputeWorkGroupInvocations && b <= d->props.limits.maxComputeWorkGroupSize[0];
}

/* Workgroup size of the row kernels: a power of two the device allows. */
static uint32_t row_block(const struct vk_device *d) {
    uint32_t b = 256;
    while (!block_fits(d, b)) b /= 2;
    return b;
}

/* Workgroup size of rows.comp for rows of n values: row_block, doubled up to ROW_BLOCK_MAX while
 * the device allows and the row does not fit in registers (VK_ROW_KEEP values per invocation): a
 * row read a second time costs a memory round trip (the H200 normalised rows of 2048 values, with
 * 4 kept per invocation of 256, in 8.5 us against 6.0 for rows of 768; session 22). */
#define ROW_BLOCK_MAX 1024
static uint32_t rows_kept_block(const struct vk_device *d, int64_t n) {
    uint32_t b = row_block(d);
    while (b < ROW_BLOCK_MAX && (int64_t)b * VK_ROW_KEEP < n && block_fits(d, b * 2)) b *= 2;
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

static bool is_norm(enum ggml_op op) { return op == GGML_OP_NORM || op == GGML_OP_RMS_NORM || op == GGML_OP_L2_NORM; }

/* The dispatch of row kernel `shader` for node, its push constants in *pc (not yet pushed) and
 * its operand and result bound. */
static void rows_dispatch(struct vk_rec *rec, const struct ggml_tensor *node, enum vk_shader_id shader,
                          struct vk_dispatch *ds, struct vk_pc_rows *pc) {
    const struct ggml_tensor *a = node->src[0];
    vk_dispatch_init(ds, shader);
    ds->spec[0] = rows_kept_block(rec->d, node->op == GGML_OP_SUM ? ggml_nelements(a) : a->ne[0]);
    ds->n_spec = 1;
    *pc = (struct vk_pc_rows){.op = rows_code(node->op), .eps = is_norm(node->op) ? ggmlc_op_param_f32(node, 0) : 0.0f};
    VK_PUSH_SHAPE(*pc, 0, a);
    VK_PUSH_SHAPE(*pc, , node);
    if (node->op == GGML_OP_SUM) { /* the whole (contiguous) tensor as one row */
        pc->ne00 = (uint32_t)ggml_nelements(a), pc->ne01 = pc->ne02 = pc->ne03 = 1;
        pc->nb00 = 1, pc->nb01 = pc->nb02 = pc->nb03 = 0;
    } else if (node->op == GGML_OP_ARGMAX) { /* one value per row: d's rows are its elements */
        pc->nb1 = pc->nb0;
    }
    vk_dispatch_bind(ds, a, false, ggml_type_size(a->type), VK_PUSH_WORD(vk_pc_rows, off_a));
    vk_dispatch_bind(ds, node, true, ggml_type_size(node->type), VK_PUSH_WORD(vk_pc_rows, off_d));
    vk_groups_1d(rec->d, node->op == GGML_OP_SUM ? 1 : (uint64_t)ggml_nrows(a), 1, ds->groups);
}

static enum ggml_status rows_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    struct vk_dispatch ds;
    struct vk_pc_rows pc;
    rows_dispatch(rec, node, vk_shader_find(node->op == GGML_OP_ARGMAX ? "argmax_f32" : "rows_f32"), &ds, &pc);
    vk_dispatch_push(&ds, pc);
    return vk_record_dispatch(rec, &ds);
}

/* ------------------------------------------------ a norm and its mul (vk-fuse.c) */

bool vk_norm_mul_fits(const struct vk_device *d, const struct ggml_tensor *norm, const struct ggml_tensor *mul) {
    if (!is_norm(norm->op) || mul->op != GGML_OP_MUL || mul->src[0] != norm || !rows_supports(d, norm)) return false;
    const struct ggml_tensor *w = mul->src[1];
    /* w's rows broadcast over norm's; mul's result is written with norm's strides */
    return w != norm && w->type == GGML_TYPE_F32 && mul->type == GGML_TYPE_F32 && w->ne[0] == norm->ne[0] &&
           w->nb[0] == 4 && ggml_can_repeat(w, norm) && vk_shape_fits(w) &&
           memcmp(mul->nb, norm->nb, sizeof mul->nb) == 0;
}

/* Whether rows_mul_q8_f32 takes norm's rows with the workgroup of rows_dispatch: whole blocks of
 * 32, all kept in registers, and the row regrouped in shared memory. */
static bool norm_mul_q8_fits(const struct vk_device *d, const struct ggml_tensor *norm, const struct vk_dispatch *ds) {
    const uint32_t block = ds->spec[0];
    return norm->ne[0] % 32 == 0 && norm->ne[0] <= (int64_t)block * VK_ROW_KEEP &&
           (VK_ROW_KEEP + 2ull) * block * sizeof(float) <= d->props.limits.maxComputeSharedMemorySize;
}

bool vk_norm_mul_record(struct vk_rec *rec, const struct ggml_tensor *norm, const struct ggml_tensor *mul,
                        enum ggml_status *st) {
    const struct ggml_tensor *w = mul->src[1];
    struct vk_dispatch ds;
    struct vk_pc_rows pc;
    struct vk_q8_result q;
    const enum vk_shader_id q8_shader = vk_shader_find("rows_mul_q8_f32");
    rows_dispatch(rec, norm, vk_shader_find("rows_mul_f32"), &ds, &pc);
    const bool q8 = vk_shader_present(q8_shader) && norm_mul_q8_fits(rec->d, norm, &ds) && vk_q8_result_plan(rec, mul, &q) &&
                    vk_optional_pipeline(rec->d, q8_shader, ds.spec, ds.n_spec, VK_PATH_Q8_RESULT,
                                         "the products quantize their activations");
    if (q8) ds.shader = q8_shader;
    if (!vk_optional_pipeline(rec->d, ds.shader, ds.spec, ds.n_spec, VK_PATH_FUSE, "unfused nodes")) return false;
    const struct vk_shape ws = vk_shape_of(w);
    pc.wne1 = ws.ne[1], pc.wne2 = ws.ne[2], pc.wne3 = ws.ne[3];
    pc.wnb1 = ws.nb[1], pc.wnb2 = ws.nb[2], pc.wnb3 = ws.nb[3];
    if (q8) pc.off_q = 0, pc.off_s = (uint32_t)(q.scales_at / 8);
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, w, false, 4, VK_PUSH_WORD(vk_pc_rows, off_w));
    vk_dispatch_bind(&ds, mul, true, 4, VK_PUSH_WORD(vk_pc_rows, off_o));
    if (q8) vk_dispatch_bind_scratch(&ds, q.at, q.bytes, true);
    *st = vk_record_dispatch(rec, &ds);
    if (q8 && *st == GGML_STATUS_SUCCESS) vk_q8_result_note(rec, &q);
    return true;
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
    const struct vk_shape sa = vk_shape_of(a), sb = vk_shape_of(b);
    const struct vk_pc_count_equal pc = {
        .ne0 = sa.ne[0],
        .ne1 = sa.ne[1],
        .ne2 = sa.ne[2],
        .ne3 = sa.ne[3],
        .na0 = sa.nb[0],
        .na1 = sa.nb[1],
        .na2 = sa.nb[2],
        .na3 = sa.nb[3],
        .nb0 = sb.nb[0],
        .nb1 = sb.nb[1],
        .nb2 = sb.nb[2],
        .nb3 = sb.nb[3],
    };
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, a, false, 4, VK_PUSH_WORD(vk_pc_count_equal, off_a));
    vk_dispatch_bind(&ds, b, false, 4, VK_PUSH_WORD(vk_pc_count_equal, off_b));
    /* the I64 result as two 32-bit words */
    vk_dispatch_bind(&ds, node, true, 4, VK_PUSH_WORD(vk_pc_count_equal, off_d));
    return vk_record_dispatch(rec, &ds);
}

/* ------------------------------------------------------------ group_norm */

static bool group_norm_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    const int32_t n_groups = ggmlc_group_norm_params_of(node).n_groups;
    return a->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 && ggml_are_same_shape(a, node) && vk_shape_fits(a) &&
           vk_shape_fits(node) && n_groups > 0 && (uint64_t)n_groups <= 65535 && a->ne[3] <= 65535;
}

static enum ggml_status group_norm_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("group_norm_f32"));
    ds.spec[0] = row_block(rec->d);
    ds.n_spec = 1;
    const struct ggmlc_group_norm_params p = ggmlc_group_norm_params_of(node);
    struct vk_pc_group_norm pc = {.n_groups = (uint32_t)p.n_groups, .eps = p.eps};
    VK_PUSH_SHAPE(pc, 0, a);
    VK_PUSH_SHAPE(pc, , node);
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, a, false, 4, VK_PUSH_WORD(vk_pc_group_norm, off_a));
    vk_dispatch_bind(&ds, node, true, 4, VK_PUSH_WORD(vk_pc_group_norm, off_d));
    ds.groups[0] = pc.n_groups;
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
    const struct ggmlc_soft_max_params sp = ggmlc_soft_max_params_of(node);
    const float scale = sp.scale, max_bias = sp.max_bias;
    const uint32_t n_head = (uint32_t)a->ne[2];
    const uint32_t n_head_log2 = n_head ? 1u << (uint32_t)floor(log2((double)n_head)) : 1;
    struct vk_pc_softmax pc = {
        .ne11 = 1,
        .ne12 = 1,
        .ne13 = 1, /* without a mask */
        .nb1 = (uint32_t)(node->nb[1] / 4),
        .nb2 = (uint32_t)(node->nb[2] / 4),
        .nb3 = (uint32_t)(node->nb[3] / 4),
        .has_mask = m != NULL,
        .scale = scale,
        .max_bias = max_bias,
        .m0 = powf(2.0f, -max_bias / (float)n_head_log2),
        .m1 = powf(2.0f, -max_bias / 2.0f / (float)n_head_log2),
        .n_head_log2 = n_head_log2,
        .has_sinks = sinks != NULL,
    };
    VK_PUSH_SHAPE(pc, 0, a);
    if (m) {
        const struct vk_shape sm = vk_shape_of(m);
        pc.ne11 = sm.ne[1], pc.ne12 = sm.ne[2], pc.ne13 = sm.ne[3];
        pc.nb11 = sm.nb[1], pc.nb12 = sm.nb[2], pc.nb13 = sm.nb[3];
    }
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, a, false, 4, VK_PUSH_WORD(vk_pc_softmax, off_a));
    vk_dispatch_bind(&ds, m ? m : a, false, m ? ggml_type_size(m->type) : 4,
                     VK_PUSH_WORD(vk_pc_softmax, off_m));
    vk_dispatch_bind(&ds, node, true, 4, VK_PUSH_WORD(vk_pc_softmax, off_d));
    /* a stands in, unread, without sinks */
    vk_dispatch_bind(&ds, sinks ? sinks : a, false, 4, VK_PUSH_WORD(vk_pc_softmax, off_s));
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
    const struct vk_shape sx = vk_shape_of(x), sd = vk_shape_of(node);
    struct vk_pc_rows_back pc = {
        .nx0 = sx.nb[0],
        .nx1 = sx.nb[1],
        .nx2 = sx.nb[2],
        .nx3 = sx.nb[3],
        .nd0 = sd.nb[0],
        .nd1 = sd.nb[1],
        .nd2 = sd.nb[2],
        .nd3 = sd.nb[3],
        .mode = node->op == GGML_OP_RMS_NORM_BACK,
        .param = ggmlc_op_param_f32(node, 0),
    };
    VK_PUSH_SHAPE(pc, , dy);
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, dy, false, 4, VK_PUSH_WORD(vk_pc_rows_back, off_dy));
    vk_dispatch_bind(&ds, x, false, 4, VK_PUSH_WORD(vk_pc_rows_back, off_x));
    vk_dispatch_bind(&ds, node, true, 4, VK_PUSH_WORD(vk_pc_rows_back, off_d));
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
