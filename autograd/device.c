/*
 * device.c - the devices of the eager tensors: their backends and scheduler, the segment of
 * pending nodes, storage of values, and the flush that computes what is pending.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-cpu.h"
#include "ggmlc.h"
#include "autograd-impl.h"

#define GA_MAX_DEVICES 16
/* Tensors a segment holds before it is flushed by itself; ops reserve room before adding. */
#define GA_SEG_TENSORS 16384

/* Every device, shared and replica; replicas are opened from several threads. */
static pthread_mutex_t devices_lock = PTHREAD_MUTEX_INITIALIZER;
static ga_device *devices[GA_MAX_DEVICES];
static int n_devices;
static ga_device *default_device;

static bool grow(void **arr, int *cap, int need, size_t elem) {
    if (need <= *cap) return true;
    int cap2 = *cap ? 2 * *cap : 64;
    while (cap2 < need) cap2 *= 2;
    void *p = realloc(*arr, (size_t)cap2 * elem);
    if (!p) return false;
    *arr = p;
    *cap = cap2;
    return true;
}

static bool open_segment(ga_device *d) {
    d->seg_tensors = GA_SEG_TENSORS;
    size_t size =
        d->seg_tensors * ggml_tensor_overhead() + ggml_graph_overhead_custom(d->seg_tensors, false);
    d->seg = ggml_init((struct ggml_init_params){size, NULL, true});
    return d->seg != NULL;
}

static bool open_backends(ga_device *d) {
    d->backend = ggml_backend_dev_init(d->dev, NULL);
    if (!d->backend) return false;
    ggml_backend_t list[2] = {d->backend, NULL};
    int n = 1;
    if (!ggml_backend_is_cpu(d->backend)) {
        d->cpu = ggml_backend_cpu_init();
        if (!d->cpu) return false;
        list[n++] = d->cpu;
    }
    d->sched = ggml_backend_sched_new(list, NULL, n, d->seg_tensors + 64, false, true);
    return d->sched != NULL;
}

static void pool_free(ga_device *d);

static void device_free(ga_device *d) {
    if (!d) return;
    pool_free(d);
    if (d->sched) ggml_backend_sched_free(d->sched);
    if (d->cpu) ggml_backend_free(d->cpu);
    if (d->backend) ggml_backend_free(d->backend);
    if (d->seg) ggml_free(d->seg);
    free(d->pending);
    free(d->released);
    free(d->pinned);
    free(d->effects);
    free(d);
}

/* A new device over bdev, registered for ga_shutdown (the lock held). */
static ga_device *device_new(ggml_backend_dev_t bdev, bool replica) {
    if (n_devices == GA_MAX_DEVICES) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "ga: more than %d devices", GA_MAX_DEVICES);
        return NULL;
    }
    ga_device *d = calloc(1, sizeof *d);
    if (!d || !open_segment(d) || (d->dev = bdev, !open_backends(d))) {
        device_free(d);
        ggmlc_set_error(GGMLC_ERR_BACKEND, "ga: cannot start device %s",
                        ggml_backend_dev_name(bdev));
        return NULL;
    }
    d->replica = replica;
    devices[n_devices++] = d;
    return d;
}

static ga_device *device_open(ggml_backend_dev_t bdev) {
    pthread_mutex_lock(&devices_lock);
    ga_device *d = NULL;
    for (int i = 0; i < n_devices && !d; i++)
        if (devices[i]->dev == bdev && !devices[i]->replica) d = devices[i];
    if (!d) d = device_new(bdev, false);
    pthread_mutex_unlock(&devices_lock);
    return d;
}

static ggml_backend_dev_t backend_device(const char *name, const char *fn) {
    if (ggmlc_init() != GGMLC_OK) return NULL;
    ggml_backend_dev_t bdev = name ? ggml_backend_dev_by_name(name) : ggmlc_device_default();
    if (!bdev)
        ggmlc_set_error(GGMLC_ERR_NOT_FOUND, "%s: no device named '%s' (see ggmlc-info)", fn,
                        name ? name : "(default)");
    return bdev;
}

