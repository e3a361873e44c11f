/*
 * optimizer.h - the one training module the training stacks share: ggml-opt (core/opt*.c),
 * the model API (nn/) and the eager autograd engine.  It owns
 *   - the random generator (splitmix64) behind shuffling, dropout masks and initialisers;
 *   - the optimizer updates of a parameter (AdamW, SGD, SGD with momentum), their state tensors
 *     and the packing of their hyperparameters into the F32 tensor the update ops read, so
 *     that a learning-rate schedule changes data, never a graph;
 *   - the loss builders (mean, sum, mean squared error, cross-entropy, binary cross-entropy);
 *   - gradient clipping by value and by global norm.
 * Declared for nn/ through ggmlc-internal.h; nothing here is installed.
 */
#ifndef GGMLC_OPTIMIZER_H
#define GGMLC_OPTIMIZER_H

#include <stdint.h>

#include "ggml.h"
#include "hidden.h"

/* ------------------------------------------------------------ random */

/* A deterministic generator: the same seed gives the same stream on every machine. */
struct ggmlc_rng {
    uint64_t state;
};

GGMLC_HIDDEN void ggmlc__rng_seed(struct ggmlc_rng *r, uint64_t seed);
/* The next 64 random bits (splitmix64). */
GGMLC_HIDDEN uint64_t ggmlc__rng_next(struct ggmlc_rng *r);
/* Uniform in [0, 1), 24 bits: exactly representable as a float. */
GGMLC_HIDDEN float ggmlc__rng_uniform(struct ggmlc_rng *r);
/* Standard normal (Box-Muller on two 53-bit uniforms). */
GGMLC_HIDDEN double ggmlc__rng_normal(struct ggmlc_rng *r);
/* Shuffle idx[0, n) in place (Fisher-Yates, from the end). */
GGMLC_HIDDEN void ggmlc__rng_shuffle(struct ggmlc_rng *r, int64_t *idx, int64_t n);

/* --------------------------------------------------------- optimizers */

enum ggmlc_optim_kind {
    GGMLC_OPTIM_ADAMW,        /* decoupled weight decay; moments m and v */
    GGMLC_OPTIM_SGD,          /* decoupled weight decay (ggml_opt_step_sgd); no state */
    GGMLC_OPTIM_SGD_MOMENTUM, /* v = mu v + g + wd p (L2); p -= lr v; velocity in m */
};

/* The hyperparameters of one step; an optimizer reads the fields it needs. */
struct ggmlc_optim_hparams {
    float lr, beta1, beta2, eps, weight_decay, momentum;
};

/* Floats of the hyperparameter tensor: AdamW 7, SGD 3 ({lr, wd, momentum}); the size to
 * allocate it with (F32, 1-d). */
#define GGMLC_OPTIM_MAX_PARS 7
GGMLC_HIDDEN int ggmlc__optim_n_pars(enum ggmlc_optim_kind kind);
/* State tensors per parameter: AdamW 2 (m, v), SGD with momentum 1 (m), SGD 0. */
GGMLC_HIDDEN int ggmlc__optim_n_state(enum ggmlc_optim_kind kind);
/* Pack the hyperparameters of optimizer step `step` (0-based; AdamW's bias corrections depend
 * on it) into pars[ggmlc__optim_n_pars(kind)], ready for ggml_backend_tensor_set. */
GGMLC_HIDDEN int ggmlc__optim_pack(enum ggmlc_optim_kind kind, const struct ggmlc_optim_hparams *hp,
                                  int64_t step, float *pars);
/* The state tensors of a parameter shaped like `like`, in ctx (F32, zeroed by the caller when
 * allocated): *m and *v as the kind needs them, NULL otherwise.  False when ctx is full. */
GGMLC_HIDDEN bool ggmlc__optim_new_state(struct ggml_context *ctx, enum ggmlc_optim_kind kind,
                                        const struct ggml_tensor *like, struct ggml_tensor **m,
                                        struct ggml_tensor **v);
/* The node that updates param in place from grad, with the state m, v and the hyperparameter
 * tensor pars; expand it into the step graph.  weight_decay is SGD with momentum's L2 term
 * (built into the graph: 0 leaves it out).  NULL when a tensor is missing or ctx is full. */
GGMLC_HIDDEN struct ggml_tensor *ggmlc__optim_update(struct ggml_context *ctx,
                                                    enum ggmlc_optim_kind kind,
                                                    struct ggml_tensor *param,
                                                    struct ggml_tensor *grad, struct ggml_tensor *m,
                                                    struct ggml_tensor *v, struct ggml_tensor *pars,
                                                    float weight_decay);

/* ------------------------------------------------------------- losses */

/* Scalar losses of out (against labels y of out's shape): the mean and the sum of out;
 * the mean squared error; the cross-entropy of softmax(logits) along rows of `row` elements
 * (labels may be any non-negative weights); binary cross-entropy from logits (the stable
 * softplus(z) - y z form) or from probabilities (clamped to [1e-7, 1 - 1e-7]). */
GGMLC_HIDDEN struct ggml_tensor *ggmlc__loss_mean(struct ggml_context *ctx,
                                                  struct ggml_tensor *out);
GGMLC_HIDDEN struct ggml_tensor *ggmlc__loss_sum(struct ggml_context *ctx, struct ggml_tensor *out);
GGMLC_HIDDEN struct ggml_tensor *ggmlc__loss_mse(struct ggml_context *ctx, struct ggml_tensor *out,
                                                struct ggml_tensor *y);
GGMLC_HIDDEN struct ggml_tensor *ggmlc__loss_cross_entropy(struct ggml_context *ctx,
                                                          struct ggml_tensor *logits,
                                                          struct ggml_tensor *y, int64_t row);
GGMLC_HIDDEN struct ggml_tensor *ggmlc__loss_bce_logits(struct ggml_context *ctx,
                                                       struct ggml_tensor *logits,
                                                       struct ggml_tensor *y);
GGMLC_HIDDEN struct ggml_tensor *ggmlc__loss_bce_probs(struct ggml_context *ctx,
                                                      struct ggml_tensor *p, struct ggml_tensor *y);

/* ----------------------------------------------------------- clipping */

/* grad clamped to [-clip_value, clip_value]; grad itself when clip_value is not > 0. */
GGMLC_HIDDEN struct ggml_tensor *ggmlc__clip_value(struct ggml_context *ctx,
                                                  struct ggml_tensor *grad, float clip_value);
/* For clipping by global norm: max(norm, clip_norm) / clip_norm, norm being the L2 norm of the
 * n (value-clipped) gradients as one vector; each gradient is divided by it.  NULL when
 * clip_norm is not > 0 or n is 0. */
GGMLC_HIDDEN struct ggml_tensor *ggmlc__clip_norm_divisor(struct ggml_context *ctx,
                                                         struct ggml_tensor **grads, int n,
                                                         float clip_value, float clip_norm);

#endif /* GGMLC_OPTIMIZER_H */
