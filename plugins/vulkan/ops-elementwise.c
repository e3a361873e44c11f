/*
 * ops-elementwise.c - binary ops with broadcasting (add, sub, mul, div,
 * add1), unary functions, scale/clamp/leaky_relu/fill, copies between
 * F32/F16/BF16 (cpy, cont, dup), repeat and repeat_back, roll,
 * pad_reflect_1d, diag_mask_inf/zero, tri, diag, arange,
 * the gated linear units, silu_back, unary_back (the gradient of every
 * activation), add_id, acc and set.
 */
#include <math.h>

#include "vk-impl.h"
#include "op-codes.h"

/* ------------------------------------------------------------- binary */

/* Elements per invocation of binary.comp and glu.comp (EPT in elem-walk.glsl) */
#define VK_ELEMS_PER_INVOCATION 4

static bool binary_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    return vk_float_code(a->type) >= 0 && (b->type == GGML_TYPE_F32 || b->type == GGML_TYPE_F16) && node->type == a->type &&
           vk_type_ok(d, a->type) && vk_type_ok(d, b->type) && ggml_can_repeat(b, a) && ggml_are_same_shape(a, node) &&
           vk_shape_fits(a) && vk_shape_fits(b) && vk_shape_fits(node);
}

/* silu_back(dy, x): same shapes, f32 */
static bool silu_back_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    return a->type == GGML_TYPE_F32 && b->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 && ggml_are_same_shape(a, b) &&
           ggml_are_same_shape(a, node) && vk_shape_fits(a) && vk_shape_fits(b) && vk_shape_fits(node);
}

