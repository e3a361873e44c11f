/*
 * optim-group.c - a model's trainable parameters packed in groups, so that one optimizer node
 * updates a whole group instead of one node (one GPU dispatch, its barrier) per tensor.
 *
 * The weights buffer holds, per group, the parameters one after the other, then their first
 * and second moments in the same layout; the gradient buffer holds the group's gradients in
 * that layout too.  Each parameter and moment stays a tensor of its own (save, load and
 * checkpoints read and write those), and 1-D tensors spanning each region alias them: the
 * group's update is ggmlc__optim_update on those spans, which is element-wise, so it gives
 * what the per-tensor updates give.  A training graph's gradient accumulators (which
 * ggml_build_backward_expand creates) are placed at their parameters' places in the gradient
 * buffer, so the backward pass writes the gradients where the group's update reads them, and
 * one memset per group clears them before a step; better, where a gradient is a single
 * contribution added to its zeroed accumulator, the node computing the contribution writes
 * it there itself (no addition, nothing to clear); the loss's gradient seed lives there too,
 * set once.  Offsets are multiples of the buffer
 * type's alignment; the gaps hold zeros that stay zeros (a zero gradient moves no zero
 * weight).  A graph whose parameters do not all have an accumulator (frozen after compile,
 * not reached by the loss) or whose gradients are clipped keeps the per-tensor updates.
 */
#include <stdlib.h>

#include "nn-impl.h"

/* A group spans at most this much memory: one binding of the update's kernel must hold it. */
#define NN_GROUP_MAX_BYTES ((size_t)64 << 20)

struct nn_group {
    int first, count;           /* its parameters: params[first .. first + count) */
    size_t base, grad_base;     /* its region in the weights and in the gradient buffer */
    size_t bytes;               /* of the parameters' span (each moment's span is the same) */
    struct ggml_tensor *p, *m, *v, *g; /* the spans (m, v NULL where the optimizer keeps none) */
};

struct nn_groups {
    struct nn_param **params;   /* trainable at compile, in layer order */
    size_t *offset;             /* of each in its group's span */
    int n_params;
    struct nn_group *group;
    int n_groups;
    struct ggml_context *ctx;   /* the spans */
    ggml_backend_buffer_t grads;
    size_t seed_offset;         /* in grads, after the spans: the loss's gradient seed, 1 */
};

static size_t padded(size_t bytes, size_t align) { return (bytes + align - 1) / align * align; }

static bool trains(const ggmlc_layer *l, const struct nn_param *p) { return l->trainable && p->trainable; }

void ggmlc__nn_groups_free(ggmlc_model *m) {
    struct nn_groups *gs = m->groups;
    if (!gs) return;
    ggml_backend_buffer_free(gs->grads);
    ggml_free(gs->ctx);
    free(gs->params);
    free(gs->offset);
    free(gs->group);
    free(gs);
    m->groups = NULL;
}

/* The trainable parameters cut into groups of at most NN_GROUP_MAX_BYTES (a larger one alone). */
static bool plan_groups(ggmlc_model *m, struct nn_groups *gs, size_t align) {
    int n = 0;
    for (int i = 0; i < m->n_layers; i++) n += m->layers[i]->n_params;
    gs->params = calloc((size_t)n + 1, sizeof *gs->params);
    gs->offset = calloc((size_t)n + 1, sizeof *gs->offset);
    gs->group = calloc((size_t)n + 1, sizeof *gs->group);
    if (!gs->params || !gs->offset || !gs->group) return false;
    for (int i = 0; i < m->n_layers; i++) {
        for (int j = 0; j < m->layers[i]->n_params; j++) {
            struct nn_param *p = &m->layers[i]->params[j];
            if (!trains(m->layers[i], p)) continue;
            const size_t bytes = padded(ggml_nbytes(p->t), align);
            struct nn_group *cur = gs->n_groups ? &gs->group[gs->n_groups - 1] : NULL;
            if (!cur || (cur->bytes + bytes > NN_GROUP_MAX_BYTES && cur->count > 0)) {
                cur = &gs->group[gs->n_groups++];
                cur->first = gs->n_params;
            }
            gs->offset[gs->n_params] = cur->bytes;
            gs->params[gs->n_params++] = p;
            cur->bytes += bytes;
            cur->count++;
        }
    }
    return true;
}

