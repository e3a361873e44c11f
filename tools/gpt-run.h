/*
 * gpt-run.h - generation with a key/value cache: a prompt is evaluated as one batch, then
 * each new byte is one step over the cached keys and values of the bytes before it.
 */
#ifndef GGMLC_GPT_RUN_H
#define GGMLC_GPT_RUN_H

#include "gpt-model.h"

struct gpt_runner {
    struct gpt_model *model;
    struct gpt_cache cache;
    ggml_backend_sched_t sched; /* the model's backend, then the CPU for what it lacks */
    void *meta;                 /* room for one step's graph metadata */
    size_t meta_size;
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
