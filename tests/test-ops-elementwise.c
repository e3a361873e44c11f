/* test-ops-elementwise.c - the element-wise family against PyTorch golden data
 * (tests/golden/gen_elementwise.py): every case runs on a host context through
 * ggml_graph_compute_with_ctx and on the CPU backend through backend buffers;
 * then in-place variants and the error paths. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggmlc.h"
#include "testutil.h"

enum kind {
    K_ADD, K_SUB, K_MUL, K_DIV, K_ADD1, K_ADD_CAST, K_UNARY, K_SQR, K_SQRT, K_LOG, K_SIN, K_COS, K_SCALE, K_SCALE_BIAS,
    K_CLAMP, K_LEAKY, K_FILL, K_XIELU, K_GLU, K_GLU_SWAPPED, K_GLU_SPLIT, K_SWIGLU_OAI, K_SUM, K_SUM_ROWS, K_MEAN,
    K_CUMSUM, K_ARGMAX, K_COUNT_EQUAL, K_REPEAT, K_REPEAT_BACK, K_CONCAT, K_CONT, K_CONT_2D, K_DUP, K_CPY, K_CAST,
    K_SET, K_ACC, K_SET_1D, K_TRI, K_MASK_INF, K_MASK_ZERO, K_DIAG, K_ARANGE,
};

struct ew_case {
    const char *name;
    enum kind kind;
    int n_in;
    int param;               /* unary/glu op, dim, tri type, n_past, or the destination type */
    enum ggml_type in0_type; /* type of the first operand (F32 = 0 by default) */
    unsigned trans;          /* bit i: operand i is used transposed */
    double tol;              /* NMSE bound */
};

#define F32_TOL 1e-11
#define F16_TOL 1e-6
#define BF16_TOL 1e-4

