/*
 * test-autograd.c - the eager tensors (ggmlc-autograd.h): creation, reading, the core ops and
 * their gradients (hand-computed values and finite differences), backward rules, references,
 * scopes, constant memory over many steps, and every error path.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ggmlc-autograd.h"
#include "testutil.h"

static ga_device *dev;

static bool near_all(const float *a, const float *b, size_t n, float tol) {
    for (size_t i = 0; i < n; i++)
        if (!(fabsf(a[i] - b[i]) <= tol * (1 + fabsf(b[i])))) {
            tap_diag("element %zu: %g, expected %g", i, a[i], b[i]);
            return false;
        }
    return true;
}

static bool values_are(const ga_tensor *t, const float *want, size_t n) {
    float got[64];
    if (!t || n > 64 || (size_t)ga_numel(t) != n || ga_to_host(t, got, n) != GGMLC_OK) return false;
    return near_all(got, want, n, 1e-5f);
}

static ga_tensor *rand_leaf(int ndim, const int64_t *shape) {
    ga_tensor *t = ga_randn(dev, ndim, shape);
    return ga_requires_grad_(t, true);
}

static void test_creation(void) {
    ga_tensor *z = ga_zeros(dev, GA_SHAPE(2, 3));
    tap_ok(z && ga_ndim(z) == 2 && ga_size(z, 0) == 2 && ga_size(z, -1) == 3 && ga_numel(z) == 6,
           "zeros: shape (2, 3)");
    tap_ok(values_are(z, (float[]){0, 0, 0, 0, 0, 0}, 6), "zeros: all zero");
    ga_tensor *f = ga_full(dev, GA_SHAPE(2), 2.5f);
    tap_ok(values_are(f, (float[]){2.5f, 2.5f}, 2), "full");
    ga_tensor *a = ga_arange(dev, 1, 2, 0.25f);
    tap_ok(values_are(a, (float[]){1, 1.25f, 1.5f, 1.75f}, 4), "arange(1, 2, 0.25)");
    ga_tensor *s = ga_scalar(dev, 7);
    tap_ok(ga_ndim(s) == 0 && ga_item(s) == 7.0f, "scalar: 0-D, item 7");
    ga_manual_seed(42);
    ga_tensor *r1 = ga_randn(dev, GA_SHAPE(8));
    ga_manual_seed(42);
    ga_tensor *r2 = ga_randn(dev, GA_SHAPE(8));
    float v1[8], v2[8];
    ga_to_host(r1, v1, 8);
    ga_to_host(r2, v2, 8);
    tap_ok(memcmp(v1, v2, sizeof v1) == 0, "randn: the same seed gives the same numbers");
    ga_tensor *u = ga_rand(dev, GA_SHAPE(1000));
    float uv[1000];
    double mean = 0;
    bool in_range = ga_to_host(u, uv, 1000) == GGMLC_OK;
    for (int i = 0; i < 1000; i++) {
        in_range = in_range && uv[i] >= 0 && uv[i] < 1;
        mean += uv[i] / 1000;
    }
    tap_ok(in_range && fabs(mean - 0.5) < 0.05, "rand: in [0, 1), mean %.3f", mean);
    ga_tensor *h = ga_from_array(dev, (float[]){1, 2, 3, 4, 5, 6}, 6, GA_SHAPE(3, 2));
    tap_ok(values_are(h, (float[]){1, 2, 3, 4, 5, 6}, 6) && ga_size(h, 0) == 3,
           "from_array: values and shape round-trip");
    ga_release(z), ga_release(f), ga_release(a), ga_release(s), ga_release(r1), ga_release(r2);
    ga_release(u), ga_release(h);
}

static void test_forward(void) {
    ga_tensor *a = ga_from_array(dev, (float[]){1, 2, 3, 4, 5, 6}, 6, GA_SHAPE(2, 3));
    ga_tensor *b = ga_from_array(dev, (float[]){10, 20, 30}, 3, GA_SHAPE(3));
    ga_tensor *c = ga_from_array(dev, (float[]){100, 200}, 2, GA_SHAPE(2, 1));
    ga_tensor *ab = ga_add(a, b), *cb = ga_add(c, b), *ba = ga_mul(b, a), *d = ga_sub(c, a);
    tap_ok(values_are(ab, (float[]){11, 22, 33, 14, 25, 36}, 6), "add (2,3)+(3) broadcasts");
    tap_ok(values_are(cb, (float[]){110, 120, 130, 210, 220, 230}, 6) && ga_ndim(cb) == 2,
           "add (2,1)+(3) broadcasts both sides to (2,3)");
    tap_ok(values_are(ba, (float[]){10, 40, 90, 40, 100, 180}, 6), "mul (3)*(2,3)");
    tap_ok(values_are(d, (float[]){99, 98, 97, 196, 195, 194}, 6), "sub (2,1)-(2,3)");
    ga_tensor *m = ga_from_array(dev, (float[]){1, 0, 2, 1, -1, 3}, 6, GA_SHAPE(3, 2));
    ga_tensor *mm = ga_matmul(a, m);
    /* [1 2 3; 4 5 6] @ [1 0; 2 1; -1 3] */
    tap_ok(values_are(mm, (float[]){2, 11, 8, 23}, 4) && ga_size(mm, 0) == 2 && ga_size(mm, 1) == 2,
           "matmul (2,3)@(3,2)");
    ga_tensor *mv = ga_matmul(a, b);
    tap_ok(values_are(mv, (float[]){140, 320}, 2) && ga_ndim(mv) == 1, "matmul (2,3)@(3) -> (2)");
    ga_tensor *s = ga_sum(a), *mean = ga_mean(a);
    tap_ok(ga_item(s) == 21.0f && fabsf(ga_item(mean) - 3.5f) < 1e-6f, "sum 21, mean 3.5");
    ga_tensor *s0 = ga_sum_dim(a, 0, false), *m1 = ga_mean_dim(a, 1, true);
    tap_ok(values_are(s0, (float[]){5, 7, 9}, 3) && ga_ndim(s0) == 1, "sum over dim 0");
    tap_ok(values_are(m1, (float[]){2, 5}, 2) && ga_ndim(m1) == 2 && ga_size(m1, 1) == 1,
           "mean over dim 1, keepdim");
    ga_tensor *all[] = {a, b, c, ab, cb, ba, d, m, mm, mv, s, mean, s0, m1};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) ga_release(all[i]);
}

