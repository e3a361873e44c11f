/*
 * ops-backward.c - CPU kernels of the operators that autograd adds:
 * UNARY_BACK, dy * f'(x) for every unary function f.
 */
#include <math.h>
#include <string.h>

#include "cpu-impl.h"
#include "graph.h"  /* cpu_claim_rows */
#include "ops-ew.h" /* EW_CLONES */

static float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* f'(x) for unary function op; p holds the forward node's values (ggmlc_unary_params). */
static float unary_derivative(enum ggml_unary_op op, float x, const float *p) {
    switch (op) {
    case GGML_UNARY_OP_ABS: return (float)((x > 0) - (x < 0));
    case GGML_UNARY_OP_NEG: return -1.0f;
    case GGML_UNARY_OP_TANH: { const float t = tanhf(x); return 1.0f - t * t; }
    case GGML_UNARY_OP_ELU: return x > 0 ? 1.0f : expf(x);
    case GGML_UNARY_OP_RELU: return x > 0 ? 1.0f : 0.0f;
    case GGML_UNARY_OP_SIGMOID: { const float s = sigmoid(x); return s * (1.0f - s); }
    case GGML_UNARY_OP_GELU: { /* tanh approximation: y = x/2 (1 + tanh(c (x + k x^3))) */
        const float c = 0.7978845608028654f, k = 0.044715f;
        const float t = tanhf(c * (x + k * x * x * x));
        return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * c * (1.0f + 3.0f * k * x * x);
    }
    case GGML_UNARY_OP_GELU_ERF:
        return 0.5f * (1.0f + erff(x * 0.70710678118654752f)) + x * expf(-0.5f * x * x) * 0.3989422804014327f;
    case GGML_UNARY_OP_GELU_QUICK: { const float s = sigmoid(1.702f * x); return s + 1.702f * x * s * (1.0f - s); }
    case GGML_UNARY_OP_SILU: { const float s = sigmoid(x); return s * (1.0f + x * (1.0f - s)); }
    case GGML_UNARY_OP_HARDSWISH: return x <= -3.0f ? 0.0f : x >= 3.0f ? 1.0f : (2.0f * x + 3.0f) / 6.0f;
    case GGML_UNARY_OP_HARDSIGMOID: return x > -3.0f && x < 3.0f ? 1.0f / 6.0f : 0.0f;
    case GGML_UNARY_OP_EXP: case GGML_UNARY_OP_EXPM1: return expf(x);
    case GGML_UNARY_OP_SOFTPLUS: return sigmoid(x);
    case GGML_UNARY_OP_XIELU: { /* p = alpha_n, alpha_p, beta, eps */
        const float alpha_n = p[0], alpha_p = p[1], beta = p[2], eps = p[3];
        if (x > 0) return 2.0f * alpha_p * x + beta;
        return (x < eps ? expf(x) - 1.0f : -1.0f) * alpha_n + beta;
    }
    default: return 0.0f; /* piecewise-constant functions */
    }
}

/* out = dy * f'(x) on contiguous rows, the common training case.  The derivatives use the
 * element-wise file's libm-free exp and tanh (ops-ew.h), so these loops vectorize: a
 * Transformer's GELU backward was 14% of its training step through tanhf and expm1f. */
typedef void (*back_row_fn)(const float *restrict x, const float *restrict dy, float *restrict out, int64_t n);

#define BACK_ROW_FN(name, expr)                                                                            \
    EW_CLONES static void name(const float *restrict x, const float *restrict dy, float *restrict out,  \
                               int64_t n) {                                                            \
        for (int64_t i = 0; i < n; i++) {                                                              \
            const float v = x[i];                                                                      \
            out[i] = dy[i] * (expr);                                                                   \
        }                                                                                              \
    }

#define GELU_C 0.7978845608028654f /* sqrt(2 / pi) */
#define GELU_K 0.044715f

static inline float ew_sigmoid(float v) { return 1.0f / (1.0f + ew_expf(-v)); }

/* GELU, tanh form, y = x s with s = sigmoid(2u) = 1 / (1 + E), E = e^-2u, u = c (x + k x^3)
 * (ops-unary.c): y' = s + 2 x u' s (1 - s) = s + 2 c x (1 + 3 k x^2) E s^2, since 1 - s = E s.
 * One exponential and one division, and no cancellation: 1 - s is never formed.  Past
 * -2u = 80 (x below about -9) the derivative is below 1e-30 and E s^2 would be inf x 0: 0. */