ga_device *ga_device_open(const char *name, int threads) {
    ggml_backend_dev_t bdev = backend_device(name, "ga_device_open");
    if (!bdev) return NULL;
    pthread_mutex_lock(&devices_lock);
    ga_device *d = device_new(bdev, true);
    pthread_mutex_unlock(&devices_lock);
    if (d && threads > 0 && ggml_backend_is_cpu(d->backend))
        ggml_backend_cpu_set_n_threads(d->backend, threads);
    return d;
}

ga_device *ga_device_get(const char *name) {
    ggml_backend_dev_t bdev = backend_device(name, "ga_device_get");
    return bdev ? device_open(bdev) : NULL;
}

const char *ga_device_name(const ga_device *dev) {
    return dev ? ggml_backend_dev_name(dev->dev) : "(none)";
}

void ga_set_default_device(ga_device *dev) { default_device = dev; }

ga_device *ggmlc__ga_device_or_default(ga_device *dev) {
    if (dev) return dev;
    if (!default_device) default_device = ga_device_get(NULL);
    return default_device;
}

size_t ga_device_bytes_in_use(const ga_device *dev) { return dev ? dev->bytes_in_use : 0; }
size_t ga_device_tensors_alive(const ga_device *dev) { return dev ? dev->tensors_alive : 0; }

enum ggmlc_status ga_synchronize(ga_device *dev) {
    if (dev) return ggmlc__ga_flush(dev);
    for (int i = 0; i < n_devices; i++) {
        enum ggmlc_status st = ggmlc__ga_flush(devices[i]);
        if (st != GGMLC_OK) return st;
    }
    return GGMLC_OK;
}

void ga_shutdown(void) {
    pthread_mutex_lock(&devices_lock);
    for (int i = 0; i < n_devices; i++) {
        ggmlc__ga_flush(devices[i]);
        device_free(devices[i]);
        devices[i] = NULL;
    }
    n_devices = 0;
    default_device = NULL;
    pthread_mutex_unlock(&devices_lock);
}

/* ------------------------------------------------------------- storage */

/* Storage is pooled: a released tensor's buffer (with its one-tensor context) waits for the
 * next tensor of the same byte size, so a training loop, which frees and makes the same sizes
 * every step, allocates nothing after its first steps.  It must also find its buffers at the
 * same addresses, which lets the scheduler reuse its plan (and the Vulkan plugin its command
 * buffer): a step makes the same storage in the same order each segment, so a buffer
 * remembers the number it had in the order of its segment's allocations, and the n-th
 * allocation of a segment takes the buffer that was the n-th before when it is free.  Without
 * that, any order of taking (last in, first out or first in, first out) handed tensors of
 * one size each other's buffers from step to step, and every step was planned anew.  The pool
 * is bounded. */
#define GA_POOL_MAX 256

/* The bytes a tensor of t's shape takes on its device: the pool's key. */
static size_t storage_key(const ga_tensor *t) {
    const int64_t *ne = t->ne;
    const size_t e = ga_dtype_size(t->dtype);
    struct ggml_tensor shape = {.type = ggmlc__ga_ggml_type(t->dtype),
                                .ne = {ne[0], ne[1], ne[2], ne[3]},
                                .nb = {e, e * ne[0], e * ne[0] * ne[1], e * ne[0] * ne[1] * ne[2]}};
    return ggml_backend_buft_get_alloc_size(ggml_backend_get_default_buffer_type(t->dev->backend),
                                            &shape);
}

/* The pooled buffer for the next allocation of key bytes: the one that had this place in the
 * order of its segment's allocations, else the one released last; -1 when none fits. */
static int pool_pick(const ga_device *d, size_t key) {
    int pick = -1;
    for (int i = 0; i < d->n_pool; i++) {
        if (d->pool[i].key != key) continue;
        if (d->pool[i].order == d->n_allocs) return i;
        pick = i;
    }
    return pick;
}

