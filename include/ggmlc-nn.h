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
 *     ggmlc_model_fit(m, x, n * 784, y, n, n, &fo, &history);
 *     ggmlc_model_evaluate(m, x_test, n_test * 784, y_test, n_test, n_test, 256, &loss, metrics);
 *     ggmlc_model_save(m, "model.gguf", false);
 *
 * Functional models (ggmlc_functional, ggmlc_input, ggmlc_apply, ggmlc_model_set_outputs) may have
 * several inputs and outputs, a loss per output (compile options losses/loss_weights) and train with
 * ggmlc_model_fit_multi on one struct ggmlc_array per input and output.
 *
 * Shapes leave out the batch dimension (an image is {C, H, W}, a sequence
 * {T, F}); data are row-major float arrays with the batch dimension first.  Functions that can fail return an enum ggmlc_status and leave a
 * message in ggmlc_last_error(); constructors return NULL.
 *
 * Array lengths: every float array the model API reads or writes comes with its length, the
 * number of floats it holds (a size_t beside the pointer, or the len field of struct
 * ggmlc_array).  Each call checks the lengths against the sample count and the model's shapes
 * before it touches the data: data of another shape end in GGMLC_ERR_SHAPE and one message
 * naming the expected and the actual shape, never in a read or write past an array.
 *
 * Image layers use PyTorch's channels-first layout: an image input is
 * {C, H, W}, so data written row-major as (N, C, H, W) needs no permutation
 * and weights match PyTorch's (a dense kernel is (out, in) row-major, a
 * conv2d kernel (OC, IC, KH, KW)).
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

/* Most inputs, and most outputs, of a functional model. */
#define GGMLC_MAX_IO 8

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
/* The loaders read regular files only: a device, FIFO or socket is refused at once
 * (GGMLC_ERR_IO), without reading from it or waiting for a writer. */
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
/* The memory limit of the loaders: a loader never holds more than this many bytes for one
 * dataset (a CSV file's decompressed text while it is parsed plus the floats; an IDX pair's
 * floats), so a small gzip'd file cannot expand into gigabytes; beyond it a load fails with
 * GGMLC_ERR_NOMEM and a message naming the limit.  The default is
 * GGMLC_DATASET_DEFAULT_MAX_BYTES (1 GiB; Fashion-MNIST's training part takes 190 MB), or
 * $GGMLC_DATASET_MAX_BYTES (bytes, optionally with a K, M or G suffix of powers of 1024) when
 * set; ggmlc_dataset_set_max_bytes overrides both for the process (0: back to them). */
#define GGMLC_DATASET_DEFAULT_MAX_BYTES ((size_t)1 << 30)
GGML_API void ggmlc_dataset_set_max_bytes(size_t max_bytes);
/* The limit in force. */
GGML_API size_t ggmlc_dataset_max_bytes(void);
/* Free the arrays and zero the struct (safe on a zeroed or already freed one). */
GGML_API void ggmlc_dataset_free(struct ggmlc_dataset *d);

/* ------------------------------------------------------------------ plots */

struct ggmlc_epoch_logs;
/* Learning curves (loss; accuracy when measured; train and validation) of n epochs as a
 * standalone SVG file, written to a temporary file and renamed into place. */
GGML_API enum ggmlc_status ggmlc_plot_epochs(const struct ggmlc_epoch_logs *logs, int n_epochs, const char *title,
                                             const char *path);

/* The same for a training history returned by ggmlc_model_fit. */
GGML_API enum ggmlc_status ggmlc_plot_history(const ggmlc_history *history, const char *title, const char *path);

/* ---------------------------------------------------------------- layers */

GGML_API ggmlc_layer *ggmlc_dense(int64_t units, enum ggmlc_activation act);
/* 1-D convolution over {T, C} inputs; padding: 0 = valid, -1 = same. */
GGML_API ggmlc_layer *ggmlc_conv1d(int64_t filters, int kernel, int stride, int padding, int dilation, enum ggmlc_activation act);
/* 2-D convolution over {C, H, W} inputs; padding: 0 = valid, -1 = same, n > 0 = n pixels. */
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