static inline float gelu_derivative(float v) {
    const float minus_2u = -2.0f * GELU_C * (v + GELU_K * v * v * v), e = ew_expf(minus_2u), s = 1.0f / (1.0f + e);
    const float d = s + 2.0f * GELU_C * v * (1.0f + 3.0f * GELU_K * v * v) * (e * s * s);
    return minus_2u > 80.0f ? 0.0f : d;
}

static inline float gelu_quick_derivative(float v) {
    const float s = ew_sigmoid(1.702f * v);
    return s + 1.702f * v * s * (1.0f - s);
}

static inline float tanh_derivative(float v) {
    const float t = ew_tanhf(v);
    return 1.0f - t * t;
}

/* ReLU's is a select (no product: a masked infinite or NaN gradient stays out). */
EW_CLONES static void relu_back_row(const float *restrict x, const float *restrict dy, float *restrict out,
                                    int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = x[i] > 0.0f ? dy[i] : 0.0f;
}
/* The SIMD path's kernel takes the row where it has one (ops-glu.c), this loop the rest. */
EW_CLONES static void gelu_back_row(const float *restrict x, const float *restrict dy,
                                    float *restrict out, int64_t n) {
    for (int64_t i = cpu_gelu_back_row_simd(n, out, x, dy); i < n; i++)
        out[i] = dy[i] * gelu_derivative(x[i]);
}
BACK_ROW_FN(gelu_quick_back_row, gelu_quick_derivative(v))
BACK_ROW_FN(silu_back_row, ew_sigmoid(v) * (1.0f + v * (1.0f - ew_sigmoid(v))))
BACK_ROW_FN(sigmoid_back_row, ew_sigmoid(v) * (1.0f - ew_sigmoid(v)))
BACK_ROW_FN(tanh_back_row, tanh_derivative(v))

/* The vectorized row of op, or NULL where only the scalar loop below exists. */
static back_row_fn back_row_of(enum ggml_unary_op op) {
    switch (op) {
    case GGML_UNARY_OP_RELU: return relu_back_row;
    case GGML_UNARY_OP_GELU: return gelu_back_row;
    case GGML_UNARY_OP_GELU_QUICK: return gelu_quick_back_row;
    case GGML_UNARY_OP_SILU: return silu_back_row;
    case GGML_UNARY_OP_SIGMOID: return sigmoid_back_row;
    case GGML_UNARY_OP_TANH: return tanh_back_row;
    default: return NULL;
    }
}

static enum ggml_status unary_back(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *x = dst->src[0], *dy = dst->src[1];
    const struct ggmlc_unary_params u = ggmlc_unary_params_of(dst);
    const enum ggml_unary_op op = (enum ggml_unary_op)u.op;
    const float *p = u.p;
    const int64_t ne0 = dst->ne[0], nr = ggml_nrows(dst);
    const back_row_fn row_fn =
        x->nb[0] == sizeof(float) && dy->nb[0] == sizeof(float) ? back_row_of(op) : NULL;
    for (int64_t last = -1, r0 = 0, r1 = 0; cpu_claim_rows(call, nr, &last, &r0, &r1);)
        for (int64_t r = r0; r < r1; r++) {
            const int64_t i1 = r % dst->ne[1], i2 = (r / dst->ne[1]) % dst->ne[2],
                          i3 = r / (dst->ne[1] * dst->ne[2]);
            const char *xr = (const char *)x->data + i1 * x->nb[1] + i2 * x->nb[2] + i3 * x->nb[3];
            const char *dr =
                (const char *)dy->data + i1 * dy->nb[1] + i2 * dy->nb[2] + i3 * dy->nb[3];
            float *out =
                (float *)((char *)dst->data + i1 * dst->nb[1] + i2 * dst->nb[2] + i3 * dst->nb[3]);
            if (row_fn) {
                row_fn((const float *)xr, (const float *)dr, out, ne0);
                continue;
            }
            for (int64_t i = 0; i < ne0; i++) {
                const float xv = *(const float *)(xr + i * x->nb[0]),
                            dv = *(const float *)(dr + i * dy->nb[0]);
                out[i] = dv * unary_derivative(op, xv, p);
            }
        }
    return GGML_STATUS_SUCCESS;
}

void cpu_ops_backward_register(struct cpu_op_table *t) {
    t->compute[GGML_OP_UNARY_BACK] = unary_back;
}