static void test_backward_values(void) {
    /* y = sum(x * w + x), dy/dx = w + 1, dy/dw = x */
    ga_tensor *x = ga_requires_grad_(ga_from_array(dev, (float[]){1, 2, 3}, 3, GA_SHAPE(3)), true);
    ga_tensor *w = ga_requires_grad_(ga_from_array(dev, (float[]){4, 5, 6}, 3, GA_SHAPE(3)), true);
    ga_scope_begin();
    ga_tensor *y = ga_sum(ga_add(ga_mul(x, w), x));
    tap_ok(ga_backward(y) == GGMLC_OK, "backward of a scalar");
    tap_ok(values_are(ga_grad(x), (float[]){5, 6, 7}, 3), "dy/dx = w + 1 (x used twice)");
    tap_ok(values_are(ga_grad(w), (float[]){1, 2, 3}, 3), "dy/dw = x");
    tap_ok(ga_item(y) == 38.0f, "y = 38");
    tap_ok(ga_backward(y) != GGMLC_OK && strstr(ggmlc_last_error(), "freed"),
           "a second backward through a freed graph is an error: %s", ggmlc_last_error());
    ga_scope_end();
    /* accumulation: a second graph adds into .grad */
    ga_scope_begin();
    ga_tensor *y2 = ga_mean(ga_mul(x, x));
    ga_backward_ex(y2, NULL, true);
    ga_backward(y2);
    ga_scope_end();
    tap_ok(values_are(ga_grad(x), (float[]){5 + 4.f / 3, 6 + 8.f / 3, 7 + 12.f / 3}, 3),
           "gradients accumulate; retain_graph allows a second backward");
    ga_zero_grad(x);
    tap_ok(ga_grad(x) == NULL, "zero_grad forgets the gradient");
    /* no_grad and detach */
    bool was = ga_set_grad_enabled(false);
    ga_tensor *ng = ga_mul(x, w);
    ga_set_grad_enabled(was);
    ga_tensor *dt = ga_detach(x);
    tap_ok(!ga_requires_grad(ng) && !ga_requires_grad(dt) && ga_is_leaf(dt),
           "no_grad and detach record nothing");
    /* upstream gradient */
    ga_tensor *v = ga_mul_scalar(x, 3.0f);
    ga_tensor *up = ga_from_array(dev, (float[]){1, 10, 100}, 3, GA_SHAPE(3));
    tap_ok(ga_backward(v) != GGMLC_OK, "backward of a non-scalar needs a gradient: %s",
           ggmlc_last_error());
    tap_ok(ga_backward_ex(v, up, false) == GGMLC_OK &&
               values_are(ga_grad(x), (float[]){3, 30, 300}, 3),
           "backward with an upstream gradient");
    ga_release(ng), ga_release(dt), ga_release(v), ga_release(up), ga_release(x), ga_release(w);
}

/* ---------------------------------------------------------- gradcheck */

typedef ga_tensor *(*binop)(const ga_tensor *, const ga_tensor *);
typedef ga_tensor *(*unop)(const ga_tensor *);
struct op_case {
    binop bin;
    unop un;
    int dim;
};

static ga_tensor *apply_bin(ga_tensor *const *in, int n, void *user) {
    return ((struct op_case *)user)->bin(in[0], in[1]);
}
static ga_tensor *apply_un(ga_tensor *const *in, int n, void *user) {
    return ((struct op_case *)user)->un(in[0]);
}
static ga_tensor *apply_sum_dim(ga_tensor *const *in, int n, void *user) {
    return ga_sum_dim(in[0], ((struct op_case *)user)->dim, false);
}
static ga_tensor *apply_mean_dim(ga_tensor *const *in, int n, void *user) {
    return ga_mean_dim(in[0], ((struct op_case *)user)->dim, true);
}
static ga_tensor *apply_softmax(ga_tensor *const *in, int n, void *user) {
    return ga_softmax(in[0], ((struct op_case *)user)->dim);
}
static ga_tensor *apply_log_softmax(ga_tensor *const *in, int n, void *user) {
    return ga_log_softmax(in[0], ((struct op_case *)user)->dim);
}
static ga_tensor *apply_linear(ga_tensor *const *in, int n, void *user) {
    return ga_linear(in[0], in[1], n > 2 ? in[2] : NULL);
}
static ga_tensor *apply_transpose(ga_tensor *const *in, int n, void *user) {
    return ga_transpose(in[0], 0, -1);
}
static ga_tensor *apply_reshape(ga_tensor *const *in, int n, void *user) {
    return ga_reshape(in[0], GA_SHAPE(-1, 2));
}
static ga_tensor *apply_mse(ga_tensor *const *in, int n, void *user) {
    return ga_mse_loss(in[0], in[1]);
}

static void check(ga_function f, ga_tensor **in, int n, void *user, const char *what) {
    enum ggmlc_status st = ga_gradcheck(f, in, n, user, 1e-2f, 2e-3f, 2e-2f);
    tap_ok(st == GGMLC_OK, "gradcheck %s%s%s", what, st ? ": " : "", st ? ggmlc_last_error() : "");
    for (int i = 0; i < n; i++) ga_release(in[i]);
}

