/*
 * ops-nn.c - constructors of the neural-network operators: normalisations,
 * softmax (and its gradient), silu_back, cross-entropy loss and the
 * optimizer steps.  Rope is in ops-rope.c, attention in ops-attn.c.
 *
 * Operand order follows ggml's implementation (which its header comments
 * do not always state): the `_back` ops take the upstream gradient first.
 */
#include "ggml-impl.h"

/* Shape strings of up to three operands for error messages. */
struct shape_strs {
    char a[GGMLC_SHAPE_STR], b[GGMLC_SHAPE_STR], c[GGMLC_SHAPE_STR];
};
#define SA(t) ggmlc__shape_str((t), strs.a)
#define SB(t) ggmlc__shape_str((t), strs.b)
#define SC(t) ggmlc__shape_str((t), strs.c)

/* A result of a's shape and type: a view of a when inplace, else a new tensor. */
static struct ggml_tensor *result_like(struct ggml_context *ctx, struct ggml_tensor *a, bool inplace) {
    return inplace ? ggmlc__view_node(ctx, a) : ggml_dup_tensor(ctx, a);
}

static bool is_f32(const struct ggml_tensor *t) { return t->type == GGML_TYPE_F32; }

/* ------------------------------------------------------ normalisations */

static struct ggml_tensor *row_norm_impl(const char *func, struct ggml_context *ctx, struct ggml_tensor *a, float eps,
                                         enum ggml_op op, bool inplace) {
    GGMLC_CHECK_SRC(a);
    struct shape_strs strs;
    if (!ggmlc__is_float_type(a->type)) return ggmlc__op_fail(GGMLC_ERR_TYPE, func, "%s is not a float tensor", SA(a));
    if (!(eps >= 0.0f)) return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, func, "eps = %g must be >= 0", (double)eps);
    struct ggml_tensor *r = result_like(ctx, a, inplace);
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, op, a, NULL, NULL);
    ggmlc__set_op_params_f32(r, 0, eps);
    return r;
}

struct ggml_tensor *ggml_norm(struct ggml_context *ctx, struct ggml_tensor *a, float eps) {
    return row_norm_impl(__func__, ctx, a, eps, GGML_OP_NORM, false);
}
struct ggml_tensor *ggml_norm_inplace(struct ggml_context *ctx, struct ggml_tensor *a, float eps) {
    return row_norm_impl(__func__, ctx, a, eps, GGML_OP_NORM, true);
}
struct ggml_tensor *ggml_rms_norm(struct ggml_context *ctx, struct ggml_tensor *a, float eps) {
    return row_norm_impl(__func__, ctx, a, eps, GGML_OP_RMS_NORM, false);
}
struct ggml_tensor *ggml_rms_norm_inplace(struct ggml_context *ctx, struct ggml_tensor *a, float eps) {
    return row_norm_impl(__func__, ctx, a, eps, GGML_OP_RMS_NORM, true);
}
struct ggml_tensor *ggml_l2_norm(struct ggml_context *ctx, struct ggml_tensor *a, float eps) {
    return row_norm_impl(__func__, ctx, a, eps, GGML_OP_L2_NORM, false);
}
struct ggml_tensor *ggml_l2_norm_inplace(struct ggml_context *ctx, struct ggml_tensor *a, float eps) {
    return row_norm_impl(__func__, ctx, a, eps, GGML_OP_L2_NORM, true);
}

static struct ggml_tensor *group_norm_impl(const char *func, struct ggml_context *ctx, struct ggml_tensor *a, int n_groups,
                                           float eps, bool inplace) {
    GGMLC_CHECK_SRC(a);
    struct shape_strs strs;
    if (n_groups < 1 || n_groups > a->ne[2]) {
        return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, func, "n_groups = %d must be in 1..ne[2] of %s", n_groups, SA(a));
    }
    struct ggml_tensor *r = row_norm_impl(func, ctx, a, eps, GGML_OP_GROUP_NORM, inplace);
    GGMLC_CHECK_SRC(r);
    ggmlc__set_op_params_i32(r, 0, n_groups);
    ggmlc__set_op_params_f32(r, 1, eps);
    return r;
}

struct ggml_tensor *ggml_group_norm(struct ggml_context *ctx, struct ggml_tensor *a, int n_groups, float eps) {
    return group_norm_impl(__func__, ctx, a, n_groups, eps, false);
}
struct ggml_tensor *ggml_group_norm_inplace(struct ggml_context *ctx, struct ggml_tensor *a, int n_groups, float eps) {
    return group_norm_impl(__func__, ctx, a, n_groups, eps, true);
}

/* Two same-shaped float operands (upstream gradient and forward input) of a `_back` op. */
static bool check_grad_pair(const char *func, const struct ggml_tensor *dy, const struct ggml_tensor *x) {
    struct shape_strs strs;
    if (!ggml_are_same_shape(dy, x)) {
        ggmlc__op_fail(GGMLC_ERR_SHAPE, func, "gradient %s and input %s differ in shape", SA(dy), SB(x));
        return false;
    }
    if (!ggmlc__is_float_type(dy->type) || !ggmlc__is_float_type(x->type)) {
        ggmlc__op_fail(GGMLC_ERR_TYPE, func, "operands %s and %s must be float tensors", SA(dy), SB(x));
        return false;
    }
    return true;
}