/* ------------------------------------------------- attention and Transformers
 *
 * Sequences are {T, D} (T positions of D features).  Attention runs through ggml_flash_attn_ext
 * (forward and, through its backward rule, training); with attention dropout in training it runs
 * as soft_max_ext and two mul_mat so that the probabilities can be dropped.  Layers that take a
 * second input are applied with ggmlc_apply2 in functional models (sequential models feed one). */

/* Multi-head attention settings; ggmlc_attention_defaults(n_head) gives n_kv_head = n_head, no
 * mask, biases, separate projections, no position encoding, no dropout. */
struct ggmlc_attention_options {
    int64_t n_head;
    int64_t n_kv_head;    /* grouped-query heads: must divide n_head (0: n_head) */
    bool causal;          /* query i sees keys j <= i */
    bool fused_qkv;       /* one projection to [q | k | v] (self-attention only) */
    bool bias;            /* biases in the q, k, v and output projections */
    bool rope;            /* rotary position embedding (NeoX style, rotating half pairs) on q, k */
    float rope_base;      /* rope's base (10000 by default) */
    float alibi_max_bias; /* > 0: ALiBi with slopes 2^(-max_bias * h / n_head), as ggml defines */
    float dropout;        /* on the attention probabilities, training only, in [0, 1) */
};
GGML_API struct ggmlc_attention_options ggmlc_attention_defaults(int64_t n_head);
/* Multi-head attention over a {T, D} input, output {T, D}; D must be a multiple of n_head (head
 * width D / n_head).  Weights, PyTorch's Linear layout: q_kernel (H*hd, D), k_kernel and v_kernel
 * (Hkv*hd, Dk), o_kernel (D, H*hd), with biases when asked; fused: qkv_kernel ((H+2*Hkv)*hd, D).
 * Applied with ggmlc_apply2 to a second input: a {S, Dk} context makes it cross-attention (keys
 * and values from the context); a {T} vector is a key padding mask (1 keep, 0 padding). */
GGML_API ggmlc_layer *ggmlc_multi_head_attention(const struct ggmlc_attention_options *options);

/* Position embeddings added to a {T, D} input: learned (a {max_len, D} table whose first T rows
 * are added) or sinusoidal (sin(t / 10000^(2i/D)) at feature 2i, cos at 2i + 1; no weights). */
GGML_API ggmlc_layer *ggmlc_positional_embedding(int64_t max_len, bool learned);

enum ggmlc_norm_kind { GGMLC_NORM_LAYER, GGMLC_NORM_RMS };
enum ggmlc_mlp_kind {
    GGMLC_MLP_GELU,   /* Linear(D, ff), exact (erf) GELU, Linear(ff, D) */
    GGMLC_MLP_SWIGLU, /* Linear(D, 2*ff) to [a | g], silu(a) * g, Linear(ff, D) */
};
/* A Transformer block's settings (ggmlc_transformer_defaults(n_head, ff)). */
struct ggmlc_transformer_options {
    struct ggmlc_attention_options attn; /* its self-attention (cross-attention: the same heads) */
    int64_t ff;                          /* the MLP's hidden width */
    bool pre_norm;                       /* x + f(norm(x)); false: norm(x + f(x)) */
    enum ggmlc_norm_kind norm;
    float eps; /* of the norms (1e-5) */
    enum ggmlc_mlp_kind mlp;
    bool mlp_bias; /* biases in the MLP (true) */
    float dropout; /* after attention and MLP outputs, training only */
};
GGML_API struct ggmlc_transformer_options ggmlc_transformer_defaults(int64_t n_head, int64_t ff);
/* Encoder block on {T, D}: self-attention then MLP, each with a residual connection and a norm
 * (PyTorch's nn.TransformerEncoderLayer with norm_first = pre_norm and batch_first). */
