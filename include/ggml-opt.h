/*
 * ggml-opt.h - training with ggml graphs: datasets, optimizer contexts,
 * epochs and a one-call fit, compatible with ggml's ggml-opt.h.
 *
 * Usage: put the parameters and inputs in a context allocated by the caller,
 * build the model's output in a second, no_alloc context (ctx_compute) with
 * ggml_set_param on the trainable tensors, create a dataset, then call
 * ggml_opt_fit, or drive ggml_opt_epoch / ggml_opt_alloc + ggml_opt_eval
 * for more control.  The second dimension of inputs and outputs counts
 * datapoints.
 */
#ifndef GGML_OPT_H
#define GGML_OPT_H

#include <stdint.h>

#include "ggml.h"
#include "ggml-backend.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ggml_opt_dataset;
struct ggml_opt_context;
struct ggml_opt_result;

typedef struct ggml_opt_dataset *ggml_opt_dataset_t;
typedef struct ggml_opt_context *ggml_opt_context_t;
typedef struct ggml_opt_result  *ggml_opt_result_t;

/* ---------------------------------------------------------------- loss */

/* What the optimizer minimizes: the mean or sum of the outputs, the cross
 * entropy between softmax(outputs) and the labels, or the mean squared error. */
enum ggml_opt_loss_type {
    GGML_OPT_LOSS_TYPE_MEAN,
    GGML_OPT_LOSS_TYPE_SUM,
    GGML_OPT_LOSS_TYPE_CROSS_ENTROPY,
    GGML_OPT_LOSS_TYPE_MEAN_SQUARED_ERROR,
};

/* ------------------------------------------------------------- dataset */

/* A dataset of ndata datapoints of ne_datapoint elements and labels of ne_label elements
 * (ne_label may be 0), shuffled in shards of ndata_shard datapoints; NULL on failure. */
GGML_API ggml_opt_dataset_t ggml_opt_dataset_init(enum ggml_type type_data, enum ggml_type type_label,
                                                  int64_t ne_datapoint, int64_t ne_label, int64_t ndata, int64_t ndata_shard);
GGML_API void ggml_opt_dataset_free(ggml_opt_dataset_t dataset);

/* Number of datapoints; the tensors holding data [ne_datapoint, ndata] and labels [ne_label, ndata]
 * (host memory: fill them with ggml_get_data or ggml_backend_tensor_set). */
GGML_API int64_t             ggml_opt_dataset_ndata(ggml_opt_dataset_t dataset);
GGML_API struct ggml_tensor *ggml_opt_dataset_data(ggml_opt_dataset_t dataset);
GGML_API struct ggml_tensor *ggml_opt_dataset_labels(ggml_opt_dataset_t dataset);

/* Shuffle the first idata datapoints (all when idata < 0) with opt_ctx's random generator. */
GGML_API void ggml_opt_dataset_shuffle(ggml_opt_context_t opt_ctx, ggml_opt_dataset_t dataset, int64_t idata);

/* Copy batch number ibatch (of data_batch->ne[1] datapoints) into data_batch and labels_batch
 * (labels_batch may be NULL). */
GGML_API void ggml_opt_dataset_get_batch(ggml_opt_dataset_t dataset, struct ggml_tensor *data_batch,
                                         struct ggml_tensor *labels_batch, int64_t ibatch);
/* Same into host memory; nb_data_batch is the byte size of data_batch. */
GGML_API void ggml_opt_dataset_get_batch_host(ggml_opt_dataset_t dataset, void *data_batch, size_t nb_data_batch,
                                              void *labels_batch, int64_t ibatch);

/* ------------------------------------------------------ model, context */

/* How much of the training graph to build: forward only, + gradients, + optimizer step. */
enum ggml_opt_build_type {
    GGML_OPT_BUILD_TYPE_FORWARD = 10,
    GGML_OPT_BUILD_TYPE_GRAD    = 20,
    GGML_OPT_BUILD_TYPE_OPT     = 30,
};

enum ggml_opt_optimizer_type {
    GGML_OPT_OPTIMIZER_TYPE_ADAMW,
    GGML_OPT_OPTIMIZER_TYPE_SGD,

    GGML_OPT_OPTIMIZER_TYPE_COUNT
};

/* Hyperparameters of both optimizers. */
struct ggml_opt_optimizer_params {
    struct {
        float alpha; /* learning rate */
        float beta1;
        float beta2;
        float eps;
        float wd;    /* decoupled weight decay, 0 to disable */
    } adamw;
    struct {
        float alpha; /* learning rate */
        float wd;    /* weight decay */
    } sgd;
};

/* Called before each optimizer step to get the hyperparameters (a learning-rate schedule). */
typedef struct ggml_opt_optimizer_params (*ggml_opt_get_optimizer_params)(void *userdata);

/* Defaults: AdamW alpha 1e-3, betas 0.9/0.999, eps 1e-8, wd 0; SGD alpha 1e-3, wd 0. */
GGML_API struct ggml_opt_optimizer_params ggml_opt_get_default_optimizer_params(void *userdata);
/* Returns *(struct ggml_opt_optimizer_params *)userdata. */
GGML_API struct ggml_opt_optimizer_params ggml_opt_get_constant_optimizer_params(void *userdata);

struct ggml_opt_params {
    ggml_backend_sched_t backend_sched; /* the backends the graphs run on */

    /* set all three to allocate the graphs once (static graphs); else use ggml_opt_prepare_alloc */
    struct ggml_context *ctx_compute;
    struct ggml_tensor  *inputs;
    struct ggml_tensor  *outputs;

    enum ggml_opt_loss_type  loss_type;
    enum ggml_opt_build_type build_type;