static void gradcheck_binary(binop op, const char *name) {
    static const int64_t shapes[][2][4] = {
        {{3, 4}, {3, 4}}, {{3, 4}, {4}}, {{3, 1}, {1, 4}}, {{2, 1, 4}, {3, 1}}, {{4}, {2, 3, 4}},
    };
    static const int nd[][2] = {{2, 2}, {2, 1}, {2, 2}, {3, 2}, {1, 3}};
    struct op_case c = {.bin = op};
    for (int s = 0; s < 5; s++) {
        ga_tensor *in[2] = {rand_leaf(nd[s][0], shapes[s][0]), rand_leaf(nd[s][1], shapes[s][1])};
        if (op == ga_div) { /* keep the divisor away from zero */
            ga_tensor *abs = ga_abs(in[1]), *safe = ga_add_scalar(abs, 0.5f);
            ga_tensor *leaf = ga_detach(safe);
            ga_release(abs);
            ga_release(safe);
            ga_release(in[1]);
            in[1] = ga_requires_grad_(leaf, true);
        }
        char what[64];
        snprintf(what, sizeof what, "%s case %d", name, s);
        check(apply_bin, in, 2, &c, what);
    }
}

static void test_gradcheck(void) {
    gradcheck_binary(ga_add, "add");
    gradcheck_binary(ga_sub, "sub");
    gradcheck_binary(ga_mul, "mul");
    gradcheck_binary(ga_div, "div");
    struct op_case mm = {.bin = ga_matmul};
    check(apply_bin, (ga_tensor *[]){rand_leaf(GA_SHAPE(3, 4)), rand_leaf(GA_SHAPE(4, 2))}, 2, &mm,
          "matmul (3,4)@(4,2)");
    check(apply_bin, (ga_tensor *[]){rand_leaf(GA_SHAPE(2, 3, 4)), rand_leaf(GA_SHAPE(4, 2))}, 2,
          &mm, "matmul (2,3,4)@(4,2) broadcast batch");
    check(apply_bin, (ga_tensor *[]){rand_leaf(GA_SHAPE(2, 1, 3, 4)), rand_leaf(GA_SHAPE(3, 4, 2))},
          2, &mm, "matmul (2,1,3,4)@(3,4,2) two-sided batch");
    check(apply_bin, (ga_tensor *[]){rand_leaf(GA_SHAPE(4)), rand_leaf(GA_SHAPE(2, 4, 3))}, 2, &mm,
          "matmul (4)@(2,4,3)");
    check(apply_bin, (ga_tensor *[]){rand_leaf(GA_SHAPE(3, 4)), rand_leaf(GA_SHAPE(4))}, 2, &mm,
          "matmul (3,4)@(4)");
    check(apply_linear,
          (ga_tensor *[]){rand_leaf(GA_SHAPE(2, 3, 4)), rand_leaf(GA_SHAPE(5, 4)),
                          rand_leaf(GA_SHAPE(5))},
          3, NULL, "linear with bias");
    static const struct {
        unop f;
        const char *name;
        bool positive;
    } un[] = {
        {ga_neg, "neg", false},         {ga_exp, "exp", false},   {ga_log, "log", true},
        {ga_sqrt, "sqrt", true},        {ga_abs, "abs", false},   {ga_relu, "relu", false},
        {ga_sigmoid, "sigmoid", false}, {ga_tanh, "tanh", false}, {ga_sum, "sum", false},
        {ga_mean, "mean", false},
    };
    for (size_t i = 0; i < sizeof un / sizeof *un; i++) {
        struct op_case c = {.un = un[i].f};
        ga_tensor *x = ga_randn(dev, GA_SHAPE(3, 5));
        if (un[i].positive) {
            ga_tensor *abs = ga_abs(x), *p = ga_add_scalar(abs, 0.5f);
            ga_release(abs);
            ga_release(x);
            x = p;
        }
        check(apply_un, (ga_tensor *[]){ga_requires_grad_(x, true)}, 1, &c, un[i].name);
    }
    for (int dim = -3; dim < 3; dim++) {
        struct op_case c = {.dim = dim};
        char what[64];
        snprintf(what, sizeof what, "sum_dim/mean_dim/softmax/log_softmax dim %d", dim);
        check(apply_sum_dim, (ga_tensor *[]){rand_leaf(GA_SHAPE(2, 3, 4))}, 1, &c, what);
        check(apply_mean_dim, (ga_tensor *[]){rand_leaf(GA_SHAPE(2, 3, 4))}, 1, &c, what);
        check(apply_softmax, (ga_tensor *[]){rand_leaf(GA_SHAPE(2, 3, 4))}, 1, &c, what);
        check(apply_log_softmax, (ga_tensor *[]){rand_leaf(GA_SHAPE(2, 3, 4))}, 1, &c, what);
    }
    check(apply_transpose, (ga_tensor *[]){rand_leaf(GA_SHAPE(2, 3, 4))}, 1, NULL, "transpose");
    check(apply_reshape, (ga_tensor *[]){rand_leaf(GA_SHAPE(2, 3, 4))}, 1, NULL, "reshape");
    check(apply_mse, (ga_tensor *[]){rand_leaf(GA_SHAPE(3, 4)), rand_leaf(GA_SHAPE(3, 4))}, 2, NULL,
          "mse_loss");
}

struct param_case {
    int kind;
    float a, b;
};

static ga_tensor *apply_param(ga_tensor *const *in, int n, void *user) {
    const struct param_case *c = user;
    switch (c->kind) {
    case 0: return ga_pow(in[0], c->a);
    case 1: return ga_clamp(in[0], c->a, c->b);
    case 2: return ga_leaky_relu(in[0], c->a);
    case 3: return ga_gelu(in[0]);
    case 4: return ga_silu(in[0]);
    case 5: return ga_softplus(in[0]);
    case 6: return ga_l1_loss(in[0], in[1]);
    case 7: return ga_smooth_l1_loss(in[0], in[1], c->a);
    case 8: return ga_cross_entropy(in[0], in[1], (int64_t)c->a, c->b);
    case 9: return ga_nll_loss(in[0], in[1], (int64_t)c->a);
    case 10: return ga_bce_with_logits(in[0], in[1]);
    default: return ga_cross_entropy_probs(in[0], in[1], c->b);
    }
}

