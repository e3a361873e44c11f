/*
 * nn-impl.h - what the files of nn/ share: layers, the model's graph of
 * nodes, parameters, and the graphs the training engine builds.
 *
 * Shapes without batch are kept in Keras order (outermost first, e.g.
 * {C, H, W}); a ggml tensor of such a shape has ne = [W, H, C, batch].
 */
#ifndef GGMLC_NN_IMPL_H
#define GGMLC_NN_IMPL_H

#include <string.h>

#include "ggml-backend.h"
#include "ggmlc-internal.h"
#include "ggmlc-nn.h"

#define NN_MAX_DIMS    3   /* shapes without the batch dimension */
#define NN_MAX_PARAMS  32  /* per layer (a Transformer decoder block has 26) */
#define NN_MAX_NODES   256
#define NN_MAX_AUX     1024 /* dropout masks: a Transformer block with dropout has 4 to 6 */
/* Limits that keep shape arithmetic inside int64 and int, whatever a model file says: a
 * shape or parameter holds at most 2^40 elements; kernels, strides, dilations and padding
 * are at most NN_MAX_WINDOW. */
#define NN_MAX_ELEMS   ((int64_t)1 << 40)
#define NN_MAX_WINDOW  32768

struct nn_param {
    char name[32];               /* "kernel", "bias", "moving_mean", ... */
    int64_t ne[4];               /* ggml order */
    enum ggmlc_initializer init;
    double fan_in, fan_out;      /* for the initializers' scales (double: products of large sizes) */
    bool trainable;              /* false for statistics such as a moving mean */
    struct ggml_tensor *t;       /* the weights, once compiled */
    struct ggml_tensor *m, *v;   /* optimizer state: AdamW moments; SGD velocity in m */
};

struct layer_cfg {
    int64_t units;               /* dense, recurrent; filters of convolutions; embedding dim */
    int64_t vocab;
    int kernel[2], stride, padding, dilation;
    float rate, eps, momentum, slope;
    bool return_sequences;
    int64_t shape[NN_MAX_DIMS];  /* reshape */
    int n_dims;
    enum ggml_op_pool pool;
    /* attention and Transformer blocks (layers-attn.c, layers-transformer.c) */
    int64_t heads, kv_heads, ff; /* ff: MLP width; head width of the spatial transformer */
    unsigned attn_flags;         /* NN_ATTN_* */
    int groups;                  /* group norms */
    float max_bias, rope_base;
};

enum {
    NN_ATTN_CAUSAL = 1,
    NN_ATTN_FUSED = 2,
    NN_ATTN_BIAS = 4,
    NN_ATTN_ROPE = 8,
    NN_ATTN_PRE_NORM = 16,
    NN_ATTN_RMS = 32,
    NN_ATTN_SWIGLU = 64,
    NN_ATTN_MLP_BIAS = 128,
    NN_ATTN_LEARNED = 256,
};

struct nn_build;

struct layer_ops {
    const char *kind;
    /* Output shape for an input shape; declares the parameters. */
    enum ggmlc_status (*setup)(ggmlc_layer *l, const int64_t *in, int in_dims, int64_t *out, int *out_dims);
    /* The layer's graph on x (ggml layout, batch last). */
    struct ggml_tensor *(*forward)(ggmlc_layer *l, struct nn_build *b, struct ggml_tensor *x);
    /* Layers with an optional second input (ggmlc_apply2; in2 NULL without one) set these two
     * instead of setup and forward. */
    enum ggmlc_status (*setup2)(ggmlc_layer *l, const int64_t *in, int in_dims, const int64_t *in2,
                                int in2_dims, int64_t *out, int *out_dims);
    struct ggml_tensor *(*forward2)(ggmlc_layer *l, struct nn_build *b, struct ggml_tensor *x,
                                    struct ggml_tensor *x2);
};

struct ggmlc_layer {
    const struct layer_ops *ops;
    char name[64];
    struct layer_cfg cfg;
    enum ggmlc_activation act;
    enum ggmlc_initializer kernel_init;
    bool trainable;
    bool set_up;
    struct nn_param params[NN_MAX_PARAMS];
    int n_params;
    int64_t in_shape[NN_MAX_DIMS], out_shape[NN_MAX_DIMS];
    int in_dims, out_dims;
    int64_t in2_shape[NN_MAX_DIMS]; /* the second input's (ggmlc_apply2), in2_dims 0 without one */
    int in2_dims;
    bool owned;        /* by a model */
    bool default_name; /* numbered when added to a model */
};