static enum ggml_status binary_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    uint32_t op;
    switch (node->op) {
    case GGML_OP_SUB: op = VK_BIN_SUB; break;
    case GGML_OP_MUL: op = VK_BIN_MUL; break;
    case GGML_OP_DIV: op = VK_BIN_DIV; break;
    case GGML_OP_SILU_BACK: op = VK_BIN_SILU_BACK; break;
    default: op = VK_BIN_ADD; break; /* ADD, ADD1 */
    }
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("binary_%s_%s", ggml_type_name(a->type), ggml_type_name(b->type)));
    struct vk_pc_binary pc = {.op = op};
    VK_PUSH_SHAPE(pc, 0, a);
    VK_PUSH_SHAPE(pc, 1, b);
    VK_PUSH_SHAPE(pc, , node);
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, a, false, ggml_type_size(a->type), VK_PUSH_WORD(vk_pc_binary, off_a));
    vk_dispatch_bind(&ds, b, false, ggml_type_size(b->type), VK_PUSH_WORD(vk_pc_binary, off_b));
    vk_dispatch_bind(&ds, node, true, ggml_type_size(node->type),
                     VK_PUSH_WORD(vk_pc_binary, off_d));
    vk_groups_1d(rec->d, (ggml_nelements(node) + VK_ELEMS_PER_INVOCATION - 1) / VK_ELEMS_PER_INVOCATION, 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

/* -------------------------------------------------------------- unary */

/* The shader code of an activation (shared by unary.comp and unary-back.comp), or -1. */
static int unary_op_code(enum ggml_unary_op op) {
    switch (op) {
    case GGML_UNARY_OP_ABS: return VK_UN_ABS;
    case GGML_UNARY_OP_SGN: return VK_UN_SGN;
    case GGML_UNARY_OP_NEG: return VK_UN_NEG;
    case GGML_UNARY_OP_STEP: return VK_UN_STEP;
    case GGML_UNARY_OP_TANH: return VK_UN_TANH;
    case GGML_UNARY_OP_ELU: return VK_UN_ELU;
    case GGML_UNARY_OP_RELU: return VK_UN_RELU;
    case GGML_UNARY_OP_SIGMOID: return VK_UN_SIGMOID;
    case GGML_UNARY_OP_GELU: return VK_UN_GELU;
    case GGML_UNARY_OP_GELU_QUICK: return VK_UN_GELU_QUICK;
    case GGML_UNARY_OP_SILU: return VK_UN_SILU;
    case GGML_UNARY_OP_HARDSWISH: return VK_UN_HARDSWISH;
    case GGML_UNARY_OP_HARDSIGMOID: return VK_UN_HARDSIGMOID;
    case GGML_UNARY_OP_EXP: return VK_UN_EXP;
    case GGML_UNARY_OP_EXPM1: return VK_UN_EXPM1;
    case GGML_UNARY_OP_SOFTPLUS: return VK_UN_SOFTPLUS;
    case GGML_UNARY_OP_GELU_ERF: return VK_UN_GELU_ERF;
    case GGML_UNARY_OP_FLOOR: return VK_UN_FLOOR;
    case GGML_UNARY_OP_CEIL: return VK_UN_CEIL;
    case GGML_UNARY_OP_ROUND: return VK_UN_ROUND;
    case GGML_UNARY_OP_TRUNC: return VK_UN_TRUNC;
    case GGML_UNARY_OP_XIELU: return VK_UN_XIELU;
    default: return -1; /* future ones: CPU */
    }
}

static int unary_code(const struct ggml_tensor *node) {
    switch (node->op) {
    case GGML_OP_SQR: return VK_UN_SQR;
    case GGML_OP_SQRT: return VK_UN_SQRT;
    case GGML_OP_LOG: return VK_UN_LOG;
    case GGML_OP_SIN: return VK_UN_SIN;
    case GGML_OP_COS: return VK_UN_COS;
    case GGML_OP_SCALE: return VK_UN_SCALE;
    case GGML_OP_CLAMP: return VK_UN_CLAMP;
    case GGML_OP_LEAKY_RELU: return VK_UN_LEAKY_RELU;
    case GGML_OP_FILL: return VK_UN_FILL;
    case GGML_OP_DIAG_MASK_INF: case GGML_OP_DIAG_MASK_ZERO: return VK_UN_DIAG_MASK;
    case GGML_OP_TRI: return VK_UN_TRI;
    case GGML_OP_DIAG: return VK_UN_DIAG;
    case GGML_OP_ARANGE: return VK_UN_ARANGE;
    case GGML_OP_CPY: case GGML_OP_CONT: case GGML_OP_DUP: case GGML_OP_REPEAT: case GGML_OP_ROLL: case GGML_OP_PAD_REFLECT_1D:
        return VK_UN_COPY;
    case GGML_OP_UNARY: return unary_op_code(ggml_get_unary_op(node));
    default: return -1;
    }
}

/* The source read by a unary-shaped node (FILL and ARANGE read nothing but bind their own output). */
static const struct ggml_tensor *unary_src(const struct ggml_tensor *node) {
    return node->op == GGML_OP_FILL || node->op == GGML_OP_ARANGE ? node : node->src[0];
}

/* Where d's elements read a (unary.comp's modes). */
static uint32_t unary_mode(const struct ggml_tensor *node) {
    switch (node->op) {
    case GGML_OP_REPEAT: case GGML_OP_DIAG: return VK_UN_MODE_REPEAT;
    case GGML_OP_ROLL: return VK_UN_MODE_ROLL;
    case GGML_OP_PAD_REFLECT_1D: return VK_UN_MODE_REFLECT;
    default: return VK_UN_MODE_FLAT;
    }
}

/* Integer data a copy, dup or repeat only moves (unary.comp's MOVE variants): 32- or 16-bit values. */
static bool unary_moves(const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    const bool copy = node->op == GGML_OP_CPY || node->op == GGML_OP_CONT || node->op == GGML_OP_DUP || node->op == GGML_OP_REPEAT;
    return copy && a && a->type == node->type && (a->type == GGML_TYPE_I32 || a->type == GGML_TYPE_I16);
}

static bool unary_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = unary_src(node);
    if (unary_moves(node)) {
        const bool shape_ok = node->op == GGML_OP_REPEAT ? ggml_can_repeat(a, node) : ggml_nelements(a) == ggml_nelements(node);
        return shape_ok && (a->type == GGML_TYPE_I32 || d->caps.storage16) && vk_shape_fits(a) && vk_shape_fits(node);
    }
    if (unary_code(node) < 0 || vk_float_code(a->type) < 0 || vk_float_code(node->type) < 0) return false;
    if (!vk_type_ok(d, a->type) || !vk_type_ok(d, node->type) || !vk_shape_fits(a) || !vk_shape_fits(node)) return false;
    switch (node->op) {
    case GGML_OP_CPY: case GGML_OP_CONT: case GGML_OP_DUP:
        return ggml_nelements(a) == ggml_nelements(node);
    case GGML_OP_REPEAT:
        return a->type == node->type && ggml_can_repeat(a, node);
    case GGML_OP_DIAG: /* a row per matrix, spread on the diagonal */
        return a->type == node->type && a->ne[1] == 1 && node->ne[0] == a->ne[0] && node->ne[1] == a->ne[0] &&
               node->ne[2] == a->ne[2] && node->ne[3] == a->ne[3];
    case GGML_OP_ARANGE:
        return node->type == GGML_TYPE_F32;
    case GGML_OP_PAD_REFLECT_1D: { /* p0, p1, each below ne0 (a reflection, not a wrap) */
        const struct ggmlc_pad_params p = ggmlc_pad_reflect_1d_params_of(node);
        const int32_t p0 = p.lp[0], p1 = p.rp[0];
        return a->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 && p0 >= 0 && p1 >= 0 && p0 < a->ne[0] && p1 < a->ne[0] &&
               node->ne[0] == a->ne[0] + p0 + p1 && node->ne[1] == a->ne[1] && node->ne[2] == a->ne[2] && node->ne[3] == a->ne[3];
    }
    default: /* same-shape functions keep the type (roll, tri too) */
        return a->type == node->type && ggml_are_same_shape(a, node);
    }
}