static ga_tensor *positive(int ndim, const int64_t *shape) {
    ga_tensor *x = ga_randn(dev, ndim, shape), *a = ga_abs(x), *p = ga_add_scalar(a, 0.5f);
    ga_release(x);
    ga_release(a);
    return ga_requires_grad_(p, true);
}

static void test_gradcheck_more(void) {
    static const struct {
        struct param_case c;
        const char *name;
    } un[] = {
        {{0, 3.0f, 0}, "pow 3"},     {{0, 2.0f, 0}, "pow 2"},      {{0, -0.5f, 0}, "pow -0.5"},
        {{1, -0.5f, 0.7f}, "clamp"}, {{2, 0.1f, 0}, "leaky_relu"}, {{3, 0, 0}, "gelu"},
        {{4, 0, 0}, "silu"},         {{5, 0, 0}, "softplus"},
    };
    for (size_t i = 0; i < sizeof un / sizeof *un; i++) {
        ga_tensor *x = un[i].c.kind == 0 ? positive(GA_SHAPE(3, 5)) : rand_leaf(GA_SHAPE(3, 5));
        check(apply_param, &x, 1, (void *)&un[i].c, un[i].name);
    }
    struct param_case l1 = {6}, sl1 = {7, 0.8f}, bce = {10};
    check(apply_param, (ga_tensor *[]){rand_leaf(GA_SHAPE(4, 3)), rand_leaf(GA_SHAPE(4, 3))}, 2,
          &l1, "l1_loss");
    check(apply_param, (ga_tensor *[]){rand_leaf(GA_SHAPE(4, 3)), rand_leaf(GA_SHAPE(4, 3))}, 2,
          &sl1, "smooth_l1_loss beta 0.8");
    check(apply_param, (ga_tensor *[]){rand_leaf(GA_SHAPE(4, 3)), ga_rand(dev, GA_SHAPE(4, 3))}, 2,
          &bce, "bce_with_logits");
    const float labels[5] = {2, 0, -100, 3, 1};
    struct param_case ce = {8, -100, 0}, ces = {8, -100, 0.1f}, nll = {9, -100},
                      cep = {11, 0, 0.2f};
    check(apply_param,
          (ga_tensor *[]){rand_leaf(GA_SHAPE(5, 4)), ga_from_array(dev, labels, 5, GA_SHAPE(5))}, 2,
          &ce, "cross_entropy with an ignored row");
    check(apply_param,
          (ga_tensor *[]){rand_leaf(GA_SHAPE(5, 4)), ga_from_array(dev, labels, 5, GA_SHAPE(5))}, 2,
          &ces, "cross_entropy with label smoothing");
    check(apply_param,
          (ga_tensor *[]){rand_leaf(GA_SHAPE(5, 4)), ga_from_array(dev, labels, 5, GA_SHAPE(5))}, 2,
          &nll, "nll_loss");
    ga_tensor *raw = ga_rand(dev, GA_SHAPE(5, 4)), *probs = ga_softmax(raw, -1);
    ga_release(raw);
    check(apply_param, (ga_tensor *[]){rand_leaf(GA_SHAPE(5, 4)), probs}, 2, &cep,
          "cross_entropy with probabilities");
    /* hand-computed: logits 0 everywhere give log(C) */
    ga_tensor *z = ga_zeros(dev, GA_SHAPE(2, 4)), *t = ga_from_array(dev, labels, 2, GA_SHAPE(2));
    ga_tensor *l = ga_cross_entropy(z, t, -100, 0);
    tap_ok(l && fabsf(ga_item(l) - logf(4)) < 1e-6f, "cross_entropy of zero logits is log(4)");
    ga_tensor *bad = ga_from_array(dev, (float[]){7, 0}, 2, GA_SHAPE(2));
    ggmlc_clear_error();
    tap_ok(!ga_cross_entropy(z, bad, -100, 0) && ggmlc_last_status() == GGMLC_ERR_INVALID_ARG,
           "a class index out of range: %s", ggmlc_last_error());
    ga_release(z), ga_release(t), ga_release(l), ga_release(bad);
}

static ga_tensor *apply_shape(ga_tensor *const *in, int n, void *user) {
    switch (*(int *)user) {
    case 0: return ga_permute(in[0], (const int[]){2, 0, 1});
    case 1: return ga_narrow(in[0], 1, 1, 2);
    case 2: return ga_unsqueeze(in[0], 1);
    case 3: return ga_squeeze(in[0], 0);
    case 4: return ga_expand(in[0], GA_SHAPE(2, 3, -1, 4));
    case 5: return ga_cat(in, n, 1);
    default: return ga_stack(in, n, 0);
    }
}