#define BINARY(op, K)                                                                                                 \
    {#op "_same", K, 2, 0, 0, 0, F32_TOL}, {#op "_rows", K, 2, 0, 0, 0, F32_TOL}, {#op "_cols", K, 2, 0, 0, 0, F32_TOL}, \
    {#op "_scalar", K, 2, 0, 0, 0, F32_TOL}, {#op "_tile", K, 2, 0, 0, 0, F32_TOL}, {#op "_rep0", K, 2, 0, 0, 0, F32_TOL}, \
    {#op "_trans", K, 2, 0, 0, 1, F32_TOL}, {#op "_f16", K, 2, 0, GGML_TYPE_F16, 0, F16_TOL},                          \
    {#op "_bf16", K, 2, 0, GGML_TYPE_BF16, 0, BF16_TOL}
#define UNARY(name, OP) {"u_" #name, K_UNARY, 1, GGML_UNARY_OP_##OP, 0, 0, 1e-10}
#define UNARY_VARIANTS(name, OP)                                                                                        \
    {"u_" #name "_trans", K_UNARY, 1, GGML_UNARY_OP_##OP, 0, 1, 1e-10},                                                \
    {"u_" #name "_f16", K_UNARY, 1, GGML_UNARY_OP_##OP, GGML_TYPE_F16, 0, F16_TOL},                                     \
    {"u_" #name "_bf16", K_UNARY, 1, GGML_UNARY_OP_##OP, GGML_TYPE_BF16, 0, BF16_TOL}
#define GLU(name, OP)                                                                                                   \
    {"glu_" #name, K_GLU, 1, GGML_GLU_OP_##OP, 0, 0, 1e-10}, {"glu_" #name "_swapped", K_GLU_SWAPPED, 1, GGML_GLU_OP_##OP, 0, 0, 1e-10}, \
    {"glu_" #name "_split", K_GLU_SPLIT, 2, GGML_GLU_OP_##OP, 0, 0, 1e-10}

static const struct ew_case cases[] = {
    BINARY(add, K_ADD), BINARY(sub, K_SUB), BINARY(mul, K_MUL), BINARY(div, K_DIV),
    {"add1", K_ADD1, 2, 0, 0, 0, F32_TOL},
    {"add_cast_f16", K_ADD_CAST, 2, GGML_TYPE_F16, 0, 0, F16_TOL},
    UNARY(abs, ABS), UNARY(sgn, SGN), UNARY(neg, NEG), UNARY(step, STEP), UNARY(tanh, TANH), UNARY(elu, ELU),
    UNARY(relu, RELU), UNARY(sigmoid, SIGMOID), UNARY(gelu, GELU), UNARY(gelu_erf, GELU_ERF), UNARY(gelu_quick, GELU_QUICK),
    UNARY(silu, SILU), UNARY(hardswish, HARDSWISH), UNARY(hardsigmoid, HARDSIGMOID), UNARY(exp, EXP), UNARY(expm1, EXPM1),
    UNARY(softplus, SOFTPLUS), UNARY(floor, FLOOR), UNARY(ceil, CEIL), UNARY(round, ROUND), UNARY(trunc, TRUNC),
    UNARY_VARIANTS(relu, RELU), UNARY_VARIANTS(gelu, GELU), UNARY_VARIANTS(silu, SILU), UNARY_VARIANTS(tanh, TANH),
    {"u_xielu", K_XIELU, 1, 0, 0, 0, 1e-10},
    {"u_sqr", K_SQR, 1, 0, 0, 0, F32_TOL}, {"u_sqrt", K_SQRT, 1, 0, 0, 0, F32_TOL}, {"u_log", K_LOG, 1, 0, 0, 0, 1e-10},
    {"u_sin", K_SIN, 1, 0, 0, 0, 1e-10}, {"u_cos", K_COS, 1, 0, 0, 0, 1e-10},
    {"scale", K_SCALE, 1, 0, 0, 0, F32_TOL}, {"scale_bias", K_SCALE_BIAS, 1, 0, 0, 0, F32_TOL},
    {"clamp", K_CLAMP, 1, 0, 0, 0, F32_TOL}, {"leaky_relu", K_LEAKY, 1, 0, 0, 0, F32_TOL}, {"fill", K_FILL, 1, 0, 0, 0, 0},
    GLU(reglu, REGLU), GLU(geglu, GEGLU), GLU(swiglu, SWIGLU), GLU(geglu_erf, GEGLU_ERF), GLU(geglu_quick, GEGLU_QUICK),
    {"glu_swiglu_oai", K_SWIGLU_OAI, 2, 0, 0, 0, 1e-10},
    {"sum", K_SUM, 1, 0, 0, 0, 1e-12}, {"sum_rows", K_SUM_ROWS, 1, 0, 0, 0, 1e-12}, {"mean", K_MEAN, 1, 0, 0, 0, 1e-12},
    {"sum_rows_trans", K_SUM_ROWS, 1, 0, 0, 1, 1e-12}, {"cumsum", K_CUMSUM, 1, 0, 0, 0, 1e-12},
    {"argmax", K_ARGMAX, 1, 0, 0, 0, 0}, {"count_equal", K_COUNT_EQUAL, 2, 0, 0, 0, 0},
    {"repeat", K_REPEAT, 1, 0, 0, 0, 0}, {"repeat_back", K_REPEAT_BACK, 1, 0, 0, 0, 1e-12},
    {"concat0", K_CONCAT, 2, 0, 0, 0, 0}, {"concat1", K_CONCAT, 2, 1, 0, 0, 0}, {"concat2", K_CONCAT, 2, 2, 0, 0, 0},
    {"concat3", K_CONCAT, 2, 3, 0, 0, 0},
    {"cont_trans", K_CONT, 1, 0, 0, 1, 0}, {"cont_2d_trans", K_CONT_2D, 1, 0, 0, 1, 0}, {"dup", K_DUP, 1, 0, 0, 0, 0},
    {"cpy_f16", K_CPY, 1, GGML_TYPE_F16, 0, 0, 0}, {"cpy_bf16", K_CPY, 1, GGML_TYPE_BF16, 0, 0, 0},
    {"cpy_i32", K_CPY, 1, GGML_TYPE_I32, 0, 0, 0}, {"cpy_i32_f32", K_CPY, 1, GGML_TYPE_F32, 0, 0, 0},
    {"cpy_f16_trans", K_CPY, 1, GGML_TYPE_F16, 0, 1, 0}, {"cast_f16", K_CAST, 1, GGML_TYPE_F16, 0, 0, 0},
    {"set", K_SET, 2, 0, 0, 0, 0}, {"acc", K_ACC, 2, 0, 0, 0, F32_TOL}, {"set_1d", K_SET_1D, 2, 0, 0, 0, 0},
    {"tri0", K_TRI, 1, GGML_TRI_TYPE_UPPER_DIAG, 0, 0, 0}, {"tri1", K_TRI, 1, GGML_TRI_TYPE_UPPER, 0, 0, 0},
    {"tri2", K_TRI, 1, GGML_TRI_TYPE_LOWER_DIAG, 0, 0, 0}, {"tri3", K_TRI, 1, GGML_TRI_TYPE_LOWER, 0, 0, 0},
    {"diag_mask_inf", K_MASK_INF, 1, 1, 0, 0, 0}, {"diag_mask_zero", K_MASK_ZERO, 1, 1, 0, 0, 0},
    {"diag", K_DIAG, 1, 0, 0, 0, 0}, {"arange", K_ARANGE, 0, 0, 0, 0, 1e-14},
};

static struct gold_set *gold;

static const struct gold_tensor *gold_of(const char *case_name, const char *part) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", case_name, part);
    return gold_get(gold, key);
}

/* The result node of a case; in[] are the (possibly transposed) operands, out the expected result. */
static struct ggml_tensor *build(struct ggml_context *ctx, const struct ew_case *c, struct ggml_tensor **in, const struct gold_tensor *out) {
    struct ggml_tensor *a = in[0], *b = in[1];
    switch (c->kind) {
    case K_ADD: return ggml_add(ctx, a, b);
    case K_SUB: return ggml_sub(ctx, a, b);
    case K_MUL: return ggml_mul(ctx, a, b);
    case K_DIV: return ggml_div(ctx, a, b);
    case K_ADD1: return ggml_add1(ctx, a, b);
    case K_ADD_CAST: return ggml_add_cast(ctx, a, b, (enum ggml_type)c->param);
    case K_UNARY: return ggml_unary(ctx, a, (enum ggml_unary_op)c->param);
    case K_XIELU: return ggml_xielu(ctx, a, 0.8f, 0.8f, 0.5f, -1e-6f);
    case K_SQR: return ggml_sqr(ctx, a);
    case K_SQRT: return ggml_sqrt(ctx, a);
    case K_LOG: return ggml_log(ctx, a);
    case K_SIN: return ggml_sin(ctx, a);
    case K_COS: return ggml_cos(ctx, a);
    case K_SCALE: return ggml_scale(ctx, a, -1.7f);
    case K_SCALE_BIAS: return ggml_scale_bias(ctx, a, 0.25f, 3.5f);
    case K_CLAMP: return ggml_clamp(ctx, ggml_dup(ctx, a), -0.5f, 0.7f);
    case K_LEAKY: return ggml_leaky_relu(ctx, a, 0.1f, false);
    case K_FILL: return ggml_fill(ctx, a, 3.5f);
    case K_GLU: return ggml_glu(ctx, a, (enum ggml_glu_op)c->param, false);
    case K_GLU_SWAPPED: return ggml_glu(ctx, a, (enum ggml_glu_op)c->param, true);
    case K_GLU_SPLIT: return ggml_glu_split(ctx, a, b, (enum ggml_glu_op)c->param);
    case K_SWIGLU_OAI: return ggml_swiglu_oai(ctx, a, b, 1.702f, 7.0f);
    case K_SUM: return ggml_sum(ctx, a);
    case K_SUM_ROWS: return ggml_sum_rows(ctx, a);
    case K_MEAN: return ggml_mean(ctx, a);
    case K_CUMSUM: return ggml_cumsum(ctx, a);
    case K_ARGMAX: return ggml_argmax(ctx, a);
    case K_COUNT_EQUAL: return ggml_count_equal(ctx, a, b);
    case K_REPEAT: return ggml_repeat_4d(ctx, a, out->ne[0], out->ne[1], out->ne[2], out->ne[3]);
    case K_REPEAT_BACK: return ggml_repeat_back(ctx, a, ggml_new_tensor_4d(ctx, GGML_TYPE_F32, out->ne[0], out->ne[1], out->ne[2], out->ne[3]));
    case K_CONCAT: return ggml_concat(ctx, a, b, c->param);
    case K_CONT: return ggml_cont(ctx, a);
    case K_CONT_2D: return ggml_cont_2d(ctx, a, out->ne[0], out->ne[1]);
    case K_DUP: return ggml_dup(ctx, a);
    case K_CPY: return ggml_cpy(ctx, a, ggml_new_tensor_4d(ctx, (enum ggml_type)c->param, out->ne[0], out->ne[1], out->ne[2], out->ne[3]));
    case K_CAST: return ggml_cast(ctx, a, (enum ggml_type)c->param);
    case K_SET: return ggml_set(ctx, a, b, a->nb[1], a->nb[2], a->nb[3], a->nb[1] + 2 * sizeof(float));
    case K_ACC: return ggml_acc(ctx, a, b, a->nb[1], a->nb[2], a->nb[3], a->nb[1] + 2 * sizeof(float));
    case K_SET_1D: return ggml_set_1d(ctx, a, b, 13 * sizeof(float));
    case K_TRI: return ggml_tri(ctx, a, (enum ggml_tri_type)c->param);
    case K_MASK_INF: return ggml_diag_mask_inf(ctx, a, c->param);
    case K_MASK_ZERO: return ggml_diag_mask_zero(ctx, a, c->param);
    case K_DIAG: return ggml_diag(ctx, a);
    case K_ARANGE: return ggml_arange(ctx, -1.5f, 4.0f, 0.75f);
    }
    return NULL;
}

/* Operand i of case c: a tensor of the golden shape (and the case's type for operand 0). */
static struct ggml_tensor *new_operand(struct ggml_context *ctx, const struct ew_case *c, const struct gold_tensor *g, int i) {
    enum ggml_type type = g->dtype == GOLD_I32 ? GGML_TYPE_I32 : GGML_TYPE_F32;
    if (i == 0 && c->in0_type != GGML_TYPE_F32) type = c->in0_type;
    return ggml_new_tensor_4d(ctx, type, g->ne[0], g->ne[1], g->ne[2], g->ne[3]);
}

static void fill_operand(struct ggml_tensor *t, const struct gold_tensor *g) {
    if (g->dtype == GOLD_I32)
        ggml_backend_tensor_set(t, g->data, 0, g->n * sizeof(int32_t));
    else
        tensor_set_f32(t, g->data); /* rounds to f16/bf16 operands as the reference did */
}

/* Compare result t with the golden output; non-finite reference values must match exactly. */
static bool check_result(const struct ggml_tensor *t, const struct gold_tensor *g, double tol, const char *what) {
    if (!t || (size_t)ggml_nelements(t) != g->n) return tap_ok(false, "%s: no result or wrong size (%s)", what, ggmlc_last_error());
    if (g->dtype != GOLD_F32) {
        const size_t es = g->dtype == GOLD_I64 ? 8 : 4;
        void *out = malloc(g->n * es);
        ggml_backend_tensor_get(t, out, 0, g->n * es);
        const bool same = ggml_type_size(t->type) == es && memcmp(out, g->data, g->n * es) == 0;
        free(out);
        return tap_ok(same, "%s: integers equal", what);
    }
    float *out = malloc(g->n * sizeof(float)), *ref = malloc(g->n * sizeof(float)), *got = malloc(g->n * sizeof(float));
    tensor_get_f32(t, out);
    const float *r = g->data;
    size_t n = 0;
    bool specials_ok = true;
    for (size_t i = 0; i < g->n; i++) {
        if (isfinite(r[i])) {
            ref[n] = r[i];
            got[n++] = out[i];
        } else if (!(out[i] == r[i])) {
            specials_ok = false;
        }
    }
    const double err = n ? nmse(got, ref, n) : 0.0;
    const bool ok = tap_ok(specials_ok && err <= tol && !isnan(err), "%s: nmse %.3g <= %.1g", what, err, tol);
    free(out);
    free(ref);
    free(got);
    return ok;
}

static struct ggml_tensor *operands(struct ggml_context *ctx, const struct ew_case *c, struct ggml_tensor **raw, struct ggml_tensor **in) {
    static const char *names[] = {"in0", "in1"};
    for (int i = 0; i < c->n_in; i++) {
        raw[i] = new_operand(ctx, c, gold_of(c->name, names[i]), i);
        in[i] = (c->trans >> i) & 1 ? ggml_transpose(ctx, raw[i]) : raw[i];
    }
    return NULL;
}

static void run_host(const struct ew_case *c, const struct gold_tensor *out) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){8 << 20, NULL, false});
    struct ggml_tensor *raw[2] = {NULL, NULL}, *in[2] = {NULL, NULL};
    operands(ctx, c, raw, in);
    for (int i = 0; i < c->n_in; i++) fill_operand(raw[i], gold_of(c->name, i ? "in1" : "in0"));
    struct ggml_tensor *y = build(ctx, c, in, out);
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, y);
    const enum ggml_status st = y ? ggml_graph_compute_with_ctx(ctx, g, 2) : GGML_STATUS_FAILED;
    char what[160];
    snprintf(what, sizeof what, "%s (host, 2 threads)", c->name);
    if (st != GGML_STATUS_SUCCESS)
        tap_ok(false, "%s: %s", what, ggmlc_last_error());
    else
        check_result(y, out, c->tol, what);
    ggml_free(ctx);
}

static void run_backend(ggml_backend_t be, const struct ew_case *c, const struct gold_tensor *out) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){64 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true});
    struct ggml_tensor *raw[2] = {NULL, NULL}, *in[2] = {NULL, NULL};
    operands(ctx, c, raw, in);
    struct ggml_tensor *y = build(ctx, c, in, out);
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, y);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, be);
    for (int i = 0; i < c->n_in; i++) fill_operand(raw[i], gold_of(c->name, i ? "in1" : "in0"));
    const enum ggml_status st = y && buf ? ggml_backend_graph_compute(be, g) : GGML_STATUS_FAILED;
    char what[160];
    snprintf(what, sizeof what, "%s (CPU backend)", c->name);
    if (st != GGML_STATUS_SUCCESS)
        tap_ok(false, "%s: %s", what, ggmlc_last_error());
    else
        check_result(y, out, c->tol, what);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
}

