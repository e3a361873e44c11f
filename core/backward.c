/*
 * backward.c - reverse-mode differentiation of graphs (ggml_build_backward_expand),
 * gradient reset, and the UNARY_BACK operator the rules use.
 *
 * Gradients follow ggml's semantics: a parameter's gradient is accumulated
 * into an accumulator tensor (created here unless the caller supplies one
 * in grad_accs), so that repeated evaluations of the graph add up until
 * ggml_graph_reset zeroes them; the loss's accumulator holds the seed 1.
 */
#include <stdlib.h>

#include "backend-impl.h"
#include "backward.h"

bool ggmlc__bw_needs_grad(const struct bw_state *s, const struct ggml_tensor *t) {
    if (!t) return false;
    const size_t slot = ggmlc__hash_find(&s->graph->visited_hash_set, t);
    return slot != GGML_HASHSET_FULL && ggmlc__hash_contains(&s->graph->visited_hash_set, t) && s->needed[slot];
}

/* Bring a contribution to the shape of src: sum over broadcast dimensions, or reshape. */
static struct ggml_tensor *fit_to(struct ggml_context *ctx, struct ggml_tensor *src, struct ggml_tensor *c) {
    if (ggml_are_same_shape(src, c)) return c;
    if (ggml_can_repeat(src, c)) return ggml_repeat_back(ctx, c, src);
    if (ggml_nelements(src) == ggml_nelements(c)) {
        if (!ggml_is_contiguous(c)) c = ggml_cont(ctx, c);
        return ggml_reshape_4d(ctx, c, src->ne[0], src->ne[1], src->ne[2], src->ne[3]);
    }
    char s1[GGMLC_SHAPE_STR], s2[GGMLC_SHAPE_STR];
    return ggmlc__op_fail(GGMLC_ERR_INTERNAL, "ggml_build_backward_expand", "gradient %s does not fit tensor %s",
                         ggmlc__shape_str(c, s1), ggmlc__shape_str(src, s2));
}

void ggmlc__bw_add_grad(struct bw_state *s, struct ggml_tensor *src,
                        struct ggml_tensor *contribution) {
    if (!contribution || !ggmlc__bw_needs_grad(s, src)) return;
    struct ggml_cgraph *g = s->graph;
    struct ggml_tensor *c = fit_to(s->ctx, src, contribution);
    if (!c) return;
    const size_t slot = ggmlc__hash_find(&g->visited_hash_set, src);
    if (g->grads[slot]) {
        /* into an accumulator: add in place, so the sum lands in the accumulator's memory */
        g->grads[slot] = g->grad_accs[slot] ? ggml_add_inplace(s->ctx, g->grads[slot], c) : ggml_add(s->ctx, g->grads[slot], c);
    } else {
        g->grads[slot] = c;
    }
}

struct ggml_tensor **ggmlc__bw_open_grad(struct bw_state *s, struct ggml_tensor *src) {
    if (!ggmlc__bw_needs_grad(s, src)) return NULL;
    struct ggml_cgraph *g = s->graph;
    const size_t slot = ggmlc__hash_find(&g->visited_hash_set, src);
    struct ggml_tensor *sum = g->grads[slot];
    if (!sum || g->grad_accs[slot] || sum->type != GGML_TYPE_F32 || !ggml_is_contiguous(sum) ||
        !ggml_are_same_shape(sum, src))
        return NULL;
    return &g->grads[slot];
}

/* Mark the tensors a gradient must flow into: parameters and differentiable functions of them. */
/* Whether a gradient reaching node's sources must pass through node.  A differentiable op
 * passes it on; so does, as far as the caller can tell, an op without a gradient whose result is
 * a float tensor: it is marked so that the backward pass reports "no gradient for op" instead of
 * treating it as a constant and leaving the parameters behind it a silent zero (ggml aborts
 * there).  Integer results (argmax, argsort, top_k, count_equal) and the optimizer's own update
 * nodes are constants by nature. */
static bool passes_gradient(const struct ggml_tensor *node) {
    if (ggmlc_op_get_info(node->op)->differentiable) return true;
    if (node->op == GGML_OP_OPT_STEP_ADAMW || node->op == GGML_OP_OPT_STEP_SGD) return false;
    return node->type == GGML_TYPE_F32 || node->type == GGML_TYPE_F16 || node->type == GGML_TYPE_BF16;
}