static void test_shapes(void) {
    static const char *const names[] = {"permute", "narrow", "unsqueeze", "squeeze", "expand"};
    for (int k = 0; k < 5; k++) {
        ga_tensor *x = k == 3   ? rand_leaf(GA_SHAPE(1, 3, 4))
                       : k == 4 ? rand_leaf(GA_SHAPE(3, 1, 1))
                                : rand_leaf(GA_SHAPE(2, 3, 4));
        check(apply_shape, &x, 1, &k, names[k]);
    }
    int cat = 5, stack = 6;
    check(apply_shape, (ga_tensor *[]){rand_leaf(GA_SHAPE(2, 1, 3)), rand_leaf(GA_SHAPE(2, 2, 3))},
          2, &cat, "cat of two along dim 1");
    ga_tensor *six[6];
    for (int i = 0; i < 6; i++) six[i] = rand_leaf(GA_SHAPE(2, i % 2 + 1, 3));
    check(apply_shape, six, 6, &cat, "cat of six along dim 1");
    check(apply_shape,
          (ga_tensor *[]){rand_leaf(GA_SHAPE(2, 3)), rand_leaf(GA_SHAPE(2, 3)),
                          rand_leaf(GA_SHAPE(2, 3))},
          3, &stack, "stack of three");
    ga_tensor *x = ga_arange(dev, 0, 10, 1), *parts[4];
    int n = ga_split(x, 4, 0, parts, 4);
    tap_ok(n == 3 && values_are(parts[0], (float[]){0, 1, 2, 3}, 4) &&
               values_are(parts[2], (float[]){8, 9}, 2),
           "split 10 by 4: 4, 4, 2");
    for (int i = 0; i < n; i++) ga_release(parts[i]);
    n = ga_chunk(x, 3, 0, parts, 4);
    tap_ok(n == 3 && ga_numel(parts[0]) == 4 && ga_numel(parts[2]) == 2, "chunk 10 in 3: 4, 4, 2");
    for (int i = 0; i < n; i++) ga_release(parts[i]);
    ga_tensor *m = ga_reshape(x, GA_SHAPE(2, 5)), *p = ga_permute(m, (const int[]){1, 0});
    tap_ok(values_are(p, (float[]){0, 5, 1, 6, 2, 7, 3, 8, 4, 9}, 10) && ga_size(p, 0) == 5,
           "permute (1, 0) of (2, 5) transposes");
    tap_ok(!ga_permute(m, (const int[]){0, 0}), "permute with a repeated dim: %s",
           ggmlc_last_error());
    tap_ok(!ga_narrow(m, 1, 3, 3), "narrow past the end: %s", ggmlc_last_error());
    ga_release(x), ga_release(m), ga_release(p);
}

static ga_tensor *apply_reduce(ga_tensor *const *in, int n, void *user) {
    const int *c = user; /* kind, dim */
    switch (c[0]) {
    case 0: return ga_max_dim(in[0], c[1], false);
    case 1: return ga_min_dim(in[0], c[1], true);
    case 2: return ga_var(in[0], c[1], true, false);
    case 3: return ga_std(in[0], c[1], false, true);
    default: return ga_logsumexp(in[0], c[1], false);
    }
}

static void test_reductions(void) {
    static const char *const names[] = {"max_dim", "min_dim", "var", "std", "logsumexp"};
    for (int kind = 0; kind < 5; kind++) {
        for (int dim = -3; dim < 3; dim += 2) {
            int c[2] = {kind, dim};
            char what[64];
            snprintf(what, sizeof what, "%s dim %d", names[kind], dim);
            check(apply_reduce, (ga_tensor *[]){rand_leaf(GA_SHAPE(2, 3, 4))}, 1, c, what);
        }
    }
    ga_tensor *x = ga_from_array(dev, (float[]){1, 5, 3, 7, 2, 0}, 6, GA_SHAPE(2, 3));
    ga_tensor *mx = ga_max_dim(x, 1, false), *am = ga_argmax(x, 1, false),
              *mn = ga_min_dim(x, 0, false);
    ga_tensor *v = ga_var(x, 1, true, false), *l = ga_logsumexp(x, 1, false);
    tap_ok(values_are(mx, (float[]){5, 7}, 2), "max over dim 1");
    tap_ok(values_are(am, (float[]){1, 0}, 2), "argmax over dim 1");
    tap_ok(values_are(mn, (float[]){1, 2, 0}, 3), "min over dim 0");
    tap_ok(values_are(v, (float[]){4, 13}, 2), "unbiased var over dim 1");
    tap_ok(values_are(l,
                      (float[]){(float)(5 + log(exp(-4.0) + 1 + exp(-2.0))),
                                (float)(7 + log(1 + exp(-5.0) + exp(-7.0)))},
                      2),
           "logsumexp over dim 1");
    ga_tensor *big = ga_from_array(dev, (float[]){1000, 1000}, 2, GA_SHAPE(2));
    ga_tensor *lb = ga_logsumexp(big, 0, false);
    tap_ok(fabsf(ga_item(lb) - (1000 + logf(2))) < 1e-3f, "logsumexp does not overflow");
    ga_release(x), ga_release(mx), ga_release(am), ga_release(mn), ga_release(v), ga_release(l);
    ga_release(big), ga_release(lb);
}

static ga_tensor *apply_nn(ga_tensor *const *in, int n, void *user) {
    switch (*(int *)user) {
    case 0: return ga_where(in[2], in[0], in[1]);
    case 1: return ga_masked_fill(in[0], in[1], -2.5f);
    case 2: return ga_layer_norm(in[0], in[1], in[2], 1e-5f);
    case 3: return ga_rms_norm(in[0], in[1], 1e-6f);
    case 4: return ga_batch_norm(in[0], NULL, NULL, in[1], in[2], true, 0.1f, 1e-5f);
    case 5: return ga_group_norm(in[0], 2, in[1], in[2], 1e-5f);
    case 6: return ga_embedding(in[1], in[0]);
    case 7:
        return ga_scaled_dot_product_attention(in[0], in[1], in[2], n > 3 ? in[3] : NULL, 0, false,
                                               0);
    default: return ga_scaled_dot_product_attention(in[0], in[1], in[2], NULL, 0, true, 0.5f);
    }
}

static ga_tensor *apply_softmax_ext(ga_tensor *const *in, int n, void *user) {
    return ga_softmax_ext(in[0], in[1], 0.7f, *(float *)user);
}

static ga_tensor *mask_of(const float *v, int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    return ga_from_array(dev, v, (size_t)n, ndim, shape);
}

