/*
 * autograd-impl.h - the inside of the eager tensors (ggmlc-autograd.h).
 *
 * A ga_device keeps a "segment": a no_alloc ggml context where ops append nodes instead of
 * computing.  A tensor's value is either pending (a node of the current segment) or stored (a
 * tensor of its own in a device buffer).  Flushing builds one graph from the pending values of
 * the live handles, gives each of them its storage before the scheduler runs (so results land
 * where they stay and nothing is copied afterwards), computes, and resets the segment.
 *
 * Autograd is a tape of our own: an op that has an input requiring grad gives its result a
 * ga_fn {kind, inputs, saved values}; backward walks the handles in reverse topological order
 * and appends the vector-Jacobian products as more lazy ops, so forward, backward and an
 * optimizer step usually run as one graph.
 */
#ifndef GGMLC_AUTOGRAD_IMPL_H
#define GGMLC_AUTOGRAD_IMPL_H

#include "ggml.h"
#include "ggml-backend.h"
#include "ggmlc-autograd.h"
#include "hidden.h"

#define GA_MAGIC_LIVE 0x67614c56u /* "gaLV" */
#define GA_MAGIC_DEAD 0x67614444u /* "gaDD" */
#define GA_MAX_INPUTS 4

/* The vector-Jacobian product of one recorded op: the gradients of its inputs (new nodes,
 * or NULL for an input that needs none) from the gradient g of its output. */
struct ga_fn;
typedef void (*ga_vjp)(const struct ga_fn *fn, struct ggml_tensor *g, ga_tensor *out,
                       struct ggml_tensor *grads[GA_MAX_INPUTS]);

struct ga_fn {
    const char *name; /* the op, for messages */
    ga_vjp vjp;
    ga_tensor *inputs[GA_MAX_INPUTS]; /* retained */
    int n_inputs;
    float f[4]; /* saved scalars */
    int i[4];   /* saved integers */
};

/* An in-place update (an optimizer step) and the count of pending entries made before it. */
struct ga_effect {
    struct ggml_tensor *node;
    int order;
};

/* A buffer of one tensor and its context, kept for reuse. */
struct ga_storage {
    struct ggml_context *ctx;
    ggml_backend_buffer_t buf;
    size_t key; /* the bytes of the shape it was made for */
    int order;  /* its place in the order of its last segment's allocations (device.c) */
};

struct ga_device {
    ggml_backend_dev_t dev;
    bool replica; /* made by ga_device_open: never returned by ga_device_get */
    ggml_backend_t backend, cpu; /* cpu: the fallback, NULL when backend is the CPU */
    ggml_backend_sched_t sched;
    struct ggml_context *seg; /* pending nodes */
    size_t seg_tensors;       /* capacity in tensors of seg (and its graph) */
    uint64_t epoch;           /* incremented at each segment reset */
    ga_tensor **pending;      /* handles whose value is a node of seg (not owned) */
    int n_pending, cap_pending;
    /* The node of each entry of pending whose handle was released before the flush (NULL for
     * the others): an in-place update recorded after it must still run after it (device.c). */
    struct ggml_tensor **released;
    int cap_released;
    ga_tensor **pinned; /* stored handles seg reads (owned until the flush) */
    int n_pinned, cap_pinned;
    struct ga_effect *effects; /* in-place updates of stored tensors, in order */
    int n_effects, cap_effects;
    ga_tensor *pars; /* the optimizer hyperparameters of this segment */
    float pars_host[8];
    size_t bytes_in_use, tensors_alive;
    unsigned char dtype_state[3]; /* per dtype: 0 unchecked, 1 supported, 2 not (dtype.c) */
    struct ga_storage pool[256];  /* released storage for reuse (device.c) */
    int n_pool;
    int n_allocs; /* storage allocations since the segment began */
    size_t pool_bytes;
};

