/*
 * gpt-run.h - generation with a key/value cache: a prompt is evaluated as one batch, then
 * each new byte is one step over the cached keys and values of the bytes before it.  The graph
 * of a one-byte step is built and allocated once and computed again for every byte, until the
 * filled positions outgrow the span it attends over (every GPT_CACHE_SPAN_STEP bytes).
 */
#ifndef GGMLC_GPT_RUN_H
#define GGMLC_GPT_RUN_H

#include "ggml-alloc.h"
#include "gpt-model.h"

/* A generation graph with its inputs and logits. */
struct gpt_graph {
    void *meta; /* the context's memory: tensor and graph metadata */
    struct ggml_context *ctx;
    struct ggml_cgraph *gf;
    struct gpt_step_inputs in;
    struct ggml_tensor *logits;
    int n;
    int32_t n_kv; /* cache positions attended over (gpt_cache_span) */
};

struct gpt_runner {
    struct gpt_model *model;
    struct gpt_cache cache;
    ggml_backend_sched_t sched; /* with two backends: the model's, then the CPU for what it lacks */
    ggml_backend_t backend;     /* with one: no scheduler, an allocator of its own */
    ggml_gallocr_t galloc;
    struct gpt_graph step;      /* one byte, logits of it */
    bool step_allocated;        /* placed in the compute memory (rebuilt after each batch and
                                   when the cache outgrows its span) */
};

/* backends: the model's first, the CPU last (n 1 or 2).  False with ggmlc_last_error set. */
bool gpt_runner_init(struct gpt_runner *r, struct gpt_model *m, ggml_backend_t *backends, int n);
void gpt_runner_free(struct gpt_runner *r);
/* Forget the cached positions. */
void gpt_runner_reset(struct gpt_runner *r);

/* Append n tokens (n_past + n <= n_ctx) and write the logits of the last (logits[256]) or,
 * with all, of each of them (logits[256 n]).  False with ggmlc_last_error set. */
bool gpt_runner_eval(struct gpt_runner *r, const int32_t *tokens, int n, bool all, float *logits);

#endif