GGML_API ggmlc_layer *ggmlc_transformer_encoder(const struct ggmlc_transformer_options *options);
/* Decoder block on {T, D}: causal self-attention, then (applied with ggmlc_apply2 to a {S, Dm}
 * memory) cross-attention to the memory, then MLP (nn.TransformerDecoderLayer); without a memory
 * it is a GPT block. */
GGML_API ggmlc_layer *ggmlc_transformer_decoder(const struct ggmlc_transformer_options *options);

/* Stable-Diffusion UNet residual block on {C, H, W}, applied with ggmlc_apply2 to a timestep
 * embedding {E}: h = conv3x3(silu(gn(x))) + Linear(silu(emb)); h = conv3x3(silu(gn(h)));
 * out = h + skip(x) (a 1x1 convolution when C != out_channels).  Group norms of `groups` groups
 * (eps 1e-5) over C and out_channels, which groups must divide. */
GGML_API ggmlc_layer *ggmlc_unet_res_block(int64_t out_channels, int groups);
/* Stable-Diffusion spatial transformer on {C, H, W}, applied with ggmlc_apply2 to a {S, Dc}
 * context: group norm (eps 1e-6), 1x1 conv to n_head * head_dim, a block of self-attention,
 * cross-attention to the context and a GEGLU MLP (4x), each pre-LayerNorm with a residual, 1x1
 * conv back to C, plus x (SD 1.x's SpatialTransformer of depth 1). */
GGML_API ggmlc_layer *ggmlc_spatial_transformer(int64_t n_head, int64_t head_dim, int groups);

/* Layer settings (before compile). */
GGML_API void ggmlc_layer_set_name(ggmlc_layer *layer, const char *name);
GGML_API void ggmlc_layer_set_initializer(ggmlc_layer *layer, enum ggmlc_initializer kernel_init);
/* Frozen layers keep their weights during fit (transfer learning). */
GGML_API void ggmlc_layer_set_trainable(ggmlc_layer *layer, bool trainable);

/* Free a layer that was never added to a model (models free their layers). */
GGML_API void ggmlc_layer_free(ggmlc_layer *layer);

/* -------------------------------------------------------------- models */

/* A sequential model taking inputs of the given shape (batch left out). */
GGML_API ggmlc_model *ggmlc_sequential(const int64_t *input_shape, int n_dims);
/* Append a layer (the model takes ownership, also on failure).  A refused layer (NULL from its
 * constructor, a shape it cannot take) leaves the model without it: such a model stays refused,
 * compile, fit, evaluate and predict return the first refusal's status with its message. */
GGML_API enum ggmlc_status ggmlc_model_add(ggmlc_model *model, ggmlc_layer *layer);

/* Functional models: layers applied to symbolic tensors; a layer applied twice shares its weights
 * (also across inputs).  A model has up to GGMLC_MAX_IO inputs, numbered in the order ggmlc_input
 * created them: the order of the data arrays of ggmlc_model_fit_multi and its kin. */
typedef struct ggmlc_node ggmlc_node;
GGML_API ggmlc_node *ggmlc_input(ggmlc_model *model, const int64_t *shape, int n_dims);
/* Apply layer to x (a node of this model); a layer in no model yet is taken over, also on failure. */
GGML_API ggmlc_node *ggmlc_apply(ggmlc_model *model, ggmlc_layer *layer, ggmlc_node *x);
/* Apply a layer taking a second input (attention context or mask, timestep embedding) to x and
 * x2; only layers documented as taking one accept it. */
GGML_API ggmlc_node *ggmlc_apply2(ggmlc_model *model, ggmlc_layer *layer, ggmlc_node *x,
                                  ggmlc_node *x2);
/* Residual connection and concatenation along axis (of the shape without batch). */
GGML_API ggmlc_node *ggmlc_add(ggmlc_model *model, ggmlc_node *a, ggmlc_node *b);
GGML_API ggmlc_node *ggmlc_concatenate(ggmlc_model *model, ggmlc_node *a, ggmlc_node *b, int axis);
/* An empty functional model to create inputs in; ggmlc_model_set_outputs finishes it. */
GGML_API ggmlc_model *ggmlc_functional(void);
/* The model's outputs, in the order of the targets and predictions (1 to GGMLC_MAX_IO distinct nodes
 * of this model, none an input); every input must lead to one of them.  Before compile. */
