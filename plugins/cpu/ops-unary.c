/*
 * ops-unary.c - element-wise functions of one operand: GGML_OP_UNARY
 * (activations), sqr/sqrt/log/sin/cos, scale, clamp, leaky_relu and fill.
 * Every one maps a row of floats to a row of floats; the driver handles
 * types and strides.
 */
#include "graph.h" /* cpu_claim_rows */
#include "ops-ew.h"

/* y[i] = f(x[i]) for one row; p holds the node's float parameters. */
typedef void (*unary_row_fn)(int64_t n, float *y, const float *x, const float *p);

#define ROW_FN(name, expr)                                                          \
    EW_CLONES static void name(int64_t n, float *y, const float *x, const float *p) {         \
        (void)p;                                                                    \
        for (int64_t i = 0; i < n; i++) {                                           \
            const float v = x[i];                                                   \
            y[i] = (expr);                                                          \
        }                                                                           \
    }

#define SQRT_2_OVER_PI 0.7978845608028654f
#define GELU_COEF_A    0.044715f
#define SQRT_1_2       0.7071067811865476f

static inline float sigmoid(float v) { return 1.0f / (1.0f + ew_expf(-v)); }
/* GELU's tanh form x (1 + tanh(u)) / 2, u = c (x + k x^3), as x sigmoid(2u) = x / (1 + e^-2u)
 * (the same function: 1 + tanh(u) = 2 sigmoid(2u)): one exponential and one division, where
 * tanh took both a series (near 0) and the exponential form, selected (ggmlc-gpt training's
 * GELU nodes: 1.3x faster).  Near tanh = -1 it also keeps the relative
 * precision that 1 + tanh(u) loses. */
static inline float gelu_tanh(float v) {
    return v / (1.0f + ew_expf(-2.0f * SQRT_2_OVER_PI * v * (1.0f + GELU_COEF_A * v * v)));
}
static inline float gelu_erf(float v) { return 0.5f * v * (1.0f + erff(v * SQRT_1_2)); }
static inline float gelu_quick(float v) { return v * sigmoid(1.702f * v); }
static inline float hardsigmoid(float v) { return fminf(1.0f, fmaxf(0.0f, (v + 3.0f) / 6.0f)); }

ROW_FN(row_abs, fabsf(v))
ROW_FN(row_sgn, (float)((v > 0.0f) - (v < 0.0f)))
ROW_FN(row_neg, -v)
ROW_FN(row_step, v > 0.0f ? 1.0f : 0.0f)
ROW_FN(row_tanh, ew_tanhf(v))
ROW_FN(row_elu, v > 0.0f ? v : expm1f(v))
ROW_FN(row_relu, v > 0.0f ? v : 0.0f)
ROW_FN(row_sigmoid, sigmoid(v))
/* The SIMD path's kernel takes the row where it has one (ops-glu.c), this loop the rest. */
EW_CLONES static void row_gelu(int64_t n, float *y, const float *x, const float *p) {
    (void)p;
    for (int64_t i = cpu_gelu_row_simd(n, y, x); i < n; i++) y[i] = gelu_tanh(x[i]);
}
ROW_FN(row_gelu_quick, gelu_quick(v))
ROW_FN(row_hardswish, v * hardsigmoid(v))
ROW_FN(row_hardsigmoid, hardsigmoid(v))
ROW_FN(row_exp, ew_expf(v))
ROW_FN(row_expm1, expm1f(v))
ROW_FN(row_softplus, v > 20.0f ? v : log1pf(expf(v)))
ROW_FN(row_gelu_erf, gelu_erf(v))
ROW_FN(row_floor, floorf(v))
ROW_FN(row_ceil, ceilf(v))
ROW_FN(row_round, roundf(v))
ROW_FN(row_trunc, truncf(v))
ROW_FN(row_sqr, v * v)
ROW_FN(row_sqrt, sqrtf(v))
ROW_FN(row_log, logf(v))
ROW_FN(row_sin, sinf(v))
ROW_FN(row_cos, cosf(v))
/* SILU in ggml's x86 rounding (its SIMD expf on all but a row's last n % 8 or 16 values):
 * map_rows passes pieces that start at multiples of 16. */