static void mark_needed(struct bw_state *s) {
    struct ggml_cgraph *g = s->graph;
    for (int i = 0; i < g->n_nodes; i++) {
        struct ggml_tensor *node = g->nodes[i];
        bool needed = (node->flags & GGML_TENSOR_FLAG_PARAM) != 0;
        if (!needed && passes_gradient(node)) {
            for (int j = 0; j < GGML_MAX_SRC && !needed; j++) needed = ggmlc__bw_needs_grad(s, node->src[j]);
        }
        s->needed[ggmlc__hash_find(&g->visited_hash_set, node)] = needed;
    }
}

/* Whether node writes its result over its source (an in-place op such as ggml_scale_inplace),
 * as opposed to the ops whose result is by definition a view (views, cpy, set_rows, and clamp,
 * which is in place in ggml's API itself: its rule's mask lo < a < hi is the same read from
 * the clamped values). */
static bool overwrites_source(const struct ggml_tensor *node) {
    switch (node->op) {
    case GGML_OP_VIEW: case GGML_OP_RESHAPE: case GGML_OP_PERMUTE: case GGML_OP_TRANSPOSE:
    case GGML_OP_CPY: case GGML_OP_SET_ROWS: case GGML_OP_CLAMP:
        return false;
    default:
        return node->view_src != NULL;
    }
}

/* An in-place op a gradient must flow through, or NULL.  Like ggml, ggmlc refuses these: the
 * forward pass overwrites the source, whose values the backward pass (or a re-evaluation of
 * the graph, e.g. finite differences) may need, so the gradients would be silently wrong. */
static const struct ggml_tensor *inplace_on_gradient_path(const struct bw_state *s) {
    const struct ggml_cgraph *g = s->graph;
    for (int i = 0; i < g->n_nodes; i++) {
        const struct ggml_tensor *node = g->nodes[i];
        if (!overwrites_source(node) || !s->needed[ggmlc__hash_find(&g->visited_hash_set, node)]) continue;
        for (int j = 0; j < GGML_MAX_SRC; j++)
            if (ggmlc__bw_needs_grad(s, node->src[j])) return node;
    }
    return NULL;
}

/* Accumulators for losses (the seed) and parameters (gradient accumulation). */
static bool create_accumulators(struct bw_state *s, struct ggml_tensor **grad_accs) {
    struct ggml_cgraph *g = s->graph;
    for (int i = 0; i < g->n_nodes; i++) {
        struct ggml_tensor *node = g->nodes[i];
        const size_t slot = ggmlc__hash_find(&g->visited_hash_set, node);
        const bool is_loss = node->flags & GGML_TENSOR_FLAG_LOSS;
        const bool is_param = (node->flags & GGML_TENSOR_FLAG_PARAM) && s->needed[slot];
        struct ggml_tensor *acc = grad_accs ? grad_accs[i] : NULL;
        if (!acc && (is_loss || is_param)) {
            acc = ggml_new_tensor(s->ctx, GGML_TYPE_F32, GGML_MAX_DIMS, node->ne);
            if (!acc) return false;
            ggml_format_name(acc, "%s for %s", is_loss ? "loss grad" : "grad acc", node->name);
        }
        g->grad_accs[slot] = acc;
        g->grads[slot] = acc;
    }
    return true;
}

static bool graph_has_loss(const struct ggml_cgraph *g) {
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i]->flags & GGML_TENSOR_FLAG_LOSS) return true;
    return false;
}

