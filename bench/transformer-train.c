/*
 * transformer-train.c - training speed of a small GPT in the model API: token embedding,
 * learned positions, two pre-norm decoder blocks (4 heads, MLP 4x), LayerNorm, Dense to the
 * vocabulary; per-token sparse cross-entropy, AdamW, one fixed batch.  Prints tokens per second
 * over STEPS steps after one warm-up step.  bench/pytorch_transformer.py is the same model.
 *
 * Usage: transformer-train [BACKEND]   (BACKEND: a device or backend name, default: configured)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ggmlc-nn.h"

enum { V = 256, T = 64, D = 128, B = 16, STEPS = 20 };

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static ggmlc_model *small_gpt(void) {
    ggmlc_model *m = ggmlc_sequential((int64_t[]){T}, 1);
    ggmlc_model_add(m, ggmlc_embedding(V, D));
    ggmlc_model_add(m, ggmlc_positional_embedding(T, true));
    struct ggmlc_transformer_options o = ggmlc_transformer_defaults(4, 4 * D);
    o.pre_norm = true;
    for (int i = 0; i < 2; i++) ggmlc_model_add(m, ggmlc_transformer_decoder(&o));
    ggmlc_model_add(m, ggmlc_layer_norm(1e-5f));
    ggmlc_model_add(m, ggmlc_dense(V, GGMLC_ACT_NONE));
    return m;
}

int main(int argc, char **argv) {
    ggmlc_model *m = small_gpt();
    struct ggmlc_compile_options co = ggmlc_compile_defaults();
    co.loss = GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
    co.backend = argc > 1 ? argv[1] : NULL;
    if (ggmlc_model_compile(m, &co) != GGMLC_OK) {
        fprintf(stderr, "transformer-train: %s\n", ggmlc_last_error());
        ggmlc_model_free(m);
        return 1;
    }
    static float x[B * T], y[B * T];
    srand(1);
    for (int i = 0; i < B * T; i++) x[i] = (float)(rand() % V), y[i] = (float)(rand() % V);
    double loss = 0;
    ggmlc_model_train_on_batch(m, x, B * T, y, B * T, B, &loss, NULL); /* warm-up: graphs built */
    const double t0 = now();
    for (int s = 0; s < STEPS; s++) ggmlc_model_train_on_batch(m, x, B * T, y, B * T, B, &loss, NULL);
    const double dt = now() - t0;
    printf("ggmlc: %.0f tokens/s (%.1f ms per step of %d x %d tokens), %lld parameters, loss %.3f\n",
           STEPS * B * T / dt, 1e3 * dt / STEPS, B, T, (long long)ggmlc_model_param_count(m, false), loss);
    ggmlc_model_free(m);
    return 0;
}