/* roll: the source offset of dimension i, the shift taken into [0, ne). */
static uint32_t roll_offset(const struct ggml_tensor *node, int i) {
    const int64_t n = node->ne[i], shift = ggmlc_roll_params_of(node).shift[i] % n;
    return (uint32_t)(shift < 0 ? shift + n : shift);
}

static enum ggml_status unary_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = unary_src(node);
    struct vk_dispatch ds;
    if (unary_moves(node)) vk_dispatch_init(&ds, vk_shader_find("unary_move%d", (int)(8 * ggml_type_size(a->type))));
    else vk_dispatch_init(&ds, vk_shader_find("unary_%s_%s", ggml_type_name(a->type), ggml_type_name(node->type)));
    struct vk_pc_unary pc = {.op = (uint32_t)unary_code(node), .mode = unary_mode(node)};
    VK_PUSH_SHAPE(pc, 0, a);
    VK_PUSH_SHAPE(pc, , node);
    switch (node->op) {
    case GGML_OP_SCALE: {
        const struct ggmlc_scale_params p = ggmlc_scale_params_of(node);
        pc.p0 = p.s, pc.p1 = p.b;
        break;
    }
    case GGML_OP_CLAMP: {
        const struct ggmlc_clamp_params p = ggmlc_clamp_params_of(node);
        pc.p0 = p.min, pc.p1 = p.max;
        break;
    }
    case GGML_OP_LEAKY_RELU:
    case GGML_OP_FILL: pc.p0 = ggmlc_op_param_f32(node, 0); break;
    case GGML_OP_UNARY: { /* xIELU's alpha_n, alpha_p, beta, eps */
        const struct ggmlc_unary_params p = ggmlc_unary_params_of(node);
        pc.p0 = p.p[0], pc.p1 = p.p[1], pc.p2 = p.p[2], pc.p3 = p.p[3];
        break;
    }
    case GGML_OP_TRI: /* the triangle type */ pc.n_past = ggmlc_op_param_i32(node, 0); break;
    case GGML_OP_ARANGE: { /* start, step */
        const struct ggmlc_arange_params p = ggmlc_arange_params_of(node);
        pc.p0 = p.start, pc.p2 = p.step;
        break;
    }
    case GGML_OP_ROLL: /* shifts as the source offset of each dimension, in [0, ne) */
        pc.shift0 = roll_offset(node, 0), pc.shift1 = roll_offset(node, 1);
        pc.shift2 = roll_offset(node, 2), pc.shift3 = roll_offset(node, 3);
        break;
    case GGML_OP_PAD_REFLECT_1D: /* left padding */
        pc.shift0 = (uint32_t)ggmlc_pad_reflect_1d_params_of(node).lp[0];
        break;
    case GGML_OP_DIAG_MASK_INF: case GGML_OP_DIAG_MASK_ZERO: /* masked value, then n_past */
        pc.p0 = node->op == GGML_OP_DIAG_MASK_INF ? -INFINITY : 0.0f;
        pc.n_past = ggmlc_op_param_i32(node, 0);
        break;
    default: break;
    }
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, a, a == node, ggml_type_size(a->type), VK_PUSH_WORD(vk_pc_unary, off_a));
    vk_dispatch_bind(&ds, node, true, ggml_type_size(node->type), VK_PUSH_WORD(vk_pc_unary, off_d));
    vk_groups_1d(rec->d, ggml_nelements(node), 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

/* cpy and friends: between float types here; into or out of block formats, or between block
 * tensors of one type, in ops-index.c. */
static bool copy_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    return unary_supports(d, node) || vk_cpy_quant_supports(d, node);
}

