/*
 * ops-unary.c - the elementwise functions with a parameter or a less plain derivative: pow,
 * clamp, leaky_relu, gelu (exact, erf), silu, softplus.
 */
#include <math.h>

#include "ggmlc.h"
#include "autograd-impl.h"

enum unary2_kind { U2_POW, U2_CLAMP, U2_LEAKY, U2_GELU, U2_SILU, U2_SOFTPLUS };

/* The standard normal distribution function Phi(x) = (1 + erf(x / sqrt 2)) / 2, from
 * Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7): ggml has no erf. */
static struct ggml_tensor *normal_cdf(struct ggml_context *ctx, struct ggml_tensor *x) {
    static const float a[5] = {0.254829592f, -0.284496736f, 1.421413741f, -1.453152027f,
                               1.061405429f};
    struct ggml_tensor *z = ggml_scale(ctx, ggml_abs(ctx, x), (float)M_SQRT1_2);
    /* t = 1 / (1 + p z), as exp(-log(.)) since ggml has no reciprocal */
    struct ggml_tensor *t =
        ggml_exp(ctx, ggml_neg(ctx, ggml_log(ctx, ggml_scale_bias(ctx, z, 0.3275911f, 1))));
    struct ggml_tensor *poly = ggml_scale(ctx, t, a[4]);
    for (int i = 3; i >= 0; i--) poly = ggml_mul(ctx, t, ggml_scale_bias(ctx, poly, 1, a[i]));
    struct ggml_tensor *tail = ggml_mul(ctx, poly, ggml_exp(ctx, ggml_neg(ctx, ggml_sqr(ctx, z))));
    struct ggml_tensor *erf_abs = ggml_scale_bias(ctx, tail, -1, 1);
    return ggml_scale_bias(ctx, ggml_mul(ctx, ggml_sgn(ctx, x), erf_abs), 0.5f, 0.5f);
}

/* x^e: by multiplication for integer exponents (any sign of x), else exp(e log x) (x > 0). */
static struct ggml_tensor *power_node(struct ggml_context *ctx, struct ggml_tensor *x, float e) {
    if (e == 0.5f) return ggml_sqrt(ctx, x);
    if (e != floorf(e) || fabsf(e) > 64) return ggml_exp(ctx, ggml_scale(ctx, ggml_log(ctx, x), e));
    if (e == 0) return ggml_scale_bias(ctx, ggml_step(ctx, x), 0, 1);
    int n = (int)fabsf(e);
    struct ggml_tensor *result = NULL, *base = x;
    for (; n > 0; n >>= 1) { /* binary powering */
        if (n & 1) result = result ? ggml_mul(ctx, result, base) : ggml_scale(ctx, base, 1);
        if (n > 1) base = ggml_sqr(ctx, base);
    }
    if (e > 0) return result;
    return ggml_div(ctx, ggml_scale_bias(ctx, ggml_step(ctx, x), 0, 1), result); /* 1 / x^n */
}

static struct ggml_tensor *softplus_node(struct ggml_context *ctx, struct ggml_tensor *x) {
    /* max(x, 0) + log(1 + exp(-|x|)): no overflow for large |x| */
    struct ggml_tensor *e = ggml_exp(ctx, ggml_neg(ctx, ggml_abs(ctx, x)));
    return ggml_add(ctx, ggml_relu(ctx, x), ggml_log(ctx, ggml_scale_bias(ctx, e, 1, 1)));
}

static struct ggml_tensor *forward(struct ggml_context *ctx, enum unary2_kind k,
                                   struct ggml_tensor *x, const float *f) {
    switch (k) {
    case U2_POW: return power_node(ctx, x, f[0]);
    case U2_CLAMP: return ggml_clamp(ctx, ggml_dup(ctx, x), f[0], f[1]); /* in place in ggml */
    case U2_LEAKY: return ggml_leaky_relu(ctx, x, f[0], false);
    case U2_GELU: return ggml_gelu_erf(ctx, x);
    case U2_SILU: return ggml_silu(ctx, x);
    default: return softplus_node(ctx, x);
    }
}