enum nn_node_kind { NODE_INPUT, NODE_LAYER, NODE_ADD, NODE_CONCAT };

struct ggmlc_node {
    enum nn_node_kind kind;
    ggmlc_layer *layer;
    ggmlc_node *in[2];
    int axis;
    int64_t shape[NN_MAX_DIMS];
    int n_dims;
    struct ggml_tensor *t; /* during a build */
};

/* Per-step inputs and outputs a graph registers: dropout masks, batch statistics. */
enum nn_aux_kind { AUX_DROPOUT_MASK, AUX_BATCH_MEAN, AUX_BATCH_VAR };
struct nn_aux {
    enum nn_aux_kind kind;
    ggmlc_layer *layer;
    struct ggml_tensor *t;
    int64_t count; /* batch statistics: values per channel */
};

struct nn_build {
    struct ggml_context *ctx;
    bool training;
    int64_t batch;
    struct nn_aux aux[NN_MAX_AUX];
    int n_aux;
};

/* One graph of the engine: a batch size, training or inference. */
struct nn_graph {
    bool training;
    int64_t batch;
    struct ggml_context *ctx;
    struct ggml_cgraph *gf;      /* forward (+ loss) */
    struct ggml_cgraph *gb_grad; /* + gradients (reset target) */
    struct ggml_cgraph *gb;      /* + optimizer updates: what a training step computes */
    struct ggml_tensor *x[GGMLC_MAX_IO];         /* per input */
    struct ggml_tensor *y[GGMLC_MAX_IO], *out[GGMLC_MAX_IO], *head_loss[GGMLC_MAX_IO]; /* per output */
    struct ggml_tensor *loss;                    /* the weighted sum of head_loss */
    struct nn_build build;
    bool gathered;            /* inputs and labels gathered on the device (device-data.c) */
    struct ggml_tensor *idx;  /* then: the batch's sample indices, the one per-step upload */
    bool grouped;             /* one optimizer node per parameter group (optim-group.c) */
    bool accumulates;         /* then: some gradient is still summed into a cleared accumulator */
    bool seed_set;            /* then: the loss's gradient seed is 1 for good (optim-group.c) */
};

/* What each output is trained with. */
struct nn_head {
    enum ggmlc_loss loss;
    float weight;      /* of its loss in the total */
    unsigned metrics;  /* ggmlc_metric flags */
};

struct ggmlc_history {
    struct ggmlc_epoch_logs *epochs;
    int n, cap;
};

struct nn_device_data;
struct nn_groups;

struct ggmlc_model {
    bool sequential;
    bool finished;               /* outputs known, shapes inferred */
    /* The first refused ggmlc_model_add: the model lacks that layer, so compile and fit refuse it. */
    enum ggmlc_status broken;
    char broken_why[256];
    ggmlc_node *nodes[NN_MAX_NODES];
    int n_nodes;
    ggmlc_node *inputs[GGMLC_MAX_IO], *outputs[GGMLC_MAX_IO];
    int n_inputs, n_outputs;
    struct nn_head heads[GGMLC_MAX_IO]; /* per output, set by compile */
    ggmlc_layer *layers[NN_MAX_NODES];
    int n_layers;

    bool compiled;
    struct ggmlc_compile_options opt;
    ggml_backend_t backends[8];
    int n_backends;
    ggml_backend_sched_t sched;
    struct ggml_context *ctx_params;
    ggml_backend_buffer_t buf_params;
    struct ggml_tensor *opt_pars; /* the optimizer's hyperparameters (ggmlc__optim_pack) */
    double lr;
    int64_t step;
    struct ggmlc_rng rng;        /* weight initialisation, shuffling, dropout */
    bool stop_training;

    struct nn_graph *graphs[4];
    int n_graphs;
    struct nn_graph *allocated;
    struct ggmlc_alloc_record placed; /* what the scheduler placed for `allocated` */
    /* a pass's loss and metrics summed on the device (fit-device.c) */
    struct ggml_context *ctx_stats;
    ggml_backend_buffer_t buf_stats;
    struct ggml_tensor *stats_acc, *stats_eye;
    bool stats_refused; /* scored on the host */
    struct nn_device_data *dev_data; /* a fit's training data on the device (device-data.c) */
    bool data_on_device;             /* the fit under way gathers its batches there */
    struct nn_groups *groups;        /* the trainable parameters packed per group (optim-group.c) */
};