/* Bytes of the weights buffer: the groups' spans (parameters and state), then every other
 * tensor of ctx_params, each padded; the regions' places are set on the way. */
static size_t plan_bytes(ggmlc_model *m, struct nn_groups *gs, int n_state, size_t align) {
    size_t total = 0, grads = 0;
    for (int k = 0; k < gs->n_groups; k++) {
        gs->group[k].base = total;
        gs->group[k].grad_base = grads;
        total += (size_t)(1 + n_state) * gs->group[k].bytes;
        grads += gs->group[k].bytes;
    }
    for (int i = 0; i < m->n_layers; i++)
        for (int j = 0; j < m->layers[i]->n_params; j++)
            if (!trains(m->layers[i], &m->layers[i]->params[j])) total += padded(ggml_nbytes(m->layers[i]->params[j].t), align);
    return total + padded(ggml_nbytes(m->opt_pars), align);
}

static bool put(ggml_backend_buffer_t buf, struct ggml_tensor *t, size_t offset) {
    return t && ggml_backend_tensor_alloc(buf, t, (char *)ggml_backend_buffer_get_base(buf) + offset) == GGML_STATUS_SUCCESS;
}

/* The spans of group k and its parameters (and their state) at their places. */
static bool place_group(ggmlc_model *m, struct nn_groups *gs, int k, int n_state) {
    struct nn_group *gr = &gs->group[k];
    const int64_t floats = (int64_t)(gr->bytes / sizeof(float));
    gr->p = ggml_new_tensor_1d(gs->ctx, GGML_TYPE_F32, floats);
    gr->g = ggml_new_tensor_1d(gs->ctx, GGML_TYPE_F32, floats);
    gr->m = n_state >= 1 ? ggml_new_tensor_1d(gs->ctx, GGML_TYPE_F32, floats) : NULL;
    gr->v = n_state >= 2 ? ggml_new_tensor_1d(gs->ctx, GGML_TYPE_F32, floats) : NULL;
    bool ok = put(m->buf_params, gr->p, gr->base) && put(gs->grads, gr->g, gr->grad_base) &&
              (!gr->m || put(m->buf_params, gr->m, gr->base + gr->bytes)) &&
              (!gr->v || put(m->buf_params, gr->v, gr->base + 2 * gr->bytes));
    for (int i = gr->first; ok && i < gr->first + gr->count; i++) {
        struct nn_param *p = gs->params[i];
        const size_t at = gr->base + gs->offset[i];
        ok = put(m->buf_params, p->t, at) && (!p->m || put(m->buf_params, p->m, at + gr->bytes)) &&
             (!p->v || put(m->buf_params, p->v, at + 2 * gr->bytes));
    }
    return ok;
}

/* Everything of ctx_params outside the groups, after them. */
static bool place_rest(ggmlc_model *m, size_t at, size_t align) {
    for (int i = 0; i < m->n_layers; i++) {
        for (int j = 0; j < m->layers[i]->n_params; j++) {
            struct nn_param *p = &m->layers[i]->params[j];
            if (trains(m->layers[i], p)) continue;
            if (!put(m->buf_params, p->t, at)) return false;
            at += padded(ggml_nbytes(p->t), align);
        }
    }
    return put(m->buf_params, m->opt_pars, at);
}

