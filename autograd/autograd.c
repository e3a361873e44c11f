/*
 * autograd.c - recording ops and running backward: the tape, gradient accumulation, grad mode,
 * detach and in-place assignment.
 */
#include <stdlib.h>
#include <string.h>

#include "ggmlc.h"
#include "autograd-impl.h"

static _Thread_local bool grad_disabled;
static _Thread_local uint64_t visit_counter; /* marks of one thread's walks */

bool ga_set_grad_enabled(bool enabled) {
    bool was = !grad_disabled;
    grad_disabled = !enabled;
    return was;
}

bool ga_is_grad_enabled(void) { return !grad_disabled; }

bool ggmlc__ga_needs_grad(ga_tensor *const *inputs, int n_inputs) {
    if (grad_disabled) return false;
    for (int i = 0; i < n_inputs; i++)
        if (inputs[i] && inputs[i]->requires_grad) return true;
    return false;
}

ga_tensor *ggmlc__ga_record(ga_tensor *out, const char *name, ga_vjp vjp, ga_tensor *const *inputs,
                            int n_inputs) {
    enum ga_dtype dtype = ggmlc__ga_promote(inputs, n_inputs);
    if (out && dtype != GA_FLOAT32 && !ggmlc__ga_set_dtype(out, dtype)) {
        ga_release(out);
        return NULL;
    }
    return ggmlc__ga_record_as(out, name, vjp, inputs, n_inputs);
}

ga_tensor *ggmlc__ga_record_as(ga_tensor *out, const char *name, ga_vjp vjp,
                               ga_tensor *const *inputs, int n_inputs) {
    if (!out || !ggmlc__ga_needs_grad(inputs, n_inputs)) return out;
    struct ga_fn *fn = calloc(1, sizeof *fn);
    if (!fn) {
        ga_release(out);
        ggmlc_set_error(GGMLC_ERR_NOMEM, "%s: out of memory", name);
        return NULL;
    }
    fn->name = name;
    fn->vjp = vjp;
    fn->n_inputs = n_inputs;
    for (int i = 0; i < n_inputs; i++) fn->inputs[i] = ga_retain(inputs[i]);
    out->fn = fn;
    out->requires_grad = true;
    return out;
}

bool ggmlc__ga_check_pair(const ga_tensor *a, const ga_tensor *b, const char *op) {
    if (!ggmlc__ga_check(a, op) || !ggmlc__ga_check(b, op)) return false;
    if (a->dev != b->dev) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: tensors on two devices (%s and %s)", op,
                        ga_device_name(a->dev), ga_device_name(b->dev));
        return false;
    }
    return true;
}

struct ggml_tensor *ggmlc__ga_reduce_to(struct ggml_tensor *g, const ga_tensor *like) {
    if (!g) return NULL;
    if (memcmp(g->ne, like->ne, sizeof like->ne) == 0) return g;
    struct ggml_context *ctx = ggmlc__ga_ctx(like);
    struct ggml_tensor *shape = ggml_new_tensor(ctx, GGML_TYPE_F32, GGML_MAX_DIMS, like->ne);
    if (!ggml_is_contiguous(g)) g = ggml_cont(ctx, g);
    return ggml_repeat_back(ctx, g, shape);
}

struct ggml_tensor *ggmlc__ga_as_ne(struct ggml_context *ctx, struct ggml_tensor *x,
                                    const int64_t *ne) {
    if (!x) return NULL;
    if (!ggml_is_contiguous(x)) x = ggml_cont(ctx, x);
    if (memcmp(x->ne, ne, sizeof x->ne) == 0) return x;
    return ggml_reshape_4d(ctx, x, ne[0], ne[1], ne[2], ne[3]);
}

/* ------------------------------------------------------------- axes */

int ggmlc__ga_axis(const ga_tensor *t, int dim, const char *op) {
    int nd = t->ndim > 0 ? t->ndim : 1;
    if (dim < 0) dim += nd;
    if (dim < 0 || dim >= nd) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: no dimension %d in a %d-D tensor", op, dim,
                        t->ndim);
        return -1;
    }
    return nd - 1 - dim;
}

