/*
 * ops-arith.c - elementwise arithmetic with two-sided NumPy broadcasting, scalar arithmetic,
 * matmul and linear, with their vector-Jacobian products.
 */
#include <string.h>

#include "ggmlc.h"
#include "autograd-impl.h"

enum binary_kind { BIN_ADD, BIN_SUB, BIN_MUL, BIN_DIV };
static const char *const binary_names[] = {"ga_add", "ga_sub", "ga_mul", "ga_div"};

/* The broadcast shape of a and b (ggml order), or false with a message. */
static bool broadcast_ne(const ga_tensor *a, const ga_tensor *b, int64_t ne[GGML_MAX_DIMS],
                         const char *op) {
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        if (a->ne[i] != b->ne[i] && a->ne[i] != 1 && b->ne[i] != 1) {
            int64_t sa[GA_MAX_DIMS], sb[GA_MAX_DIMS];
            ga_shape(a, sa);
            ga_shape(b, sb);
            ggmlc_set_error(GGMLC_ERR_SHAPE,
                            "%s: shapes do not broadcast (dimension %d from the end: %lld vs %lld)",
                            op, i, (long long)a->ne[i], (long long)b->ne[i]);
            return false;
        }
        ne[i] = a->ne[i] > b->ne[i] ? a->ne[i] : b->ne[i];
    }
    return true;
}

static struct ggml_tensor *expand_to(struct ggml_context *ctx, struct ggml_tensor *x,
                                     const int64_t ne[GGML_MAX_DIMS]) {
    if (!x || memcmp(x->ne, ne, sizeof x->ne) == 0) return x;
    return ggml_repeat_4d(ctx, x, ne[0], ne[1], ne[2], ne[3]);
}

/* ggml's binary ops broadcast b into a: expand a when it is the smaller one. */
static struct ggml_tensor *binary_node(struct ggml_context *ctx, enum binary_kind k,
                                       struct ggml_tensor *a, struct ggml_tensor *b,
                                       const int64_t ne[GGML_MAX_DIMS]) {
    bool a_full = memcmp(a->ne, ne, sizeof a->ne) == 0;
    bool b_full = memcmp(b->ne, ne, sizeof b->ne) == 0;
    if (!a_full && b_full && (k == BIN_ADD || k == BIN_MUL)) {
        struct ggml_tensor *t = a;
        a = b;
        b = t;
    } else {
        a = expand_to(ctx, a, ne);
    }
    switch (k) {
    case BIN_ADD: return ggml_add(ctx, a, b);
    case BIN_SUB: return ggml_sub(ctx, a, b);
    case BIN_MUL: return ggml_mul(ctx, a, b);
    default: return ggml_div(ctx, a, b);
    }
}

static void binary_vjp(const struct ga_fn *fn, struct ggml_tensor *g, ga_tensor *out,
                       struct ggml_tensor *grads[GA_MAX_INPUTS]) {
    struct ggml_context *ctx = ggmlc__ga_ctx(out);
    ga_tensor *a = fn->inputs[0], *b = fn->inputs[1];
    switch ((enum binary_kind)fn->i[0]) {
    case BIN_ADD:
        grads[0] = g;
        grads[1] = g;
        break;
    case BIN_SUB:
        grads[0] = g;
        if (b->requires_grad) grads[1] = ggml_neg(ctx, g);
        break;
    case BIN_MUL:
        if (a->requires_grad) grads[0] = ggml_mul(ctx, g, ggmlc__ga_node(b));
        if (b->requires_grad) grads[1] = ggml_mul(ctx, g, ggmlc__ga_node(a));
        break;
    case BIN_DIV: {
        struct ggml_tensor *gb = ggml_div(ctx, g, ggmlc__ga_node(b));
        if (a->requires_grad) grads[0] = gb;
        if (b->requires_grad) grads[1] = ggml_neg(ctx, ggml_mul(ctx, gb, ggmlc__ga_node(out)));
        break;
    }
    }
}