static void test_nn(void) {
    const float m6[6] = {1, 0, 0, 2, 0, -1};
    int k[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
    check(apply_nn,
          (ga_tensor *[]){rand_leaf(GA_SHAPE(2, 3)), rand_leaf(GA_SHAPE(3)),
                          mask_of(m6, GA_SHAPE(2, 3))},
          3, &k[0], "where");
    check(apply_nn, (ga_tensor *[]){rand_leaf(GA_SHAPE(2, 3)), mask_of(m6, GA_SHAPE(2, 3))}, 2,
          &k[1], "masked_fill");
    check(
        apply_nn,
        (ga_tensor *[]){rand_leaf(GA_SHAPE(3, 5)), rand_leaf(GA_SHAPE(5)), rand_leaf(GA_SHAPE(5))},
        3, &k[2], "layer_norm");
    check(apply_nn, (ga_tensor *[]){rand_leaf(GA_SHAPE(3, 5)), rand_leaf(GA_SHAPE(5))}, 2, &k[3],
          "rms_norm");
    check(
        apply_nn,
        (ga_tensor *[]){rand_leaf(GA_SHAPE(4, 3)), rand_leaf(GA_SHAPE(3)), rand_leaf(GA_SHAPE(3))},
        3, &k[4], "batch_norm (N, C)");
    check(apply_nn,
          (ga_tensor *[]){rand_leaf(GA_SHAPE(2, 3, 2, 2)), rand_leaf(GA_SHAPE(3)),
                          rand_leaf(GA_SHAPE(3))},
          3, &k[4], "batch_norm (N, C, H, W)");
    check(apply_nn,
          (ga_tensor *[]){rand_leaf(GA_SHAPE(2, 4, 3)), rand_leaf(GA_SHAPE(4)),
                          rand_leaf(GA_SHAPE(4))},
          3, &k[5], "group_norm");
    check(
        apply_nn,
        (ga_tensor *[]){rand_leaf(GA_SHAPE(5, 3)), mask_of((float[]){4, 0, 4, 2}, GA_SHAPE(2, 2))},
        2, &k[6], "embedding");
    const float am[12] = {0, -1, 0, 0, 0, -3, 0, 0, -2, 0, 0, 0};
    check(apply_nn,
          (ga_tensor *[]){rand_leaf(GA_SHAPE(2, 3, 4)), rand_leaf(GA_SHAPE(2, 4, 4)),
                          rand_leaf(GA_SHAPE(2, 4, 2)), mask_of(am, GA_SHAPE(3, 4))},
          4, &k[7], "scaled_dot_product_attention with a mask");
    check(apply_nn,
          (ga_tensor *[]){rand_leaf(GA_SHAPE(3, 4)), rand_leaf(GA_SHAPE(3, 4)),
                          rand_leaf(GA_SHAPE(3, 2))},
          3, &k[8], "scaled_dot_product_attention causal");
    float no_alibi = 0, alibi = 8;
    check(apply_softmax_ext,
          (ga_tensor *[]){rand_leaf(GA_SHAPE(2, 3, 4)), mask_of(am, GA_SHAPE(3, 4))}, 2, &no_alibi,
          "softmax_ext scaled and masked");
    check(apply_softmax_ext,
          (ga_tensor *[]){rand_leaf(GA_SHAPE(4, 3, 4)), mask_of(am, GA_SHAPE(3, 4))}, 2, &alibi,
          "softmax_ext with ALiBi slopes (max_bias 8)");
    ga_tensor *sx = ga_randn(dev, GA_SHAPE(3, 4)), *sm = mask_of(am, GA_SHAPE(3, 4));
    ga_scope_begin();
    ga_tensor *ext = ga_softmax_ext(sx, sm, 0.7f, 0);
    ga_tensor *ref = ga_softmax(ga_add(ga_mul_scalar(sx, 0.7f), sm), -1);
    float ve[12], vr[12];
    tap_ok(ext && ref && ga_to_host(ext, ve, 12) == GGMLC_OK &&
               ga_to_host(ref, vr, 12) == GGMLC_OK && near_all(ve, vr, 12, 1e-5f),
           "softmax_ext equals softmax(x * scale + mask)");
    ga_scope_end();
    ga_release(sx), ga_release(sm);
    /* dropout: about p zeroed, the rest scaled; the identity when not training */
    ga_tensor *ones = ga_ones(dev, GA_SHAPE(4000)), *d = ga_dropout(ones, 0.25f, true);
    float v[4000];
    int zeros = 0;
    bool scaled = ga_to_host(d, v, 4000) == GGMLC_OK;
    for (int i = 0; i < 4000; i++) {
        zeros += v[i] == 0;
        scaled = scaled && (v[i] == 0 || fabsf(v[i] - 4.0f / 3) < 1e-6f);
    }
    tap_ok(scaled && zeros > 900 && zeros < 1100, "dropout 0.25: %d of 4000 zeroed, rest x 4/3",
           zeros);
    ga_tensor *e = ga_dropout(ones, 0.25f, false);
    ga_tensor *se = ga_sum(e);
    tap_ok(fabsf(ga_item(se) - 4000) < 1e-3f, "dropout in evaluation: identity");
    ga_release(se);
    /* batch-norm running statistics: mean of (1, 3) and (3, 5) per channel, momentum 0.5 */
    ga_tensor *x = ga_from_array(dev, (float[]){1, 3, 3, 5}, 4, GA_SHAPE(2, 2));
    ga_tensor *rm = ga_zeros(dev, GA_SHAPE(2)), *rv = ga_ones(dev, GA_SHAPE(2));
    ga_tensor *y = ga_batch_norm(x, rm, rv, NULL, NULL, true, 0.5f, 0);
    tap_ok(values_are(y, (float[]){-1, -1, 1, 1}, 4), "batch_norm normalises per channel");
    tap_ok(values_are(rm, (float[]){1, 2}, 2) && values_are(rv, (float[]){1.5f, 1.5f}, 2),
           "batch_norm updates the running mean and (unbiased) variance");
    ga_tensor *ye = ga_batch_norm(x, rm, rv, NULL, NULL, false, 0.5f, 0);
    const float inv = 1 / sqrtf(1.5f);
    tap_ok(values_are(ye, (float[]){0, 1 * inv, 2 * inv, 3 * inv}, 4),
           "batch_norm in evaluation uses the running statistics");
    ga_tensor *all[] = {ones, d, e, x, rm, rv, y, ye};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) ga_release(all[i]);
}