struct ggml_tensor *ggmlc__ga_swap0(struct ggml_context *ctx, struct ggml_tensor *x, int k) {
    if (!x) return NULL;
    if (k == 0) return ggml_is_contiguous(x) ? x : ggml_cont(ctx, x);
    int ax[GGML_MAX_DIMS] = {0, 1, 2, 3};
    ax[0] = k;
    ax[k] = 0;
    return ggml_cont(ctx, ggml_permute(ctx, x, ax[0], ax[1], ax[2], ax[3]));
}

/* ----------------------------------------------------------- properties */

ga_tensor *ga_requires_grad_(ga_tensor *t, bool requires_grad) {
    if (!ggmlc__ga_check(t, "ga_requires_grad_")) return NULL;
    if (t->fn && !requires_grad) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                        "ga_requires_grad_: only leaves can change it (use ga_detach)");
        return NULL;
    }
    t->requires_grad = requires_grad;
    return t;
}

bool ga_requires_grad(const ga_tensor *t) {
    return ggmlc__ga_check(t, "ga_requires_grad") && t->requires_grad;
}
bool ga_is_leaf(const ga_tensor *t) {
    return ggmlc__ga_check(t, "ga_is_leaf") && !t->fn && !t->graph_freed;
}

ga_tensor *ga_grad(const ga_tensor *t) { return ggmlc__ga_check(t, "ga_grad") ? t->grad : NULL; }

void ga_zero_grad(ga_tensor *t) {
    if (!ggmlc__ga_check(t, "ga_zero_grad")) return;
    ga_release(t->grad);
    t->grad = NULL;
}

/* ------------------------------------------------------- detach, assign */

/* A handle to t's current value without its record: the same node (a value that two handles
 * share is copied once at the flush, so each has storage of its own). */
static ga_tensor *alias(ga_tensor *t) {
    if (!ggmlc__ga_reserve(t->dev, 4)) return NULL;
    struct ggml_tensor *n = ggmlc__ga_node(t);
    ga_tensor *r = n ? ggmlc__ga_from_node(t->dev, n, t->ndim) : NULL;
    if (r) r->dtype = t->dtype, r->raw = t->raw; /* the same rounded value */
    return r;
}

ga_tensor *ga_detach(const ga_tensor *t) {
    if (!ggmlc__ga_check(t, "ga_detach")) return NULL;
    ggmlc__ga_internal(1);
    ga_tensor *r = alias((ga_tensor *)t);
    ggmlc__ga_internal(-1);
    ggmlc__ga_scope_track(r);
    return r;
}

/* Hand t's storage to a hidden handle that the segment keeps until the flush: nodes recorded
 * earlier may still read it. */
static bool retire_store(ga_tensor *t) {
    ggmlc__ga_host_forget(t);
    if (!t->store) return true;
    ggmlc__ga_internal(1);
    ga_tensor *ghost = ggmlc__ga_new_handle(t->dev, t->ndim, t->ne);
    ggmlc__ga_internal(-1);
    if (!ghost) return false;
    ghost->store_ctx = t->store_ctx;
    ghost->store = t->store;
    ghost->store_buf = t->store_buf;
    ghost->store_order = t->store_order;
    t->store_ctx = NULL;
    t->store = NULL;
    t->store_buf = NULL;
    bool ok = ggmlc__ga_pin(ghost);
    ga_release(ghost);
    return ok;
}

enum ggmlc_status ga_assign_(ga_tensor *t, const ga_tensor *src) {
    if (!ggmlc__ga_check_pair(t, src, "ga_assign_")) return ggmlc_last_status();
    if (memcmp(t->ne, src->ne, sizeof t->ne) != 0)
        return ggmlc_set_error(GGMLC_ERR_SHAPE, "ga_assign_: shapes differ");
    if (t->dtype != src->dtype)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ga_assign_: dtypes differ (%s and %s)",
                               ga_dtype_name(t->dtype), ga_dtype_name(src->dtype));
    if (t == src) return GGMLC_OK;
    if (!ggmlc__ga_reserve(t->dev, 4)) return ggmlc_last_status();
    struct ggml_tensor *n = ggmlc__ga_node((ga_tensor *)src);
    if (!n || !retire_store(t)) return ggmlc_last_status();
    t->node = n;
    t->raw = src->raw;
    t->node_epoch = t->dev->epoch;
    if (t->pending_index >= 0 || ggmlc__ga_pending_add(t)) return GGMLC_OK;
    return ggmlc_set_error(GGMLC_ERR_NOMEM, "ga_assign_: out of memory");
}