static ga_tensor *binary(const ga_tensor *ca, const ga_tensor *cb, enum binary_kind k) {
    const char *op = binary_names[k];
    ga_tensor *a = (ga_tensor *)ca, *b = (ga_tensor *)cb;
    int64_t ne[GGML_MAX_DIMS];
    if (!ggmlc__ga_check_pair(a, b, op) || !broadcast_ne(a, b, ne, op) ||
        !ggmlc__ga_reserve(a->dev, 8))
        return NULL;
    struct ggml_tensor *na = ggmlc__ga_node(a), *nb = ggmlc__ga_node(b);
    if (!na || !nb) return NULL;
    int ndim = a->ndim > b->ndim ? a->ndim : b->ndim;
    ga_tensor *inputs[2] = {a, b};
    ga_tensor *r = ggmlc__ga_from_node(a->dev, binary_node(ggmlc__ga_ctx(a), k, na, nb, ne), ndim);
    r = ggmlc__ga_record(r, op, binary_vjp, inputs, 2);
    if (r && r->fn) r->fn->i[0] = k;
    return r;
}

ga_tensor *ga_add(const ga_tensor *a, const ga_tensor *b) { return binary(a, b, BIN_ADD); }
ga_tensor *ga_sub(const ga_tensor *a, const ga_tensor *b) { return binary(a, b, BIN_SUB); }
ga_tensor *ga_mul(const ga_tensor *a, const ga_tensor *b) { return binary(a, b, BIN_MUL); }
ga_tensor *ga_div(const ga_tensor *a, const ga_tensor *b) { return binary(a, b, BIN_DIV); }

/* -------------------------------------------------------------- scalars */

static void scale_vjp(const struct ga_fn *fn, struct ggml_tensor *g, ga_tensor *out,
                      struct ggml_tensor *grads[GA_MAX_INPUTS]) {
    grads[0] = fn->f[0] == 1.0f ? g : ggml_scale(ggmlc__ga_ctx(out), g, fn->f[0]);
}

/* a * s + bias */
static ga_tensor *scale_bias(const ga_tensor *ca, float s, float bias, const char *op) {
    ga_tensor *a = (ga_tensor *)ca;
    if (!ggmlc__ga_check(a, op) || !ggmlc__ga_reserve(a->dev, 4)) return NULL;
    struct ggml_tensor *n = ggmlc__ga_node(a);
    if (!n) return NULL;
    ga_tensor *r =
        ggmlc__ga_from_node(a->dev, ggml_scale_bias(ggmlc__ga_ctx(a), n, s, bias), a->ndim);
    r = ggmlc__ga_record(r, op, scale_vjp, &a, 1);
    if (r && r->fn) r->fn->f[0] = s;
    return r;
}

ga_tensor *ga_add_scalar(const ga_tensor *a, float s) {
    return scale_bias(a, 1.0f, s, "ga_add_scalar");
}
ga_tensor *ga_mul_scalar(const ga_tensor *a, float s) {
    return scale_bias(a, s, 0.0f, "ga_mul_scalar");
}

/* ---------------------------------------------------------------- matmul */

/* How torch.matmul's operands map to ggml matrices: a as [k, n, batch], b as [m, k, batch]. */
struct mm_shape {
    int64_t a_ne[GGML_MAX_DIMS], b_ne[GGML_MAX_DIMS];     /* as matrices, own batch */
    int64_t a_full[GGML_MAX_DIMS], b_full[GGML_MAX_DIMS]; /* with the broadcast batch */
    int64_t out_ne[GGML_MAX_DIMS];                        /* the result handle's */
    int out_ndim;
};