static void test_inplace(void) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){1 << 20, NULL, false});
    struct ggml_tensor *a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 5, 3), *b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 5);
    for (int i = 0; i < 15; i++) ggml_set_f32_1d(a, i, (float)i - 7.0f);
    for (int i = 0; i < 5; i++) ggml_set_f32_1d(b, i, 0.5f * (float)i);
    struct ggml_tensor *y = ggml_relu_inplace(ctx, ggml_add_inplace(ctx, a, b));
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, y);
    ggml_graph_compute_with_ctx(ctx, g, 1);
    tap_ok(y->data == a->data && ggml_get_f32_1d(a, 0) == 0.0f && ggml_get_f32_1d(a, 14) == 9.0f,
           "add_inplace and relu_inplace overwrite their operand (%g)", ggml_get_f32_1d(a, 14));
    ggml_free(ctx);
}

/* F32 -> quantized -> F32 through cpy: the bytes are the reference quantizer's, the values
 * come back within the format's precision. */
static void test_quantized_copies(void) {
    const enum ggml_type types[] = {GGML_TYPE_Q8_0, GGML_TYPE_Q4_0, GGML_TYPE_Q4_K};
    const double bounds[] = {1e-4, 1e-2, 1e-2};
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        const enum ggml_type qt = types[k];
        const struct ggml_type_traits *tr = ggml_get_type_traits(qt);
        if (!tr->to_float || !tr->from_float_ref) {
            tap_skip("no reference (de)quantizer", "cpy f32 <-> %s", ggml_type_name(qt));
            continue;
        }
        struct ggml_context *ctx = ggml_init((struct ggml_init_params){4 << 20, NULL, false});
        struct ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 512, 7);
        test_seed(11 + k);
        test_fill_uniform(ggml_get_data_f32(x), 512 * 7, -3.0f, 3.0f);
        struct ggml_tensor *q = ggml_cpy(ctx, x, ggml_new_tensor_2d(ctx, qt, 512, 7));
        struct ggml_tensor *back = ggml_cast(ctx, q, GGML_TYPE_F32);
        struct ggml_cgraph *g = ggml_new_graph(ctx);
        ggml_build_forward_expand(g, back);
        ggml_graph_compute_with_ctx(ctx, g, 2);
        void *ref = malloc(ggml_nbytes(q));
        ggml_quantize_chunk(qt, ggml_get_data_f32(x), ref, 0, 7, 512, NULL);
        tap_ok(memcmp(ref, q->data, ggml_nbytes(q)) == 0, "cpy f32 -> %s gives the reference quantizer's bytes", ggml_type_name(qt));
        ok_nmse(ggml_get_data_f32(back), ggml_get_data_f32(x), 512 * 7, bounds[k], "cast %s -> f32 restores the values", ggml_type_name(qt));
        free(ref);
        ggml_free(ctx);
    }
}

