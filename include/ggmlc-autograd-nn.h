/*
 * ggmlc-autograd-nn.h - modules, optimizers, learning-rate schedulers and a data loader for the
 * eager tensors of ggmlc-autograd.h, as torch.nn, torch.optim and torch.utils.data offer them.
 *
 * Modules hold their parameters (leaf tensors that require grad) and call the functional ops
 * of ggmlc-autograd.h; optimizers update parameters in place inside the pending graph, so a
 * whole training step (forward, backward, update) is computed as one graph when a value is
 * read.
 *
 *     ga_module *net = ga_sequential();
 *     ga_sequential_add(net, ga_linear_module(NULL, 784, 256, true));
 *     ga_sequential_add(net, ga_relu_module());
 *     ga_sequential_add(net, ga_linear_module(NULL, 256, 10, true));
 *     ga_optimizer *opt = ga_adamw(ga_module_parameters(net), 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f);
 *     for (each batch x, y) {
 *         ga_scope_begin();
 *         ga_optimizer_zero_grad(opt);
 *         ga_tensor *loss = ga_cross_entropy(ga_module_forward(net, x), y, -100, 0.0f);
 *         ga_backward(loss);
 *         ga_optimizer_step(opt);
 *         ga_scope_end();
 *     }
 *
 * Ownership follows ggmlc-autograd.h: returned ga_tensor * are new references; modules,
 * optimizers, schedulers and loaders are freed with their own _free function.
 */
#ifndef GGMLC_AUTOGRAD_NN_H
#define GGMLC_AUTOGRAD_NN_H

#include "ggmlc-autograd.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ga_module ga_module;
typedef struct ga_optimizer ga_optimizer;
typedef struct ga_scheduler ga_scheduler;
typedef struct ga_loader ga_loader;

/* A list of parameter tensors (borrowed from their module or owner). */
typedef struct ga_param_list {
    ga_tensor **params;
    const char **names; /* "0.weight", as PyTorch's state_dict names them */
    int n;
} ga_param_list;

/* ---------------------------------------------------------------- modules */

/* Layers with PyTorch's default initialisation (kaiming-uniform weights) drawn from the
 * ga_manual_seed generator, parameters on dev (NULL: the default device). */
GGML_API ga_module *ga_linear_module(ga_device *dev, int64_t in, int64_t out, bool bias);
GGML_API ga_module *ga_conv2d_module(ga_device *dev, int64_t in_ch, int64_t out_ch, int kernel,
                                     int stride, int padding, bool bias);
GGML_API ga_module *ga_embedding_module(ga_device *dev, int64_t num, int64_t dim);
GGML_API ga_module *ga_layer_norm_module(ga_device *dev, int64_t dim, float eps);
GGML_API ga_module *ga_rms_norm_module(ga_device *dev, int64_t dim, float eps);
GGML_API ga_module *ga_batch_norm_module(ga_device *dev, int64_t channels, float eps,
                                         float momentum);
GGML_API ga_module *ga_dropout_module(float p);
/* Activations and Flatten (x of shape (N, ...) to (N, -1)) as modules, for Sequential. */
GGML_API ga_module *ga_relu_module(void);
GGML_API ga_module *ga_gelu_module(void);
GGML_API ga_module *ga_silu_module(void);
GGML_API ga_module *ga_tanh_module(void);
GGML_API ga_module *ga_sigmoid_module(void);
GGML_API ga_module *ga_flatten_module(void);
/* Pooling over (N, C, H, W); stride 0 means the kernel size (PyTorch's default). */
GGML_API ga_module *ga_max_pool2d_module(int kernel, int stride, int padding);
GGML_API ga_module *ga_avg_pool2d_module(int kernel, int stride, int padding);
/* A container calling its children in order; ga_sequential_add takes ownership of child. */
GGML_API ga_module *ga_sequential(void);
GGML_API enum ggmlc_status ga_sequential_add(ga_module *seq, ga_module *child);

