/*
 * tensor.c - handles of the eager tensors: creation, references and scopes, reading values.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ggmlc.h"
#include "optimizer.h"
#include "autograd-impl.h"

/* Released handles are kept for reuse, never given back to malloc: a use after release then
 * finds the dead mark and is reported instead of reading freed memory.  Per thread, so that
 * threads working on different devices do not race on the list. */
static _Thread_local ga_tensor *free_handles;
static struct ggmlc_rng rng = {0};
static bool rng_seeded;

/* Scopes: the tensors each open scope will release. */
struct scope {
    ga_tensor **items;
    int n, cap;
};
static _Thread_local struct scope *scopes;
static _Thread_local int n_scopes, cap_scopes;
static _Thread_local int internal_depth;
static _Thread_local int untracked_depth; /* module parameters: untracked, default dtype */

/* ------------------------------------------------------------- shapes */

void ggmlc__ga_shape_to_ne(int ndim, const int64_t *shape, int64_t ne[GGML_MAX_DIMS]) {
    for (int i = 0; i < GGML_MAX_DIMS; i++) ne[i] = i < ndim ? shape[ndim - 1 - i] : 1;
}

static bool check_shape(int ndim, const int64_t *shape, const char *fn) {
    if (ndim < 0 || ndim > GA_MAX_DIMS || (ndim > 0 && !shape)) {
        ggmlc_set_error(GGMLC_ERR_SHAPE, "%s: %d dimensions (1-%d, or 0 for a scalar)", fn, ndim,
                        GA_MAX_DIMS);
        return false;
    }
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 1 || shape[i] > ((int64_t)1 << 40)) {
            ggmlc_set_error(GGMLC_ERR_SHAPE, "%s: dimension %d has size %lld", fn, i,
                            (long long)shape[i]);
            return false;
        }
    }
    return true;
}

/* -------------------------------------------------------------- handles */

bool ggmlc__ga_check(const ga_tensor *t, const char *op) {
    if (!t) {
        /* the first failure of a chain was reported already */
        if (ggmlc_last_status() == GGMLC_OK)
            ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: NULL tensor", op);
        return false;
    }
    if (t->magic != GA_MAGIC_LIVE) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "%s: tensor used after its last ga_release", op);
        return false;
    }
    return true;
}

void ggmlc__ga_scope_track(ga_tensor *t) {
    if (!t || n_scopes == 0 || internal_depth || untracked_depth) return;
    struct scope *s = &scopes[n_scopes - 1];
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        ga_tensor **p = realloc(s->items, (size_t)cap * sizeof *p);
        if (!p) return; /* untracked: the tensor outlives the scope rather than dying early */
        s->items = p;
        s->cap = cap;
    }
    s->items[s->n++] = t;
}

void ggmlc__ga_internal(int delta) { internal_depth += delta; }
void ggmlc__ga_untracked(int delta) { untracked_depth += delta; }

ga_tensor *ggmlc__ga_new_handle(ga_device *dev, int ndim, const int64_t *ne) {
    ga_tensor *t = free_handles;
    if (t)
        free_handles = t->grad; /* the free list is linked through grad */
    else
        t = malloc(sizeof *t);
    if (!t) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "ga: out of memory");
        return NULL;
    }
    memset(t, 0, sizeof *t);
    t->magic = GA_MAGIC_LIVE;
    t->refcount = 1;
    t->dev = dev;
    t->ndim = ndim;
    memcpy(t->ne, ne, sizeof t->ne);
    t->pending_index = -1;
    dev->tensors_alive++;
    ggmlc__ga_scope_track(t);
    return t;
}

static void free_fn(struct ga_fn *fn) {
    if (!fn) return;
    for (int i = 0; i < fn->n_inputs; i++) ga_release(fn->inputs[i]);
    free(fn);
}

static void handle_free(ga_tensor *t) {
    ggmlc__ga_pending_remove(t);
    ggmlc__ga_store_free(t);
    struct ga_fn *fn = t->fn;
    ga_tensor *grad = t->grad;
    t->dev->tensors_alive--;
    t->magic = GA_MAGIC_DEAD;
    t->grad = free_handles;
    free_handles = t;
    free_fn(fn);
    ga_release(grad);
}

ga_tensor *ga_retain(ga_tensor *t) {
    if (!ggmlc__ga_check(t, "ga_retain")) return NULL;
    t->refcount++;
    return t;
}

