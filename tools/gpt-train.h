/*
 * gpt-train.h - training the GPT of gpt-model.h on a text with ggml-opt (AdamW, cross entropy
 * of the next byte), with a held-out tail of the text for the validation loss.
 */
#ifndef GGMLC_GPT_TRAIN_H
#define GGMLC_GPT_TRAIN_H

#include <stdio.h>

#include "gpt-model.h"

struct gpt_train_options {
    int64_t batch;       /* sequences per step */
    int64_t steps;       /* optimizer steps in all */
    int64_t eval_every;  /* steps per epoch: a validation loss and a progress line after each */
    double lr;           /* peak AdamW learning rate (linear warm-up, cosine decay to lr / 10) */
    double val_split;    /* the text's tail held out for validation */
    uint64_t seed;       /* which windows each step trains on */
    bool quiet;          /* print nothing while training */
    const char *plot;    /* SVG of the learning curves, or NULL */
};

struct gpt_train_result {
    double val_loss, train_loss;
    double tokens_per_second; /* training tokens (batch x context) per second of steps, the
                               * first step (which places the graphs) left out */
    int64_t steps;
};

/* Train m (its weights on backends[0]; backends[n - 1] the CPU) on text[len].  Progress lines on
 * out.  False with ggmlc_last_error set. */
bool gpt_train(struct gpt_model *m, ggml_backend_t *backends, int n_backends,
               const unsigned char *text, size_t len, const struct gpt_train_options *o, FILE *out,
               struct gpt_train_result *res);

/* Mean cross entropy (nats per byte) of m on n_windows windows of text spread evenly. */
double gpt_text_loss(struct gpt_model *m, ggml_backend_t *backends, int n_backends,
                     const unsigned char *text, size_t len, int n_windows);

#endif