static bool pack(ggmlc_model *m, struct nn_groups *gs) {
    ggml_backend_buffer_type_t buft = ggml_backend_get_default_buffer_type(m->backends[0]);
    const size_t align = ggml_backend_buft_get_alignment(buft);
    const int n_state = ggmlc__optim_n_state(ggmlc__nn_optim_kind(&m->opt));
    if (!plan_groups(m, gs, align) || gs->n_groups == 0) return false;
    const size_t total = plan_bytes(m, gs, n_state, align);
    const struct nn_group *last = &gs->group[gs->n_groups - 1];
    if (total > ggml_backend_buft_get_max_size(buft)) return false;
    gs->ctx = ggml_init((struct ggml_init_params){4 * (size_t)gs->n_groups * ggml_tensor_overhead(), NULL, true});
    m->buf_params = gs->ctx ? ggml_backend_buft_alloc_buffer(buft, total) : NULL;
    gs->seed_offset = last->grad_base + last->bytes;
    gs->grads = m->buf_params ? ggml_backend_buft_alloc_buffer(buft, gs->seed_offset + align) : NULL;
    if (!gs->grads) return false;
    ggml_backend_buffer_clear(gs->grads, 0); /* the gaps between gradients stay zeros */
    for (int k = 0; k < gs->n_groups; k++)
        if (!place_group(m, gs, k, n_state)) return false;
    return place_rest(m, last->base + (size_t)(1 + n_state) * last->bytes, align);
}

/* The tensors of ctx_params wherever a buffer of them puts them (no groups). */
static bool place_plainly(ggmlc_model *m) {
    ggml_backend_buffer_free(m->buf_params);
    for (int i = 0; i < m->n_layers; i++) { /* forget the places a failed packing gave */
        for (int j = 0; j < m->layers[i]->n_params; j++) {
            struct nn_param *p = &m->layers[i]->params[j];
            struct ggml_tensor *ts[3] = {p->t, p->m, p->v};
            for (int t = 0; t < 3; t++)
                if (ts[t]) ts[t]->data = NULL, ts[t]->buffer = NULL;
        }
    }
    m->opt_pars->data = NULL, m->opt_pars->buffer = NULL;
    m->buf_params = ggml_backend_alloc_ctx_tensors(m->ctx_params, m->backends[0]);
    return m->buf_params != NULL;
}

bool ggmlc__nn_params_alloc(ggmlc_model *m) {
    struct nn_groups *gs = calloc(1, sizeof *gs);
    m->groups = gs;
    if (gs && pack(m, gs)) return true;
    ggmlc__nn_groups_free(m);
    ggmlc_clear_error(); /* the tensors one by one instead */
    return place_plainly(m);
}

/* ------------------------------------------------------------ updates */

/* Whether every parameter with a gradient in g is in a group and every grouped one has a
 * fresh accumulator there (one the backward pass created, not placed yet). */
static bool groups_cover(const ggmlc_model *m, const struct nn_graph *g) {
    const struct nn_groups *gs = m->groups;
    int with_grad = 0;
    for (int i = 0; i < m->n_layers; i++)
        for (int j = 0; j < m->layers[i]->n_params; j++)
            with_grad += ggml_graph_get_grad(g->gb_grad, m->layers[i]->params[j].t) != NULL;
    if (with_grad != gs->n_params) return false;
    for (int i = 0; i < gs->n_params; i++) {
        const struct nn_param *p = gs->params[i];
        const struct ggml_tensor *acc = ggml_graph_get_grad_acc(g->gb_grad, p->t);
        if (!acc || acc->data || acc->view_src || acc->type != GGML_TYPE_F32 || ggml_nbytes(acc) != ggml_nbytes(p->t)) return false;
    }
    return true;
}

/* A gradient that is its accumulator plus one contribution (zero + c) made the contribution
 * itself, computed straight into the gradient span at offset: the node that made c (seen
 * through a reshape) is placed there, and the addition becomes a view of it, which no
 * backend computes.  False (nothing changed) where c is not a fresh, whole, contiguous
 * node of its own; a parameter used twice, say, keeps its accumulator. */
