/*
 * ggmlc-nn.h - neural-network layers and a Keras-like model API on top of
 * ggml graphs, autograd and the backend scheduler.
 *
 * A dozen lines build, train, evaluate, save and reload a network:
 *
 *     ggmlc_model *m = ggmlc_sequential((int64_t[]){784}, 1);
 *     ggmlc_model_add(m, ggmlc_dense(256, GGMLC_ACT_RELU));
 *     ggmlc_model_add(m, ggmlc_dense(10, GGMLC_ACT_NONE));
 *     struct ggmlc_compile_options co = ggmlc_compile_defaults();
 *     co.loss = GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
 *     ggmlc_model_compile(m, &co);
 *     struct ggmlc_fit_options fo = ggmlc_fit_defaults();
 *     ggmlc_model_fit(m, x, y, n, &fo, &history);
 *     ggmlc_model_evaluate(m, x_test, y_test, n_test, 256, &loss, metrics);
 *     ggmlc_model_save(m, "model.gguf", false);
 *
 * Shapes follow Keras (batch dimension first, omitted in layer shapes:
 * an image is {H, W, C}, a sequence {T, F}); data are row-major float
 * arrays.  Functions that can fail return an enum ggmlc_status and leave a
 * message in ggmlc_last_error(); constructors return NULL.
 *
 * THIS HEADER IS A DRAFT CONTRACT written by the lead: the nn helpers own it
 * from now on and may refine it (keep it documented function by function).
 */
#ifndef GGMLC_NN_H
#define GGMLC_NN_H

#include <stdio.h>

#include "ggml.h"
#include "ggmlc.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ggmlc_model ggmlc_model;
typedef struct ggmlc_layer ggmlc_layer;
typedef struct ggmlc_history ggmlc_history;

enum ggmlc_activation {
    GGMLC_ACT_NONE,
    GGMLC_ACT_RELU,
    GGMLC_ACT_LEAKY_RELU, /* slope 0.01 (ggmlc_leaky_relu for another) */
    GGMLC_ACT_ELU,
    GGMLC_ACT_GELU,
    GGMLC_ACT_SILU,
    GGMLC_ACT_SIGMOID,
    GGMLC_ACT_TANH,
    GGMLC_ACT_SOFTMAX,
    GGMLC_ACT_HARDSWISH,
};

enum ggmlc_initializer {
    GGMLC_INIT_GLOROT_UNIFORM, /* default for dense/conv kernels */
    GGMLC_INIT_GLOROT_NORMAL,
    GGMLC_INIT_HE_UNIFORM,
    GGMLC_INIT_HE_NORMAL,
    GGMLC_INIT_ZEROS,
    GGMLC_INIT_ONES,
};

/* -------------------------------------------------------------- datasets */

/* A labelled dataset in memory: the layout ggmlc_model_fit takes. */
struct ggmlc_dataset {
    float *x;            /* n samples of prod(shape) floats, row-major, batch first */
    float *y;            /* n class indices stored as floats (sparse labels) */
    int64_t n;
    int64_t shape[3];    /* one sample without batch: {1, 8, 8} digits, {1, 28, 28} Fashion-MNIST, {F} CSV */
    int n_dims;
    int n_classes;       /* largest label + 1 */
    float value_max;     /* largest possible (or, for CSV, seen) feature value: 16 digits, 255 IDX */
};

/* The 8x8 handwritten digits embedded in ggmlc (1797 images, pixels 0..16, shape {1, 8, 8}),
 * looked up in $GGMLC_DATA_DIR, the installed data folder, then the source tree. */
GGML_API enum ggmlc_status ggmlc_dataset_load_digits(struct ggmlc_dataset *out);
/* A CSV file, gzip'd or plain: per line the features then an integer label 0..65535;
 * every line has the same number of fields; shape {F}. */
GGML_API enum ggmlc_status ggmlc_dataset_load_csv(const char *path, struct ggmlc_dataset *out);
/* A pair of IDX files, gzip'd or plain (ubyte images of n x H x W, ubyte labels of n), as
 * MNIST ships them; shape {1, H, W}.  Every header field is checked against the file. */
GGML_API enum ggmlc_status ggmlc_dataset_load_idx(const char *images_path, const char *labels_path,
                                                  struct ggmlc_dataset *out);