static void row_silu(int64_t n, float *y, const float *x, const float *p) {
    (void)p;
    cpu_silu_mul_row(n, y, x, NULL);
}
/* p = the op's parameters (row_params): xielu {alpha_n, alpha_p, beta, eps}; scale {s, b};
 * clamp {min, max}; leaky_relu {slope}; fill {c} */
ROW_FN(row_xielu,
       v > 0.0f ? p[1] * v * v + p[2] * v : (expm1f(fminf(v, p[3])) - v) * p[0] + p[2] * v)
ROW_FN(row_scale, p[0] * v + p[1])
ROW_FN(row_clamp, fminf(fmaxf(v, p[0]), p[1]))
ROW_FN(row_leaky_relu, v > 0.0f ? v : p[0] * v)
EW_CLONES static void row_fill(int64_t n, float *y, const float *x, const float *p) {
    (void)x;
    for (int64_t i = 0; i < n; i++) y[i] = p[0];
}

static const unary_row_fn unary_fns[GGML_UNARY_OP_COUNT] = {
    [GGML_UNARY_OP_ABS] = row_abs,           [GGML_UNARY_OP_SGN] = row_sgn,
    [GGML_UNARY_OP_NEG] = row_neg,           [GGML_UNARY_OP_STEP] = row_step,
    [GGML_UNARY_OP_TANH] = row_tanh,         [GGML_UNARY_OP_ELU] = row_elu,
    [GGML_UNARY_OP_RELU] = row_relu,         [GGML_UNARY_OP_SIGMOID] = row_sigmoid,
    [GGML_UNARY_OP_GELU] = row_gelu,         [GGML_UNARY_OP_GELU_QUICK] = row_gelu_quick,
    [GGML_UNARY_OP_SILU] = row_silu,         [GGML_UNARY_OP_HARDSWISH] = row_hardswish,
    [GGML_UNARY_OP_HARDSIGMOID] = row_hardsigmoid, [GGML_UNARY_OP_EXP] = row_exp,
    [GGML_UNARY_OP_EXPM1] = row_expm1,       [GGML_UNARY_OP_SOFTPLUS] = row_softplus,
    [GGML_UNARY_OP_GELU_ERF] = row_gelu_erf, [GGML_UNARY_OP_XIELU] = row_xielu,
    [GGML_UNARY_OP_FLOOR] = row_floor,       [GGML_UNARY_OP_CEIL] = row_ceil,
    [GGML_UNARY_OP_ROUND] = row_round,       [GGML_UNARY_OP_TRUNC] = row_trunc,
};

/* Apply fn to columns [c0, c1) of rows [r0, r1) of src[0] into dst. */
static void map_row_range(struct ggml_tensor *dst, unary_row_fn fn, const float *p, int64_t r0,
                          int64_t r1, int64_t c0, int64_t c1) {
    const struct ggml_tensor *a = dst->src[0];
    const bool fast = dst->type == GGML_TYPE_F32 && a->type == GGML_TYPE_F32 &&
                      dst->nb[0] == sizeof(float) && a->nb[0] == sizeof(float);
    float xs[EW_CHUNK], ys[EW_CHUNK];
    for (int64_t ir = r0; ir < r1; ir++) {
        int64_t i1, i2, i3;
        ew_row_coords(ir, dst->ne, &i1, &i2, &i3);
        char *y = ew_row(dst, i1, i2, i3);
        const char *x = ew_row(a, i1, i2, i3);
        if (fast) {
            fn(c1 - c0, (float *)y + c0, (const float *)x + c0, p);
            continue;
        }
        for (int64_t off = c0; off < c1; off += EW_CHUNK) {
            const int64_t n = c1 - off < EW_CHUNK ? c1 - off : EW_CHUNK;
            ew_load(xs, x + off * a->nb[0], a->type, a->nb[0], n);
            fn(n, ys, xs, p);
            ew_store(y + off * dst->nb[0], dst->type, dst->nb[0], ys, n);
        }
    }
}

/* Apply fn to every row of src[0] into dst (same shape; any float types and strides): rows
 * claimed in chunks (cpu_claim_rows) where there are rows for every task, else every row's
 * share of columns (ew_task_share). */
