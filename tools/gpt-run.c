/*
 * gpt-run.c - the generation steps of ggmlc-gpt (see gpt-run.h).
 */
#include "gpt-run.h"

#include <stdlib.h>
#include <string.h>

#include "ggmlc.h"

#define RUN_MAX_NODES 4096

bool gpt_runner_init(struct gpt_runner *r, struct gpt_model *m, ggml_backend_t *backends, int n) {
    memset(r, 0, sizeof *r);
    r->model = m;
    if (!gpt_cache_create(&r->cache, m, backends[0])) return false;
    r->meta_size = RUN_MAX_NODES * ggml_tensor_overhead() + ggml_graph_overhead_custom(RUN_MAX_NODES, false);
    r->meta = malloc(r->meta_size);
    r->sched = ggml_backend_sched_new(backends, NULL, n, RUN_MAX_NODES, false, true);
    if (!r->meta || !r->sched) {
        if (ggmlc_last_status() == GGMLC_OK) ggmlc_set_error(GGMLC_ERR_NOMEM, "no memory for generation");
        gpt_runner_free(r);
        return false;
    }
    return true;
}

void gpt_runner_free(struct gpt_runner *r) {
    if (r->sched) ggml_backend_sched_free(r->sched);
    gpt_cache_free(&r->cache);
    free(r->meta);
    memset(r, 0, sizeof *r);
}

void gpt_runner_reset(struct gpt_runner *r) { r->cache.n_past = 0; }

bool gpt_runner_eval(struct gpt_runner *r, const int32_t *tokens, int n, bool all, float *logits) {
    const int32_t n_past = r->cache.n_past;
    if (n < 1 || n_past + n > r->model->hp.n_ctx) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%d tokens after %d do not fit the context of %d", n,
                        n_past, r->model->hp.n_ctx);
        return false;
    }
    struct ggml_init_params ip = {r->meta_size, r->meta, true};
    struct ggml_context *ctx = ggml_init(ip);
    struct ggml_cgraph *gf = ggml_new_graph_custom(ctx, RUN_MAX_NODES, false);
    struct ggml_tensor *tok = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, n);
    struct ggml_tensor *pos = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, n);
    ggml_set_input(tok), ggml_set_input(pos);
    struct ggml_tensor *out = gpt_forward_cached(ctx, gf, r->model, &r->cache, tok, pos, n_past, !all);
    ggml_set_output(out);
    ggml_build_forward_expand(gf, out);
    ggml_backend_sched_reset(r->sched);
    bool ok = ggml_backend_sched_alloc_graph(r->sched, gf);
    if (ok) {
        int32_t *p = malloc((size_t)n * sizeof *p);
        for (int i = 0; p && i < n; i++) p[i] = n_past + i;
        ggml_backend_tensor_set(tok, tokens, 0, (size_t)n * sizeof(int32_t));
        if (p) ggml_backend_tensor_set(pos, p, 0, (size_t)n * sizeof(int32_t));
        ok = p && ggml_backend_sched_graph_compute(r->sched, gf) == GGML_STATUS_SUCCESS;
        free(p);
    }
    if (ok) {
        ggml_backend_tensor_get(out, logits, 0, ggml_nbytes(out));
        r->cache.n_past = n_past + n;
    } else if (ggmlc_last_status() == GGMLC_OK) {
        ggmlc_set_error(GGMLC_ERR_BACKEND, "the generation step failed");
    }
    ggml_free(ctx);
    return ok;
}