static void unary2_vjp(const struct ga_fn *fn, struct ggml_tensor *g, ga_tensor *out,
                       struct ggml_tensor *grads[GA_MAX_INPUTS]) {
    struct ggml_context *ctx = ggmlc__ga_ctx(out);
    struct ggml_tensor *x = ggmlc__ga_node(fn->inputs[0]), *y = ggmlc__ga_node(out), *d;
    const float *f = fn->f;
    switch ((enum unary2_kind)fn->i[0]) {
    case U2_POW: /* e x^(e-1) */
        if (f[0] == 2)
            d = ggml_scale(ctx, x, 2);
        else
            d = ggml_scale(ctx, ggml_div(ctx, y, x), f[0]);
        break;
    case U2_CLAMP: /* 1 inside [min, max] */
        d = ggml_mul(ctx, ggml_step(ctx, ggml_scale_bias(ctx, x, 1, -f[0] + 1e-30f)),
                     ggml_step(ctx, ggml_scale_bias(ctx, x, -1, f[1] + 1e-30f)));
        break;
    case U2_LEAKY: d = ggml_scale_bias(ctx, ggml_step(ctx, x), 1 - f[0], f[0]); break;
    case U2_GELU: { /* Phi(x) + x phi(x) */
        struct ggml_tensor *pdf =
            ggml_scale(ctx, ggml_exp(ctx, ggml_scale(ctx, ggml_sqr(ctx, x), -0.5f)),
                       (float)(0.5 * M_2_SQRTPI * M_SQRT1_2));
        d = ggml_add(ctx, normal_cdf(ctx, x), ggml_mul(ctx, x, pdf));
        break;
    }
    case U2_SILU: grads[0] = ggml_silu_back(ctx, g, x); return;
    default: d = ggml_sigmoid(ctx, x); break;
    }
    grads[0] = ggml_mul(ctx, g, d);
}

static ga_tensor *unary2(const ga_tensor *ca, enum unary2_kind k, float f0, float f1,
                         const char *op) {
    ga_tensor *a = (ga_tensor *)ca;
    if (!ggmlc__ga_check(a, op) || !ggmlc__ga_reserve(a->dev, 8)) return NULL;
    struct ggml_tensor *n = ggmlc__ga_node(a);
    if (!n) return NULL;
    struct ggml_context *ctx = ggmlc__ga_ctx(a);
    if (!ggml_is_contiguous(n)) n = ggml_cont(ctx, n);
    const float f[2] = {f0, f1};
    ga_tensor *r = ggmlc__ga_from_node(a->dev, forward(ctx, k, n, f), a->ndim);
    r = ggmlc__ga_record(r, op, unary2_vjp, &a, 1);
    if (r && r->fn) {
        r->fn->i[0] = k;
        r->fn->f[0] = f0;
        r->fn->f[1] = f1;
    }
    return r;
}

ga_tensor *ga_pow(const ga_tensor *t, float exponent) {
    return unary2(t, U2_POW, exponent, 0, "ga_pow");
}
ga_tensor *ga_clamp(const ga_tensor *t, float min, float max) {
    if (isnan(min) || isnan(max) || min > max) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ga_clamp: min %g above max %g", min, max);
        return NULL;
    }
    return unary2(t, U2_CLAMP, min, max, "ga_clamp");
}
ga_tensor *ga_leaky_relu(const ga_tensor *t, float slope) {
    return unary2(t, U2_LEAKY, slope, 0, "ga_leaky_relu");
}
ga_tensor *ga_gelu(const ga_tensor *t) { return unary2(t, U2_GELU, 0, 0, "ga_gelu"); }
ga_tensor *ga_silu(const ga_tensor *t) { return unary2(t, U2_SILU, 0, 0, "ga_silu"); }
ga_tensor *ga_softplus(const ga_tensor *t) { return unary2(t, U2_SOFTPLUS, 0, 0, "ga_softplus"); }