GGML_API enum ggmlc_status ggmlc_model_set_outputs(ggmlc_model *model, ggmlc_node **outputs, int n_outputs);

GGML_API void ggmlc_model_free(ggmlc_model *model);

/* A Keras-style table of layers, output shapes and parameter counts, then where the model computes:
 * "Device: NAME (description)" of the backend holding the weights (it runs every operation it
 * supports) and "Fallback: NAME (description)" for each backend running the rest (the CPU last);
 * "Device: none yet" before compile. */
GGML_API void ggmlc_model_summary(ggmlc_model *model, FILE *out);
GGML_API int64_t ggmlc_model_param_count(ggmlc_model *model, bool trainable_only);
GGML_API int ggmlc_model_layer_count(ggmlc_model *model);
GGML_API ggmlc_layer *ggmlc_model_layer(ggmlc_model *model, int index);
/* Output shape of the model (without batch; its first output); returns the number of dimensions. */
GGML_API int ggmlc_model_output_shape(ggmlc_model *model, int64_t shape[4]);
/* Numbers of inputs and outputs, and the shape (without batch) of input or output index:
 * the number of dimensions, 0 when index is out of range. */
GGML_API int ggmlc_model_input_count(ggmlc_model *model);
GGML_API int ggmlc_model_output_count(ggmlc_model *model);
GGML_API int ggmlc_model_input_shape(ggmlc_model *model, int index, int64_t shape[4]);
GGML_API int ggmlc_model_output_shape_at(ggmlc_model *model, int index, int64_t shape[4]);

enum ggmlc_optimizer { GGMLC_OPT_ADAMW, GGMLC_OPT_SGD };

/* The categorical losses take the output's last axis as the classes: an output {T, V} is T
 * distributions over V classes (per-token loss averaged over positions), its sparse labels one class
 * index per position (shape {T}); accuracy is then the fraction of positions right. */
enum ggmlc_loss {
    GGMLC_LOSS_MSE,
    GGMLC_LOSS_CATEGORICAL_CROSSENTROPY,        /* one-hot labels */
    GGMLC_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, /* class indices as labels */
    GGMLC_LOSS_BINARY_CROSSENTROPY,             /* labels in [0, 1] */
};

enum ggmlc_metric { GGMLC_METRIC_ACCURACY = 1, GGMLC_METRIC_MAE = 2 };

struct ggmlc_compile_options {
    enum ggmlc_optimizer optimizer;
    float learning_rate;
    float beta1, beta2, eps;  /* AdamW */
    float weight_decay;       /* decoupled (AdamW) or L2 (SGD) */
    float momentum;           /* SGD */
    enum ggmlc_loss loss;
    unsigned metrics;         /* ggmlc_metric flags */
    uint64_t seed;            /* weight initialisation, shuffling, dropout */
    const char *backend;      /* device or backend name, NULL: the configured preference order */
    /* Models with several outputs: per output (as many entries as outputs; copied by compile) its loss,
     * the weight of that loss in the total loss (the weighted sum is minimised), and its metrics.
     * NULL: `loss`, 1 and `metrics` for every output. */
    const enum ggmlc_loss *losses;
    const float *loss_weights;
    const unsigned *output_metrics;
    /* Gradient clipping before each optimizer step, 0 for none (the default): clip_value clamps
     * every gradient element to [-clip_value, clip_value]; clip_norm then scales all gradients
     * together by clip_norm / max(norm, clip_norm), norm being the L2 norm of all of them as one
     * vector (PyTorch's clip_grad_norm_, Keras's global_clipnorm).  Both finite and >= 0. */
    float clip_norm, clip_value;
};