/* Attention and Transformer layers as torch.nn's MultiheadAttention, TransformerEncoderLayer and
 * TransformerDecoderLayer with batch_first=True: inputs (B, L, E); the same parameters under the
 * same state_dict names ("self_attn.in_proj_weight", "linear1.weight", "norm1.bias", ...) and
 * the same initialisation.  Used as a module, attention is self-attention, causal when asked.
 * Layers: LayerNorm (eps 1e-5), GELU or ReLU, pre-norm (norm_first) or post-norm; dropout
 * applies in training mode only.  A decoder layer's self-attention is causal; it runs through
 * ga_transformer_decoder_forward (module forward alone is an error: it needs memory). */
GGML_API ga_module *ga_multihead_attention_module(ga_device *dev, int64_t embed_dim,
                                                  int num_heads, bool bias, float dropout,
                                                  bool causal);
GGML_API ga_module *ga_transformer_encoder_layer_module(ga_device *dev, int64_t d_model, int nhead,
                                                        int64_t dim_feedforward, float dropout,
                                                        bool gelu, bool norm_first, bool causal);
GGML_API ga_module *ga_transformer_decoder_layer_module(ga_device *dev, int64_t d_model, int nhead,
                                                        int64_t dim_feedforward, float dropout,
                                                        bool gelu, bool norm_first);
/* Attention of query (B, L, E) over key and value (B, S, E) as MultiheadAttention's forward:
 * attn_mask additive, (L, S) or broadcastable to (B, H, L, S), or NULL; key_padding_mask (B, S)
 * with nonzero at padded keys (never attended), or NULL; is_causal adds the causal mask.
 * Returns the output (B, L, E) (the attention weights are not returned). */
GGML_API ga_tensor *ga_multihead_attention(ga_module *mha, const ga_tensor *query,
                                           const ga_tensor *key, const ga_tensor *value,
                                           const ga_tensor *attn_mask,
                                           const ga_tensor *key_padding_mask, bool is_causal);
/* A decoder layer over tgt (B, L, E) attending to memory (B, S, E), the encoder's output. */
GGML_API ga_tensor *ga_transformer_decoder_forward(ga_module *layer, const ga_tensor *tgt,
                                                   const ga_tensor *memory);

/* Run the module on x (a new reference). */
GGML_API ga_tensor *ga_module_forward(ga_module *m, const ga_tensor *x);
/* The module's parameters (recursively, in registration order), named as PyTorch's
 * state_dict ("0.weight", "0.bias", "2.weight", ...).  The list is kept by the module: valid
 * until the next call for the same module or ga_module_free (optimizers copy it); n is -1 on
 * error. */
GGML_API ga_param_list ga_module_parameters(ga_module *m);
/* The kind of module, as PyTorch prints it ("Linear", "Sequential"). */
GGML_API const char *ga_module_kind(const ga_module *m);
/* Training or evaluation mode (dropout, batch-norm statistics), set recursively, as
 * module.train() / module.eval(); modules start in training. */
GGML_API void ga_module_train(ga_module *m, bool training);
GGML_API bool ga_module_is_training(const ga_module *m);
/* Parameters and buffers (batch-norm running statistics) to a GGUF file, written atomically,
 * and back; loading validates names, shapes and types before changing anything. */
GGML_API enum ggmlc_status ga_module_save(const ga_module *m, const char *path);
GGML_API enum ggmlc_status ga_module_load(ga_module *m, const char *path);
GGML_API void ga_module_free(ga_module *m);

/* -------------------------------------------------------------- optimizers */

/* Optimizers over a parameter list (the tensors are retained), as torch.optim's SGD (momentum,
 * dampening, Nesterov, L2 weight decay), Adam (L2 weight decay added to the gradient) and
 * AdamW (decoupled weight decay), with the math of ggmlc's shared optimizer module so eager and
 * graph training agree.  NULL and a message on invalid hyperparameters. */
GGML_API ga_optimizer *ga_sgd(ga_param_list params, float lr, float momentum, float dampening,
                              float weight_decay, bool nesterov);
GGML_API ga_optimizer *ga_adam(ga_param_list params, float lr, float beta1, float beta2,
                               float eps, float weight_decay);
GGML_API ga_optimizer *ga_adamw(ga_param_list params, float lr, float beta1, float beta2,
                                float eps, float weight_decay);