void ga_release(ga_tensor *t) {
    if (!t) return;
    if (!ggmlc__ga_check(t, "ga_release")) return;
    if (--t->refcount == 0) handle_free(t);
}

void ga_scope_begin(void) {
    if (n_scopes == cap_scopes) {
        int cap = cap_scopes ? 2 * cap_scopes : 8;
        struct scope *p = realloc(scopes, (size_t)cap * sizeof *p);
        if (!p) {
            ggmlc_set_error(GGMLC_ERR_NOMEM, "ga_scope_begin: out of memory");
            return;
        }
        scopes = p;
        cap_scopes = cap;
    }
    scopes[n_scopes++] = (struct scope){0};
}

void ga_scope_end(void) {
    if (n_scopes == 0) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ga_scope_end: no open scope");
        return;
    }
    struct scope s = scopes[--n_scopes];
    for (int i = 0; i < s.n; i++)
        if (s.items[i]) ga_release(s.items[i]);
    free(s.items);
}

ga_tensor *ga_keep(ga_tensor *t) {
    if (!ggmlc__ga_check(t, "ga_keep") || n_scopes == 0) return t;
    struct scope *s = &scopes[n_scopes - 1];
    for (int i = s->n - 1; i >= 0; i--) {
        if (s->items[i] == t) {
            s->items[i] = NULL;
            break;
        }
    }
    n_scopes--; /* the enclosing scope, if any, takes it */
    ggmlc__ga_scope_track(t);
    n_scopes++;
    return t;
}

/* ----------------------------------------------------------- nodes */

struct ggml_context *ggmlc__ga_ctx(const ga_tensor *t) {
    return t->dev->seg;
}

void ggmlc__ga_host_forget(ga_tensor *t) {
    free(t->host);
    t->host = NULL;
}

struct ggml_tensor *ggmlc__ga_node(ga_tensor *t) {
    ga_device *d = t->dev;
    ggmlc__ga_host_forget(t); /* a graph may write the storage now (an in-place update) */
    if (t->node && t->node_epoch == d->epoch) return t->node;
    if (!t->store) {
        ggmlc_set_error(GGMLC_ERR_BACKEND,
                        "ga: the tensor's value was lost by a failed computation");
        return NULL;
    }
    struct ggml_tensor *n = ggml_new_tensor(d->seg, t->store->type, GGML_MAX_DIMS, t->ne);
    if (!n || ggml_backend_tensor_alloc(t->store_buf, n, t->store->data) != GGML_STATUS_SUCCESS ||
        !ggmlc__ga_pin(t))
        return NULL;
    t->raw = t->dtype == GA_FLOAT32 ? NULL : n;
    /* 16-bit storage is read as F32 by the ops */
    t->node = t->raw ? ggml_cast(d->seg, n, GGML_TYPE_F32) : n;
    t->node_epoch = d->epoch;
    return t->node;
}

ga_tensor *ggmlc__ga_from_node(ga_device *dev, struct ggml_tensor *node, int ndim) {
    if (!node) {
        if (ggmlc_last_status() == GGMLC_OK)
            ggmlc_set_error(GGMLC_ERR_INTERNAL, "ga: an op could not be built");
        return NULL;
    }
    ga_tensor *t = ggmlc__ga_new_handle(dev, ndim, node->ne);
    if (!t) return NULL;
    t->node = node;
    t->node_epoch = dev->epoch;
    if (!ggmlc__ga_pending_add(t)) {
        ga_release(t);
        ggmlc_set_error(GGMLC_ERR_NOMEM, "ga: out of memory");
        return NULL;
    }
    return t;
}

/* ------------------------------------------------------------- creation */

static ga_tensor *stored_as(ga_device *dev, int ndim, const int64_t *shape, enum ga_dtype dtype,
                            const char *fn) {
    dev = ggmlc__ga_device_or_default(dev);
    if (!dev || !check_shape(ndim, shape, fn) || !ggmlc__ga_dtype_ok(dev, dtype, fn)) return NULL;
    int64_t ne[GGML_MAX_DIMS];
    ggmlc__ga_shape_to_ne(ndim, shape, ne);
    ga_tensor *t = ggmlc__ga_new_handle(dev, ndim, ne);
    if (t) t->dtype = dtype;
    if (t && !ggmlc__ga_store_alloc(t)) {
        ga_release(t);
        return NULL;
    }
    return t;
}