/* AdamW, learning rate 1e-3, MSE, no metrics, seed 42. */
GGML_API struct ggmlc_compile_options ggmlc_compile_defaults(void);
/* Initialise the weights, place them on the device and prepare training.  A model with no layers
 * is refused (GGMLC_ERR_INVALID_ARG), as is one that had a refused ggmlc_model_add (with that
 * refusal's status and message).  The settings are checked (GGMLC_ERR_INVALID_ARG naming the one
 * out of range): a known optimizer, loss and metrics; a finite learning rate > 0; beta1 and beta2
 * in [0, 1); a finite eps > 0; a finite weight decay >= 0; momentum in [0, 1). */
GGML_API enum ggmlc_status ggmlc_model_compile(ggmlc_model *model, const struct ggmlc_compile_options *options);

/* What an epoch produced (NaN where not measured).  With several outputs, loss is the weighted
 * total and metric_accuracy/metric_mae (and val_*) those of the first output measuring them. */
struct ggmlc_epoch_logs {
    int epoch;          /* 0-based */
    double loss, metric_accuracy, metric_mae;
    double val_loss, val_accuracy, val_mae;
    double learning_rate;
    double seconds;
    /* per output (unweighted loss), n_outputs entries */
    int n_outputs;
    double output_loss[GGMLC_MAX_IO], output_accuracy[GGMLC_MAX_IO], output_mae[GGMLC_MAX_IO];
    double val_output_loss[GGMLC_MAX_IO], val_output_accuracy[GGMLC_MAX_IO], val_output_mae[GGMLC_MAX_IO];
};

/* Called after each epoch and each batch; return false to stop training. */
struct ggmlc_callback {
    bool (*on_epoch_end)(ggmlc_model *model, const struct ggmlc_epoch_logs *logs, void *user);
    bool (*on_batch_end)(ggmlc_model *model, int epoch, int64_t batch, double loss, void *user);
    void (*on_train_end)(ggmlc_model *model, void *user);
    void (*free)(void *user);
    void *user;
};

/* Built-in callbacks (free them with ggmlc_callback_free when not passed to fit). monitor is
 * "loss", "accuracy", "mae", or with several outputs "<output>_loss", "<output>_accuracy",
 * "<output>_mae" (the output's layer name), each with "val_" before it for the validation data. */
GGML_API struct ggmlc_callback ggmlc_early_stopping(const char *monitor, double min_delta, int patience, bool restore_best_weights);
/* Learning rate multiplied by gamma every step_epochs epochs. */
GGML_API struct ggmlc_callback ggmlc_lr_step_decay(int step_epochs, double gamma);
/* Cosine decay from the compiled rate to min_lr over total_epochs. */
GGML_API struct ggmlc_callback ggmlc_lr_cosine(int total_epochs, double min_lr);
/* Rate multiplied by factor after patience epochs without improvement of monitor. */
GGML_API struct ggmlc_callback ggmlc_reduce_lr_on_plateau(const char *monitor, double factor, int patience, double min_lr);
/* Each epoch's logs as a line of a CSV file (Keras's CSVLogger), under the header "epoch,loss,
 * accuracy,mae,val_loss,val_accuracy,val_mae,learning_rate,seconds"; epoch is 1-based (and goes on
 * across fit calls with initial_epoch), a value not measured is an empty field.  The file is
 * created (emptied unless append) and given the header (when empty) here: when it cannot be
 * written the callback has no functions and ggmlc_last_error() says why.  Each epoch's line is
 * written and the file closed after that epoch; a failed write stops training (the error is set). */
GGML_API struct ggmlc_callback ggmlc_csv_logger(const char *path, bool append);
/* Save the model to path after each epoch, or only when monitor improved.  An empty callback
 * (no functions, error recorded) when path cannot be written (ggmlc_check_writable). */
GGML_API struct ggmlc_callback ggmlc_model_checkpoint(const char *path, const char *monitor, bool save_best_only);
GGML_API void ggmlc_callback_free(struct ggmlc_callback *cb);