/* concat moves values of any type as they are, as ggml does: I64 element by element, a block
 * format whole blocks at a time (along dim 0 whole blocks per row).  Reference: the blocks of the
 * quantized concatenation are those of the concatenated floats quantized (blocks are independent). */
static void test_concat_any_type(void) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){8 << 20, NULL, false});
    struct ggml_tensor *a = ggml_new_tensor_4d(ctx, GGML_TYPE_I64, 3, 2, 2, 2), *b = ggml_new_tensor_4d(ctx, GGML_TYPE_I64, 3, 2, 2, 2);
    for (int64_t i = 0; i < 24; i++) {
        ((int64_t *)a->data)[i] = ((int64_t)1 << 40) + i; /* beyond f32: must not go through floats */
        ((int64_t *)b->data)[i] = -((int64_t)1 << 41) - i;
    }
    for (int dim = 0; dim < 4; dim++) {
        struct ggml_tensor *r = ggml_concat(ctx, a, b, dim);
        struct ggml_cgraph *g = ggml_new_graph(ctx);
        bool ok = r != NULL;
        if (ok) {
            ggml_build_forward_expand(g, r);
            ok = ggml_graph_compute_with_ctx(ctx, g, 2) == GGML_STATUS_SUCCESS;
        }
        for (int64_t i = 0; ok && i < ggml_nelements(r); i++) {
            int64_t c[4];
            ggml_unravel_index(r, i, &c[0], &c[1], &c[2], &c[3]);
            const struct ggml_tensor *src = c[dim] < a->ne[dim] ? a : b;
            if (src == b) c[dim] -= a->ne[dim];
            const int64_t want = *(const int64_t *)((const char *)src->data + c[0] * src->nb[0] + c[1] * src->nb[1] +
                                                    c[2] * src->nb[2] + c[3] * src->nb[3]);
            ok = ((const int64_t *)r->data)[i] == want;
        }
        tap_ok(ok, "concat of I64 tensors along dim %d keeps every value", dim);
    }
    for (int dim = 0; dim < 2; dim++) {
        const int64_t na = 64, nb = dim == 0 ? 96 : 64, rows_a = 3, rows_b = dim == 0 ? 3 : 5;
        float *fa = malloc(sizeof(float) * (size_t)(na * rows_a)), *fb = malloc(sizeof(float) * (size_t)(nb * rows_b));
        test_fill_uniform(fa, na * rows_a, -2.0f, 2.0f);
        test_fill_uniform(fb, nb * rows_b, -2.0f, 2.0f);
        struct ggml_tensor *qa = ggml_new_tensor_2d(ctx, GGML_TYPE_Q8_0, na, rows_a), *qb = ggml_new_tensor_2d(ctx, GGML_TYPE_Q8_0, nb, rows_b);
        ggml_quantize_chunk(GGML_TYPE_Q8_0, fa, qa->data, 0, rows_a, na, NULL);
        ggml_quantize_chunk(GGML_TYPE_Q8_0, fb, qb->data, 0, rows_b, nb, NULL);
        struct ggml_tensor *r = ggml_concat(ctx, qa, qb, dim);
        bool ok = r != NULL;
        if (ok) {
            struct ggml_cgraph *g = ggml_new_graph(ctx);
            ggml_build_forward_expand(g, r);
            ok = ggml_graph_compute_with_ctx(ctx, g, 2) == GGML_STATUS_SUCCESS;
        }
        /* the floats concatenated, then quantized */
        const int64_t n0 = dim == 0 ? na + nb : na, n1 = dim == 0 ? rows_a : rows_a + rows_b;
        float *f = malloc(sizeof(float) * (size_t)(n0 * n1));
        for (int64_t i1 = 0; i1 < n1; i1++)
            for (int64_t i0 = 0; i0 < n0; i0++)
                f[i1 * n0 + i0] = dim == 0 ? (i0 < na ? fa[i1 * na + i0] : fb[i1 * nb + i0 - na])
                                           : (i1 < rows_a ? fa[i1 * na + i0] : fb[(i1 - rows_a) * nb + i0]);
        void *ref = malloc(ggml_row_size(GGML_TYPE_Q8_0, n0) * (size_t)n1);
        ggml_quantize_chunk(GGML_TYPE_Q8_0, f, ref, 0, n1, n0, NULL);
        tap_ok(ok && r->ne[0] == n0 && r->ne[1] == n1 && memcmp(ref, r->data, ggml_nbytes(r)) == 0,
               "concat of q8_0 tensors along dim %d moves whole blocks", dim);
        free(fa);
        free(fb);
        free(f);
        free(ref);
    }
    ggmlc_clear_error();
    tap_ok(ggml_concat(ctx, ggml_new_tensor_1d(ctx, GGML_TYPE_Q8_0, 32), ggml_new_tensor_1d(ctx, GGML_TYPE_Q8_0, 32), 1) != NULL,
           "concat of q8_0 vectors along dim 1 is accepted");
    ggml_free(ctx);
}