static bool mm_plan(const ga_tensor *a, const ga_tensor *b, struct mm_shape *s) {
    memcpy(s->a_ne, a->ne, sizeof s->a_ne);
    memcpy(s->b_ne, b->ne, sizeof s->b_ne);
    if (b->ndim == 1) {
        s->b_ne[0] = 1;
        s->b_ne[1] = b->ne[0];
    }
    if (a->ndim == 0 || b->ndim == 0 || s->a_ne[0] != s->b_ne[1]) {
        ggmlc_set_error(GGMLC_ERR_SHAPE, "ga_matmul: inner sizes differ (%lld vs %lld) or a scalar",
                        (long long)s->a_ne[0], (long long)s->b_ne[1]);
        return false;
    }
    memcpy(s->a_full, s->a_ne, sizeof s->a_ne);
    memcpy(s->b_full, s->b_ne, sizeof s->b_ne);
    for (int i = 2; i < GGML_MAX_DIMS; i++) {
        int64_t x = s->a_ne[i], y = s->b_ne[i];
        if (x != y && x != 1 && y != 1) {
            ggmlc_set_error(GGMLC_ERR_SHAPE,
                            "ga_matmul: batch sizes %lld and %lld do not broadcast", (long long)x,
                            (long long)y);
            return false;
        }
        s->a_full[i] = s->b_full[i] = x > y ? x : y;
    }
    /* [m, n, batch] less the dimensions of 1-D operands */
    int64_t ne[6] = {s->b_ne[0], s->a_ne[1], s->a_full[2], s->a_full[3], 1, 1};
    int nd = (a->ndim > b->ndim ? a->ndim : b->ndim);
    int drop = -1;
    if (b->ndim == 1) drop = 0;
    if (a->ndim == 1) drop = (drop == 0) ? 2 : 1; /* both: drop m and n */
    int k = 0;
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        if (drop == 2 && i < 2) continue;
        if (i == drop) continue;
        s->out_ne[k++] = ne[i];
    }
    while (k < GGML_MAX_DIMS) s->out_ne[k++] = 1;
    s->out_ndim = a->ndim == 1 && b->ndim == 1 ? 0 : (a->ndim == 1 || b->ndim == 1 ? nd - 1 : nd);
    return true;
}

/* The operands as ggml matrices with the full batch. */
static void mm_operands(ga_tensor *a, ga_tensor *b, const struct mm_shape *s,
                        struct ggml_tensor **na, struct ggml_tensor **nb) {
    struct ggml_context *ctx = ggmlc__ga_ctx(a);
    *na = expand_to(ctx, ggmlc__ga_as_ne(ctx, ggmlc__ga_node(a), s->a_ne), s->a_full);
    *nb = expand_to(ctx, ggmlc__ga_as_ne(ctx, ggmlc__ga_node(b), s->b_ne), s->b_full);
}

/* The sum of a full-batch gradient over the batch dimensions the operand had as 1. */
static struct ggml_tensor *mm_reduce(struct ggml_context *ctx, struct ggml_tensor *g,
                                     const int64_t *own_ne, const ga_tensor *input) {
    if (memcmp(g->ne, own_ne, sizeof g->ne) != 0) {
        struct ggml_tensor *shape = ggml_new_tensor(ctx, GGML_TYPE_F32, GGML_MAX_DIMS, own_ne);
        g = ggml_repeat_back(ctx, g, shape);
    }
    return ggmlc__ga_as_ne(ctx, g, input->ne);
}

static void matmul_vjp(const struct ga_fn *fn, struct ggml_tensor *g, ga_tensor *out,
                       struct ggml_tensor *grads[GA_MAX_INPUTS]) {
    struct ggml_context *ctx = ggmlc__ga_ctx(out);
    ga_tensor *a = fn->inputs[0], *b = fn->inputs[1];
    struct mm_shape s;
    mm_plan(a, b, &s);
    struct ggml_tensor *na, *nb;
    mm_operands(a, b, &s, &na, &nb);
    const int64_t c_ne[GGML_MAX_DIMS] = {s.b_ne[0], s.a_ne[1], s.a_full[2], s.a_full[3]};
    struct ggml_tensor *gc = ggmlc__ga_as_ne(ctx, g, c_ne);
    if (a->requires_grad) grads[0] = mm_reduce(ctx, ggml_mul_mat(ctx, nb, gc), s.a_ne, a);
    if (b->requires_grad) grads[1] = mm_reduce(ctx, ggml_out_prod(ctx, gc, na), s.b_ne, b);
}

/* matmul and linear take operands of one dtype, as PyTorch (no promotion). */
static bool same_dtype(const ga_tensor *a, const ga_tensor *b, const char *op) {
    if (!b || a->dtype == b->dtype) return true;
    ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: operands of two dtypes (%s and %s); convert one "
                    "with ga_to_dtype", op, ga_dtype_name(a->dtype), ga_dtype_name(b->dtype));
    return false;
}