static bool pool_take(ga_tensor *t, size_t key) {
    ga_device *d = t->dev;
    const int i = pool_pick(d, key);
    if (i >= 0) {
        struct ga_storage *p = &d->pool[i];
        ggml_reset(p->ctx);
        struct ggml_tensor *st =
            ggml_new_tensor(p->ctx, ggmlc__ga_ggml_type(t->dtype), GGML_MAX_DIMS, t->ne);
        if (!st || ggml_backend_tensor_alloc(p->buf, st, ggml_backend_buffer_get_base(p->buf)) !=
                       GGML_STATUS_SUCCESS)
            return false;
        t->store_ctx = p->ctx;
        t->store_buf = p->buf;
        t->store = st;
        d->pool_bytes -= ggml_backend_buffer_get_size(p->buf);
        d->pool[i] = d->pool[--d->n_pool];
        return true;
    }
    return false;
}

bool ggmlc__ga_store_alloc(ga_tensor *t) {
    if (!pool_take(t, storage_key(t))) {
        t->store_ctx = ggml_init((struct ggml_init_params){ggml_tensor_overhead(), NULL, true});
        if (!t->store_ctx) return false;
        t->store =
            ggml_new_tensor(t->store_ctx, ggmlc__ga_ggml_type(t->dtype), GGML_MAX_DIMS, t->ne);
        t->store_buf =
            t->store ? ggml_backend_alloc_ctx_tensors(t->store_ctx, t->dev->backend) : NULL;
    }
    if (!t->store_buf) {
        if (t->store_ctx) ggml_free(t->store_ctx);
        t->store_ctx = NULL;
        t->store = NULL;
        ggmlc_set_error(GGMLC_ERR_NOMEM, "ga: out of device memory on %s", ga_device_name(t->dev));
        return false;
    }
    t->dev->bytes_in_use += ggml_backend_buffer_get_size(t->store_buf);
    t->store_order = t->dev->n_allocs++;
    return true;
}

void ggmlc__ga_store_free(ga_tensor *t) {
    ga_device *d = t->dev;
    ggmlc__ga_host_forget(t);
    if (t->store_buf) {
        const size_t bytes = ggml_backend_buffer_get_size(t->store_buf);
        d->bytes_in_use -= bytes;
        if (d->n_pool < GA_POOL_MAX && d->pool_bytes + bytes <= d->bytes_in_use + (64u << 20)) {
            d->pool[d->n_pool++] =
                (struct ga_storage){t->store_ctx, t->store_buf, storage_key(t), t->store_order};
            d->pool_bytes += bytes;
            t->store_ctx = NULL;
        } else {
            ggml_backend_buffer_free(t->store_buf);
        }
    }
    if (t->store_ctx) ggml_free(t->store_ctx);
    t->store_buf = NULL;
    t->store_ctx = NULL;
    t->store = NULL;
}

static void pool_free(ga_device *d) {
    for (int i = 0; i < d->n_pool; i++) {
        ggml_backend_buffer_free(d->pool[i].buf);
        ggml_free(d->pool[i].ctx);
    }
    d->n_pool = 0;
    d->pool_bytes = 0;
}

/* ------------------------------------------------------- pending values */

bool ggmlc__ga_pending_add(ga_tensor *t) {
    ga_device *d = t->dev;
    if (!grow((void **)&d->pending, &d->cap_pending, d->n_pending + 1, sizeof *d->pending) ||
        !grow((void **)&d->released, &d->cap_released, d->n_pending + 1, sizeof *d->released))
        return false;
    t->pending_index = d->n_pending;
    d->released[d->n_pending] = NULL;
    d->pending[d->n_pending++] = t;
    return true;
}

void ggmlc__ga_pending_remove(ga_tensor *t) {
    ga_device *d = t->dev;
    int i = t->pending_index;
    if (i < 0) return;
    /* a hole, not a swap: the flush expands values in the order they were made */
    d->pending[i] = NULL;
    d->released[i] = t->node_epoch == d->epoch ? t->node : NULL;
    t->pending_index = -1;
}

bool ggmlc__ga_pin(ga_tensor *t) {
    ga_device *d = t->dev;
    if (!grow((void **)&d->pinned, &d->cap_pinned, d->n_pinned + 1, sizeof *d->pinned))
        return false;
    d->pinned[d->n_pinned++] = ga_retain(t);
    return true;
}