/* repeat_back to one row (a bias gradient) reading enough to be split: the tasks share its
 * columns; each sum is within float summation's bound (terms x 2^-24 x the sum of |terms|)
 * of a double one, with 1, 2 and 3 threads. */
static void test_repeat_back_row(void) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){8 << 20, NULL, false});
    const int64_t n0 = 333, reps0 = 2, rows = 150;
    struct ggml_tensor *a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, n0 * reps0, rows);
    for (int64_t i = 0; i < ggml_nelements(a); i++) ggml_set_f32_1d(a, (int)i, (float)((i * 7919) % 1000) / 250.0f - 2.0f);
    struct ggml_tensor *y = ggml_repeat_back(ctx, a, ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n0));
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, y);
    for (int threads = 1; threads <= 3; threads++) {
        const enum ggml_status st = ggml_graph_compute_with_ctx(ctx, g, threads);
        double worst = 0.0;
        for (int64_t j = 0; j < n0; j++) {
            double ref = 0.0, magnitude = 0.0;
            for (int64_t r = 0; r < rows; r++)
                for (int64_t k = 0; k < reps0; k++) {
                    const double v = ggml_get_f32_nd(a, (int)(k * n0 + j), (int)r, 0, 0);
                    ref += v;
                    magnitude += fabs(v);
                }
            const double bound = (double)(rows * reps0) * 0x1p-24 * magnitude;
            const double err = fabs(ggml_get_f32_1d(y, (int)j) - ref) / bound;
            if (err > worst) worst = err;
        }
        tap_ok(st == GGML_STATUS_SUCCESS && worst <= 1.0, "repeat_back of [%lld, %lld] to one row on %d threads (worst error %.2g of the bound)",
               (long long)(n0 * reps0), (long long)rows, threads, worst);
    }
    ggml_free(ctx);
}

/* cont of permuted 4-D views (the tiled copy path) and of a transposed F32 matrix (the packer's
 * transposing copy) matches element access through the view. */