/* Checked before the tensor exists: a handle made and released here would stay in the
 * caller's scope, which would release it a second time. */
static bool count_matches(size_t len, int ndim, const int64_t *shape, const char *fn) {
    if (!check_shape(ndim, shape, fn)) return false;
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    if ((int64_t)len == n) return true;
    ggmlc_set_error(GGMLC_ERR_SHAPE, "%s: %zu values for a shape of %lld elements", fn, len,
                    (long long)n);
    return false;
}

/* Public creators make the default dtype; the internal constants of composite ops F32. */
static enum ga_dtype creation_dtype(void) {
    return internal_depth ? GA_FLOAT32 : ggmlc__ga_creation_dtype();
}

static ga_tensor *stored(ga_device *dev, int ndim, const int64_t *shape, const char *fn) {
    return stored_as(dev, ndim, shape, creation_dtype(), fn);
}

/* Fill t's storage from n floats, rounded to its dtype. */
static bool set_floats(ga_tensor *t, const float *v, size_t n, const char *fn) {
    if (t->dtype == GA_FLOAT32) {
        ggml_backend_tensor_set(t->store, v, 0, n * sizeof *v);
        return true;
    }
    const size_t e = ga_dtype_size(t->dtype);
    void *raw = malloc(n * e);
    if (!raw) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "%s: out of memory", fn);
        return false;
    }
    ggmlc__ga_from_f32(t->dtype, v, raw, n);
    ggml_backend_tensor_set(t->store, raw, 0, n * e);
    free(raw);
    return true;
}

/* t (released on failure) with its elements drawn from gen. */
static ga_tensor *fill(ga_tensor *t, const char *fn, float (*gen)(void *), void *arg) {
    if (!t) return NULL;
    int64_t n = ga_numel(t);
    float *v = malloc((size_t)n * sizeof *v);
    if (!v) {
        ga_release(t);
        ggmlc_set_error(GGMLC_ERR_NOMEM, "%s: out of memory", fn);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) v[i] = gen(arg);
    bool ok = set_floats(t, v, (size_t)n, fn);
    free(v);
    if (!ok) ga_release(t);
    return ok ? t : NULL;
}

static ga_tensor *filled(ga_device *dev, int ndim, const int64_t *shape, const char *fn,
                         float (*gen)(void *), void *arg) {
    return fill(stored(dev, ndim, shape, fn), fn, gen, arg);
}

static float gen_const(void *arg) { return *(const float *)arg; }

/* Host copies are kept for tensors of at most this many values (256 KiB). */
#define GA_HOST_COPY_MAX 65536

/* Keep the values just written to t's float32 storage (see ga_tensor.host); without memory
 * for them the reads simply go to the device. */
static void keep_host_copy(ga_tensor *t, const float *v, size_t n) {
    if (t->dtype != GA_FLOAT32 || n > GA_HOST_COPY_MAX || !(t->host = malloc(n * sizeof *v)))
        return;
    memcpy(t->host, v, n * sizeof *v);
}

ga_tensor *ga_from_array(ga_device *dev, const float *data, size_t len, int ndim,
                         const int64_t *shape) {
    if (!data) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ga_from_array: NULL data");
        return NULL;
    }
    if (!count_matches(len, ndim, shape, "ga_from_array")) return NULL;
    ga_tensor *t = stored(dev, ndim, shape, "ga_from_array");
    if (!t) return NULL;
    if (!set_floats(t, data, len, "ga_from_array")) {
        ga_release(t);
        return NULL;
    }
    keep_host_copy(t, data, len);
    return t;
}

ga_tensor *ga_from_raw(ga_device *dev, const void *data, size_t len, enum ga_dtype dtype,
                       int ndim, const int64_t *shape) {
    if (!data) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ga_from_raw: NULL data");
        return NULL;
    }
    if (!count_matches(len, ndim, shape, "ga_from_raw")) return NULL;
    ga_tensor *t = stored_as(dev, ndim, shape, dtype, "ga_from_raw");
    if (!t) return NULL;
    ggml_backend_tensor_set(t->store, data, 0, len * ga_dtype_size(dtype));
    return t;
}

