/*
 * gpt-run.c - the generation steps of ggmlc-gpt (see gpt-run.h).
 */
#include "gpt-run.h"

#include <stdlib.h>
#include <string.h>

#include "ggmlc.h"

#define RUN_MAX_NODES 4096

static void graph_free(struct gpt_graph *g) {
    if (g->ctx) ggml_free(g->ctx);
    free(g->meta);
    memset(g, 0, sizeof *g);
}

/* A graph of n new tokens after n_past, attending over the span the filled cache then needs. */
static bool graph_build(struct gpt_graph *g, struct gpt_runner *r, int n, int32_t n_past, bool all) {
    memset(g, 0, sizeof *g);
    const size_t size = RUN_MAX_NODES * ggml_tensor_overhead() + ggml_graph_overhead_custom(RUN_MAX_NODES, false);
    g->meta = malloc(size);
    g->ctx = g->meta ? ggml_init((struct ggml_init_params){size, g->meta, true}) : NULL;
    if (!g->ctx) {
        graph_free(g);
        return ggmlc_set_error(GGMLC_ERR_NOMEM, "no memory for a generation graph"), false;
    }
    g->n = n;
    g->n_kv = gpt_cache_span(n_past + n, r->model->hp.n_ctx);
    g->gf = ggml_new_graph_custom(g->ctx, RUN_MAX_NODES, false);
    g->logits = gpt_forward_cached(g->ctx, r->model, &r->cache, n, g->n_kv, !all, &g->in);
    ggml_set_output(g->logits);
    ggml_build_forward_expand(g->gf, g->logits);
    return true;
}

/* Place the graph's tensors in the compute memory (shared by all graphs: the last one placed
 * owns it). */
static bool graph_alloc(struct gpt_runner *r, struct gpt_graph *g) {
    if (r->sched) ggml_backend_sched_reset(r->sched);
    const bool ok = r->sched ? ggml_backend_sched_alloc_graph(r->sched, g->gf) : ggml_gallocr_alloc_graph(r->galloc, g->gf);
    if (!ok && ggmlc_last_status() == GGMLC_OK) ggmlc_set_error(GGMLC_ERR_NOMEM, "cannot allocate a generation graph");
    return ok;
}

/* The mask's values (F32 on the host) in its type. */
static void set_mask(struct ggml_tensor *t, const float *values) {
    if (t->type == GGML_TYPE_F32) {
        ggml_backend_tensor_set(t, values, 0, ggml_nbytes(t));
        return;
    }
    ggml_fp16_t half[1024]; /* in pieces: a mask is small, but its size has no fixed bound */
    const int64_t n = ggml_nelements(t), piece = sizeof half / sizeof half[0];
    for (int64_t i = 0; i < n; i += piece) {
        const int64_t m = n - i < piece ? n - i : piece;
        ggml_fp32_to_fp16_row(values + i, half, m);
        ggml_backend_tensor_set(t, half, (size_t)i * sizeof half[0], (size_t)m * sizeof half[0]);
    }
}

static bool graph_compute(struct gpt_runner *r, struct gpt_graph *g, const int32_t *tokens, int32_t n_past) {
    const size_t n = (size_t)g->n;
    int32_t *pos = malloc(n * sizeof *pos);
    int64_t *rows = malloc(n * sizeof *rows);
    float *mask = malloc(n * (size_t)g->n_kv * sizeof *mask);
    bool ok = pos && rows && mask;
    if (ok) {
        gpt_step_values(n_past, g->n, g->n_kv, pos, rows, mask);
        ggml_backend_tensor_set(g->in.tokens, tokens, 0, ggml_nbytes(g->in.tokens));
        ggml_backend_tensor_set(g->in.pos, pos, 0, ggml_nbytes(g->in.pos));
        ggml_backend_tensor_set(g->in.rows, rows, 0, ggml_nbytes(g->in.rows));
        set_mask(g->in.mask, mask);
        const enum ggml_status st = r->sched ? ggml_backend_sched_graph_compute(r->sched, g->gf)
                                             : ggml_backend_graph_compute(r->backend, g->gf);
        ok = st == GGML_STATUS_SUCCESS;
        if (!ok && ggmlc_last_status() == GGMLC_OK) ggmlc_set_error(GGMLC_ERR_BACKEND, "the generation step failed");
    } else {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "no memory for %d tokens' inputs", g->n);
    }
    free(pos), free(rows), free(mask);
    return ok;
}

/* The one-byte step graph for a step after n_past: built anew when the filled cache outgrows
 * the span of the one there (and after a batch, which may have moved the compute memory: an
 * allocator never moves tensors that have a place). */
static bool step_graph_for(struct gpt_runner *r, int32_t n_past) {
    if (r->step.ctx && r->step_allocated && r->step.n_kv >= n_past + 1) return true;
    graph_free(&r->step);
    r->step_allocated = false;
    if (!graph_build(&r->step, r, 1, n_past, false)) return false;
    r->step_allocated = graph_alloc(r, &r->step);
    return r->step_allocated;
}

bool gpt_runner_init(struct gpt_runner *r, struct gpt_model *m, ggml_backend_t *backends, int n) {
    memset(r, 0, sizeof *r);
    r->model = m;
    if (!gpt_cache_create(&r->cache, m, backends[0])) return false;
    if (n == 1) {
        r->backend = backends[0];
        r->galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backends[0]));
    } else {
        r->sched = ggml_backend_sched_new(backends, NULL, n, RUN_MAX_NODES, false, true);
    }
    if ((!r->sched && !r->galloc) || !graph_build(&r->step, r, 1, 0, false)) {
        if (ggmlc_last_status() == GGMLC_OK) ggmlc_set_error(GGMLC_ERR_NOMEM, "no memory for generation");
        gpt_runner_free(r);
        return false;
    }
    return true;
}

void gpt_runner_free(struct gpt_runner *r) {
    if (r->sched) ggml_backend_sched_free(r->sched);
    if (r->galloc) ggml_gallocr_free(r->galloc);
    graph_free(&r->step);
    gpt_cache_free(&r->cache);
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
    bool ok;
    if (n == 1) { /* the step graph, built once per span */
        ok = step_graph_for(r, n_past) && graph_compute(r, &r->step, tokens, n_past);
        if (ok) ggml_backend_tensor_get(r->step.logits, logits, 0, ggml_nbytes(r->step.logits));
    } else {
        struct gpt_graph g;
        ok = graph_build(&g, r, n, n_past, all) && graph_alloc(r, &g) && graph_compute(r, &g, tokens, n_past);
        if (ok) ggml_backend_tensor_get(g.logits, logits, 0, ggml_nbytes(g.logits));
        graph_free(&g);
        r->step_allocated = false; /* the step graph is placed anew at its next use */
    }
    if (ok) r->cache.n_past = n_past + n;
    return ok;
}