static void test_permuted_cont(void) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){8 << 20, NULL, false});
    struct ggml_tensor *x = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 37, 19, 5, 3), *h = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, 37, 19, 5, 3);
    for (int i = 0; i < 37 * 19 * 5 * 3; i++) {
        ggml_set_f32_1d(x, i, (float)i * 0.5f - 100.0f);
        ggml_set_f32_1d(h, i, (float)(i % 2000) - 1000.0f);
    }
    /* a transposed matrix deeper than one packer call (256 rows) with a column tail */
    struct ggml_tensor *w = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 300, 270);
    for (int i = 0; i < 300 * 270; i++) ggml_set_f32_1d(w, i, (float)(i % 4099) * 0.25f);
    struct ggml_tensor *views[4] = {ggml_permute(ctx, x, 1, 0, 2, 3), ggml_permute(ctx, x, 2, 3, 0, 1), ggml_permute(ctx, h, 3, 1, 0, 2),
                                    ggml_transpose(ctx, w)};
    struct ggml_tensor *outs[4];
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    for (int k = 0; k < 4; k++) {
        outs[k] = ggml_cont(ctx, views[k]);
        ggml_build_forward_expand(g, outs[k]);
    }
    ggml_graph_compute_with_ctx(ctx, g, 2);
    for (int k = 0; k < 4; k++) {
        const struct ggml_tensor *v = views[k];
        int bad = 0;
        for (int i3 = 0; i3 < v->ne[3]; i3++)
            for (int i2 = 0; i2 < v->ne[2]; i2++)
                for (int i1 = 0; i1 < v->ne[1]; i1++)
                    for (int i0 = 0; i0 < v->ne[0]; i0++)
                        bad += ggml_get_f32_nd(outs[k], i0, i1, i2, i3) != ggml_get_f32_nd(v, i0, i1, i2, i3);
        tap_ok(bad == 0 && ggml_is_contiguous(outs[k]), "cont of permuted view %d [%lld, %lld, %lld, %lld] %s (%d differ)", k,
               (long long)v->ne[0], (long long)v->ne[1], (long long)v->ne[2], (long long)v->ne[3], ggml_type_name(v->type), bad);
    }
    ggml_free(ctx);
}

/* add with quantized weights: Q8_0 + F32 -> Q8_0 (requantized as the reference quantizer
 * does) and add_cast Q4_0 + F32 -> F32 (dequantized values plus b, exactly). */
static void test_quantized_add(void) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){4 << 20, NULL, false});
    const int n0 = 512, n1 = 5;
    float *w = malloc(n0 * n1 * sizeof(float)), *deq = malloc(n0 * n1 * sizeof(float)), *want = malloc(n0 * n1 * sizeof(float));
    test_seed(21);
    test_fill_uniform(w, (size_t)(n0 * n1), -2.0f, 2.0f);
    struct ggml_tensor *q8 = ggml_new_tensor_2d(ctx, GGML_TYPE_Q8_0, n0, n1), *q4 = ggml_new_tensor_2d(ctx, GGML_TYPE_Q4_0, n0, n1);
    struct ggml_tensor *b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n0);
    test_fill_uniform(ggml_get_data_f32(b), (size_t)n0, -0.5f, 0.5f);
    ggml_quantize_chunk(GGML_TYPE_Q8_0, w, q8->data, 0, n1, n0, NULL);
    ggml_quantize_chunk(GGML_TYPE_Q4_0, w, q4->data, 0, n1, n0, NULL);
    struct ggml_tensor *sum_q8 = ggml_add(ctx, q8, b), *sum_f32 = ggml_add_cast(ctx, q4, b, GGML_TYPE_F32);
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, sum_q8);
    ggml_build_forward_expand(g, sum_f32);
    const enum ggml_status st = sum_q8 && sum_f32 ? ggml_graph_compute_with_ctx(ctx, g, 2) : GGML_STATUS_FAILED;
    if (!tap_ok(st == GGML_STATUS_SUCCESS, "add of quantized weights computes (%s)", ggmlc_last_error())) {
        ggml_free(ctx);
        free(w);
        free(deq);
        free(want);
        return;
    }
    ggml_get_type_traits(GGML_TYPE_Q4_0)->to_float(q4->data, deq, n0 * n1);
    for (int i = 0; i < n0 * n1; i++) want[i] = deq[i] + ggml_get_data_f32(b)[i % n0];
    tap_ok(memcmp(want, sum_f32->data, sizeof(float) * n0 * n1) == 0, "add_cast q4_0 + f32 -> f32 equals dequantized a plus b");
    ggml_get_type_traits(GGML_TYPE_Q8_0)->to_float(q8->data, deq, n0 * n1);
    for (int i = 0; i < n0 * n1; i++) want[i] = deq[i] + ggml_get_data_f32(b)[i % n0];
    void *ref = malloc(ggml_nbytes(sum_q8));
    ggml_quantize_chunk(GGML_TYPE_Q8_0, want, ref, 0, n1, n0, NULL);
    tap_ok(sum_q8->type == GGML_TYPE_Q8_0 && memcmp(ref, sum_q8->data, ggml_nbytes(sum_q8)) == 0,
           "add q8_0 + f32 stays q8_0, requantized like the reference quantizer");
    free(ref);
    free(w);
    free(deq);
    free(want);
    ggml_free(ctx);
}