ga_tensor *ga_full(ga_device *dev, int ndim, const int64_t *shape, float value) {
    return filled(dev, ndim, shape, "ga_full", gen_const, &value);
}
ga_tensor *ga_zeros(ga_device *dev, int ndim, const int64_t *shape) {
    return ga_full(dev, ndim, shape, 0.0f);
}
ga_tensor *ga_ones(ga_device *dev, int ndim, const int64_t *shape) {
    return ga_full(dev, ndim, shape, 1.0f);
}
ga_tensor *ga_empty(ga_device *dev, int ndim, const int64_t *shape) {
    return stored(dev, ndim, shape, "ga_empty");
}
ga_tensor *ga_scalar(ga_device *dev, float value) { return ga_full(dev, 0, NULL, value); }

static ga_tensor *full_like(const ga_tensor *like, float value, const char *fn) {
    if (!ggmlc__ga_check(like, fn)) return NULL;
    int64_t shape[GA_MAX_DIMS];
    int nd = ga_shape(like, shape);
    return fill(stored_as(like->dev, nd, shape, like->dtype, fn), fn, gen_const, &value);
}
ga_tensor *ga_zeros_like(const ga_tensor *like) { return full_like(like, 0.0f, "ga_zeros_like"); }
ga_tensor *ga_ones_like(const ga_tensor *like) { return full_like(like, 1.0f, "ga_ones_like"); }

struct arange_state {
    float start, step;
    int64_t i;
};
static float gen_arange(void *arg) {
    struct arange_state *s = arg;
    return s->start + (float)s->i++ * s->step;
}

ga_tensor *ga_arange(ga_device *dev, float start, float end, float step) {
    if (step == 0 || !isfinite(start) || !isfinite(end) || !isfinite(step) ||
        (end - start) / step <= 0) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ga_arange: no values from %g to %g by %g", start,
                        end, step);
        return NULL;
    }
    int64_t n = (int64_t)ceil(((double)end - start) / step);
    struct arange_state s = {start, step, 0};
    return filled(dev, 1, &n, "ga_arange", gen_arange, &s);
}

void ga_manual_seed(uint64_t seed) {
    ggmlc__rng_seed(&rng, seed);
    rng_seeded = true;
}

struct ggmlc_rng *ggmlc__ga_rng(void) {
    if (!rng_seeded) ga_manual_seed(0);
    return &rng;
}

static float gen_uniform(void *arg) { return ggmlc__rng_uniform(&rng); }
static float gen_normal(void *arg) { return (float)ggmlc__rng_normal(&rng); }

ga_tensor *ga_rand(ga_device *dev, int ndim, const int64_t *shape) {
    if (!rng_seeded) ga_manual_seed(0);
    return filled(dev, ndim, shape, "ga_rand", gen_uniform, NULL);
}
ga_tensor *ga_randn(ga_device *dev, int ndim, const int64_t *shape) {
    if (!rng_seeded) ga_manual_seed(0);
    return filled(dev, ndim, shape, "ga_randn", gen_normal, NULL);
}

/* ---------------------------------------------------------- properties */

int ga_ndim(const ga_tensor *t) { return ggmlc__ga_check(t, "ga_ndim") ? t->ndim : -1; }

int64_t ga_size(const ga_tensor *t, int dim) {
    if (!ggmlc__ga_check(t, "ga_size")) return -1;
    if (dim < 0) dim += t->ndim;
    if (dim < 0 || dim >= t->ndim) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ga_size: no dimension %d in a %d-D tensor", dim,
                        t->ndim);
        return -1;
    }
    return t->ne[t->ndim - 1 - dim];
}

int64_t ga_numel(const ga_tensor *t) {
    if (!ggmlc__ga_check(t, "ga_numel")) return -1;
    return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
}

int ga_shape(const ga_tensor *t, int64_t shape[GA_MAX_DIMS]) {
    if (!ggmlc__ga_check(t, "ga_shape") || !shape) return -1;
    for (int i = 0; i < t->ndim; i++) shape[i] = t->ne[t->ndim - 1 - i];
    return t->ndim;
}

ga_device *ga_device_of(const ga_tensor *t) {
    return ggmlc__ga_check(t, "ga_device_of") ? t->dev : NULL;
}

/* -------------------------------------------------------------- reading */