ga_tensor *ga_matmul(const ga_tensor *ca, const ga_tensor *cb) {
    ga_tensor *a = (ga_tensor *)ca, *b = (ga_tensor *)cb;
    struct mm_shape s;
    if (!ggmlc__ga_check_pair(a, b, "ga_matmul") || !same_dtype(a, b, "ga_matmul") ||
        !mm_plan(a, b, &s) ||
        !ggmlc__ga_reserve(a->dev, 16))
        return NULL;
    struct ggml_tensor *na, *nb;
    mm_operands(a, b, &s, &na, &nb);
    if (!na || !nb) return NULL;
    struct ggml_context *ctx = ggmlc__ga_ctx(a);
    /* float16 operands: b's transpose is made F16 (exact) for ggml's native F16 product */
    struct ggml_tensor *bt = b->dtype == GA_FLOAT16
                                 ? ggml_cast(ctx, ggml_transpose(ctx, nb), GGML_TYPE_F16)
                                 : ggml_cont(ctx, ggml_transpose(ctx, nb));
    struct ggml_tensor *c = ggmlc__ga_as_ne(ctx, ggml_mul_mat(ctx, bt, na), s.out_ne);
    ga_tensor *inputs[2] = {a, b};
    return ggmlc__ga_record(ggmlc__ga_from_node(a->dev, c, s.out_ndim), "ga_matmul", matmul_vjp,
                            inputs, 2);
}

/* ---------------------------------------------------------------- linear */

static void linear_vjp(const struct ga_fn *fn, struct ggml_tensor *g, ga_tensor *out,
                       struct ggml_tensor *grads[GA_MAX_INPUTS]) {
    struct ggml_context *ctx = ggmlc__ga_ctx(out);
    ga_tensor *x = fn->inputs[0], *w = fn->inputs[1];
    const int64_t in = w->ne[0], outf = w->ne[1];
    const int64_t rows = x->ne[1] * x->ne[2] * x->ne[3];
    struct ggml_tensor *g2 = ggmlc__ga_as_ne(ctx, g, (const int64_t[]){outf, rows, 1, 1});
    if (x->requires_grad) { /* g W as an outer product: no transposed copy of W each step */
        struct ggml_tensor *gw = ggml_out_prod(ctx, ggmlc__ga_node(w), ggml_transpose(ctx, g2));
        grads[0] = ggmlc__ga_as_ne(ctx, gw, x->ne);
    }
    if (w->requires_grad) {
        struct ggml_tensor *x2 =
            ggmlc__ga_as_ne(ctx, ggmlc__ga_node(x), (const int64_t[]){in, rows, 1, 1});
        grads[1] = ggml_out_prod(ctx, x2, g2);
    }
    if (fn->n_inputs > 2 && fn->inputs[2]->requires_grad) grads[2] = g; /* reduced by the caller */
}

ga_tensor *ga_linear(const ga_tensor *cx, const ga_tensor *cw, const ga_tensor *cb) {
    ga_tensor *x = (ga_tensor *)cx, *w = (ga_tensor *)cw, *b = (ga_tensor *)cb;
    if (!ggmlc__ga_check_pair(x, w, "ga_linear") ||
        (b && !ggmlc__ga_check_pair(x, b, "ga_linear")) || !same_dtype(x, w, "ga_linear") ||
        !same_dtype(x, b, "ga_linear"))
        return NULL;
    if (w->ndim != 2 || x->ndim < 1 || x->ne[0] != w->ne[0] ||
        (b && (b->ndim != 1 || b->ne[0] != w->ne[1]))) {
        ggmlc_set_error(GGMLC_ERR_SHAPE,
                        "ga_linear: input (..., %lld), weight must be (out, %lld)"
                        " and bias (out)",
                        (long long)x->ne[0], (long long)x->ne[0]);
        return NULL;
    }
    if (!ggmlc__ga_reserve(x->dev, 8)) return NULL;
    struct ggml_tensor *nx = ggmlc__ga_node(x), *nw = ggmlc__ga_node(w),
                       *nb = b ? ggmlc__ga_node(b) : NULL;
    if (!nx || !nw || (b && !nb)) return NULL;
    /* a float16 weight enters ggml_mul_mat as its F16 storage: the native F16 product */
    struct ggml_tensor *y = ggml_mul_mat(ggmlc__ga_ctx(x), w->raw && w->dtype == GA_FLOAT16 ?
                                         w->raw : nw, nx);
    if (nb) y = ggml_add(ggmlc__ga_ctx(x), y, nb);
    ga_tensor *inputs[3] = {x, w, b};
    ga_tensor *r = ggmlc__ga_from_node(x->dev, y, x->ndim);
    return ggmlc__ga_record(r, "ga_linear", linear_vjp, inputs, b ? 3 : 2);
}