bool ggmlc__ga_reserve(ga_device *dev, int n_tensors) {
    size_t room = ggml_get_mem_size(dev->seg) - ggml_used_mem(dev->seg);
    size_t need = (size_t)(n_tensors + 2 * dev->n_pending + 64) * ggml_tensor_overhead() +
                  ggml_graph_overhead_custom(dev->seg_tensors, false);
    if (room >= need) return true;
    return ggmlc__ga_flush(dev) == GGMLC_OK;
}

/* ----------------------------------------------------------------- flush */

/* The node that will hold t's result, given t's storage before the graph runs. */
static struct ggml_tensor *place_output(ga_device *d, ga_tensor *t) {
    struct ggml_tensor *out = t->dtype == GA_FLOAT32 ? t->node : t->raw; /* rounded */
    if (out->view_src || out->data) out = ggml_cont(d->seg, out); /* views get their own copy */
    if (!out || !ggmlc__ga_store_alloc(t)) return NULL;
    if (ggml_backend_tensor_alloc(t->store_buf, out, t->store->data) != GGML_STATUS_SUCCESS)
        return NULL;
    return out;
}

static void end_segment(ga_device *d) {
    for (int i = 0; i < d->n_pending; i++)
        if (d->pending[i]) d->pending[i]->pending_index = -1;
    d->n_pending = 0;
    d->n_effects = 0;
    d->n_allocs = 0;
    ga_tensor *pars = d->pars;
    d->pars = NULL;
    d->epoch++;
    ggml_reset(d->seg);
    /* releasing may free handles; they no longer touch the segment */
    int n = d->n_pinned;
    d->n_pinned = 0;
    for (int i = 0; i < n; i++) ga_release(d->pinned[i]);
    ga_release(pars);
}

bool ggmlc__ga_add_effect(ga_device *d, struct ggml_tensor *node) {
    if (!grow((void **)&d->effects, &d->cap_effects, d->n_effects + 1, sizeof *d->effects))
        return false;
    d->effects[d->n_effects++] = (struct ga_effect){node, d->n_pending};
    return true;
}

/* Every pending value and in-place update, in the order they were made: an update runs after
 * the reads of the old value recorded before it, and before the reads of the new one.  Values
 * released before an update are computed before it too (without storage): a later update may
 * read them (a layer's gradient, released by zero_grad, reads the next layer's weight, which an
 * update stepped first would have overwritten). */
static enum ggmlc_status build_graph(ga_device *d, struct ggml_cgraph *g) {
    const int last_effect = d->n_effects ? d->effects[d->n_effects - 1].order : 0;
    int e = 0;
    for (int i = 0; i <= d->n_pending; i++) {
        for (; e < d->n_effects && d->effects[e].order <= i; e++)
            ggml_build_forward_expand(g, d->effects[e].node);
        if (i == d->n_pending) continue;
        if (!d->pending[i]) {
            if (d->released[i] && i < last_effect) ggml_build_forward_expand(g, d->released[i]);
            continue;
        }
        struct ggml_tensor *out = place_output(d, d->pending[i]);
        if (!out) return GGMLC_ERR_NOMEM;
        ggml_build_forward_expand(g, out);
    }
    return GGMLC_OK;
}

static bool has_work(const ga_device *d) {
    if (d->n_effects) return true;
    for (int i = 0; i < d->n_pending; i++)
        if (d->pending[i]) return true;
    return false;
}

enum ggmlc_status ggmlc__ga_flush(ga_device *d) {
    if (!has_work(d)) {
        if (d->n_pinned || d->n_pending) end_segment(d);
        return GGMLC_OK;
    }
    struct ggml_cgraph *g = ggml_new_graph_custom(d->seg, d->seg_tensors, false);
    enum ggmlc_status st = g ? build_graph(d, g) : GGMLC_ERR_NOMEM;
    if (st == GGMLC_OK) {
        ggml_backend_sched_reset(d->sched);
        if (ggml_backend_sched_graph_compute(d->sched, g) != GGML_STATUS_SUCCESS)
            st = ggmlc_set_error(GGMLC_ERR_BACKEND, "ga: computing on %s failed: %s",
                                 ga_device_name(d), ggmlc_last_error());
    } else {
        ggmlc_set_error(st, "ga: out of memory computing on %s", ga_device_name(d));
    }
    end_segment(d);
    return st;
}