static enum ggml_status copy_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const bool blocks = ggml_is_quantized(node->type) || ggml_is_quantized(node->src[0]->type);
    return blocks ? vk_cpy_quant_record(rec, node) : unary_record(rec, node);
}

/* ---------------------------------------------------------------- glu */

static bool rows_unit_stride(const struct ggml_tensor *t) { return t->nb[0] == ggml_type_size(t->type); }

static bool glu_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    const int op = ggml_get_glu_op(node);
    if (op < 0 || op > GGML_GLU_OP_GEGLU_QUICK) return false;
    if ((a->type != GGML_TYPE_F32 && a->type != GGML_TYPE_F16) || node->type != a->type || !vk_type_ok(d, a->type)) return false;
    if (!rows_unit_stride(a) || !rows_unit_stride(node) || !vk_shape_fits(a) || !vk_shape_fits(node)) return false;
    if (b) return b->type == a->type && rows_unit_stride(b) && vk_shape_fits(b) && ggml_are_same_shape(a, b);
    return a->ne[0] / 2 == node->ne[0]; /* an odd row's last value is in neither half (ggml floors) */
}

/* Whether node's result is also quantized for the products that read it (shader glu_q8_f32: f32
 * rows of a multiple of 32 values, 4 a lane), its scratch in *q. */
static bool glu_q8(struct vk_rec *rec, const struct ggml_tensor *node, enum vk_shader_id shader, struct vk_q8_result *q) {
    return node->type == GGML_TYPE_F32 && node->ne[0] % 32 == 0 && vk_shader_present(shader) && vk_q8_result_plan(rec, node, q) &&
           vk_optional_pipeline(rec->d, shader, NULL, 0, VK_PATH_Q8_RESULT, "the products quantize their activations");
}

static enum ggml_status glu_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1] ? node->src[1] : node->src[0];
    const size_t ts = ggml_type_size(a->type);
    const struct ggmlc_glu_params glu = ggmlc_glu_params_of(node);
    struct vk_q8_result q;
    const enum vk_shader_id q8_shader = vk_shader_find("glu_q8_f32");
    const bool q8 = glu_q8(rec, node, q8_shader, &q);
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, q8 ? q8_shader : vk_shader_find("glu_%s", ggml_type_name(a->type)));
    const struct vk_shape sa = vk_shape_of(a), sb = vk_shape_of(b), sd = vk_shape_of(node);
    struct vk_pc_glu pc = {
        .nb01 = sa.nb[1],
        .nb02 = sa.nb[2],
        .nb03 = sa.nb[3],
        .nb11 = sb.nb[1],
        .nb12 = sb.nb[2],
        .nb13 = sb.nb[3],
        .ne0 = sd.ne[0],
        .ne1 = sd.ne[1],
        .ne2 = sd.ne[2],
        .ne3 = sd.ne[3],
        .nb1 = sd.nb[1],
        .nb2 = sd.nb[2],
        .nb3 = sd.nb[3],
        .op = (uint32_t)ggml_get_glu_op(node),
        .alpha = glu.alpha,
        .limit = glu.limit,
    };
    if (!node->src[1]) { /* halves of one row: x first unless swapped */
        if (glu.swapped != 0)
            pc.shift_a = (uint32_t)node->ne[0];
        else
            pc.shift_b = (uint32_t)node->ne[0];
    }
    if (q8) pc.off_q = 0, pc.off_s = (uint32_t)(q.scales_at / 8);
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, a, false, ts, VK_PUSH_WORD(vk_pc_glu, off_a));
    vk_dispatch_bind(&ds, b, false, ts, VK_PUSH_WORD(vk_pc_glu, off_b));
    vk_dispatch_bind(&ds, node, true, ts, VK_PUSH_WORD(vk_pc_glu, off_d));
    if (q8) vk_dispatch_bind_scratch(&ds, q.at, q.bytes, true);
    const uint32_t per_invocation = q8 ? 4 : VK_ELEMS_PER_INVOCATION;
    vk_groups_1d(rec->d, (ggml_nelements(node) + per_invocation - 1) / per_invocation, 256, ds.groups);
    const enum ggml_status st = vk_record_dispatch(rec, &ds);
    if (q8 && st == GGML_STATUS_SUCCESS) vk_q8_result_note(rec, &q);
    return st;
}

