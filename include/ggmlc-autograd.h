/*
 * ggmlc-autograd.h - eager, PyTorch-style tensors with automatic differentiation.
 *
 * A ga_tensor is a reference-counted handle to an N-D (0-4 dimensions) float tensor that lives
 * on one device (the CPU, Vulkan0, ...).  Ops return new tensors and, when an input requires a
 * gradient, record how they were made; ga_backward() walks that record and accumulates
 * gradients into the leaves' .grad:
 *
 *     ga_tensor *w = ga_randn(NULL, GA_SHAPE(3, 2));        // on the default device
 *     ga_requires_grad_(w, true);
 *     ga_tensor *x = ga_from_array(NULL, data, 8 * 3, GA_SHAPE(8, 3));
 *     ga_tensor *y = ga_matmul(x, w);                       // (8, 3) @ (3, 2) -> (8, 2)
 *     ga_tensor *loss = ga_mean(ga_mul(y, y));              // the inner result: see "Memory"
 *     ga_backward(loss);
 *     float l = ga_item(loss);
 *     const ga_tensor *g = ga_grad(w);                      // (3, 2), borrowed
 *
 * Shapes are written as PyTorch writes them: outermost dimension first, data row-major.  A
 * shape argument is a count and an array; GA_SHAPE(2, 3) expands to both.
 *
 * Evaluation is lazy and invisible: ops append nodes to a pending ggml graph of the device;
 * reading a value (ga_item, ga_to_host), ga_backward's caller reading a gradient, or a full
 * graph computes everything pending in one go through the backend scheduler, so an identical
 * training step reuses the plan of the last one and data stays on the device between ops.
 * Errors are reported at the op that caused them (shapes and devices are checked eagerly).
 *
 * Memory: every function that returns a ga_tensor * gives the caller one reference, to be
 * dropped with ga_release (ga_grad's result is borrowed).  Ops do NOT consume their inputs.
 * To write expressions without naming temporaries, open a scope: ga_scope_begin() ...
 * ga_scope_end() releases every tensor created inside it except those passed to ga_keep.
 * A tensor's storage is reclaimed when its last reference (handles, the recorded graph, a
 * pending computation) goes, so a training loop of any length runs in constant memory.
 *
 * Errors: a function given bad input (a shape mismatch, tensors of two devices, a released
 * tensor, backward of a non-scalar without a gradient) returns NULL or a status and leaves one
 * message in ggmlc_last_error(); every op accepts NULL inputs and returns NULL, so a chain of
 * calls fails once, at the first mistake.  Nothing aborts.
 *
 * Threads: a device and its tensors are used from one thread at a time; scopes and the grad
 * mode are per thread.  Data-parallel replicas each take a device of their own
 * (ga_device_open) and their own thread.  The ga_manual_seed generator is one for the process:
 * draw from it (rand, randn, dropout, module initialisation) in one thread at a time.
 *
 * Every op records its gradient (checked against finite differences and PyTorch autograd in
 * tests/test-autograd*.c).  Many are compositions of other ops (losses, norms, attention,
 * indexing): correct, but more graph nodes than a fused kernel would be.
 */
#ifndef GGMLC_AUTOGRAD_H
#define GGMLC_AUTOGRAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ggml.h"
#include "ggml-backend.h"
#include "ggmlc.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ga_tensor ga_tensor;
typedef struct ga_device ga_device;

/* Most dimensions of a tensor. */
#define GA_MAX_DIMS 4

