/*
 * test-ops-nn.h - helpers shared by the nn op tests (test-ops-nn*.c): golden
 * inputs in any float type and layout, graph evaluation on the CPU, and
 * comparison of a result with its golden tensor.
 */
#ifndef GGMLC_TEST_OPS_NN_H
#define GGMLC_TEST_OPS_NN_H

#include <stdlib.h>
#include <string.h>

#include "ggml-cpu.h"
#include "ggml.h"
#include "ggmlc.h"
#include "testutil.h"

/* Layout of an input made from a golden tensor. */
enum nn_layout {
    NN_CONTIGUOUS,
    NN_TRANSPOSED /* stored with dims 0 and 1 swapped, seen through ggml_transpose */
};

/* A tensor of the golden tensor's shape in the given type and layout, holding its values. */
static inline struct ggml_tensor *nn_input(struct ggml_context *ctx, const struct gold_tensor *g, enum ggml_type type,
                                           enum nn_layout layout) {
    if (!g) return NULL;
    if (g->dtype != GOLD_F32) return gold_new_tensor(ctx, g);
    struct ggml_tensor *t;
    if (layout == NN_TRANSPOSED) {
        t = ggml_transpose(ctx, ggml_new_tensor_4d(ctx, type, g->ne[1], g->ne[0], g->ne[2], g->ne[3]));
    } else {
        t = ggml_new_tensor_4d(ctx, type, g->ne[0], g->ne[1], g->ne[2], g->ne[3]);
    }
    if (t) tensor_set_f32(t, (const float *)g->data);
    return t;
}

/* Golden tensor `name` of set as a contiguous f32 input. */
static inline struct ggml_tensor *nn_f32(struct ggml_context *ctx, const struct gold_set *set, const char *name) {
    return nn_input(ctx, gold_get(set, name), GGML_TYPE_F32, NN_CONTIGUOUS);
}

/* Value i of a small golden f32 tensor of arguments (0 when missing). */
static inline float nn_arg(const struct gold_set *set, const char *name, int i) {
    const struct gold_tensor *g = gold_get(set, name);
    return g && (size_t)i < g->n ? ((const float *)g->data)[i] : 0.0f;
}

/* Compute t (and what it depends on) with 2 threads; false on any failure. */
static inline bool nn_compute(struct ggml_context *ctx, struct ggml_tensor *t) {
    if (!t) return false;
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, t);
    return ggml_graph_compute_with_ctx(ctx, gf, 2) == GGML_STATUS_SUCCESS;
}

/* TAP line: t (computed) matches golden tensor `name` of set within NMSE max_err. */
static inline bool nn_check(const struct ggml_tensor *t, const struct gold_set *set, const char *name, double max_err,
                            const char *what) {
    const struct gold_tensor *g = gold_get(set, name);
    if (!t || !g || (size_t)ggml_nelements(t) != g->n) {
        return tap_ok(false, "%s (no result or %s has another size)", what, name);
    }
    float *out = malloc(g->n * sizeof(float));
    tensor_get_f32(t, out);
    const bool ok = ok_nmse(out, (const float *)g->data, g->n, max_err, "%s", what);
    free(out);
    return ok;
}

/* TAP line: a constructor call returned NULL with the given status and a message naming `op`. */
static inline bool nn_rejects(const struct ggml_tensor *t, enum ggmlc_status status, const char *op, const char *what) {
    const bool ok = t == NULL && ggmlc_last_status() == status && strstr(ggmlc_last_error(), op) != NULL;
    return tap_ok(ok, "%s is rejected (%s)", what, t ? "accepted" : ggmlc_last_error());
}

/* A fresh context for one test group. */
static inline struct ggml_context *nn_context(void) {
    return ggml_init((struct ggml_init_params){64u << 20, NULL, false});
}

#endif /* GGMLC_TEST_OPS_NN_H */