/* The _inplace, _1d.._4d and integer variants not covered by the golden cases. */
static void test_variants(void) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){1 << 20, NULL, false});
    struct ggml_tensor *a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3), *b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 2);
    for (int i = 0; i < 12; i++) ggml_set_f32_1d(a, i, (float)i);
    ggml_set_f32_1d(b, 0, -1.0f);
    ggml_set_f32_1d(b, 1, -2.0f);
    struct ggml_tensor *s2 = ggml_set_2d(ctx, a, b, a->nb[1], a->nb[1] + sizeof(float)); /* a[1, 1..2] = b */
    struct ggml_tensor *c4 = ggml_cont_4d(ctx, ggml_transpose(ctx, a), 2, 3, 2, 1);
    struct ggml_tensor *ints = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 3);
    for (int i = 0; i < 3; i++) ggml_set_i32_1d(ints, i, 1000003 * (i + 1));
    struct ggml_tensor *rep = ggml_repeat_4d(ctx, ints, 6, 2, 1, 1), *cat = ggml_concat(ctx, ints, ints, 0);
    struct ggml_tensor *sc = ggml_scale_inplace(ctx, ggml_dup(ctx, a), 2.0f);
    struct ggml_tensor *toi = ggml_cast(ctx, ggml_scale(ctx, a, -0.75f), GGML_TYPE_I32);
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    struct ggml_tensor *outs[] = {s2, c4, rep, cat, sc, toi};
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) ggml_build_forward_expand(g, outs[i]);
    ggml_graph_compute_with_ctx(ctx, g, 2);
    tap_ok(ggml_get_f32_nd(s2, 1, 1, 0, 0) == -1.0f && ggml_get_f32_nd(s2, 2, 1, 0, 0) == -2.0f && ggml_get_f32_nd(s2, 3, 1, 0, 0) == 7.0f &&
           ggml_get_f32_1d(a, 5) == 5.0f, "set_2d writes b into a copy of a");
    /* transpose(a) in flat order: 0 4 8 1 5 9 2 6 10 3 7 11 */
    tap_ok(c4->ne[2] == 2 && ggml_get_f32_1d(c4, 1) == 4.0f && ggml_get_f32_1d(c4, 3) == 1.0f && ggml_get_f32_1d(c4, 11) == 11.0f,
           "cont_4d of a transposed view keeps the flat order");
    tap_ok(ggml_get_i32_1d(rep, 7) == 2000006 && ggml_get_i32_1d(rep, 11) == 3000009, "repeat_4d of I32 values is exact");
    tap_ok(ggml_get_i32_1d(cat, 4) == 2000006, "concat of I32 values");
    tap_ok(sc->data != a->data && ggml_get_f32_1d(sc, 11) == 22.0f, "scale_inplace on a copy");
    tap_ok(ggml_get_i32_1d(toi, 3) == -2 && ggml_get_i32_1d(toi, 11) == -8, "cast f32 -> i32 truncates toward zero");
    ggml_free(ctx);
}

/* exp, tanh, sigmoid and silu over wide ranges against libm (the kernels use their own
 * vectorizable approximations): relative error of exp, absolute error of the bounded ones,
 * overflow to inf and underflow to 0. */
static void test_wide_ranges(void) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){4 << 20, NULL, false});
    const int n = 40001;
    struct ggml_tensor *x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n);
    float *xs = ggml_get_data_f32(x);
    for (int i = 0; i < n; i++) xs[i] = -100.0f + 200.0f * (float)i / (float)(n - 1);
    struct ggml_tensor *e = ggml_exp(ctx, x), *t = ggml_tanh(ctx, x), *sg = ggml_sigmoid(ctx, x), *si = ggml_silu(ctx, x);
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, e);
    ggml_build_forward_expand(g, t);
    ggml_build_forward_expand(g, sg);
    ggml_build_forward_expand(g, si);
    ggml_graph_compute_with_ctx(ctx, g, 2);
    double exp_rel = 0, tanh_abs = 0, sig_abs = 0, silu_rel = 0;
    bool limits_ok = true;
    for (int i = 0; i < n; i++) {
        const double v = xs[i], ref_e = exp(v);
        const float ge = ggml_get_data_f32(e)[i];
        if (v > 88.7229) limits_ok &= isinf(ge) && ge > 0;                /* past FLT_MAX */
        else if (v < -87.33) limits_ok &= fabs(ge - ref_e) < 1e-44;      /* subnormal results */
        else if (fabs(ge - ref_e) / ref_e > exp_rel) exp_rel = fabs(ge - ref_e) / ref_e;
        tanh_abs = fmax(tanh_abs, fabs(ggml_get_data_f32(t)[i] - tanh(v)));
        const double ref_s = 1.0 / (1.0 + exp(-v));
        sig_abs = fmax(sig_abs, fabs(ggml_get_data_f32(sg)[i] - ref_s));
        if (fabs(v * ref_s) > 1e-30) silu_rel = fmax(silu_rel, fabs(ggml_get_data_f32(si)[i] - v * ref_s) / fabs(v * ref_s));
    }
    tap_ok(exp_rel < 1e-6 && limits_ok, "exp on [-100, 100]: relative error %.2g, inf past FLT_MAX, subnormals", exp_rel);
    tap_ok(tanh_abs < 1e-6, "tanh on [-100, 100]: absolute error %.2g", tanh_abs);
    tap_ok(sig_abs < 1e-6, "sigmoid on [-100, 100]: absolute error %.2g", sig_abs);
    tap_ok(silu_rel < 1e-5, "silu on [-100, 100]: relative error %.2g", silu_rel);
    ggml_free(ctx);
}

/* The copy kernels' f16 conversions agree with ggml_fp16_to_fp32 / ggml_fp32_to_fp16 on
 * every f16 value, on the midpoints between neighbours (round half to even), subnormals
 * and overflow. */