static bool write_in_place(ggml_backend_buffer_t buf, struct ggml_tensor *grad, struct ggml_tensor *acc, size_t offset) {
    if (!grad || grad->op != GGML_OP_ADD || grad->src[0] != acc || grad->view_src != acc) return false;
    struct ggml_tensor *c = grad->src[1], *base = c->view_src ? c->view_src : c;
    const int32_t io = GGML_TENSOR_FLAG_INPUT | GGML_TENSOR_FLAG_OUTPUT | GGML_TENSOR_FLAG_PARAM;
    if (c->view_offs != 0 || !ggml_is_contiguous(c) || !ggml_is_contiguous(base) || base->op == GGML_OP_NONE || base->data ||
        (base->flags & io) || base->type != GGML_TYPE_F32 || ggml_nbytes(base) != ggml_nbytes(acc) || !put(buf, base, offset))
        return false;
    grad->op = GGML_OP_RESHAPE;
    grad->src[0] = c;
    grad->src[1] = NULL;
    grad->view_src = base;
    grad->view_offs = 0;
    return true;
}

/* The loss's gradient seed (the backward pass's start, 1) in the gradient buffer, set once:
 * nothing writes it, so the steps need not (a scalar loss; else it stays a graph leaf that
 * ggmlc__nn_grads_reset sets before every step). */
static void place_seed(const struct nn_groups *gs, struct nn_graph *g) {
    struct ggml_tensor *seed = ggml_graph_get_grad_acc(g->gb_grad, g->loss);
    const float one = 1.0f;
    if (!seed || seed->data || seed->view_src || seed->type != GGML_TYPE_F32 || ggml_nelements(seed) != 1 ||
        !put(gs->grads, seed, gs->seed_offset))
        return;
    ggml_backend_tensor_set(seed, &one, 0, sizeof one);
    g->seed_set = true;
}

int ggmlc__nn_build_group_updates(ggmlc_model *m, struct nn_graph *g) {
    const struct nn_groups *gs = m->groups;
    const struct ggmlc_compile_options *o = &m->opt;
    if (!gs || o->clip_value > 0 || o->clip_norm > 0 || !groups_cover(m, g)) return 0;
    for (int k = 0; k < gs->n_groups; k++) {
        const struct nn_group *gr = &gs->group[k];
        for (int i = gr->first; i < gr->first + gr->count; i++) {
            struct ggml_tensor *t = gs->params[i]->t, *acc = ggml_graph_get_grad_acc(g->gb_grad, t);
            const size_t at = gr->grad_base + gs->offset[i];
            if (write_in_place(gs->grads, ggml_graph_get_grad(g->gb_grad, t), acc, at)) continue;
            if (!put(gs->grads, acc, at)) return -1;
            g->accumulates = true;
        }
        struct ggml_tensor *step = ggmlc__optim_update(g->ctx, ggmlc__nn_optim_kind(o), gr->p, gr->g, gr->m, gr->v,
                                                       m->opt_pars, o->weight_decay);
        if (!step) return -1;
        ggml_build_forward_expand(g->gb, step);
    }
    place_seed(gs, g);
    g->grouped = true;
    return 1;
}

void ggmlc__nn_grads_reset(ggmlc_model *m, struct nn_graph *g) {
    if (!g->grouped) {
        ggml_graph_reset(g->gb_grad);
        return;
    }
    for (int k = 0; g->accumulates && k < m->groups->n_groups; k++)
        ggml_backend_tensor_memset(m->groups->group[k].g, 0, 0, ggml_nbytes(m->groups->group[k].g));
    struct ggml_tensor *seed = ggml_graph_get_grad_acc(g->gb_grad, g->loss);
    const float one = 1.0f;
    if (!g->seed_set && seed && seed->data) ggml_backend_tensor_set(seed, &one, 0, sizeof one);
}

int ggmlc__nn_group_count(const ggmlc_model *m) { return m->groups ? m->groups->n_groups : 0; }