/* Several inputs and outputs.  One array of samples per input and per target (output): data holds
 * n * prod(shape) floats, row-major, batch first, and len says how many it holds (it must be that
 * product); shape leaves out the batch and must equal the model's input or output shape (sparse
 * cross-entropy targets: class indices, shape {1} or n_dims 0; for an output {T, V}, {T}).  Every array has the same n; sample i
 * of each belongs together (shuffling and the validation split keep them together).  Wrong lengths,
 * counts or shapes are GGMLC_ERR_SHAPE with a message naming the array:
 *     struct ggmlc_array x = {data, n, {16}, 1, n * 16};  */
struct ggmlc_array {
    const float *data;
    int64_t n;
    int64_t shape[3];
    int n_dims;
    size_t len; /* floats in data */
};

/* A dataset's samples (its shape) and its labels (class indices, shape {1}) as arrays. */
GGML_API struct ggmlc_array ggmlc_dataset_features(const struct ggmlc_dataset *d);
GGML_API struct ggmlc_array ggmlc_dataset_labels(const struct ggmlc_dataset *d);

struct ggmlc_fit_options {
    int epochs;                  /* the epoch to stop before: with initial_epoch, epochs - initial_epoch run */
    /* The first epoch's number (0-based; default 0): a fit continuing an earlier one numbers its
     * epochs (logs, history, progress, callbacks' schedules) from here, as Keras does. */
    int initial_epoch;
    int64_t batch_size;
    bool shuffle;
    float validation_split;      /* last fraction of the data held out, when val_x is NULL */
    const float *val_x, *val_y;  /* explicit validation data: n_val samples, val_x_len and val_y_len floats */
    size_t val_x_len, val_y_len;
    int64_t n_val;
    const float *class_weights;  /* per class (cross-entropy losses; models with one output), NULL: 1 */
    size_t n_class_weights;      /* its length: the number of classes (the output's size) */
    /* Stop with GGMLC_ERR_INVALID_ARG and a message naming the epoch and batch when a training
     * batch's loss is NaN or infinite (a learning rate too high, huge or broken data).  The weights
     * then hold that batch's update (likely not finite either): reload or restore a checkpoint.
     * On in ggmlc_fit_defaults and in ggmlc-train; off trains on whatever the loss becomes. */
    bool stop_on_nan;
    int verbose;                 /* 0 silent, 1 progress bar (one line per epoch when not a terminal), 2 one line per epoch */
    struct ggmlc_callback *callbacks;
    int n_callbacks;
    /* explicit validation data of ggmlc_model_fit_multi: one array per input and per output */
    const struct ggmlc_array *val_inputs, *val_targets;
};

/* 10 epochs, batch 32, shuffle, no validation, verbose 1, stop on a NaN or infinite loss. */
GGML_API struct ggmlc_fit_options ggmlc_fit_defaults(void);

/* Train on n samples: x holds x_len = n * prod(input shape) floats, y y_len = n * prod(output shape)
 * floats (n class indices, n * T for an output {T, V}, for the sparse loss); other lengths are GGMLC_ERR_SHAPE, e.g.
 * "ggmlc_model_fit: input 0 has samples of shape (64), the model's input 0 takes (1, 8, 8)".
 * The history (may be NULL) receives one entry per epoch.
 * fit, evaluate and predict take models of one input and one output; others use the *_multi forms. */
GGML_API enum ggmlc_status ggmlc_model_fit(ggmlc_model *model, const float *x, size_t x_len, const float *y, size_t y_len, int64_t n,
                                           const struct ggmlc_fit_options *options, ggmlc_history **history);
/* One optimizer step on the n samples of x and y as one batch (lengths as for fit), and the batch's
 * loss and metrics (metrics[0] accuracy, metrics[1] MAE, NaN when not compiled; both may be NULL),
 * measured in the forward pass before the step.  No NaN check: the loss tells. */
GGML_API enum ggmlc_status ggmlc_model_train_on_batch(ggmlc_model *model, const float *x, size_t x_len, const float *y, size_t y_len,
                                                      int64_t n, double *loss, double metrics[2]);