static ga_tensor *apply_conv(ga_tensor *const *in, int n, void *user) {
    switch (*(int *)user) {
    case 0: return ga_conv2d(in[0], in[1], in[2], 2, 1, 1);
    case 1: return ga_conv2d(in[0], in[1], NULL, 1, 0, 2);
    case 2: return ga_conv1d(in[0], in[1], in[2], 1, 1, 1);
    case 3: return ga_max_pool2d(in[0], 2, 2, 0);
    default: return ga_avg_pool2d(in[0], 2, 1, 0);
    }
}

static void test_conv(void) {
    int k[5] = {0, 1, 2, 3, 4};
    check(apply_conv,
          (ga_tensor *[]){rand_leaf(GA_SHAPE(2, 3, 5, 4)), rand_leaf(GA_SHAPE(2, 3, 3, 3)),
                          rand_leaf(GA_SHAPE(2))},
          3, &k[0], "conv2d stride 2 padding 1");
    check(apply_conv,
          (ga_tensor *[]){rand_leaf(GA_SHAPE(1, 2, 6, 6)), rand_leaf(GA_SHAPE(3, 2, 2, 2))}, 2,
          &k[1], "conv2d dilation 2");
    check(apply_conv,
          (ga_tensor *[]){rand_leaf(GA_SHAPE(2, 3, 7)), rand_leaf(GA_SHAPE(4, 3, 3)),
                          rand_leaf(GA_SHAPE(4))},
          3, &k[2], "conv1d padding 1");
    check(apply_conv, (ga_tensor *[]){rand_leaf(GA_SHAPE(2, 2, 4, 6))}, 1, &k[3], "max_pool2d");
    check(apply_conv, (ga_tensor *[]){rand_leaf(GA_SHAPE(2, 2, 4, 5))}, 1, &k[4], "avg_pool2d");
    /* hand-computed: a 2x2 kernel of ones sums each window */
    ga_tensor *x = ga_arange(dev, 0, 9, 1), *x4 = ga_reshape(x, GA_SHAPE(1, 1, 3, 3));
    ga_tensor *w = ga_ones(dev, GA_SHAPE(1, 1, 2, 2)), *y = ga_conv2d(x4, w, NULL, 1, 0, 1);
    tap_ok(values_are(y, (float[]){8, 12, 20, 24}, 4) && ga_size(y, 2) == 2,
           "conv2d of 0..8 with a 2x2 kernel of ones");
    ga_release(x), ga_release(x4), ga_release(w), ga_release(y);
}

static ga_tensor *apply_index(ga_tensor *const *in, int n, void *user) {
    switch (*(int *)user) {
    case 0: return ga_gather(in[0], 1, in[1]);
    case 1: return ga_gather(in[0], 0, in[1]);
    case 2: return ga_index_select(in[0], 1, in[1]);
    default: return ga_scatter_add(in[0], 1, in[1], in[2]);
    }
}

static void test_index(void) {
    int k[4] = {0, 1, 2, 3};
    const float i23[6] = {2, 0, 2, 1, 1, 0}, i3[3] = {3, 0, 3};
    check(apply_index, (ga_tensor *[]){rand_leaf(GA_SHAPE(2, 4)), mask_of(i23, GA_SHAPE(2, 3))}, 2,
          &k[0], "gather along dim 1");
    check(apply_index, (ga_tensor *[]){rand_leaf(GA_SHAPE(3, 3)), mask_of(i23, GA_SHAPE(2, 3))}, 2,
          &k[1], "gather along dim 0");
    check(apply_index, (ga_tensor *[]){rand_leaf(GA_SHAPE(2, 4, 2)), mask_of(i3, GA_SHAPE(3))}, 2,
          &k[2], "index_select along dim 1");
    check(apply_index,
          (ga_tensor *[]){rand_leaf(GA_SHAPE(2, 4)), mask_of(i23, GA_SHAPE(2, 3)),
                          rand_leaf(GA_SHAPE(2, 3))},
          3, &k[3], "scatter_add");
    ga_tensor *t = ga_from_array(dev, (float[]){10, 11, 12, 13, 14, 15}, 6, GA_SHAPE(2, 3));
    ga_tensor *idx = ga_from_array(dev, (float[]){2, 2, 0, 1}, 4, GA_SHAPE(2, 2));
    ga_tensor *g = ga_gather(t, 1, idx);
    tap_ok(values_are(g, (float[]){12, 12, 13, 14}, 4), "gather picks t[i][idx[i][j]]");
    ga_tensor *src = ga_ones(dev, GA_SHAPE(2, 2)), *sa = ga_scatter_add(t, 1, idx, src);
    tap_ok(values_are(sa, (float[]){10, 11, 14, 14, 15, 15}, 6), "scatter_add adds at idx");
    ga_tensor *bad = ga_from_array(dev, (float[]){3, 0, 0, 0}, 4, GA_SHAPE(2, 2));
    tap_ok(!ga_gather(t, 1, bad), "gather with an index out of range: %s", ggmlc_last_error());
    ga_release(t), ga_release(idx), ga_release(g), ga_release(src), ga_release(sa), ga_release(bad);
}