/* a = dy (gradient of the output), b = x (input of the forward rms_norm), as ggml computes it. */
struct ggml_tensor *ggml_rms_norm_back(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, float eps) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    if (!check_grad_pair(__func__, a, b)) return NULL;
    struct ggml_tensor *r = ggml_new_tensor(ctx, GGML_TYPE_F32, GGML_MAX_DIMS, a->ne);
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, GGML_OP_RMS_NORM_BACK, a, b, NULL);
    ggmlc__set_op_params_f32(r, 0, eps);
    return r;
}

/* a = dy, b = x (ggml's operand order). */
struct ggml_tensor *ggml_silu_back(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    if (!check_grad_pair(__func__, a, b)) return NULL;
    struct ggml_tensor *r = ggml_new_tensor(ctx, GGML_TYPE_F32, GGML_MAX_DIMS, a->ne);
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, GGML_OP_SILU_BACK, a, b, NULL);
    return r;
}

/* ------------------------------------------------------------- softmax */

static bool check_softmax_mask(const char *func, const struct ggml_tensor *a, const struct ggml_tensor *mask) {
    struct shape_strs strs;
    if (mask->type != GGML_TYPE_F32 && mask->type != GGML_TYPE_F16) {
        ggmlc__op_fail(GGMLC_ERR_TYPE, func, "mask %s must be f32 or f16", SA(mask));
        return false;
    }
    if (mask->ne[0] != a->ne[0] || mask->ne[1] < a->ne[1] || mask->ne[2] == 0 || mask->ne[3] == 0 ||
        a->ne[2] % mask->ne[2] != 0 || a->ne[3] % mask->ne[3] != 0) {
        ggmlc__op_fail(GGMLC_ERR_SHAPE, func,
                      "mask %s does not fit logits %s (need ne0 equal, ne1 >= %lld, ne2 and ne3 dividing the logits')",
                      SA(mask), SB(a), (long long)a->ne[1]);
        return false;
    }
    return true;
}

static struct ggml_tensor *soft_max_impl(const char *func, struct ggml_context *ctx, struct ggml_tensor *a,
                                         struct ggml_tensor *mask, float scale, float max_bias, bool inplace) {
    GGMLC_CHECK_SRC(a);
    struct shape_strs strs;
    if (!ggmlc__is_float_type(a->type)) return ggmlc__op_fail(GGMLC_ERR_TYPE, func, "logits %s are not a float tensor", SA(a));
    if (mask && !check_softmax_mask(func, a, mask)) return NULL;
    if (!(max_bias >= 0.0f)) return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, func, "max_bias = %g must be >= 0", (double)max_bias);
    struct ggml_tensor *r = result_like(ctx, a, inplace);
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, GGML_OP_SOFT_MAX, a, mask, NULL);
    ggmlc__set_op_params_f32(r, 0, scale);
    ggmlc__set_op_params_f32(r, 1, max_bias);
    return r;
}

struct ggml_tensor *ggml_soft_max(struct ggml_context *ctx, struct ggml_tensor *a) {
    return soft_max_impl(__func__, ctx, a, NULL, 1.0f, 0.0f, false);
}
struct ggml_tensor *ggml_soft_max_inplace(struct ggml_context *ctx, struct ggml_tensor *a) {
    return soft_max_impl(__func__, ctx, a, NULL, 1.0f, 0.0f, true);
}
struct ggml_tensor *ggml_soft_max_ext(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *mask, float scale,
                                      float max_bias) {
    return soft_max_impl(__func__, ctx, a, mask, scale, max_bias, false);
}
struct ggml_tensor *ggml_soft_max_ext_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *mask,
                                              float scale, float max_bias) {
    return soft_max_impl(__func__, ctx, a, mask, scale, max_bias, true);
}

void ggml_soft_max_add_sinks(struct ggml_tensor *a, struct ggml_tensor *sinks) {
    struct shape_strs strs;
    if (!a || a->op != GGML_OP_SOFT_MAX) {
        ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "%s is not a soft_max node", a ? SA(a) : "NULL");
        return;
    }
    if (!sinks) {
        a->src[2] = NULL;
        return;
    }
    if (!is_f32(sinks) || ggml_nelements(sinks) != a->src[0]->ne[2]) {
        ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "sinks %s must be f32 with one value per head (ne[2] of %s)", SA(sinks),
                      SB(a->src[0]));
        return;
    }
    a->src[2] = sinks;
}

static struct ggml_tensor *soft_max_back_impl(const char *func, struct ggml_context *ctx, struct ggml_tensor *a,
                                              struct ggml_tensor *b, float scale, float max_bias, bool inplace) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    if (!check_grad_pair(func, a, b)) return NULL;
    if (!(max_bias >= 0.0f)) return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, func, "max_bias = %g must be >= 0", (double)max_bias);
    struct ggml_tensor *r = result_like(ctx, a, inplace);
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, GGML_OP_SOFT_MAX_BACK, a, b, NULL);
    ggmlc__set_op_params_f32(r, 0, scale);
    ggmlc__set_op_params_f32(r, 1, max_bias);
    return r;
}