/* -------------------------------------------------------- repeat_back */

static bool repeat_back_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    return (a->type == GGML_TYPE_F32 || a->type == GGML_TYPE_F16) && node->type == a->type && vk_type_ok(d, a->type) &&
           ggml_can_repeat(node, a) && vk_shape_fits(a) && vk_shape_fits(node);
}

/* Whether repeat_back takes a workgroup per element of d (repeat-back.comp's WG_SUM): where
 * each element sums at least 256 repeats and there are no more elements than repeats each;
 * else an invocation per element, whose neighbours read neighbouring elements of a. */
static bool repeat_back_by_workgroup(const struct ggml_tensor *node) {
    const int64_t n = ggml_nelements(node), reps = n ? ggml_nelements(node->src[0]) / n : 0;
    return reps >= 256 && reps >= n;
}

static enum ggml_status repeat_back_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    const size_t ts = ggml_type_size(a->type);
    const bool by_workgroup = repeat_back_by_workgroup(node);
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("repeat_back_%s%s", by_workgroup ? "wg_" : "",
                                         ggml_type_name(a->type)));
    ds.spec[0] = 256;
    ds.n_spec = 1;
    struct vk_pc_repeat_back pc = {0};
    VK_PUSH_SHAPE(pc, 0, a);
    VK_PUSH_SHAPE(pc, , node);
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, a, false, ts, VK_PUSH_WORD(vk_pc_repeat_back, off_a));
    vk_dispatch_bind(&ds, node, true, ts, VK_PUSH_WORD(vk_pc_repeat_back, off_d));
    vk_groups_1d(rec->d, (uint64_t)ggml_nelements(node), by_workgroup ? 1 : 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

/* --------------------------------------------------------- unary_back */

/* unary_back(x, dy): f32 of one shape (the constructor's contract), any strides. */
static bool unary_back_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *x = node->src[0], *dy = node->src[1];
    const int32_t op = ggmlc_unary_params_of(node).op;
    return op >= 0 && op < GGML_UNARY_OP_COUNT && unary_op_code((enum ggml_unary_op)op) >= 0 && x->type == GGML_TYPE_F32 &&
           dy->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 && ggml_are_same_shape(x, dy) && ggml_are_same_shape(x, node) &&
           vk_shape_fits(x) && vk_shape_fits(dy) && vk_shape_fits(node);
}

static enum ggml_status unary_back_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *x = node->src[0], *dy = node->src[1];
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("unary_back_f32"));
    const struct vk_shape sx = vk_shape_of(x), sy = vk_shape_of(dy), sd = vk_shape_of(node);
    const struct ggmlc_unary_params u = ggmlc_unary_params_of(node);
    const struct vk_pc_unary_back pc = {
        .ne0 = sd.ne[0],
        .ne1 = sd.ne[1],
        .ne2 = sd.ne[2],
        .ne3 = sd.ne[3],
        .nx0 = sx.nb[0],
        .nx1 = sx.nb[1],
        .nx2 = sx.nb[2],
        .nx3 = sx.nb[3],
        .ny0 = sy.nb[0],
        .ny1 = sy.nb[1],
        .ny2 = sy.nb[2],
        .ny3 = sy.nb[3],
        .nd0 = sd.nb[0],
        .nd1 = sd.nb[1],
        .nd2 = sd.nb[2],
        .nd3 = sd.nb[3],
        .op = (uint32_t)unary_op_code((enum ggml_unary_op)u.op),
        .p0 = u.p[0],
        .p1 = u.p[1],
        .p2 = u.p[2],
        .p3 = u.p[3],
    };
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, x, false, 4, VK_PUSH_WORD(vk_pc_unary_back, off_x));
    vk_dispatch_bind(&ds, dy, false, 4, VK_PUSH_WORD(vk_pc_unary_back, off_dy));
    vk_dispatch_bind(&ds, node, true, 4, VK_PUSH_WORD(vk_pc_unary_back, off_d));
    vk_groups_1d(rec->d, ggml_nelements(node), 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

/* ------------------------------------------------------------- add_id */

/* a [E, n_used, T] + b [E, n_expert] rows chosen by ids [n_used, T] (I32); f32. */
static bool add_id_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1], *ids = node->src[2];
    return a->type == GGML_TYPE_F32 && b->type == GGML_TYPE_F32 && ids->type == GGML_TYPE_I32 && node->type == GGML_TYPE_F32 &&
           ggml_are_same_shape(a, node) && a->ne[3] == 1 && b->ne[0] == a->ne[0] && ids->ne[0] == a->ne[1] &&
           ids->ne[1] == a->ne[2] && vk_shape_fits(a) && vk_shape_fits(b) && vk_shape_fits(ids) && vk_shape_fits(node);
}