/* ---------------------------------------------------------------- layers */

GGMLC_HIDDEN ggmlc_layer *ggmlc__nn_layer_new(const struct layer_ops *ops,
                                              enum ggmlc_activation act);
/* Declare a parameter of the layer being set up. */
GGMLC_HIDDEN struct nn_param *ggmlc__nn_add_param(ggmlc_layer *l, const char *name, int n_dims, const int64_t *ne,
                                           enum ggmlc_initializer init, double fan_in, double fan_out);
/* Apply an activation function. */
GGMLC_HIDDEN struct ggml_tensor *ggmlc__nn_activate(struct ggml_context *ctx, struct ggml_tensor *x, enum ggmlc_activation act, float slope);
/* Register a per-step tensor of the graph being built. */
GGMLC_HIDDEN bool ggmlc__nn_add_aux(struct nn_build *b, enum nn_aux_kind kind, ggmlc_layer *l, struct ggml_tensor *t, int64_t count);
/* The name of a layer's parameter tensor ("<layer>.<param>"), as models save and load it. */
GGMLC_HIDDEN void ggmlc__nn_param_name(const ggmlc_layer *l, const struct nn_param *p, char *buf, size_t size);
/* Number of elements of a shape; -1 when a dimension is not positive or there are more than NN_MAX_ELEMS. */
GGMLC_HIDDEN int64_t ggmlc__nn_shape_elems(const int64_t *shape, int n_dims);
/* Report a layer given an input of the wrong rank; returns GGMLC_ERR_SHAPE. */
GGMLC_HIDDEN enum ggmlc_status ggmlc__nn_bad_input(ggmlc_layer *l, const char *need, int in_dims);
/* The layer kinds of the other files, for ggmlc__nn_layer_ops_by_kind. */
GGMLC_HIDDEN extern const struct layer_ops ggmlc__nn_conv1d_ops, ggmlc__nn_conv2d_ops, ggmlc__nn_pool1d_ops, ggmlc__nn_pool2d_ops, ggmlc__nn_global_pool2d_ops;
GGMLC_HIDDEN extern const struct layer_ops ggmlc__nn_batch_norm_ops, ggmlc__nn_layer_norm_ops, ggmlc__nn_rms_norm_ops, ggmlc__nn_embedding_ops;
GGMLC_HIDDEN extern const struct layer_ops ggmlc__nn_lstm_ops, ggmlc__nn_gru_ops;
GGMLC_HIDDEN extern const struct layer_ops ggmlc__nn_mha_ops, ggmlc__nn_posemb_ops,
    ggmlc__nn_encoder_ops, ggmlc__nn_decoder_ops;
GGMLC_HIDDEN extern const struct layer_ops ggmlc__nn_unet_res_ops, ggmlc__nn_spatial_ops;
/* Settings of the attention and Transformer layers a model file may have forged; else why not. */
GGMLC_HIDDEN bool ggmlc__nn_attn_settings_valid(const ggmlc_layer *l, char *why, size_t size);
/* Settings checks: ok as given; when not, why receives "<name> <value> is not <need>". */
GGMLC_HIDDEN bool ggmlc__nn_setting_ok(bool ok, const char *name, double value, const char *need, char *why, size_t size);
/* v in [0, 1) (false for NaN). */
GGMLC_HIDDEN bool ggmlc__nn_in_unit_interval(double v);
/* Layer kinds by name (for loading saved models). */
GGMLC_HIDDEN const struct layer_ops *ggmlc__nn_layer_ops_by_kind(const char *kind);

/* ----------------------------------------------------------------- model */

/* Whether compile options are in range (as ggmlc-nn.h lists them); else why not, into why. */
GGMLC_HIDDEN bool ggmlc__nn_compile_settings_valid(const struct ggmlc_compile_options *o, char *why, size_t size);
/* Whether a layer's settings are those its constructor accepts (a model file may forge them); else why not. */
GGMLC_HIDDEN bool ggmlc__nn_layer_settings_valid(const ggmlc_layer *l, char *why, size_t size);
/* GGMLC_OK, or (with the message again) the first refused ggmlc_model_add of the model, for func. */
GGMLC_HIDDEN enum ggmlc_status ggmlc__nn_model_usable(const ggmlc_model *m, const char *func);
/* Infer shapes and set up every layer (idempotent). */
GGMLC_HIDDEN enum ggmlc_status ggmlc__nn_model_finish(ggmlc_model *m);
/* Build the model's forward graph on the input tensors x[]; fills out[] per output and, when
 * logits is not NULL, logits[] (an output's final softmax/sigmoid left out, for the loss). */