/* -------------------------------------------------------------- backward */

/* Handles reachable from root through records, in topological order (inputs first). */
static ga_tensor **topo_order(ga_tensor *root, int *n_out) {
    uint64_t mark = ++visit_counter;
    int cap = 64, n = 0, top = 0;
    ga_tensor **order = malloc(cap * sizeof *order);
    struct frame {
        ga_tensor *t;
        int next;
    } *stack = malloc(cap * sizeof *stack);
    int cap_stack = cap;
    if (!order || !stack) goto fail;
    root->visit = mark;
    stack[top++] = (struct frame){root, 0};
    while (top > 0) {
        struct frame *f = &stack[top - 1];
        ga_tensor *t = f->t;
        if (t->fn && f->next < t->fn->n_inputs) {
            ga_tensor *in = t->fn->inputs[f->next++];
            if (!in->requires_grad || in->visit == mark) continue;
            in->visit = mark;
            if (top == cap_stack) {
                cap_stack *= 2;
                void *p = realloc(stack, cap_stack * sizeof *stack);
                if (!p) goto fail;
                stack = p;
            }
            stack[top++] = (struct frame){in, 0};
            continue;
        }
        if (n == cap) {
            cap *= 2;
            void *p = realloc(order, cap * sizeof *order);
            if (!p) goto fail;
            order = p;
        }
        order[n++] = t;
        top--;
    }
    free(stack);
    *n_out = n;
    return order;
fail:
    free(order);
    free(stack);
    ggmlc_set_error(GGMLC_ERR_NOMEM, "ga_backward: out of memory");
    return NULL;
}

/* g rounded to dtype (the same node for float32). */
static struct ggml_tensor *round_to(struct ggml_context *ctx, struct ggml_tensor *g,
                                    enum ga_dtype dtype) {
    if (!g || dtype == GA_FLOAT32) return g;
    return ggml_cast(ctx, ggml_cast(ctx, g, ggmlc__ga_ggml_type(dtype)), GGML_TYPE_F32);
}

/* Add g (a node of t's shape, or broadcast to it) to t's running gradient sum.  A 16-bit op
 * computes its input gradients in its own dtype, as PyTorch's backward formulas do: g and its
 * sum over broadcast dimensions are rounded to op_dtype before they take t's dtype. */
static bool accumulate(ga_tensor *t, struct ggml_tensor *g, enum ga_dtype op_dtype) {
    if (!g) return false;
    struct ggml_context *ctx = ggmlc__ga_ctx(t);
    const bool reduces = memcmp(g->ne, t->ne, sizeof t->ne) != 0;
    /* when neither applies, t's own rounding below is the same one */
    struct ggml_tensor *full = reduces || op_dtype != t->dtype ? round_to(ctx, g, op_dtype) : g;
    g = ggmlc__ga_reduce_to(full, t);
    if (reduces) g = round_to(ctx, g, op_dtype);
    if (!g) return false;
    if (t->acc) {
        struct ggml_tensor *sum = ggml_add(ggmlc__ga_ctx(t), ggmlc__ga_node(t->acc), g);
        ga_release(t->acc);
        g = sum;
    }
    t->acc = ggmlc__ga_from_node(t->dev, g, t->ndim);
    /* a gradient has its tensor's dtype (PyTorch rounds it there at every op) */
    return t->acc != NULL && ggmlc__ga_set_dtype(t->acc, t->dtype);
}

/* A leaf's gradient: the sum becomes .grad, or is added to it. */
static bool deposit(ga_tensor *t) {
    ga_tensor *acc = t->acc;
    t->acc = NULL;
    if (!t->grad) {
        t->grad = acc;
        return true;
    }
    struct ggml_tensor *sum =
        ggml_add(ggmlc__ga_ctx(t), ggmlc__ga_node(t->grad), ggmlc__ga_node(acc));
    ga_release(acc);
    ga_tensor *g = ggmlc__ga_from_node(t->dev, sum, t->ndim);
    if (!g || !ggmlc__ga_set_dtype(g, t->dtype)) return ga_release(g), false;
    ga_release(t->grad);
    t->grad = g;
    return true;
}