static bool materialize(const ga_tensor *t) {
    /* pending in-place updates (optimizer steps) may write t's storage: run them first */
    const bool stale = t->pending_index >= 0 || t->dev->n_effects > 0;
    if (stale && ggmlc__ga_flush(t->dev) != GGMLC_OK) return false;
    if (!t->store) {
        ggmlc_set_error(GGMLC_ERR_BACKEND,
                        "ga: the tensor's value was lost by a failed computation");
        return false;
    }
    return true;
}

/* Check dst's room and compute t's value: GGMLC_OK, or the failure with its message. */
static enum ggmlc_status readable(const ga_tensor *t, const void *dst, size_t len,
                                  const char *fn) {
    if (!ggmlc__ga_check(t, fn)) return ggmlc_last_status();
    if (!dst || (int64_t)len != ga_numel(t))
        return ggmlc_set_error(GGMLC_ERR_SHAPE, "%s: room for %zu values, the tensor has %lld",
                               fn, dst ? len : 0, (long long)ga_numel(t));
    return materialize(t) ? GGMLC_OK : ggmlc_last_status();
}

enum ggmlc_status ga_to_host_raw(const ga_tensor *t, void *dst, size_t len) {
    enum ggmlc_status st = readable(t, dst, len, "ga_to_host_raw");
    if (st == GGMLC_OK) ggml_backend_tensor_get(t->store, dst, 0, len * ga_dtype_size(t->dtype));
    return st;
}

enum ggmlc_status ga_to_host(const ga_tensor *t, float *dst, size_t len) {
    if (t && t->magic == GA_MAGIC_LIVE && t->host && dst && (int64_t)len == ga_numel(t)) {
        memcpy(dst, t->host, len * sizeof *dst); /* the storage holds these values */
        return GGMLC_OK;
    }
    enum ggmlc_status st = readable(t, dst, len, "ga_to_host");
    if (st != GGMLC_OK || t->dtype == GA_FLOAT32) {
        if (st == GGMLC_OK) ggml_backend_tensor_get(t->store, dst, 0, len * sizeof *dst);
        return st;
    }
    void *raw = malloc(len * ga_dtype_size(t->dtype));
    if (!raw) return ggmlc_set_error(GGMLC_ERR_NOMEM, "ga_to_host: out of memory");
    ggml_backend_tensor_get(t->store, raw, 0, len * ga_dtype_size(t->dtype));
    ggmlc__ga_to_f32(t->dtype, raw, dst, len);
    free(raw);
    return GGMLC_OK;
}

float ga_item(const ga_tensor *t) {
    if (!ggmlc__ga_check(t, "ga_item")) return NAN;
    if (ga_numel(t) != 1) {
        ggmlc_set_error(GGMLC_ERR_SHAPE, "ga_item: the tensor has %lld elements, not one",
                        (long long)ga_numel(t));
        return NAN;
    }
    float v = NAN;
    return ga_to_host(t, &v, 1) == GGMLC_OK ? v : NAN;
}

ga_tensor *ga_to(const ga_tensor *t, ga_device *dev) {
    if (!ggmlc__ga_check(t, "ga_to")) return NULL;
    dev = ggmlc__ga_device_or_default(dev);
    if (!dev) return NULL;
    if (dev == t->dev) return ga_retain((ga_tensor *)t);
    if (t->requires_grad || t->fn) {
        ggmlc_set_error(
            GGMLC_ERR_UNSUPPORTED,
            "ga_to: gradients across devices are not yet implemented (ga_detach first)");
        return NULL;
    }
    int64_t shape[GA_MAX_DIMS];
    int nd = ga_shape(t, shape);
    size_t n = (size_t)ga_numel(t);
    void *v = malloc(n * ga_dtype_size(t->dtype));
    if (!v) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "ga_to: out of memory");
        return NULL;
    }
    ga_tensor *r = ga_to_host_raw(t, v, n) == GGMLC_OK
                       ? ga_from_raw(dev, v, n, t->dtype, nd, shape)
                       : NULL;
    free(v);
    return r;
}

void ga_thread_release(void) {
    free(scopes);
    scopes = NULL;
    n_scopes = cap_scopes = 0;
    while (free_handles) {
        ga_tensor *next = free_handles->grad; /* the free list is linked through grad */
        free(free_handles);
        free_handles = next;
    }
}