/* One update of every parameter that has a gradient. */
GGML_API enum ggmlc_status ga_optimizer_step(ga_optimizer *opt);
/* Forget every parameter's gradient. */
GGML_API void ga_optimizer_zero_grad(ga_optimizer *opt);
GGML_API float ga_optimizer_get_lr(const ga_optimizer *opt);
GGML_API void ga_optimizer_set_lr(ga_optimizer *opt, float lr);
GGML_API void ga_optimizer_free(ga_optimizer *opt);

/* Scale the gradients so that their global norm (of type norm_type: 2 usual, INFINITY for the
 * largest magnitude) is at most max_norm, as torch.nn.utils.clip_grad_norm_: every gradient is
 * multiplied by min(max_norm / (norm + 1e-6), 1).  Returns the norm before clipping as a new
 * 0-d tensor (lazy: reading it with ga_item computes the step so far); 0 when no parameter has
 * a gradient; NULL on error. */
GGML_API ga_tensor *ga_clip_grad_norm(ga_param_list params, float max_norm, float norm_type);

/* ------------------------------------------------------- data parallelism */

/* Replace every parameter's gradient by the sum over the communicator's members (ggmlc-dp.h:
 * threads of this process, or MPI processes through libggmlc-mpi) of scale * gradient: scale
 * = 1 / size averages equal shares of a batch, k / B for a member that saw k of B samples.
 * Call it between ga_backward and ga_optimizer_step; every member passes the same parameter
 * list (same shapes, same order), each parameter with a gradient.  Computes what is pending
 * first (a device synchronisation), then reduces in buckets. */
typedef struct ggmlc_comm ggmlc_comm;
GGML_API enum ggmlc_status ga_dp_allreduce_grads(ggmlc_comm *comm, ga_param_list params,
                                                 float scale);

/* ------------------------------------------------------------ schedulers */

/* Creating a scheduler sets the optimizer's rate for step 0; ga_scheduler_step moves to the next
 * step (call it after ga_optimizer_step, as in PyTorch).  base is the optimizer's rate when the
 * scheduler is made.
 *   step_lr:     lr = base * gamma^floor(step / step_size)  (torch StepLR);
 *   cosine_lr:   lr = base * step / warmup_steps during the warmup, then
 *                min_lr + (base - min_lr) (1 + cos(pi progress)) / 2 with progress from 0 to 1
 *                over the remaining steps (held at min_lr after total_steps);
 *   one_cycle_lr: torch OneCycleLR with its defaults: from max_lr / 25 up to max_lr over
 *                pct_start of total_steps, then down to max_lr / 25e4, both along cosines; the
 *                momentum (Adam's beta1, SGD's momentum) cycles 0.95 -> 0.85 -> 0.95. */
GGML_API ga_scheduler *ga_step_lr(ga_optimizer *opt, int step_size, float gamma);
GGML_API ga_scheduler *ga_cosine_lr(ga_optimizer *opt, int warmup_steps, int total_steps,
                                    float min_lr);
GGML_API ga_scheduler *ga_one_cycle_lr(ga_optimizer *opt, float max_lr, int total_steps,
                                       float pct_start);
/* Advance one step and set the optimizer's learning rate. */
GGML_API void ga_scheduler_step(ga_scheduler *s);
GGML_API void ga_scheduler_free(ga_scheduler *s);

/* ------------------------------------------------------------ data loader */

/* Batches of a labelled dataset (struct ggmlc_dataset of ggmlc-nn.h, borrowed: it must outlive
 * the loader) as tensors on dev (NULL: the default device): x of shape (B, *sample shape), y of
 * shape (B) with the class indices as floats; shuffled at the start of every epoch by a
 * generator seeded once with seed (so a run is reproducible) when shuffle; the last short batch
 * dropped when drop_last. */
struct ggmlc_dataset;
GGML_API ga_loader *ga_loader_new(const struct ggmlc_dataset *data, ga_device *dev,
                                  int64_t batch_size, bool shuffle, bool drop_last,
                                  uint64_t seed);
/* The next batch (new references in *x, *y); false at the end of the epoch, after which the
 * next call starts a new epoch. */
GGML_API bool ga_loader_next(ga_loader *l, ga_tensor **x, ga_tensor **y);
GGML_API int64_t ga_loader_batches(const ga_loader *l);
GGML_API void ga_loader_free(ga_loader *l);

#ifdef __cplusplus
}
#endif

#endif /* GGMLC_AUTOGRAD_NN_H */