static bool step_back(ga_tensor *t) {
    if (!t->acc) return true; /* no path to the root carries a gradient */
    if (!t->fn) return deposit(t);
    if (!ggmlc__ga_reserve(t->dev, 64)) return false;
    struct ggml_tensor *grads[GA_MAX_INPUTS] = {0};
    t->fn->vjp(t->fn, ggmlc__ga_node(t->acc), t, grads);
    ga_release(t->acc);
    t->acc = NULL;
    for (int i = 0; i < t->fn->n_inputs; i++) {
        ga_tensor *in = t->fn->inputs[i];
        if (in->requires_grad && grads[i] && !accumulate(in, grads[i], t->dtype)) return false;
    }
    return true;
}

static void free_graph(ga_tensor **order, int n) {
    for (int i = 0; i < n; i++) {
        ga_tensor *t = order[i];
        ga_release(t->acc);
        t->acc = NULL;
    }
    for (int i = 0; i < n; i++) {
        struct ga_fn *fn = order[i]->fn;
        if (!fn) continue;
        order[i]->fn = NULL;
        order[i]->graph_freed = true;
        for (int k = 0; k < fn->n_inputs; k++) ga_release(fn->inputs[k]);
        free(fn);
    }
}

static enum ggmlc_status check_backward(ga_tensor *t, const ga_tensor *grad) {
    if (!ggmlc__ga_check(t, "ga_backward")) return ggmlc_last_status();
    if (t->graph_freed)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                               "ga_backward: the graph behind this tensor was freed by an earlier "
                               "backward (pass retain_graph to backward twice)");
    if (!t->requires_grad)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                               "ga_backward: the tensor does not require grad and has no record");
    if (!grad && ga_numel(t) != 1)
        return ggmlc_set_error(GGMLC_ERR_SHAPE,
                               "ga_backward: a gradient is needed for a tensor of %lld elements "
                               "(only a scalar's is implied)",
                               (long long)ga_numel(t));
    if (grad && !ggmlc__ga_check_pair(t, grad, "ga_backward")) return ggmlc_last_status();
    if (grad && memcmp(grad->ne, t->ne, sizeof t->ne) != 0)
        return ggmlc_set_error(GGMLC_ERR_SHAPE, "ga_backward: the gradient's shape differs");
    return GGMLC_OK;
}

enum ggmlc_status ga_backward_ex(ga_tensor *t, const ga_tensor *grad, bool retain_graph) {
    enum ggmlc_status st = check_backward(t, grad);
    if (st != GGMLC_OK) return st;
    int n = 0;
    ga_tensor **order = topo_order(t, &n);
    if (!order) return ggmlc_last_status();
    ggmlc__ga_internal(1);
    t->acc = grad ? alias((ga_tensor *)grad) : ga_ones_like(t);
    bool ok = t->acc != NULL &&
              (t->acc->dtype == t->dtype || ggmlc__ga_set_dtype(t->acc, t->dtype));
    for (int i = n - 1; i >= 0 && ok; i--) ok = step_back(order[i]);
    if (!retain_graph || !ok)
        free_graph(order, n);
    else
        for (int i = 0; i < n; i++) ga_release(order[i]->acc), order[i]->acc = NULL;
    ggmlc__ga_internal(-1);
    free(order);
    return ok ? GGMLC_OK : ggmlc_last_status();
}

enum ggmlc_status ga_backward(ga_tensor *t) { return ga_backward_ex(t, NULL, false); }

/* ------------------------------------------------------------ composites */

void ggmlc__ga_tmp_begin(struct ga_tmps *s) {
    s->n = 0;
    ggmlc__ga_internal(1);
}

ga_tensor *ggmlc__ga_tmp(struct ga_tmps *s, ga_tensor *t) {
    if (t && s->n < (int)(sizeof s->t / sizeof *s->t)) s->t[s->n++] = t;
    return t;
}

ga_tensor *ggmlc__ga_tmp_end(struct ga_tmps *s, ga_tensor *result) {
    for (int i = 0; i < s->n; i++) ga_release(s->t[i]);
    s->n = 0;
    ggmlc__ga_internal(-1);
    ggmlc__ga_scope_track(result);
    return result;
}

float *ggmlc__ga_host_copy(const ga_tensor *t) {
    size_t n = (size_t)ga_numel(t);
    float *v = malloc(n * sizeof *v);
    if (!v) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "ga: out of memory");
        return NULL;
    }
    if (ga_to_host(t, v, n) != GGMLC_OK) {
        free(v);
        return NULL;
    }
    return v;
}