struct ggml_tensor *ggml_soft_max_ext_back(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, float scale,
                                           float max_bias) {
    return soft_max_back_impl(__func__, ctx, a, b, scale, max_bias, false);
}
struct ggml_tensor *ggml_soft_max_ext_back_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
                                                   float scale, float max_bias) {
    return soft_max_back_impl(__func__, ctx, a, b, scale, max_bias, true);
}

/* ------------------------------------------------------------- losses */

struct ggml_tensor *ggml_cross_entropy_loss(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    struct shape_strs strs;
    if (!ggml_are_same_shape(a, b)) {
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "logits %s and labels %s differ in shape", SA(a), SB(b));
    }
    if (!is_f32(a) || !is_f32(b)) return ggmlc__op_fail(GGMLC_ERR_TYPE, __func__, "logits %s and labels %s must be f32", SA(a), SB(b));
    struct ggml_tensor *r = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1);
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, GGML_OP_CROSS_ENTROPY_LOSS, a, b, NULL);
    return r;
}

/* ggml computes with (grad, logits, labels); older ggml and this project's header used
 * (logits, labels, grad).  The scalar operand tells them apart, so both orders work. */
struct ggml_tensor *ggml_cross_entropy_loss_back(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
                                                 struct ggml_tensor *c) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    GGMLC_CHECK_SRC(c);
    struct shape_strs strs;
    struct ggml_tensor *grad = a, *logits = b, *labels = c;
    if (!(ggml_is_scalar(a) && ggml_are_same_shape(b, c)) && ggml_is_scalar(c) && ggml_are_same_shape(a, b)) {
        grad = c, logits = a, labels = b;
    }
    if (!ggml_is_scalar(grad) || !ggml_are_same_shape(logits, labels)) {
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__,
                             "need a scalar gradient and same-shaped logits and labels, got %s, %s, %s", SA(a), SB(b), SC(c));
    }
    if (!is_f32(grad) || !is_f32(logits) || !is_f32(labels)) {
        return ggmlc__op_fail(GGMLC_ERR_TYPE, __func__, "operands %s, %s, %s must be f32", SA(a), SB(b), SC(c));
    }
    struct ggml_tensor *r = ggml_dup_tensor(ctx, logits);
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, GGML_OP_CROSS_ENTROPY_LOSS_BACK, grad, logits, labels);
    return r;
}

/* ---------------------------------------------------------- optimizers */

static bool check_param_grad(const char *func, const struct ggml_tensor *a, const struct ggml_tensor *grad) {
    struct shape_strs strs;
    if (!ggml_are_same_shape(a, grad)) {
        ggmlc__op_fail(GGMLC_ERR_SHAPE, func, "parameter %s and operand %s differ in shape", SA(a), SB(grad));
        return false;
    }
    if (!is_f32(a) || !is_f32(grad)) {
        ggmlc__op_fail(GGMLC_ERR_TYPE, func, "parameter %s and operand %s must be f32", SA(a), SB(grad));
        return false;
    }
    return true;
}

static bool check_hyperparams(const char *func, const struct ggml_tensor *p, int64_t n) {
    struct shape_strs strs;
    if (!is_f32(p) || ggml_nelements(p) != n || !ggml_is_contiguous(p)) {
        ggmlc__op_fail(GGMLC_ERR_SHAPE, func, "hyperparameters %s must be a contiguous f32 tensor of %lld values", SA(p),
                      (long long)n);
        return false;
    }
    return true;
}

struct ggml_tensor *ggml_opt_step_adamw(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *grad,
                                        struct ggml_tensor *m, struct ggml_tensor *v, struct ggml_tensor *adamw_params) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(grad);
    GGMLC_CHECK_SRC(m);
    GGMLC_CHECK_SRC(v);
    GGMLC_CHECK_SRC(adamw_params);
    if (!check_param_grad(__func__, a, grad) || !check_param_grad(__func__, a, m) || !check_param_grad(__func__, a, v)) {
        return NULL;
    }
    if (!check_hyperparams(__func__, adamw_params, 7)) return NULL;
    struct ggml_tensor *r = ggmlc__view_node(ctx, a);
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, GGML_OP_OPT_STEP_ADAMW, a, grad, m);
    r->src[3] = v;
    r->src[4] = adamw_params;
    return r;
}

struct ggml_tensor *ggml_opt_step_sgd(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *grad,
                                      struct ggml_tensor *sgd_params) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(grad);
    GGMLC_CHECK_SRC(sgd_params);
    if (!check_param_grad(__func__, a, grad) || !check_hyperparams(__func__, sgd_params, 2)) return NULL;
    struct ggml_tensor *r = ggmlc__view_node(ctx, a);
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, GGML_OP_OPT_STEP_SGD, a, grad, sgd_params);
    return r;
}