static void test_f16_conversions(void) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){4 << 20, NULL, false});
    struct ggml_tensor *h = ggml_new_tensor_1d(ctx, GGML_TYPE_F16, 65536), *f = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 3 * 65536);
    ggml_fp16_t *hp = h->data;
    float *fp = ggml_get_data_f32(f);
    for (int i = 0; i < 65536; i++) {
        hp[i] = (ggml_fp16_t)i;
        const float v = ggml_fp16_to_fp32((ggml_fp16_t)i), next = ggml_fp16_to_fp32((ggml_fp16_t)(i + 1));
        fp[3 * i] = v;
        fp[3 * i + 1] = isfinite(v) && isfinite(next) && (i & 0x7fff) != 0x7bff ? 0.5f * (v + next) : 1e6f; /* midpoint */
        fp[3 * i + 2] = v * 1.0001f;
    }
    struct ggml_tensor *to_f32 = ggml_cast(ctx, h, GGML_TYPE_F32), *to_f16 = ggml_cast(ctx, f, GGML_TYPE_F16);
    struct ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, to_f32);
    ggml_build_forward_expand(g, to_f16);
    ggml_graph_compute_with_ctx(ctx, g, 2);
    int bad_up = 0, bad_down = 0;
    for (int i = 0; i < 65536; i++) {
        const float want = ggml_fp16_to_fp32((ggml_fp16_t)i), got = ggml_get_data_f32(to_f32)[i];
        if (!(got == want || (isnan(got) && isnan(want))) || signbit(got) != signbit(want)) bad_up++;
    }
    for (int i = 0; i < 3 * 65536; i++) {
        const ggml_fp16_t want = ggml_fp32_to_fp16(fp[i]), got = ((const ggml_fp16_t *)to_f16->data)[i];
        const bool nan = isnan(fp[i]);
        if (nan ? (got & 0x7c00) != 0x7c00 || (got & 0x3ff) == 0 : got != want) bad_down++;
    }
    tap_ok(bad_up == 0, "f16 -> f32 copies of all 65536 values match ggml_fp16_to_fp32 (%d differ)", bad_up);
    tap_ok(bad_down == 0, "f32 -> f16 copies (values, midpoints, near values) match ggml_fp32_to_fp16 (%d differ)", bad_down);
    ggml_free(ctx);
}

/* Constructor error paths: NULL, the right status, the op named in the message. */
static void rejects(struct ggml_tensor *t, enum ggmlc_status st, const char *op, const char *what) {
    const bool ok = t == NULL && ggmlc_last_status() == st && strstr(ggmlc_last_error(), op) != NULL;
    tap_ok(ok, "%s is rejected: %s", what, t ? "(accepted)" : ggmlc_last_error());
}

static void test_errors(void) {
    struct ggml_context *ctx = ggml_init((struct ggml_init_params){1 << 20, NULL, true});
    struct ggml_tensor *a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 6, 4, 2), *b = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 4, 4, 2);
    struct ggml_tensor *odd = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 5, 3), *i32 = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 6);
    rejects(ggml_add(ctx, a, b), GGMLC_ERR_SHAPE, "ggml_add", "add of [4,4,2] onto [6,4,2] (4 does not divide 6)");
    rejects(ggml_mul(ctx, b, a), GGMLC_ERR_SHAPE, "ggml_mul", "mul broadcasting the larger operand");
    rejects(ggml_div_inplace(ctx, a, b), GGMLC_ERR_SHAPE, "ggml_div_inplace", "div_inplace with a bad shape");
    rejects(ggml_add1(ctx, a, a), GGMLC_ERR_SHAPE, "ggml_add1", "add1 with a non-scalar");
    rejects(ggml_relu(ctx, i32), GGMLC_ERR_TYPE, "ggml_relu", "relu of an I32 tensor");
    rejects(ggml_swiglu(ctx, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 1, 3)), GGMLC_ERR_SHAPE, "ggml_swiglu",
            "swiglu of rows with a single column");
    rejects(ggml_glu_split(ctx, a, b, GGML_GLU_OP_REGLU), GGMLC_ERR_SHAPE, "ggml_glu_split", "glu_split of different shapes");
    rejects(ggml_concat(ctx, a, odd, 0), GGMLC_ERR_SHAPE, "ggml_concat", "concat of mismatched shapes");
    rejects(ggml_concat(ctx, a, a, 4), GGMLC_ERR_INVALID_ARG, "ggml_concat", "concat along dimension 4");
    rejects(ggml_cpy(ctx, a, b), GGMLC_ERR_SHAPE, "ggml_cpy", "cpy between different element counts");
    rejects(ggml_cont_2d(ctx, a, 7, 7), GGMLC_ERR_SHAPE, "ggml_cont_4d", "cont_2d to another element count");
    rejects(ggml_argmax(ctx, a), GGMLC_ERR_SHAPE, "ggml_argmax", "argmax of a 3-D tensor");
    rejects(ggml_count_equal(ctx, odd, odd), GGMLC_ERR_TYPE, "ggml_count_equal", "count_equal of F32 tensors");
    rejects(ggml_repeat(ctx, a, b), GGMLC_ERR_SHAPE, "ggml_repeat", "repeat to a shape that is not a multiple");
    rejects(ggml_arange(ctx, 0.0f, 1.0f, 0.0f), GGMLC_ERR_INVALID_ARG, "ggml_arange", "arange with step 0");
    rejects(ggml_set_1d(ctx, odd, a, 0), GGMLC_ERR_SHAPE, "ggml_set_1d", "set_1d of a larger tensor");
    rejects(ggml_unary(ctx, a, GGML_UNARY_OP_COUNT), GGMLC_ERR_INVALID_ARG, "ggml_unary", "an unknown unary op");
    ggmlc_clear_error();
    tap_ok(ggml_silu(ctx, ggml_add(ctx, NULL, a)) == NULL && ggmlc_last_status() == GGMLC_OK, "a NULL operand fails quietly down the chain");
    ggml_free(ctx);
}

int main(void) {
    gold = gold_load("elementwise.gold");
    if (!gold) return tap_skip_all("elementwise.gold is missing");
    ggml_backend_t be = ggml_backend_cpu_init();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct gold_tensor *out = gold_of(cases[i].name, "out");
        if (!out) {
            tap_ok(false, "%s: golden data", cases[i].name);
            continue;
        }
        run_host(&cases[i], out);
        if (be) run_backend(be, &cases[i], out);
    }
    tap_ok(be != NULL, "the CPU backend exists");
    test_inplace();
    test_quantized_copies();
    test_concat_any_type();
    test_quantized_add();
    test_permuted_cont();
    test_repeat_back_row();
    test_variants();
    test_wide_ranges();
    test_f16_conversions();
    test_errors();
    ggml_backend_free(be);
    gold_free(gold);
    return tap_done();
}