struct ga_tensor {
    uint32_t magic;
    int refcount;
    ga_device *dev;
    int ndim;
    int64_t ne[GGML_MAX_DIMS]; /* ggml order: ne[0] is the last PyTorch dimension */
    enum ga_dtype dtype;       /* of the storage; node is F32 whatever it is */
    struct ggml_tensor *node;  /* this value in seg, when node_epoch == dev->epoch */
    struct ggml_tensor *raw;   /* F16/BF16 only: the value in the storage type (same epoch) */
    uint64_t node_epoch;
    int pending_index;              /* in dev->pending, or -1 */
    struct ggml_context *store_ctx; /* the stored value: one tensor in its own buffer */
    struct ggml_tensor *store;
    ggml_backend_buffer_t store_buf;
    int store_order; /* the storage's place in its segment's allocations (device.c) */
    /* The stored values as the host gave them (float32 tensors made from host data, small
     * enough to keep twice), while nothing can have written the storage since: read back
     * from here without a trip to the device (class indices read by the losses each step).
     * Dropped when the tensor becomes a node of a graph or loses its storage. */
    float *host;
    bool requires_grad;
    bool graph_freed; /* backward freed the record that made this */
    struct ga_fn *fn; /* how it was made, NULL for a leaf */
    ga_tensor *grad;
    uint64_t visit; /* backward's walk mark */
    ga_tensor *acc; /* backward's gradient sum of this tensor */
};

/* device.c */
GGMLC_HIDDEN ga_device *ggmlc__ga_device_or_default(ga_device *dev);
GGMLC_HIDDEN bool ggmlc__ga_reserve(ga_device *dev, int n_tensors);
GGMLC_HIDDEN enum ggmlc_status ggmlc__ga_flush(ga_device *dev);
GGMLC_HIDDEN bool ggmlc__ga_store_alloc(ga_tensor *t);
GGMLC_HIDDEN void ggmlc__ga_store_free(ga_tensor *t);
GGMLC_HIDDEN bool ggmlc__ga_pending_add(ga_tensor *t);
GGMLC_HIDDEN void ggmlc__ga_pending_remove(ga_tensor *t);
GGMLC_HIDDEN bool ggmlc__ga_pin(ga_tensor *t);
/* Run node (an in-place update of stored tensors) at the next flush, after what is pending. */
GGMLC_HIDDEN bool ggmlc__ga_add_effect(ga_device *dev, struct ggml_tensor *node);

/* tensor.c */
GGMLC_HIDDEN bool ggmlc__ga_check(const ga_tensor *t, const char *op);
GGMLC_HIDDEN ga_tensor *ggmlc__ga_new_handle(ga_device *dev, int ndim, const int64_t *ne);
GGMLC_HIDDEN struct ggml_tensor *ggmlc__ga_node(ga_tensor *t);
GGMLC_HIDDEN ga_tensor *ggmlc__ga_from_node(ga_device *dev, struct ggml_tensor *node, int ndim);
GGMLC_HIDDEN void ggmlc__ga_shape_to_ne(int ndim, const int64_t *shape, int64_t ne[GGML_MAX_DIMS]);
GGMLC_HIDDEN void ggmlc__ga_scope_track(ga_tensor *t);
/* +1 around internal work: handles made inside are not tracked by the user's scope */
GGMLC_HIDDEN void ggmlc__ga_internal(int delta);
/* +1 around making tensors that belong to a module: not tracked by the user's scope either,
 * but made in the default dtype as the user's own (internal work makes float32 constants). */
GGMLC_HIDDEN void ggmlc__ga_untracked(int delta);
/* Forget t's host copy of its values (its storage is about to change or be shared). */
GGMLC_HIDDEN void ggmlc__ga_host_forget(ga_tensor *t);

/* dtype.c */
GGMLC_HIDDEN enum ggml_type ggmlc__ga_ggml_type(enum ga_dtype dtype);
/* The dtype that public creators use now (float32 inside composite ops). */
GGMLC_HIDDEN enum ga_dtype ggmlc__ga_creation_dtype(void);
/* Whether dev computes with dtype storage; false with a message naming fn. */
GGMLC_HIDDEN bool ggmlc__ga_dtype_ok(ga_device *dev, enum ga_dtype dtype, const char *fn);
/* Give the pending handle t dtype: its node becomes the value rounded to dtype (t->raw holds
 * it in the storage type, read back as F32 by t->node).  False when a node cannot be made. */