/* The loss and metrics of the n samples as one batch, without training (as evaluate). */
GGML_API enum ggmlc_status ggmlc_model_test_on_batch(ggmlc_model *model, const float *x, size_t x_len, const float *y, size_t y_len,
                                                     int64_t n, double *loss, double metrics[2]);
/* Mean loss and the compiled metrics (metrics[0] accuracy, metrics[1] MAE; NaN when not compiled). */
GGML_API enum ggmlc_status ggmlc_model_evaluate(ggmlc_model *model, const float *x, size_t x_len, const float *y, size_t y_len,
                                                int64_t n, int64_t batch_size, double *loss, double metrics[2]);
/* Model outputs for n samples into out, which holds out_len = n * prod(output shape) floats. */
GGML_API enum ggmlc_status ggmlc_model_predict(ggmlc_model *model, const float *x, size_t x_len, int64_t n, int64_t batch_size,
                                               float *out, size_t out_len);

/* Train on n_x input arrays and n_y target arrays (one per output, in output order); the loss is
 * the weighted sum of the outputs' losses; the history records it and every output's loss and metrics. */
GGML_API enum ggmlc_status ggmlc_model_fit_multi(ggmlc_model *model, const struct ggmlc_array *x, int n_x, const struct ggmlc_array *y,
                                                 int n_y, const struct ggmlc_fit_options *options, ggmlc_history **history);
/* Weighted total loss, and per output (arrays of n_y entries, may be NULL) the loss and the metrics
 * (output_metrics[2k] accuracy, [2k + 1] MAE of output k; NaN when not compiled). */
GGML_API enum ggmlc_status ggmlc_model_evaluate_multi(ggmlc_model *model, const struct ggmlc_array *x, int n_x,
                                                      const struct ggmlc_array *y, int n_y, int64_t batch_size, double *loss,
                                                      double *output_losses, double *output_metrics);
/* Outputs for the samples of x: out[k] receives n * prod(output shape k) floats and holds out_lens[k]
 * floats, which must be that many; n_out = number of outputs. */
GGML_API enum ggmlc_status ggmlc_model_predict_multi(ggmlc_model *model, const struct ggmlc_array *x, int n_x, int64_t batch_size,
                                                     float *const *out, const size_t *out_lens, int n_out);

/* Current learning rate (callbacks change it). */
GGML_API double ggmlc_model_get_learning_rate(ggmlc_model *model);
GGML_API void ggmlc_model_set_learning_rate(ggmlc_model *model, double lr);

/* Training history. */
GGML_API int ggmlc_history_epochs(const ggmlc_history *h);
GGML_API const struct ggmlc_epoch_logs *ggmlc_history_epoch(const ggmlc_history *h, int epoch);
GGML_API void ggmlc_history_free(ggmlc_history *h);

/* Save the architecture (metadata) and weights (tensors), and the optimizer state when asked, to a
 * GGUF file, written to a temporary file and renamed; load it into a new, compiled model.  Loading
 * checks every setting as the constructors and compile do (activation, optimizer, loss and metric
 * ids, optimizer settings, layer rates and epsilons): a file out of range is GGMLC_ERR_FORMAT. */
GGML_API enum ggmlc_status ggmlc_model_save(ggmlc_model *model, const char *path, bool with_optimizer);
GGML_API ggmlc_model *ggmlc_model_load(const char *path, const char *backend);

/* Copy all weights (and batch-norm statistics) out of / into a flat float array in layer order.
 * get returns their number, copying them into dst when dst is not NULL: dst_len (the floats dst
 * holds) must be at least that, else nothing is copied and -1 returned (GGMLC_ERR_SHAPE); the
 * number is 0 for a model not compiled.  set needs src_len equal to it (else GGMLC_ERR_SHAPE). */
GGML_API int64_t ggmlc_model_get_weights(ggmlc_model *model, float *dst, size_t dst_len);
GGML_API enum ggmlc_status ggmlc_model_set_weights(ggmlc_model *model, const float *src, size_t src_len);

#ifdef __cplusplus
}
#endif

#endif /* GGMLC_NN_H */