void ggml_build_backward_expand(struct ggml_context *ctx, struct ggml_cgraph *g, struct ggml_tensor **grad_accs) {
    if (!ctx || !g) return;
    if (!g->grads) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                        "ggml_build_backward_expand: the graph has no gradient storage (create it with ggml_new_graph_custom(ctx, size, true))");
        return;
    }
    if (!graph_has_loss(g)) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                        "ggml_build_backward_expand: the graph has no loss (mark a scalar F32 "
                        "node with ggml_set_loss)");
        return;
    }
    struct bw_state s = {ctx, g, calloc(g->visited_hash_set.size, sizeof(bool))};
    if (!s.needed) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "ggml_build_backward_expand: out of memory");
        return;
    }
    mark_needed(&s);
    const struct ggml_tensor *inplace = inplace_on_gradient_path(&s);
    if (inplace) {
        ggmlc_set_error(GGMLC_ERR_UNSUPPORTED, "ggml_build_backward_expand: node '%s' (%s) is computed in place, over its "
                        "source, on the path of a gradient; use the op's variant without _inplace. No backward graph built",
                        inplace->name, ggml_op_desc(inplace));
        goto done;
    }
    const int n_forward = g->n_nodes;
    if (!create_accumulators(&s, grad_accs)) goto done;

    bool reported[GGML_OP_COUNT] = {false};
    for (int i = n_forward - 1; i >= 0; i--) {
        struct ggml_tensor *node = g->nodes[i];
        const size_t slot = ggmlc__hash_find(&g->visited_hash_set, node);
        struct ggml_tensor *dy = g->grads[slot];
        if (!dy || !s.needed[slot]) continue;
        bool any_src = false;
        for (int j = 0; j < GGML_MAX_SRC; j++) any_src |= ggmlc__bw_needs_grad(&s, node->src[j]);
        if (!any_src) continue;
        if (!ggmlc__bw_apply_rule(&s, node, dy) && !reported[node->op]) {
            reported[node->op] = true;
            ggmlc_set_error(GGMLC_ERR_UNSUPPORTED, "ggml_build_backward_expand: no gradient for op %s (node '%s'); "
                            "gradients do not flow through it", ggml_op_desc(node), node->name);
        }
    }
    for (int i = 0; i < n_forward; i++) {
        struct ggml_tensor *node = g->nodes[i];
        const size_t slot = ggmlc__hash_find(&g->visited_hash_set, node);
        if ((node->flags & GGML_TENSOR_FLAG_PARAM) && g->grads[slot]) ggml_build_forward_expand(g, g->grads[slot]);
    }
done:
    free(s.needed);
}

/* ----------------------------------------------------------------- reset */

static void fill_f32(struct ggml_tensor *t, float value) {
    if (value == 0.0f) {
        ggml_backend_tensor_memset(t, 0, 0, ggml_nbytes(t));
        return;
    }
    float chunk[256];
    for (int i = 0; i < 256; i++) chunk[i] = value;
    const size_t n = (size_t)ggml_nelements(t);
    for (size_t i = 0; i < n; i += 256) {
        const size_t m = n - i < 256 ? n - i : 256;
        ggml_backend_tensor_set(t, chunk, i * sizeof(float), m * sizeof(float));
    }
}

void ggml_graph_reset(struct ggml_cgraph *g) {
    if (!g || !g->grads) return;
    for (int i = 0; i < g->n_nodes; i++) {
        struct ggml_tensor *node = g->nodes[i];
        if (node->op == GGML_OP_OPT_STEP_ADAMW) { /* optimizer moments restart */
            fill_f32(node->src[2], 0.0f);
            fill_f32(node->src[3], 0.0f);
        }
        struct ggml_tensor *acc = ggml_graph_get_grad_acc(g, node);
        if (!acc || !acc->data) continue;
        if (acc->type != GGML_TYPE_F32) {
            ggmlc_set_error(GGMLC_ERR_TYPE, "ggml_graph_reset: gradient accumulator '%s' is not F32", acc->name);
            continue;
        }
        fill_f32(acc, (node->flags & GGML_TENSOR_FLAG_LOSS) ? 1.0f : 0.0f);
    }
}

/* ------------------------------------------------------------ UNARY_BACK */

struct ggml_tensor *ggml_unary_back(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b, enum ggml_unary_op op) {
    GGMLC_CHECK_SRC(a);
    GGMLC_CHECK_SRC(b);
    char sa[GGMLC_SHAPE_STR], sb[GGMLC_SHAPE_STR];
    if ((unsigned)op >= GGML_UNARY_OP_COUNT)
        return ggmlc__op_fail(GGMLC_ERR_INVALID_ARG, __func__, "unknown unary op %d", (int)op);
    if (!ggml_are_same_shape(a, b) || a->type != GGML_TYPE_F32 || b->type != GGML_TYPE_F32)
        return ggmlc__op_fail(GGMLC_ERR_SHAPE, __func__, "x %s and dy %s must be F32 of the same shape",
                             ggmlc__shape_str(a, sa), ggmlc__shape_str(b, sb));
    struct ggml_tensor *r = ggml_dup_tensor(ctx, b);
    GGMLC_CHECK_SRC(r);
    ggmlc__node_set(r, GGML_OP_UNARY_BACK, a, b, NULL);
    ggmlc__set_op_params_i32(r, 0, (int32_t)op);
    return r;
}
