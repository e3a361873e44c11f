/*
 * test-ops-nn.h - what the nn op tests (test-ops-nn.c, test-ops-rope-attn.c) add
 * to opstest.h: golden inputs and arguments by name, comparison by name, and
 * rejection with one exact status.
 */
#ifndef GGMLC_TEST_OPS_NN_H
#define GGMLC_TEST_OPS_NN_H

#include <string.h>

#include "ggml.h"
#include "ggmlc.h"
#include "opstest.h"

/* Golden tensor `name` of set as a contiguous f32 input (positions and other
 * integer tensors keep their type). */
static inline struct ggml_tensor *nn_f32(struct ggml_context *ctx, const struct gold_set *set, const char *name) {
    const struct gold_tensor *g = gold_get(set, name);
    if (g && g->dtype != GOLD_F32) return gold_new_tensor(ctx, g);
    return ops_input(ctx, g, GGML_TYPE_F32, false);
}

/* Golden tensor `name` as an input of the given type and layout. */
static inline struct ggml_tensor *nn_input(struct ggml_context *ctx, const struct gold_set *set, const char *name,
                                           enum ggml_type type, bool transposed) {
    return ops_input(ctx, gold_get(set, name), type, transposed);
}

/* Value i of a small golden f32 tensor of arguments (0 when missing). */
static inline float nn_arg(const struct gold_set *set, const char *name, int i) {
    const struct gold_tensor *g = gold_get(set, name);
    return g && (size_t)i < g->n ? ((const float *)g->data)[i] : 0.0f;
}

/* TAP line: t (computed) matches golden tensor `name` of set within NMSE max_err. */
static inline bool nn_check(const struct ggml_tensor *t, const struct gold_set *set, const char *name, double max_err,
                            const char *what) {
    return ops_check(t, gold_get(set, name), max_err, what);
}

/* TAP line: a constructor call returned NULL with exactly this status and a message naming `op`
 * (ops_check_rejected accepts any of the input statuses). */
static inline bool nn_rejects(const struct ggml_tensor *t, enum ggmlc_status status, const char *op, const char *what) {
    const bool ok = t == NULL && ggmlc_last_status() == status && strstr(ggmlc_last_error(), op) != NULL;
    return tap_ok(ok, "%s is rejected (%s)", what, t ? "accepted" : ggmlc_last_error());
}

#endif /* GGMLC_TEST_OPS_NN_H */