/* A graph longer than a segment: flushes in the middle of forward and of backward. */
static void test_long_chain(void) {
    ga_tensor *x = ga_requires_grad_(ga_ones(dev, GA_SHAPE(3)), true);
    ga_scope_begin();
    ga_tensor *y = x;
    for (int i = 0; i < 12000; i++) y = ga_mul_scalar(y, 1.00005f);
    ga_tensor *s = ga_sum(y);
    float before = ga_item(s); /* a flush between forward and backward too */
    bool ok = ga_backward(s) == GGMLC_OK;
    const float want = powf(1.00005f, 12000);
    float g[3] = {0};
    ok = ok && ga_to_host(ga_grad(x), g, 3) == GGMLC_OK;
    tap_ok(ok && fabsf(before - 3 * want) < 1e-3f && fabsf(g[0] - want) < 1e-3f,
           "a chain of 12000 ops: value %.5f and gradient %.5f (want %.5f)", before / 3, g[0],
           want);
    ga_scope_end();
    ga_release(x);
}

/* ---------------------------------------------------------- memory */

/* A small training loop of plain SGD: storage and handle counts stay flat. */
static void test_constant_memory(void) {
    ga_manual_seed(7);
    ga_tensor *w0 = ga_randn(dev, GA_SHAPE(8, 4));
    ga_tensor *w = ga_requires_grad_(ga_mul_scalar(w0, 0.1f), true);
    ga_release(w0);
    ga_tensor *x = ga_randn(dev, GA_SHAPE(16, 4)), *y = ga_randn(dev, GA_SHAPE(16, 8));
    size_t bytes0 = 0, alive0 = 0;
    float first = 0, last = 0;
    for (int step = 0; step < 10000; step++) {
        ga_scope_begin();
        ga_tensor *loss = ga_mse_loss(ga_linear(x, w, NULL), y);
        ga_backward(loss);
        bool was = ga_set_grad_enabled(false);
        ga_assign_(w, ga_sub(w, ga_mul_scalar(ga_grad(w), 0.05f)));
        ga_set_grad_enabled(was);
        ga_zero_grad(w);
        if (step % 100 == 0 || step == 9999) last = ga_item(loss);
        if (step == 0) first = last;
        ga_scope_end();
        if (step == 100) {
            bytes0 = ga_device_bytes_in_use(dev);
            alive0 = ga_device_tensors_alive(dev);
        }
    }
    ga_synchronize(dev);
    tap_ok(ga_device_bytes_in_use(dev) <= bytes0 && ga_device_tensors_alive(dev) <= alive0,
           "10,000 steps in constant memory (%zu bytes, %zu tensors at step 100; %zu, %zu after)",
           bytes0, alive0, ga_device_bytes_in_use(dev), ga_device_tensors_alive(dev));
    tap_ok(last < first, "the loop learns (loss %.4f -> %.4f)", first, last);
    ga_release(w), ga_release(x), ga_release(y);
}

/* ---------------------------------------------------------- errors */

static void test_errors(void) {
    ga_tensor *a = ga_zeros(dev, GA_SHAPE(2, 3)), *b = ga_zeros(dev, GA_SHAPE(4));
    ggmlc_clear_error();
    tap_ok(!ga_add(a, b) && ggmlc_last_status() == GGMLC_ERR_SHAPE, "add of (2,3) and (4): %s",
           ggmlc_last_error());
    tap_ok(!ga_matmul(a, a) && ggmlc_last_status() == GGMLC_ERR_SHAPE, "matmul (2,3)@(2,3): %s",
           ggmlc_last_error());
    ggmlc_clear_error();
    tap_ok(!ga_exp(ga_add(a, b)), "a failed op's NULL passes down the chain");
    tap_ok(!ga_from_array(dev, (float[]){1, 2}, 2, GA_SHAPE(3)),
           "from_array with a wrong length: %s", ggmlc_last_error());
    tap_ok(!ga_zeros(dev, GA_SHAPE(2, 0)), "a zero size: %s", ggmlc_last_error());
    tap_ok(isnan(ga_item(a)), "item of 6 elements: %s", ggmlc_last_error());
    tap_ok(ga_backward(a) != GGMLC_OK, "backward of a tensor without grad: %s", ggmlc_last_error());
    tap_ok(!ga_device_get("NoSuchDevice9"), "an unknown device: %s", ggmlc_last_error());
    tap_ok(!ga_sum_dim(a, 2, false), "sum over a missing dim: %s", ggmlc_last_error());
    tap_ok(!ga_reshape(a, GA_SHAPE(4, -1)), "reshape 6 elements to (4, -1): %s",
           ggmlc_last_error());
    ga_device *cpu = ga_device_get("CPU");
    if (cpu && cpu != dev) { /* a second device: mixing is an error, ga_to copies */
        ga_tensor *c = ga_ones(cpu, GA_SHAPE(4)), *moved = ga_to(c, dev), *back = ga_to(moved, cpu);
        tap_ok(!ga_add(b, c) && strstr(ggmlc_last_error(), "two devices"),
               "tensors of two devices: %s", ggmlc_last_error());
        tap_ok(ga_device_of(moved) == dev && values_are(back, (float[]){1, 1, 1, 1}, 4),
               "ga_to copies to %s and back", ga_device_name(dev));
        ga_release(c), ga_release(moved), ga_release(back);
    }
    ga_release(b);
    tap_ok(!ga_exp(b) && strstr(ggmlc_last_error(), "release"), "use after release: %s",
           ggmlc_last_error());
    ga_release(a);
}

int main(int argc, char **argv) {
    const char *name = argc > 1 ? argv[1] : NULL;
    dev = ga_device_get(name);
    if (!dev) return tap_skip_all(ggmlc_last_error());
    tap_diag("device %s", ga_device_name(dev));
    test_creation();
    test_forward();
    test_backward_values();
    test_gradcheck();
    test_gradcheck_more();
    test_shapes();
    test_reductions();
    test_nn();
    test_conv();
    test_index();
    test_long_chain();
    test_errors();
    test_constant_memory();
    tap_ok(ga_device_tensors_alive(dev) == 0, "every tensor was released (%zu alive)",
           ga_device_tensors_alive(dev));
    ga_shutdown();
    return tap_done();
}