GGMLC_HIDDEN bool ggmlc__ga_set_dtype(ga_tensor *t, enum ga_dtype dtype);
/* PyTorch's result dtype of an op's inputs (NULL entries skipped). */
GGMLC_HIDDEN enum ga_dtype ggmlc__ga_promote(ga_tensor *const *inputs, int n_inputs);
/* Float values to and from storage elements of dtype (host memory). */
GGMLC_HIDDEN void ggmlc__ga_from_f32(enum ga_dtype dtype, const float *x, void *dst, size_t n);
GGMLC_HIDDEN void ggmlc__ga_to_f32(enum ga_dtype dtype, const void *src, float *y, size_t n);

/* The generator of ga_manual_seed (rand, randn, dropout). */
struct ggmlc_rng;
GGMLC_HIDDEN struct ggmlc_rng *ggmlc__ga_rng(void);

/* autograd.c */
GGMLC_HIDDEN ga_tensor *ggmlc__ga_record(ga_tensor *out, const char *name, ga_vjp vjp,
                                         ga_tensor *const *inputs, int n_inputs);
/* The same without giving out the promoted dtype of the inputs (out keeps its own). */
GGMLC_HIDDEN ga_tensor *ggmlc__ga_record_as(ga_tensor *out, const char *name, ga_vjp vjp,
                                            ga_tensor *const *inputs, int n_inputs);
GGMLC_HIDDEN bool ggmlc__ga_needs_grad(ga_tensor *const *inputs, int n_inputs);
GGMLC_HIDDEN bool ggmlc__ga_check_pair(const ga_tensor *a, const ga_tensor *b, const char *op);
GGMLC_HIDDEN struct ggml_context *ggmlc__ga_ctx(const ga_tensor *t);
GGMLC_HIDDEN struct ggml_tensor *ggmlc__ga_reduce_to(struct ggml_tensor *g, const ga_tensor *like);

/* x reshaped to ne (made contiguous first when it is a strided view). */
GGMLC_HIDDEN struct ggml_tensor *ggmlc__ga_as_ne(struct ggml_context *ctx, struct ggml_tensor *x,
                                                 const int64_t *ne);

/* PyTorch dim (negative from the end) of t to ggml axis, or -1 with a message naming op. */
GGMLC_HIDDEN int ggmlc__ga_axis(const ga_tensor *t, int dim, const char *op);
/* x with ggml axis k swapped with axis 0 (its own inverse), contiguous. */
GGMLC_HIDDEN struct ggml_tensor *ggmlc__ga_swap0(struct ggml_context *ctx, struct ggml_tensor *x,
                                                 int k);

/* Composite ops (made of other ops): their temporaries, released at the end. */
struct ga_tmps {
    ga_tensor *t[32];
    int n;
};
GGMLC_HIDDEN void ggmlc__ga_tmp_begin(struct ga_tmps *s);
/* t, remembered for release (when it is not NULL). */
GGMLC_HIDDEN ga_tensor *ggmlc__ga_tmp(struct ga_tmps *s, ga_tensor *t);
/* Release the temporaries and hand result (not among them) to the caller's scope. */
GGMLC_HIDDEN ga_tensor *ggmlc__ga_tmp_end(struct ga_tmps *s, ga_tensor *result);
/* One-hot rows over n classes of every index of idx (integers stored as floats), shaped idx's
 * shape + (n), a temporary of s; NULL with a message for an index outside [0, n). */
GGMLC_HIDDEN ga_tensor *ggmlc__ga_one_hot(struct ga_tmps *s, const ga_tensor *idx, int64_t n,
                                          const char *op);
/* The values of t (a stored or pending tensor) on the host, malloc'ed; NULL with a message. */
GGMLC_HIDDEN float *ggmlc__ga_host_copy(const ga_tensor *t);

#endif