/* Fashion-MNIST's train (60000) or test (10000) part from dir, NULL for Debian's package
 * dataset-fashion-mnist (/usr/share/datasets/fashion-mnist); GGMLC_ERR_NOT_FOUND when absent. */
GGML_API enum ggmlc_status ggmlc_dataset_load_fashion_mnist(const char *dir, bool train, struct ggmlc_dataset *out);
/* Divide every feature by value_max, bringing pixels to [0, 1] (value_max becomes 1). */
GGML_API void ggmlc_dataset_normalize(struct ggmlc_dataset *d);
/* Stratified, deterministic split: from each class, round(test_fraction * count) samples
 * chosen with seed go to test, the rest to train; both come out shuffled with seed. */
GGML_API enum ggmlc_status ggmlc_dataset_split(const struct ggmlc_dataset *d, double test_fraction, uint64_t seed,
                                               struct ggmlc_dataset *train, struct ggmlc_dataset *test);
/* Number of floats of one sample (prod(shape)). */
GGML_API int64_t ggmlc_dataset_sample_size(const struct ggmlc_dataset *d);
/* Free the arrays and zero the struct (safe on a zeroed or already freed one). */
GGML_API void ggmlc_dataset_free(struct ggmlc_dataset *d);

/* ---------------------------------------------------------------- layers */

GGML_API ggmlc_layer *ggmlc_dense(int64_t units, enum ggmlc_activation act);
/* 1-D convolution over {T, C} inputs; padding: 0 = valid, -1 = same. */
GGML_API ggmlc_layer *ggmlc_conv1d(int64_t filters, int kernel, int stride, int padding, int dilation, enum ggmlc_activation act);
/* 2-D convolution over {H, W, C} inputs; padding: 0 = valid, -1 = same, n > 0 = n pixels. */
GGML_API ggmlc_layer *ggmlc_conv2d(int64_t filters, int kernel_h, int kernel_w, int stride, int padding, int dilation,
                                   enum ggmlc_activation act);
GGML_API ggmlc_layer *ggmlc_max_pool2d(int pool, int stride);
GGML_API ggmlc_layer *ggmlc_avg_pool2d(int pool, int stride);
GGML_API ggmlc_layer *ggmlc_max_pool1d(int pool, int stride);
GGML_API ggmlc_layer *ggmlc_avg_pool1d(int pool, int stride);
GGML_API ggmlc_layer *ggmlc_global_avg_pool2d(void);
GGML_API ggmlc_layer *ggmlc_global_max_pool2d(void);
GGML_API ggmlc_layer *ggmlc_flatten(void);
GGML_API ggmlc_layer *ggmlc_reshape(const int64_t *shape, int n_dims);
/* Drops units with probability rate during fit only. */
GGML_API ggmlc_layer *ggmlc_dropout(float rate);
/* Batch statistics in training, running mean/variance in inference. */
GGML_API ggmlc_layer *ggmlc_batch_norm(float momentum, float eps);
GGML_API ggmlc_layer *ggmlc_layer_norm(float eps);
GGML_API ggmlc_layer *ggmlc_rms_norm(float eps);
/* Integer token ids (stored as floats in the input array) to vectors. */
GGML_API ggmlc_layer *ggmlc_embedding(int64_t vocab, int64_t dim);
GGML_API ggmlc_layer *ggmlc_activation(enum ggmlc_activation act);
GGML_API ggmlc_layer *ggmlc_leaky_relu(float slope);
/* Recurrent layers unrolled over the sequence; output {units} or {T, units}. */
GGML_API ggmlc_layer *ggmlc_lstm(int64_t units, bool return_sequences);
GGML_API ggmlc_layer *ggmlc_gru(int64_t units, bool return_sequences);

/* Layer settings (before compile). */
GGML_API void ggmlc_layer_set_name(ggmlc_layer *layer, const char *name);
GGML_API void ggmlc_layer_set_initializer(ggmlc_layer *layer, enum ggmlc_initializer kernel_init);
/* Frozen layers keep their weights during fit (transfer learning). */
GGML_API void ggmlc_layer_set_trainable(ggmlc_layer *layer, bool trainable);

#ifdef __cplusplus
}
#endif

#endif /* GGMLC_NN_H */