GGMLC_HIDDEN bool ggmlc__nn_model_forward(ggmlc_model *m, struct nn_build *b, struct ggml_tensor **x, struct ggml_tensor **out,
                                   struct ggml_tensor **logits);
/* Output k's name in logs: its layer's name, else "output_<k+1>". */
GGMLC_HIDDEN void ggmlc__nn_output_name(const ggmlc_model *m, int k, char *buf, size_t size);
/* Whether input i carries token ids (an embedding reads it), and the smallest vocabulary reading it (0: none). */
GGMLC_HIDDEN bool ggmlc__nn_input_is_index(const ggmlc_model *m, int i);
GGMLC_HIDDEN int64_t ggmlc__nn_input_vocab(const ggmlc_model *m, int i);
GGMLC_HIDDEN int64_t ggmlc__nn_input_elems(const ggmlc_model *m, int i);
GGMLC_HIDDEN int64_t ggmlc__nn_output_elems(const ggmlc_model *m, int k);
/* Floats of one sample's target of output k (one class index per position for sparse labels). */
GGMLC_HIDDEN int64_t ggmlc__nn_target_elems(const ggmlc_model *m, int k);
/* Classes of output k: for the (sparse) categorical cross-entropy its last axis (an output
 * {T, V} is T distributions over V classes), for the other losses all its elements. */
GGMLC_HIDDEN int64_t ggmlc__nn_output_classes(const ggmlc_model *m, int k);
/* The optimizer module's kind for the compile options (SGD with momentum when momentum > 0). */
GGMLC_HIDDEN enum ggmlc_optim_kind ggmlc__nn_optim_kind(const struct ggmlc_compile_options *o);

/* ---------------------------------------------------------------- engine */

struct nn_progress;

GGMLC_HIDDEN void ggmlc__nn_graphs_free(ggmlc_model *m);

/* One pass's data: per input and per output (targets NULL when predicting), n samples each. */
struct nn_data {
    const float *x[GGMLC_MAX_IO], *y[GGMLC_MAX_IO];
    int64_t n;
};

/* Accumulated loss and metrics of a pass over data. */
struct pass_stats {
    double loss_sum, head_loss_sum[GGMLC_MAX_IO];
    int64_t n;
    double correct[GGMLC_MAX_IO]; /* per sample the fraction of its positions classified right */
    double abs_err[GGMLC_MAX_IO];
};

/* Batches over the data, in order or in the given sample order: train when training, else score;
 * stats and outputs (pred[k], n * output elems) are collected when not NULL; fo/progress for fit. */
GGMLC_HIDDEN enum ggmlc_status ggmlc__nn_run_pass(ggmlc_model *m, const struct nn_data *d, int64_t batch, const int64_t *order, bool training,
                                           const float *class_weights, struct pass_stats *st, float *const *pred,
                                           const struct ggmlc_fit_options *fo, int epoch, struct nn_progress *progress);
/* Loss and metrics of a pass into the train (val false) or validation fields of logs. */
GGMLC_HIDDEN void ggmlc__nn_fill_logs(const ggmlc_model *m, const struct pass_stats *st, bool val, struct ggmlc_epoch_logs *logs);
GGMLC_HIDDEN enum ggmlc_status ggmlc__nn_history_push(ggmlc_history *h, const struct ggmlc_epoch_logs *logs);

/* ----------------------------------------------------------- progress */

struct nn_progress {
    const ggmlc_model *model;    /* output names */
    bool enabled, tty;
    int epoch, epochs;
    int64_t total, done;
    int64_t t_start, t_last;
};
GGMLC_HIDDEN void ggmlc__nn_progress_begin(struct nn_progress *p, const ggmlc_model *m, int verbose, int epoch, int epochs, int64_t total);
/* running: the epoch's logs so far (train fields). */
GGMLC_HIDDEN void ggmlc__nn_progress_update(struct nn_progress *p, int64_t done, const struct ggmlc_epoch_logs *running);
GGMLC_HIDDEN void ggmlc__nn_progress_end(struct nn_progress *p,
                                         const struct ggmlc_epoch_logs *logs);