static enum ggml_status map_rows(const struct ggmlc_op_call *call, struct ggml_tensor *dst,
                                 unary_row_fn fn, const float *p) {
    const int64_t nrows = ggml_nrows(dst);
    if (nrows < call->nth) {
        int64_t r0, r1, c0, c1;
        ew_task_share(nrows, dst->ne[0], call->ith, call->nth, &r0, &r1, &c0, &c1);
        map_row_range(dst, fn, p, r0, r1, c0, c1);
        return GGML_STATUS_SUCCESS;
    }
    for (int64_t last = -1, r0 = 0, r1 = 0; cpu_claim_rows(call, nrows, &last, &r0, &r1);)
        map_row_range(dst, fn, p, r0, r1, 0, dst->ne[0]);
    return GGML_STATUS_SUCCESS;
}

/* The values the row functions take as p, read through the op's reader (zeros for the others). */
static void row_params(const struct ggml_tensor *dst, float p[4]) {
    memset(p, 0, 4 * sizeof *p);
    switch (dst->op) {
    case GGML_OP_UNARY: memcpy(p, ggmlc_unary_params_of(dst).p, 4 * sizeof *p); break;
    case GGML_OP_SCALE: {
        const struct ggmlc_scale_params s = ggmlc_scale_params_of(dst);
        p[0] = s.s, p[1] = s.b;
        break;
    }
    case GGML_OP_CLAMP: {
        const struct ggmlc_clamp_params c = ggmlc_clamp_params_of(dst);
        p[0] = c.min, p[1] = c.max;
        break;
    }
    case GGML_OP_LEAKY_RELU:
    case GGML_OP_FILL: p[0] = ggmlc_op_param_f32(dst, 0); break;
    default: break;
    }
}

static enum ggml_status compute_unary(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    float p[4];
    row_params(dst, p);
    return map_rows(call, dst, unary_fns[ggml_get_unary_op(dst)], p);
}

#define SIMPLE_KERNEL(name, fn)                                                                  \
    static enum ggml_status name(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {    \
        float p[4];                                                                              \
        row_params(dst, p);                                                                      \
        return map_rows(call, dst, fn, p);                                                       \
    }
SIMPLE_KERNEL(compute_sqr, row_sqr)
SIMPLE_KERNEL(compute_sqrt, row_sqrt)
SIMPLE_KERNEL(compute_log, row_log)
SIMPLE_KERNEL(compute_sin, row_sin)
SIMPLE_KERNEL(compute_cos, row_cos)
SIMPLE_KERNEL(compute_scale, row_scale)
SIMPLE_KERNEL(compute_clamp, row_clamp)
SIMPLE_KERNEL(compute_leaky_relu, row_leaky_relu)
SIMPLE_KERNEL(compute_fill, row_fill)

static bool supports_map(const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0];
    return a && ew_is_float(node->type) && ew_is_float(a->type) && ggml_are_same_shape(a, node);
}

static bool supports_unary(const struct ggml_tensor *node) {
    return (unsigned)ggml_get_unary_op(node) < GGML_UNARY_OP_COUNT && supports_map(node);
}

void cpu_ops_unary_register(struct cpu_op_table *t) {
    static const struct {
        enum ggml_op op;
        ggmlc_op_fn fn;
        bool costly; /* transcendental: worth splitting at smaller sizes */
    } ops[] = {
        {GGML_OP_UNARY, compute_unary, true},  {GGML_OP_SQR, compute_sqr, false},
        {GGML_OP_SQRT, compute_sqrt, false},   {GGML_OP_LOG, compute_log, true},
        {GGML_OP_SIN, compute_sin, true},      {GGML_OP_COS, compute_cos, true},
        {GGML_OP_SCALE, compute_scale, false}, {GGML_OP_CLAMP, compute_clamp, false},
        {GGML_OP_LEAKY_RELU, compute_leaky_relu, false}, {GGML_OP_FILL, compute_fill, false},
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        t->compute[ops[i].op] = ops[i].fn;
        t->supports[ops[i].op] = supports_map;
        t->n_tasks[ops[i].op] = ops[i].costly ? ew_tasks_costly : ew_tasks_cheap;
    }
    t->supports[GGML_OP_UNARY] = supports_unary;
}