static enum ggml_status add_id_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1], *ids = node->src[2];
    struct vk_dispatch ds;
    vk_dispatch_init(&ds, vk_shader_find("add_id_f32"));
    const struct vk_shape sa = vk_shape_of(a), sb = vk_shape_of(b), si = vk_shape_of(ids),
                          sd = vk_shape_of(node);
    const struct vk_pc_add_id pc = {
        .ne0 = sd.ne[0],
        .ne1 = sd.ne[1],
        .ne2 = sd.ne[2],
        .na0 = sa.nb[0],
        .na1 = sa.nb[1],
        .na2 = sa.nb[2],
        .nb0 = sb.nb[0],
        .nb1 = sb.nb[1],
        .n_rows_b = sb.ne[1],
        .ni0 = si.nb[0],
        .ni1 = si.nb[1],
        .nd0 = sd.nb[0],
        .nd1 = sd.nb[1],
        .nd2 = sd.nb[2],
    };
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, a, false, 4, VK_PUSH_WORD(vk_pc_add_id, off_a));
    vk_dispatch_bind(&ds, b, false, 4, VK_PUSH_WORD(vk_pc_add_id, off_b));
    vk_dispatch_bind(&ds, ids, false, 4, VK_PUSH_WORD(vk_pc_add_id, off_i));
    vk_dispatch_bind(&ds, node, true, 4, VK_PUSH_WORD(vk_pc_add_id, off_d));
    if (vk_dispatch_bind_check(rec, &ds, node) < 0) return GGML_STATUS_FAILED;
    vk_groups_1d(rec->d, ggml_nelements(node), 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

/* ---------------------------------------------------------- acc, set */

/* The view's byte strides nb1, nb2, nb3 and byte offset, in words. */
static void acc_view(const struct ggml_tensor *node, uint32_t v[4]) {
    const struct ggmlc_set_params p = ggmlc_set_params_of(node);
    const size_t bytes[4] = {p.nb1, p.nb2, p.nb3, p.offset};
    for (int i = 0; i < 4; i++) v[i] = (uint32_t)bytes[i] / 4;
}

/* Whether the view's strides and offset are whole words (a negative slot reads above 2 GiB). */
static bool acc_view_ok(const struct ggml_tensor *node) {
    const struct ggmlc_set_params p = ggmlc_set_params_of(node);
    const size_t bytes[4] = {p.nb1, p.nb2, p.nb3, p.offset};
    for (int i = 0; i < 4; i++)
        if (bytes[i] > (size_t)INT32_MAX || bytes[i] % 4 != 0) return false;
    return true;
}

/* a, b f32, a contiguous (the constructor's contract); the view's cells must not overlap, or
 * the order of the updates would matter. */
static bool acc_supports(const struct vk_device *d, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    const enum ggml_type t = node->op == GGML_OP_SET && a->type == GGML_TYPE_I32 ? GGML_TYPE_I32 : GGML_TYPE_F32; /* set moves i32 */
    if (a->type != t || b->type != t || node->type != t || !ggml_is_contiguous(a) ||
        !ggml_is_contiguous(node) || !ggml_are_same_shape(a, node) || !vk_shape_fits(a) || !vk_shape_fits(b))
        return false;
    if (!acc_view_ok(node)) return false;
    uint32_t v[4];
    acc_view(node, v);
    const uint64_t span1 = (uint64_t)b->ne[0], span2 = span1 + (uint64_t)v[0] * (uint64_t)(b->ne[1] - 1);
    const uint64_t span3 = span2 + (uint64_t)v[1] * (uint64_t)(b->ne[2] - 1);
    return (b->ne[1] == 1 || v[0] >= span1) && (b->ne[2] == 1 || v[1] >= span2) && (b->ne[3] == 1 || v[2] >= span3);
}

static enum ggml_status acc_record(struct vk_rec *rec, const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    struct vk_dispatch ds;
    const bool ints = a->type == GGML_TYPE_I32;
    if (node->data != a->data || vk_tensor_buffer(rec->d, node) != vk_tensor_buffer(rec->d, a)) { /* not in place: a first */
        vk_dispatch_init(&ds, vk_shader_find(ints ? "unary_move32" : "unary_f32_f32"));
        struct vk_pc_unary pc = {.op = VK_UN_COPY, .mode = VK_UN_MODE_FLAT};
        VK_PUSH_SHAPE(pc, 0, a);
        VK_PUSH_SHAPE(pc, , node);
        vk_dispatch_push(&ds, pc);
        vk_dispatch_bind(&ds, a, false, 4, VK_PUSH_WORD(vk_pc_unary, off_a));
        vk_dispatch_bind(&ds, node, true, 4, VK_PUSH_WORD(vk_pc_unary, off_d));
        vk_groups_1d(rec->d, ggml_nelements(node), 256, ds.groups);
        const enum ggml_status s = vk_record_dispatch(rec, &ds);
        if (s != GGML_STATUS_SUCCESS) return s;
    }
    vk_dispatch_init(&ds, vk_shader_find(ints ? "set_i32" : "acc_f32"));
    uint32_t v[4];
    acc_view(node, v);
    struct vk_pc_acc pc = {
        .v1 = v[0], .v2 = v[1], .v3 = v[2], .off_view = v[3], .assign = node->op == GGML_OP_SET};
    VK_PUSH_SHAPE(pc, , b);
    vk_dispatch_push(&ds, pc);
    vk_dispatch_bind(&ds, b, false, 4, VK_PUSH_WORD(vk_pc_acc, off_b));
    vk_dispatch_bind(&ds, node, true, 4, VK_PUSH_WORD(vk_pc_acc, off_d));
    vk_groups_1d(rec->d, ggml_nelements(b), 256, ds.groups);
    return vk_record_dispatch(rec, &ds);
}

void vk_ops_elementwise_register(struct vk_op_kernel *t) {
    t[GGML_OP_ACC] = (struct vk_op_kernel){acc_supports, acc_record};
    t[GGML_OP_SET] = (struct vk_op_kernel){acc_supports, acc_record};
    t[GGML_OP_UNARY_BACK] = (struct vk_op_kernel){unary_back_supports, unary_back_record};
    t[GGML_OP_ADD_ID] = (struct vk_op_kernel){add_id_supports, add_id_record};
    t[GGML_OP_REPEAT_BACK] = (struct vk_op_kernel){repeat_back_supports, repeat_back_record};
    static const enum ggml_op binary[] = {GGML_OP_ADD, GGML_OP_ADD1, GGML_OP_SUB, GGML_OP_MUL, GGML_OP_DIV};
    static const enum ggml_op unary[] = {GGML_OP_UNARY, GGML_OP_SQR, GGML_OP_SQRT, GGML_OP_LOG, GGML_OP_SIN, GGML_OP_COS,
                                         GGML_OP_SCALE, GGML_OP_CLAMP, GGML_OP_LEAKY_RELU, GGML_OP_FILL, GGML_OP_CPY,
                                         GGML_OP_CONT, GGML_OP_DUP, GGML_OP_REPEAT, GGML_OP_DIAG_MASK_INF, GGML_OP_DIAG_MASK_ZERO,
                                         GGML_OP_TRI, GGML_OP_DIAG, GGML_OP_ARANGE, GGML_OP_ROLL, GGML_OP_PAD_REFLECT_1D};
    for (size_t i = 0; i < sizeof binary / sizeof *binary; i++) t[binary[i]] = (struct vk_op_kernel){binary_supports, binary_record};
    for (size_t i = 0; i < sizeof unary / sizeof *unary; i++) t[unary[i]] = (struct vk_op_kernel){unary_supports, unary_record};
    static const enum ggml_op copies[] = {GGML_OP_CPY, GGML_OP_CONT, GGML_OP_DUP}; /* the unary entries, widened */
    for (size_t i = 0; i < sizeof copies / sizeof *copies; i++) t[copies[i]] = (struct vk_op_kernel){copy_supports, copy_record};
    t[GGML_OP_GLU] = (struct vk_op_kernel){glu_supports, glu_record};
    t[GGML_OP_SILU_BACK] = (struct vk_op_kernel){silu_back_supports, binary_record};
}