/* GA_SHAPE(2, 3) -> 2, (const int64_t[]){2, 3}: the (ndim, shape) pair that creators take. */
#define GA_SHAPE(...)                                                                   \
    (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (const int64_t[]){__VA_ARGS__}

/* ---------------------------------------------------------------- devices */

/* The device named name ("CPU", "Vulkan0", as ggmlc-info lists them), or the configuration's
 * default device when name is NULL (ggmlc_device_default).  Initialises ggmlc if needed.  The
 * device stays valid until ga_shutdown.  NULL and a message when no device has that name. */
GGML_API ga_device *ga_device_get(const char *name);

/* A device of its own over the backend device name (NULL: the default), for one data-parallel
 * replica: its own backend instance, pending graph and storage, so that replicas on the same
 * hardware (two halves of the CPU) or on different devices run in their own threads at the
 * same time.  threads > 0 sets a CPU backend's thread count.  ga_device_get never returns it;
 * ga_shutdown frees it.  NULL and a message when the device does not start. */
GGML_API ga_device *ga_device_open(const char *name, int threads);

/* The device's name ("CPU", "Vulkan0"). */
GGML_API const char *ga_device_name(const ga_device *dev);

/* Make dev the device that creators use when given NULL (NULL: the configuration's default
 * again). */
GGML_API void ga_set_default_device(ga_device *dev);

/* Compute everything pending on dev (NULL: every device) now; GGMLC_OK or the backend's
 * failure.  Reading a value does this by itself: call it only to time work. */
GGML_API enum ggmlc_status ga_synchronize(ga_device *dev);

/* Bytes of device storage that live tensors of dev hold, and the number of live tensors
 * (for memory checks: both stay flat across identical training steps). */
GGML_API size_t ga_device_bytes_in_use(const ga_device *dev);
GGML_API size_t ga_device_tensors_alive(const ga_device *dev);

/* Free the calling thread's own caches (its scope stack and the handles it keeps for reuse):
 * call it at the end of a thread that used eager tensors (a data-parallel replica's thread),
 * with no scope open.  The main thread's go at ga_shutdown or exit. */
GGML_API void ga_thread_release(void);

/* Release every device and its cached plans and buffers.  All tensors must be released. */
GGML_API void ga_shutdown(void);

/* --------------------------------------------------------------- creation */

/* A tensor of the given shape (ndim 0-4, each size >= 1) on dev (NULL: the default device):
 * from a row-major float array of len elements (len must equal the element count), filled
 * with zeros, ones or value, or uninitialised storage (ga_empty).  requires_grad is false. */
GGML_API ga_tensor *ga_from_array(ga_device *dev, const float *data, size_t len,
                                  int ndim, const int64_t *shape);
GGML_API ga_tensor *ga_zeros(ga_device *dev, int ndim, const int64_t *shape);
GGML_API ga_tensor *ga_ones(ga_device *dev, int ndim, const int64_t *shape);
GGML_API ga_tensor *ga_full(ga_device *dev, int ndim, const int64_t *shape, float value);
GGML_API ga_tensor *ga_empty(ga_device *dev, int ndim, const int64_t *shape);
/* A 0-dimensional tensor holding value. */
GGML_API ga_tensor *ga_scalar(ga_device *dev, float value);
/* zeros/ones shaped as like, on like's device. */
GGML_API ga_tensor *ga_zeros_like(const ga_tensor *like);
GGML_API ga_tensor *ga_ones_like(const ga_tensor *like);

/* The 1-D tensor start, start + step, ... of all values < end (step > 0) or > end (step < 0),
 * as torch.arange. */
GGML_API ga_tensor *ga_arange(ga_device *dev, float start, float end, float step);

/* Seed the generator that rand, randn, dropout and shuffles draw from (as torch.manual_seed).
 * The same seed gives the same numbers on every device and run. */
GGML_API void ga_manual_seed(uint64_t seed);
/* Uniform numbers in [0, 1) and standard normal numbers. */
GGML_API ga_tensor *ga_rand(ga_device *dev, int ndim, const int64_t *shape);
GGML_API ga_tensor *ga_randn(ga_device *dev, int ndim, const int64_t *shape);

/* ------------------------------------------------------------ properties */

/* Number of dimensions (0 for a scalar), the size of dimension dim (negative dims count from
 * the end, as in PyTorch; -1 on a bad dim), and the element count. */
GGML_API int     ga_ndim(const ga_tensor *t);
GGML_API int64_t ga_size(const ga_tensor *t, int dim);
GGML_API int64_t ga_numel(const ga_tensor *t);
/* Copy the shape (ndim entries) into shape; returns ndim, or -1 for NULL arguments. */
GGML_API int     ga_shape(const ga_tensor *t, int64_t shape[GA_MAX_DIMS]);
/* The device a tensor lives on. */
GGML_API ga_device *ga_device_of(const ga_tensor *t);

/* ------------------------------------------------------------ reading data */

/* The value of a tensor of one element, computing what is pending; NAN and a message when t
 * is NULL, released or holds more than one element. */
GGML_API float ga_item(const ga_tensor *t);
/* Copy the tensor's values, row-major, into dst of len floats (len must equal ga_numel). */
GGML_API enum ggmlc_status ga_to_host(const ga_tensor *t, float *dst, size_t len);
/* A copy of t on dev (the same tensor, retained, when it is already there).  Gradients flow
 * back through the copy. */
GGML_API ga_tensor *ga_to(const ga_tensor *t, ga_device *dev);

/* ------------------------------------------------------------------ dtypes */

/* The element type of a tensor's storage, as torch.float32, torch.float16, torch.bfloat16.
 * Ops on F16/BF16 tensors compute in float32 inside the graph and round each stored result
 * to the storage type (round to nearest even), as PyTorch's CPU kernels do.  The result type
 * of an op is PyTorch's promotion of its inputs' types: the same type stays, float16 with
 * bfloat16 or with float32 gives float32, and 0-dimensional tensors (scalars) do not take
 * part unless every input is one.  Gradients have the dtype of the tensor they belong to.
 * matmul and linear need operands of one dtype (as PyTorch); with float16 operands they use
 * ggml's native F16 matrix product.  Optimizers take float32 parameters only. */
enum ga_dtype { GA_FLOAT32 = 0, GA_FLOAT16 = 1, GA_BFLOAT16 = 2 };

/* The dtype of t (GA_FLOAT32 for NULL or a released tensor, with a message). */
GGML_API enum ga_dtype ga_dtype_of(const ga_tensor *t);
/* "float32", "float16", "bfloat16" ("invalid" for other values). */
GGML_API const char *ga_dtype_name(enum ga_dtype dtype);
/* Bytes per element of dtype (4 or 2; 0 for an invalid value). */
GGML_API size_t ga_dtype_size(enum ga_dtype dtype);

/* The dtype that creators (from_array, zeros, ones, full, empty, scalar, arange, rand, randn)
 * give their tensors in the calling thread, as torch.set_default_dtype; returns the previous
 * one.  Float data given to a creator is rounded to it (nearest even).  An invalid dtype
 * leaves the setting unchanged, with a message.  *_like creators take like's dtype. */
GGML_API enum ga_dtype ga_set_default_dtype(enum ga_dtype dtype);
GGML_API enum ga_dtype ga_get_default_dtype(void);

/* A tensor of dtype from raw host elements: float for GA_FLOAT32, the 16-bit patterns
 * (uint16_t) for GA_FLOAT16 and GA_BFLOAT16, copied bit for bit; len is the element count.
 * NULL and a message for a bad dtype, a count that is not the shape's, or a dtype the device
 * cannot store. */
GGML_API ga_tensor *ga_from_raw(ga_device *dev, const void *data, size_t len,
                                enum ga_dtype dtype, int ndim, const int64_t *shape);
/* Copy t's stored elements, bit for bit in its dtype (float or uint16_t patterns), into dst
 * of len elements (len must equal ga_numel).  ga_to_host always gives floats. */
GGML_API enum ggmlc_status ga_to_host_raw(const ga_tensor *t, void *dst, size_t len);

/* t converted to dtype, as t.to(dtype), t.half(), t.bfloat16(), t.float(): rounding to
 * nearest even when narrowing; gradients flow back, converted to t's dtype.  t itself with
 * one more reference (which a scope drops as any result's) when t already has dtype. */
GGML_API ga_tensor *ga_to_dtype(const ga_tensor *t, enum ga_dtype dtype);

/* -------------------------------------------------------------- references */

/* Take one more reference; returns t. */
GGML_API ga_tensor *ga_retain(ga_tensor *t);
/* Drop one reference (NULL is ignored); the last one frees the handle.  Using a tensor after
 * its last release is an error that ops report (as long as the memory was not reused). */
GGML_API void ga_release(ga_tensor *t);
/* Scopes: every tensor created between begin and end is released at end, except the ones
 * given to ga_keep (which then belong to the enclosing scope, or to the caller outside any).
 * Scopes nest; ga_keep returns t.  A scope holds the creator's reference: do not ga_release a
 * tensor that a scope will release (ga_retain it first to keep a reference of your own). */
GGML_API void ga_scope_begin(void);
GGML_API void ga_scope_end(void);
GGML_API ga_tensor *ga_keep(ga_tensor *t);

/* ---------------------------------------------------------------- autograd */

/* Whether gradients of t are wanted; setting it is allowed on leaves (tensors not made by an
 * op that records).  Returns t. */
GGML_API ga_tensor *ga_requires_grad_(ga_tensor *t, bool requires_grad);
GGML_API bool ga_requires_grad(const ga_tensor *t);
/* Whether t was made by the user rather than by a recorded op. */
GGML_API bool ga_is_leaf(const ga_tensor *t);

/* Backpropagate from the scalar t: gradients of every leaf that requires one are added to its
 * .grad.  The recorded graph behind t is freed afterwards; a second backward through it is an
 * error. */
GGML_API enum ggmlc_status ga_backward(ga_tensor *t);
/* The general form: grad (NULL only for a scalar t) is the upstream gradient, shaped as t;
 * retain_graph keeps the record for another backward. */
GGML_API enum ggmlc_status ga_backward_ex(ga_tensor *t, const ga_tensor *grad, bool retain_graph);

/* The accumulated gradient of t (borrowed: valid until t is released or its grad is reset),
 * or NULL when none was computed. */
GGML_API ga_tensor *ga_grad(const ga_tensor *t);
/* Forget t's gradient (set_to_none, as PyTorch's zero_grad does by default). */
GGML_API void ga_zero_grad(ga_tensor *t);

/* Turn recording on or off for the calling thread; returns the previous state.  The no_grad
 * scope is ga_set_grad_enabled(false) ... ga_set_grad_enabled(previous). */
GGML_API bool ga_set_grad_enabled(bool enabled);
GGML_API bool ga_is_grad_enabled(void);

/* A new handle to t's value that records nothing and requires no gradient. */
GGML_API ga_tensor *ga_detach(const ga_tensor *t);

/* In-place update of a tensor's value, as optimizers need: t's handle takes src's value
 * (shapes must match); nothing is recorded, and ops recorded earlier keep seeing t's old value.
 * The .grad of t is kept. */
GGML_API enum ggmlc_status ga_assign_(ga_tensor *t, const ga_tensor *src);

/* Functional optimizer updates (as torch.optim's functional forms; the optimizer objects of
 * ggmlc-autograd-nn.h are built on them), with the math of ggmlc's graph training: update
 * param in place from its .grad (nothing happens when it has none).  The update joins the
 * pending graph; reads of param recorded before it see the old value, later ones the new.
 * AdamW: decoupled weight decay, moments m and v (zero tensors shaped as param, kept by the
 * caller, updated in place), step counted from 1 for the bias corrections.  SGD: weight decay
 * (as L2), momentum with a momentum buffer (zeros shaped as param; NULL when momentum is 0). */
GGML_API enum ggmlc_status ga_adamw_step_(ga_tensor *param, ga_tensor *m, ga_tensor *v,
                                          int64_t step, float lr, float beta1, float beta2,
                                          float eps, float weight_decay);
GGML_API enum ggmlc_status ga_sgd_step_(ga_tensor *param, ga_tensor *momentum_buffer, float lr,
                                        float momentum, float weight_decay);

/* Compare the analytic gradient of f at inputs (those that require grad) with central finite
 * differences of step eps: GGMLC_OK when every element agrees within atol + rtol * |numeric|,
 * else GGMLC_ERR_INTERNAL and a message naming the input, element and both values.  f returns
 * a new tensor (any shape: its elements are summed with random weights). */
typedef ga_tensor *(*ga_function)(ga_tensor *const *inputs, int n_inputs, void *user);
GGML_API enum ggmlc_status ga_gradcheck(ga_function f, ga_tensor *const *inputs, int n_inputs,
                                        void *user, float eps, float atol, float rtol);

/* ------------------------------------------------------------- arithmetic */

/* Elementwise with two-sided NumPy broadcasting: shapes are aligned from the last dimension and
 * a dimension of size 1 stretches to the other's size. */
GGML_API ga_tensor *ga_add(const ga_tensor *a, const ga_tensor *b);
GGML_API ga_tensor *ga_sub(const ga_tensor *a, const ga_tensor *b);
GGML_API ga_tensor *ga_mul(const ga_tensor *a, const ga_tensor *b);
GGML_API ga_tensor *ga_div(const ga_tensor *a, const ga_tensor *b);
/* a + s, a * s. */
GGML_API ga_tensor *ga_add_scalar(const ga_tensor *a, float s);
GGML_API ga_tensor *ga_mul_scalar(const ga_tensor *a, float s);

/* Matrix product as torch.matmul: (n, k) @ (k, m) -> (n, m); batched with broadcast batch
 * dimensions ((b, n, k) @ (k, m), (b, 1, n, k) @ (c, k, m), ...); a 1-D operand is a vector. */
GGML_API ga_tensor *ga_matmul(const ga_tensor *a, const ga_tensor *b);
/* x @ weight^T + bias, weight (out, in) as torch.nn.functional.linear; bias may be NULL. */
GGML_API ga_tensor *ga_linear(const ga_tensor *x, const ga_tensor *weight, const ga_tensor *bias);

/* ------------------------------------------------------------- reductions */

/* Sum and mean of all elements: a 0-dimensional tensor. */
GGML_API ga_tensor *ga_sum(const ga_tensor *t);
GGML_API ga_tensor *ga_mean(const ga_tensor *t);
/* Over one dimension (negative counts from the end), keeping it as size 1 when keepdim. */
GGML_API ga_tensor *ga_sum_dim(const ga_tensor *t, int dim, bool keepdim);
GGML_API ga_tensor *ga_mean_dim(const ga_tensor *t, int dim, bool keepdim);
/* Maximum and minimum over dim (the gradient goes to every element equal to the extreme: all of
 * them on a tie, where PyTorch picks one); argmax: the index of the first maximum, as a float,
 * without gradient. */
GGML_API ga_tensor *ga_max_dim(const ga_tensor *t, int dim, bool keepdim);
GGML_API ga_tensor *ga_min_dim(const ga_tensor *t, int dim, bool keepdim);
GGML_API ga_tensor *ga_argmax(const ga_tensor *t, int dim, bool keepdim);
/* Variance and standard deviation over dim (unbiased: divided by n - 1), and the log of the sum
 * of exponentials (computed stably, shifted by the maximum). */
GGML_API ga_tensor *ga_var(const ga_tensor *t, int dim, bool unbiased, bool keepdim);
GGML_API ga_tensor *ga_std(const ga_tensor *t, int dim, bool unbiased, bool keepdim);
GGML_API ga_tensor *ga_logsumexp(const ga_tensor *t, int dim, bool keepdim);

/* ------------------------------------------------------------ elementwise */

/* Elementwise functions; relu's gradient at 0 is 0, as abs's (PyTorch's too). */

GGML_API ga_tensor *ga_neg(const ga_tensor *t);
GGML_API ga_tensor *ga_exp(const ga_tensor *t);
GGML_API ga_tensor *ga_log(const ga_tensor *t);
GGML_API ga_tensor *ga_sqrt(const ga_tensor *t);
GGML_API ga_tensor *ga_abs(const ga_tensor *t);
GGML_API ga_tensor *ga_relu(const ga_tensor *t);
GGML_API ga_tensor *ga_sigmoid(const ga_tensor *t);
GGML_API ga_tensor *ga_tanh(const ga_tensor *t);
/* t^exponent: any base for an integer exponent, positive bases otherwise; clamp to [min, max]
 * (either may be +-INFINITY); leaky_relu; gelu in its exact (erf) form as torch's default; silu;
 * softplus log(1 + e^x) computed without overflow. */
GGML_API ga_tensor *ga_pow(const ga_tensor *t, float exponent);
GGML_API ga_tensor *ga_clamp(const ga_tensor *t, float min, float max);
GGML_API ga_tensor *ga_leaky_relu(const ga_tensor *t, float negative_slope);
GGML_API ga_tensor *ga_gelu(const ga_tensor *t);
GGML_API ga_tensor *ga_silu(const ga_tensor *t);
GGML_API ga_tensor *ga_softplus(const ga_tensor *t);
/* cond ? a : b elementwise with broadcasting (cond nonzero = true); masked_fill puts value where
 * mask is nonzero.  Masks get no gradient; a NaN or infinity in the branch not taken still
 * shows (the result is mixed arithmetically); an infinite fill value becomes +-FLT_MAX. */
GGML_API ga_tensor *ga_where(const ga_tensor *cond, const ga_tensor *a, const ga_tensor *b);
GGML_API ga_tensor *ga_masked_fill(const ga_tensor *t, const ga_tensor *mask, float value);

/* Softmax and log-softmax over any dimension dim (log_softmax: the log of the stable softmax,
 * exact unless a probability underflows float). */
GGML_API ga_tensor *ga_softmax(const ga_tensor *t, int dim);
GGML_API ga_tensor *ga_log_softmax(const ga_tensor *t, int dim);
/* ggml's scaled, masked softmax over the last dim: softmax(t * scale + slope * mask) with
 * t (..., H, L, S), mask NULL or (L, S) (broadcast over the leading dims), slope 1, or the ALiBi
 * slope of head h when max_bias > 0 (ggml_soft_max_ext's semantics; a mask is then needed).
 * The gradient is ggml_soft_max_ext_back's; the mask gets none. */
GGML_API ga_tensor *ga_softmax_ext(const ga_tensor *t, const ga_tensor *mask, float scale,
                                   float max_bias);

/* ------------------------------------------------------------------ views */

/* Views share storage where the layout allows; a -1 in reshape's shape is inferred. */
GGML_API ga_tensor *ga_reshape(const ga_tensor *t, int ndim, const int64_t *shape);
GGML_API ga_tensor *ga_transpose(const ga_tensor *t, int dim0, int dim1);
/* permute as torch.permute (dims: a permutation of 0..ndim-1); narrow: length elements of dim
 * from start (negative counts from the end); squeeze removes dim when its size is 1 (else the
 * same shape); unsqueeze inserts a dim of size 1; expand broadcasts dims of size 1 to shape
 * (-1 keeps a size; new dims go in front).  These copy their result. */
GGML_API ga_tensor *ga_permute(const ga_tensor *t, const int *dims);
GGML_API ga_tensor *ga_narrow(const ga_tensor *t, int dim, int64_t start, int64_t length);
GGML_API ga_tensor *ga_squeeze(const ga_tensor *t, int dim);
GGML_API ga_tensor *ga_unsqueeze(const ga_tensor *t, int dim);
GGML_API ga_tensor *ga_expand(const ga_tensor *t, int ndim, const int64_t *shape);

/* ---------------------------------------------------- indexing and joining */

/* Indices hold integer values stored as floats; they are read on the host (a flush if they are
 * pending) and an index out of range is an error.  embedding: rows of weight (num, dim) for
 * indices of any shape (at most 3-D) -> indices' shape + (dim); gather and scatter_add as
 * torch's (index and input of equal dims, at most 3, equal except along dim); index_select
 * with 1-D indices.  Implemented as one-hot products: memory grows with rows x the size of
 * the indexed dim. */
GGML_API ga_tensor *ga_embedding(const ga_tensor *indices, const ga_tensor *weight);
GGML_API ga_tensor *ga_gather(const ga_tensor *t, int dim, const ga_tensor *indices);
GGML_API ga_tensor *ga_index_select(const ga_tensor *t, int dim, const ga_tensor *indices);
GGML_API ga_tensor *ga_scatter_add(const ga_tensor *t, int dim, const ga_tensor *indices,
                                   const ga_tensor *src);
/* Join n tensors along an existing dim (cat) or a new one (stack). */
GGML_API ga_tensor *ga_cat(ga_tensor *const *ts, int n, int dim);
GGML_API ga_tensor *ga_stack(ga_tensor *const *ts, int n, int dim);
/* Pieces of size split_size (the last may be smaller) or n equal chunks, written to out
 * (capacity max_out); returns the count, or -1. */
GGML_API int ga_split(const ga_tensor *t, int64_t split_size, int dim, ga_tensor **out,
                      int max_out);
GGML_API int ga_chunk(const ga_tensor *t, int chunks, int dim, ga_tensor **out, int max_out);

/* ------------------------------------------------- losses (mean reduction) */

/* Mean squared error between input and a target of the same shape. */
GGML_API ga_tensor *ga_mse_loss(const ga_tensor *input, const ga_tensor *target);
/* Mean absolute error; smooth L1 (Huber divided by beta) as torch's. */
GGML_API ga_tensor *ga_l1_loss(const ga_tensor *input, const ga_tensor *target);
GGML_API ga_tensor *ga_smooth_l1_loss(const ga_tensor *input, const ga_tensor *target,
                                      float beta);
/* Cross-entropy from logits (N, C) or (C): target holds class indices (N) as floats, rows whose
 * index is ignore_index are left out of the sum and the mean; label_smoothing as in PyTorch.
 * _probs: the target is a distribution (N, C) (it gets a gradient too).  nll_loss takes
 * log-probabilities; bce_with_logits takes logits and targets in [0, 1] of one shape. */
GGML_API ga_tensor *ga_cross_entropy(const ga_tensor *logits, const ga_tensor *target,
                                     int64_t ignore_index, float label_smoothing);
GGML_API ga_tensor *ga_cross_entropy_probs(const ga_tensor *logits, const ga_tensor *probs,
                                           float label_smoothing);
GGML_API ga_tensor *ga_nll_loss(const ga_tensor *log_probs, const ga_tensor *target,
                                int64_t ignore_index);
GGML_API ga_tensor *ga_bce_with_logits(const ga_tensor *logits, const ga_tensor *target);

/* ------------------------------------------------- neural-network functions */

/* Dropout with probability p when training (kept elements scaled by 1/(1-p), the mask drawn
 * from the ga_manual_seed generator); a copy otherwise. */
GGML_API ga_tensor *ga_dropout(const ga_tensor *t, float p, bool training);
/* Normalisations: layer_norm and rms_norm over the last dimension (weight and bias vectors of
 * its size, or NULL); batch_norm of (N, C, ...) with batch statistics and the exact gradient
 * through them when training (running_mean/var, if given, updated in place with momentum, the
 * variance unbiased), the running statistics when not; group_norm of (N, C, ...) in num_groups
 * groups, weight and bias per channel. */
GGML_API ga_tensor *ga_layer_norm(const ga_tensor *t, const ga_tensor *weight,
                                  const ga_tensor *bias, float eps);
GGML_API ga_tensor *ga_rms_norm(const ga_tensor *t, const ga_tensor *weight, float eps);
GGML_API ga_tensor *ga_batch_norm(const ga_tensor *t, ga_tensor *running_mean,
                                  ga_tensor *running_var, const ga_tensor *weight,
                                  const ga_tensor *bias, bool training, float momentum,
                                  float eps);
GGML_API ga_tensor *ga_group_norm(const ga_tensor *t, int num_groups, const ga_tensor *weight,
                                  const ga_tensor *bias, float eps);
/* Convolutions as torch.nn.functional: input (N, C, L) / (N, C, H, W), weight (OC, C, K) /
 * (OC, C, KH, KW), bias NULL or (OC); one stride, padding and dilation for both axes.  Pooling
 * of (N, C, H, W) with a square kernel (stride 0: the kernel); avg_pool2d leaves padding out of
 * the average (torch's count_include_pad=False). */
GGML_API ga_tensor *ga_conv1d(const ga_tensor *input, const ga_tensor *weight,
                              const ga_tensor *bias, int stride, int padding, int dilation);
GGML_API ga_tensor *ga_conv2d(const ga_tensor *input, const ga_tensor *weight,
                              const ga_tensor *bias, int stride, int padding, int dilation);
GGML_API ga_tensor *ga_max_pool2d(const ga_tensor *input, int kernel, int stride, int padding);
GGML_API ga_tensor *ga_avg_pool2d(const ga_tensor *input, int kernel, int stride, int padding);
/* softmax(q k^T * scale + mask) v for q (..., L, E), k (..., S, E), v (..., S, Ev); mask NULL
 * or additive (broadcast, -INFINITY allowed); is_causal masks the keys after each query;
 * dropout_p > 0 drops attention weights; scale 0 means 1/sqrt(E). */
GGML_API ga_tensor *ga_scaled_dot_product_attention(const ga_tensor *q, const ga_tensor *k,
                                                    const ga_tensor *v, const ga_tensor *mask,
                                                    float dropout_p, bool is_causal, float scale);

#ifdef __cplusplus
}
#endif

#endif /* GGMLC_AUTOGRAD_H */