    int32_t opt_period; /* gradient accumulation steps per optimizer step */

    ggml_opt_get_optimizer_params get_opt_pars;
    void *get_opt_pars_ud;

    enum ggml_opt_optimizer_type optimizer;
};

/* Parameters with defaults for everything but the scheduler and the loss. */
GGML_API struct ggml_opt_params ggml_opt_default_params(ggml_backend_sched_t backend_sched, enum ggml_opt_loss_type loss_type);

/* A new optimization context, or NULL (ggmlc_last_error says why). */
GGML_API ggml_opt_context_t ggml_opt_init(struct ggml_opt_params params);
GGML_API void ggml_opt_free(ggml_opt_context_t opt_ctx);

/* Zero the gradients and the loss; with optimizer also the optimizer state and step count. */
GGML_API void ggml_opt_reset(ggml_opt_context_t opt_ctx, bool optimizer);

/* Whether the graphs were allocated once at init. */
GGML_API bool ggml_opt_static_graphs(ggml_opt_context_t opt_ctx);

/* The graph's tensors (valid until the next ggml_opt_alloc unless graphs are static). */
GGML_API struct ggml_tensor *ggml_opt_inputs(ggml_opt_context_t opt_ctx);
GGML_API struct ggml_tensor *ggml_opt_outputs(ggml_opt_context_t opt_ctx);
GGML_API struct ggml_tensor *ggml_opt_labels(ggml_opt_context_t opt_ctx);
GGML_API struct ggml_tensor *ggml_opt_loss(ggml_opt_context_t opt_ctx);
GGML_API struct ggml_tensor *ggml_opt_pred(ggml_opt_context_t opt_ctx);
GGML_API struct ggml_tensor *ggml_opt_ncorrect(ggml_opt_context_t opt_ctx);

/* Gradient accumulator of a forward-graph node, or NULL. */
GGML_API struct ggml_tensor *ggml_opt_grad_acc(ggml_opt_context_t opt_ctx, struct ggml_tensor *node);

GGML_API enum ggml_opt_optimizer_type ggml_opt_context_optimizer_type(ggml_opt_context_t opt_ctx);
/* "adamw" or "sgd". */
GGML_API const char *ggml_opt_optimizer_name(enum ggml_opt_optimizer_type type);

/* ---------------------------------------------------------------- results */

GGML_API ggml_opt_result_t ggml_opt_result_init(void);
GGML_API void ggml_opt_result_free(ggml_opt_result_t result);
GGML_API void ggml_opt_result_reset(ggml_opt_result_t result);

/* Datapoints seen; mean loss and its uncertainty; predictions; accuracy and its uncertainty
 * (unc may be NULL; accuracy is NaN when the loss has no notion of it). */
GGML_API void ggml_opt_result_ndata(ggml_opt_result_t result, int64_t *ndata);
GGML_API void ggml_opt_result_loss(ggml_opt_result_t result, double *loss, double *unc);
GGML_API void ggml_opt_result_pred(ggml_opt_result_t result, int32_t *pred);
GGML_API void ggml_opt_result_accuracy(ggml_opt_result_t result, double *accuracy, double *unc);

/* ------------------------------------------------------------ computation */

/* For non-static graphs: give the forward graph to allocate next. */
GGML_API void ggml_opt_prepare_alloc(ggml_opt_context_t opt_ctx, struct ggml_context *ctx_compute, struct ggml_cgraph *gf,
                                     struct ggml_tensor *inputs, struct ggml_tensor *outputs);
/* Allocate the next graph: forward only, or forward + backward (+ optimizer step every opt_period calls). */
GGML_API void ggml_opt_alloc(ggml_opt_context_t opt_ctx, bool backward);
/* Evaluate the allocated graph, adding loss and predictions to result (may be NULL). */
GGML_API void ggml_opt_eval(ggml_opt_context_t opt_ctx, ggml_opt_result_t result);

/* ---------------------------------------------------------- high level */

/* Called after each batch: train tells training from validation. */
typedef void (*ggml_opt_epoch_callback)(bool train, ggml_opt_context_t opt_ctx, ggml_opt_dataset_t dataset,
                                        ggml_opt_result_t result, int64_t ibatch, int64_t ibatch_max, int64_t t_start_us);

/* Train on datapoints [0, idata_split) and evaluate on the rest. */
GGML_API void ggml_opt_epoch(ggml_opt_context_t opt_ctx, ggml_opt_dataset_t dataset, ggml_opt_result_t result_train,
                             ggml_opt_result_t result_eval, int64_t idata_split, ggml_opt_epoch_callback callback_train,
                             ggml_opt_epoch_callback callback_eval);

/* A callback printing a progress bar with loss, accuracy and timing on stderr. */
GGML_API void ggml_opt_epoch_callback_progress_bar(bool train, ggml_opt_context_t opt_ctx, ggml_opt_dataset_t dataset,
                                                   ggml_opt_result_t result, int64_t ibatch, int64_t ibatch_max,
                                                   int64_t t_start_us);

/* Fit outputs(inputs) to the dataset: nepoch epochs, an optimizer step every nbatch_logical
 * datapoints, the last val_split of the data held out for validation. */
GGML_API void ggml_opt_fit(ggml_backend_sched_t backend_sched, struct ggml_context *ctx_compute, struct ggml_tensor *inputs,
                           struct ggml_tensor *outputs, ggml_opt_dataset_t dataset, enum ggml_opt_loss_type loss_type,
                           enum ggml_opt_optimizer_type optimizer, ggml_opt_get_optimizer_params get_opt_pars, int64_t nepoch,
                           int64_t nbatch_logical, float val_split, bool silent);

#ifdef __cplusplus
}
#endif

#endif /* GGML_OPT_H */
