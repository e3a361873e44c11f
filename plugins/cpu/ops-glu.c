/*
 * ops-glu.c - gated linear units: dst = act(x) * g, where x and g are the
 * two halves of each row of src[0] (swapped: g first) or, in the split
 * form, the rows of src[0] and src[1].
 */
#include "ops-ew.h"

#define SQRT_2_OVER_PI 0.7978845608028654f
#define SQRT_1_2       0.7071067811865476f

/* z = act(x) * g; p = the op's values (swiglu_oai: p[0] = alpha, p[1] = limit). */
typedef void (*glu_row_fn)(int64_t n, float *z, const float *x, const float *g, const float *p);

EW_CLONES static void glu_reglu(int64_t n, float *z, const float *x, const float *g, const float *p) {
    for (int64_t i = 0; i < n; i++) z[i] = (x[i] > 0.0f ? x[i] : 0.0f) * g[i];
}
EW_CLONES static void glu_geglu(int64_t n, float *z, const float *x, const float *g, const float *p) {
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        z[i] = 0.5f * v * (1.0f + ew_tanhf(SQRT_2_OVER_PI * v * (1.0f + 0.044715f * v * v))) * g[i];
    }
}
EW_CLONES static void glu_swiglu(int64_t n, float *z, const float *x, const float *g, const float *p) {
    for (int64_t i = 0; i < n; i++) z[i] = x[i] / (1.0f + ew_expf(-x[i])) * g[i];
}
EW_CLONES static void glu_swiglu_oai(int64_t n, float *z, const float *x, const float *g, const float *p) {
    const float alpha = p[0], limit = p[1];
    for (int64_t i = 0; i < n; i++) {
        const float v = fminf(x[i], limit), w = fminf(fmaxf(g[i], -limit), limit);
        z[i] = v / (1.0f + ew_expf(-alpha * v)) * (w + 1.0f);
    }
}
EW_CLONES static void glu_geglu_erf(int64_t n, float *z, const float *x, const float *g, const float *p) {
    for (int64_t i = 0; i < n; i++) z[i] = 0.5f * x[i] * (1.0f + erff(x[i] * SQRT_1_2)) * g[i];
}
EW_CLONES static void glu_geglu_quick(int64_t n, float *z, const float *x, const float *g, const float *p) {
    for (int64_t i = 0; i < n; i++) z[i] = x[i] / (1.0f + ew_expf(-1.702f * x[i])) * g[i];
}

static const glu_row_fn glu_fns[GGML_GLU_OP_COUNT] = {
    [GGML_GLU_OP_REGLU] = glu_reglu,           [GGML_GLU_OP_GEGLU] = glu_geglu,
    [GGML_GLU_OP_SWIGLU] = glu_swiglu,         [GGML_GLU_OP_SWIGLU_OAI] = glu_swiglu_oai,
    [GGML_GLU_OP_GEGLU_ERF] = glu_geglu_erf,   [GGML_GLU_OP_GEGLU_QUICK] = glu_geglu_quick,
};

static enum ggml_status compute_glu(const struct ggmlc_op_call *call, struct ggml_tensor *dst) {
    const struct ggml_tensor *a = dst->src[0], *b = dst->src[1];
    const glu_row_fn fn = glu_fns[ggml_get_glu_op(dst)];
    const struct ggmlc_glu_params params = ggmlc_glu_params_of(dst);
    const float p[2] = {params.alpha, params.limit};
    const bool swapped = !b && params.swapped != 0;
    const int64_t nc = dst->ne[0];
    const struct ggml_tensor *gt = b ? b : a; /* the tensor holding the gate half */
    int64_t r0, r1;
    ew_task_rows(dst, call->ith, call->nth, &r0, &r1);
    float xs[EW_CHUNK], gs[EW_CHUNK], zs[EW_CHUNK];
    for (int64_t ir = r0; ir < r1; ir++) {
        int64_t i1, i2, i3;
        ew_row_coords(ir, dst->ne, &i1, &i2, &i3);
        const char *arow = ew_row(a, i1, i2, i3), *grow = ew_row(gt, i1, i2, i3);
        /* split form: x = a row, g = b row; one tensor: halves of the a row */
        const char *x = b ? arow : arow + (swapped ? nc : 0) * a->nb[0];
        const char *g = b ? grow : arow + (swapped ? 0 : nc) * a->nb[0];
        char *z = ew_row(dst, i1, i2, i3);
        for (int64_t off = 0; off < nc; off += EW_CHUNK) {
            const int64_t n = nc - off < EW_CHUNK ? nc - off : EW_CHUNK;
            ew_load(xs, x + off * a->nb[0], a->type, a->nb[0], n);
            ew_load(gs, g + off * gt->nb[0], gt->type, gt->nb[0], n);
            fn(n, zs, xs, gs, p);
            ew_store(z + off * dst->nb[0], dst->type, dst->nb[0], zs, n);
        }
    }
    return GGML_STATUS_SUCCESS;
}

static bool supports_glu(const struct ggml_tensor *node) {
    const struct ggml_tensor *a = node->src[0], *b = node->src[1];
    if (!a || (unsigned)ggml_get_glu_op(node) >= GGML_GLU_OP_COUNT || !ew_is_float(a->type) || !ew_is_float(node->type)) return false;
    if (b) return ggml_are_same_shape(a, b) && ggml_are_same_shape(a, node) && ew_is_float(b->type);
    return a->ne[0] / 2 == node->ne[0] && a->ne[1] == node->ne[1] && a->ne[2] == node->ne[2] && a->ne[3] == node->ne[3];
}

void cpu_ops_glu_register(struct cpu_op_table *t) {
    t->compute[GGML_OP_GLU] = compute_glu;
    t->supports[GGML_OP_GLU] = supports_glu;
    t->n_tasks[GGML_OP_GLU] = ew_tasks_costly;
}
