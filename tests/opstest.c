/* opstest.c - see opstest.h. */
#include "opstest.h"

#include <stdlib.h>
#include <string.h>

#include "ggml-cpu.h"
#include "ggmlc.h"

struct ggml_context *ops_ctx(void) {
    return ggml_init((struct ggml_init_params){(size_t)256 << 20, NULL, false}); /* room for work buffers of many threads */
}

static float *gold_as_f32(const struct gold_tensor *g) {
    float *v = malloc(g->n * sizeof(float));
    for (size_t i = 0; i < g->n; i++) {
        switch (g->dtype) {
        case GOLD_F32: v[i] = ((const float *)g->data)[i]; break;
        case GOLD_I32: v[i] = (float)((const int32_t *)g->data)[i]; break;
        default: v[i] = (float)((const int64_t *)g->data)[i]; break;
        }
    }
    return v;
}

struct ggml_tensor *ops_input(struct ggml_context *ctx, const struct gold_tensor *g, enum ggml_type type, bool transposed) {
    if (!g) return NULL;
    struct ggml_tensor *t = transposed ? ggml_transpose(ctx, ggml_new_tensor_4d(ctx, type, g->ne[1], g->ne[0], g->ne[2], g->ne[3]))
                                       : ggml_new_tensor_4d(ctx, type, g->ne[0], g->ne[1], g->ne[2], g->ne[3]);
    float *v = gold_as_f32(g);
    tensor_set_f32(t, v);
    free(v);
    return t;
}

bool ops_compute(struct ggml_context *ctx, struct ggml_tensor *out) {
    if (!out) return tap_ok(false, "the operator was built (%s)", ggmlc_last_error());
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    const enum ggml_status st = ggml_graph_compute_with_ctx(ctx, gf, 2);
    if (st != GGML_STATUS_SUCCESS) return tap_ok(false, "graph computed (status %d: %s)", (int)st, ggmlc_last_error());
    return true;
}

static bool same_shape(const struct ggml_tensor *out, const struct gold_tensor *ref, const char *name) {
    if (!out || !ref) return tap_ok(false, "%s: result and reference exist", name);
    for (int i = 0; i < 4; i++) {
        if (out->ne[i] != ref->ne[i]) {
            return tap_ok(false, "%s: shape [%lld, %lld, %lld, %lld] is the reference's [%lld, %lld, %lld, %lld]", name,
                          (long long)out->ne[0], (long long)out->ne[1], (long long)out->ne[2], (long long)out->ne[3],
                          (long long)ref->ne[0], (long long)ref->ne[1], (long long)ref->ne[2], (long long)ref->ne[3]);
        }
    }
    return true;
}

bool ops_check(const struct ggml_tensor *out, const struct gold_tensor *ref, double max_err, const char *name) {
    if (!same_shape(out, ref, name)) return false;
    float *got = malloc(ref->n * sizeof(float)), *want = gold_as_f32(ref);
    tensor_get_f32(out, got);
    const bool ok = ok_nmse(got, want, ref->n, max_err, "%s", name);
    free(got);
    free(want);
    return ok;
}

bool ops_check_exact(const struct ggml_tensor *out, const struct gold_tensor *ref, const char *name) {
    if (!same_shape(out, ref, name)) return false;
    float *got = malloc(ref->n * sizeof(float)), *want = gold_as_f32(ref);
    tensor_get_f32(out, got);
    size_t bad = 0;
    for (size_t i = 0; i < ref->n; i++) bad += got[i] != want[i];
    if (bad) tap_diag("%s: %zu of %zu values differ (first: want %g)", name, bad, ref->n, (double)want[0]);
    free(got);
    free(want);
    return tap_ok(bad == 0, "%s: exact", name);
}

bool ops_check_rejected(const struct ggml_tensor *r, const char *func, const char *what) {
    const enum ggmlc_status st = ggmlc_last_status();
    const bool ok = r == NULL && (st == GGMLC_ERR_SHAPE || st == GGMLC_ERR_TYPE || st == GGMLC_ERR_INVALID_ARG) &&
                    strstr(ggmlc_last_error(), func) != NULL;
    return tap_ok(ok, "%s rejects %s: %s", func, what, ggmlc_last_error());
}