/* Whether the progress line would be drawn for `done` samples now (the engine then reads the
 * metrics it sums on the device). */
GGMLC_HIDDEN bool ggmlc__nn_progress_due(const struct nn_progress *p, int64_t done);

/* ------------------------------------------------ metrics on the device (fit-device.c) */

/* Whether the model's graphs sum loss and metrics on the device (its accumulator made on
 * first call): false for a model on the CPU or with an output only the host scores. */
GGMLC_HIDDEN bool ggmlc__nn_device_stats_usable(ggmlc_model *m);
/* Append the nodes that add g's batch to the accumulator to graph (nothing when unused). */
GGMLC_HIDDEN void ggmlc__nn_build_device_stats(ggmlc_model *m, struct nn_graph *g,
                                              struct ggml_cgraph *graph);
/* Zero the accumulator. */
GGMLC_HIDDEN void ggmlc__nn_device_stats_reset(ggmlc_model *m);
/* Add the accumulator, summed over `samples` samples, to st and zero it; the mean loss, and in
 * *finite_steps how many steps since the last read came before the first non-finite loss. */
GGMLC_HIDDEN float ggmlc__nn_device_stats_read(ggmlc_model *m, int64_t samples,
                                               struct pass_stats *st, int64_t *finite_steps);
GGMLC_HIDDEN void ggmlc__nn_device_stats_free(ggmlc_model *m);

/* ---------------------------------------------- training data on the device (device-data.c) */

/* Upload a fit's training data (labels as upload_target makes them) into device memory for its
 * steps to gather their batches from; false when the model or the data do not qualify (the
 * batches then go up one by one). */
GGMLC_HIDDEN bool ggmlc__nn_device_data_load(ggmlc_model *m, const struct nn_data *d,
                                             const float *class_weights);
/* Input i (or output i's labels) of a batch gathered from the device data by idx, shaped like
 * `like`. */
GGMLC_HIDDEN struct ggml_tensor *ggmlc__nn_gather(const ggmlc_model *m, struct ggml_context *ctx,
                                                  bool output, int i, struct ggml_tensor *idx,
                                                  const struct ggml_tensor *like);
GGMLC_HIDDEN void ggmlc__nn_device_data_free(ggmlc_model *m);

/* ------------------------------------------------- parameter groups (optim-group.c) */

/* The weights buffer (m->buf_params) for the tensors of ctx_params: trainable parameters and
 * their optimizer state packed per group, with a gradient buffer in the same layout; where
 * that cannot be (a buffer larger than the device allows), each tensor where
 * ggml_backend_alloc_ctx_tensors puts it and no groups.  False when memory is short. */
GGMLC_HIDDEN bool ggmlc__nn_params_alloc(ggmlc_model *m);
GGMLC_HIDDEN void ggmlc__nn_groups_free(ggmlc_model *m);
/* One optimizer update per group appended to the training graph g->gb, the gradient
 * accumulators of g->gb_grad placed in the groups' gradient spans: 1 when done, 0 when g
 * needs the per-tensor updates (no groups, clipped gradients, a parameter without an
 * accumulator), -1 on failure (error set). */
GGMLC_HIDDEN int ggmlc__nn_build_group_updates(ggmlc_model *m, struct nn_graph *g);
/* The gradients of a training graph zeroed and the loss's seed set to 1 before a step: where g
 * is grouped, one memset per group where some gradient accumulates and the seed where it is
 * not set for good (often nothing at all), else ggml_graph_reset. */
GGMLC_HIDDEN void ggmlc__nn_grads_reset(ggmlc_model *m, struct nn_graph *g);
/* How many groups the model's parameters form (0 without groups). */
GGMLC_HIDDEN int ggmlc__nn_group_count(const ggmlc_model *m);
/* The label row of output k for sample s as the loss takes it (engine.c): one-hot for sparse
 * labels, class weights folded in. */
GGMLC_HIDDEN void ggmlc__nn_target_row(const ggmlc_model *m, int k, const float *y, int64_t s,
                                       const float *class_weights, float *row);

#endif /* GGMLC_NN_IMPL_H */
