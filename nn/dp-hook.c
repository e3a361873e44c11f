/*
 * dp-hook.c - the gradient all-reduce of a data-parallel training step, hooked into the
 * scheduler's evaluation callback of a replica's model.
 *
 * A training step's graph computes the forward pass, the backward pass and then (appended
 * after every gradient) the optimizer updates.  The hook asks the scheduler to stop after each
 * parameter gradient: the gradient is copied out, scaled by the replica's share of the batch,
 * into its bucket; a bucket whose gradients are all there is handed to a worker thread that
 * all-reduces it while the backward pass goes on.  After the last gradient the hook waits for
 * the worker, writes the summed gradients back, and the scheduler runs the updates on them.
 *
 * Buckets are laid out in reverse parameter order (the order backward produces gradients) and
 * reduced strictly in that order on every replica, so that the collective calls pair up even
 * when two devices' schedules visit the gradients in different orders.
 */
#include <pthread.h>
#include <stdlib.h>

#include "ggmlc-dp.h"
#include "nn-dp.h"

#define MAX_GRADS (NN_MAX_NODES * NN_MAX_PARAMS)

struct dp_hook {
    ggmlc_model *m;
    ggmlc_comm *comm;
    size_t bucket_floats;
    float scale;
    /* the indexed graph and its gradients in reverse parameter order */
    const struct nn_graph *graph;
    struct ggml_tensor **grads;
    size_t *offset;
    int *bucket_of;
    int n_grads, arrived;
    size_t *bucket_start; /* n_buckets + 1 entries */
    int *pending;         /* gradients each bucket still waits for */
    int n_buckets;
    float *packed;
    bool step_started;
    /* the worker */
    pthread_t worker;
    bool worker_running, quit, armed;
    int next; /* the next bucket to reduce */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    enum ggmlc_status status;
    char error[512];
    double reduce_us; /* the worker's time in all-reduce calls */
    double hook_us;   /* the step's time in the hook: copies, scaling, the final wait */
};

static void hook_fail(struct dp_hook *h, enum ggmlc_status st, const char *msg) {
    if (h->status != GGMLC_OK) return;
    h->status = st;
    snprintf(h->error, sizeof h->error, "%s", msg);
}

static void *worker_main(void *arg) {
    struct dp_hook *h = arg;
    pthread_mutex_lock(&h->lock);
    for (;;) {
        while (!h->quit && !(h->armed && h->next < h->n_buckets && h->pending[h->next] == 0))
            pthread_cond_wait(&h->cond, &h->lock);
        if (h->quit) break;
        const int k = h->next;
        pthread_mutex_unlock(&h->lock);
        const int64_t t0 = ggml_time_us();
        const enum ggmlc_status st =
            ggmlc_comm_allreduce(h->comm, h->packed + h->bucket_start[k],
                                 h->bucket_start[k + 1] - h->bucket_start[k], GGMLC_REDUCE_SUM);
        const int64_t t1 = ggml_time_us();
        pthread_mutex_lock(&h->lock);
        h->reduce_us += (double)(t1 - t0);
        if (st != GGMLC_OK) {
            hook_fail(h, st, ggmlc_last_error());
            h->next = h->n_buckets; /* nothing more goes out: the step fails */
        } else {
            h->next++;
        }
        pthread_cond_broadcast(&h->cond);
    }
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

static void free_index(struct dp_hook *h) {
    free(h->grads), free(h->offset), free(h->bucket_of), free(h->bucket_start), free(h->pending),
        free(h->packed);
    h->grads = NULL, h->offset = NULL, h->bucket_of = NULL, h->bucket_start = NULL,
    h->pending = NULL, h->packed = NULL;
    h->n_grads = h->n_buckets = 0;
    h->graph = NULL;
}

/* Gradients of g in reverse parameter order, cut into buckets of about bucket_floats. */
static bool build_index(struct dp_hook *h, const struct nn_graph *g) {
    struct ggml_tensor *all[MAX_GRADS];
    int n = 0;
    for (int i = h->m->n_layers - 1; i >= 0; i--) {
        const ggmlc_layer *l = h->m->layers[i];
        for (int j = l->n_params - 1; j >= 0 && n < MAX_GRADS; j--) {
            struct ggml_tensor *grad = ggml_graph_get_grad(g->gb, l->params[j].t);
            if (grad) all[n++] = grad;
        }
    }
    h->grads = malloc(sizeof *h->grads * (size_t)(n + 1));
    h->offset = malloc(sizeof *h->offset * (size_t)(n + 1));
    h->bucket_of = malloc(sizeof *h->bucket_of * (size_t)(n + 1));
    h->bucket_start = malloc(sizeof *h->bucket_start * (size_t)(n + 2));
    h->pending = malloc(sizeof *h->pending * (size_t)(n + 1));
    if (!h->grads || !h->offset || !h->bucket_of || !h->bucket_start || !h->pending) return false;
    size_t total = 0;
    int b = -1;
    for (int i = 0; i < n; i++) {
        const size_t k = (size_t)ggml_nelements(all[i]);
        if (b < 0 || total - h->bucket_start[b] + k > h->bucket_floats)
            h->bucket_start[++b] = total;
        h->grads[i] = all[i];
        h->offset[i] = total;
        h->bucket_of[i] = b;
        total += k;
    }
    h->n_grads = n;
    h->n_buckets = b + 1;
    h->bucket_start[h->n_buckets] = total;
    h->packed = malloc(sizeof(float) * (total ? total : 1));
    return h->packed != NULL;
}

/* The index of g, built anew; on failure none is left, so the next step tries again instead of
 * taking a half-built index (a NULL packed buffer) for g's. */
static bool index_graph(struct dp_hook *h, const struct nn_graph *g) {
    free_index(h);
    if (!build_index(h, g)) {
        free_index(h);
        return false;
    }
    h->graph = g;
    return true;
}

static void arm(struct dp_hook *h) {
    pthread_mutex_lock(&h->lock);
    for (int b = 0; b < h->n_buckets; b++) h->pending[b] = 0;
    for (int i = 0; i < h->n_grads; i++) h->pending[h->bucket_of[i]]++;
    h->next = 0;
    h->arrived = 0;
    h->armed = true;
    pthread_mutex_unlock(&h->lock);
}

static int grad_index(const struct dp_hook *h, const struct ggml_tensor *t) {
    for (int i = 0; i < h->n_grads; i++)
        if (h->grads[i] == t) return i;
    return -1;
}

/* After the last gradient: wait for every bucket, then the sums go back into the gradients. */
static bool finish(struct dp_hook *h) {
    pthread_mutex_lock(&h->lock);
    while (h->next < h->n_buckets) pthread_cond_wait(&h->cond, &h->lock);
    h->armed = false;
    const bool ok = h->status == GGMLC_OK;
    pthread_mutex_unlock(&h->lock);
    for (int i = 0; ok && i < h->n_grads; i++)
        ggml_backend_tensor_set(h->grads[i], h->packed + h->offset[i], 0, ggml_nbytes(h->grads[i]));
    return ok;
}

static bool take_gradient(struct dp_hook *h, int i) {
    struct ggml_tensor *t = h->grads[i];
    float *dst = h->packed + h->offset[i];
    ggml_backend_tensor_get(t, dst, 0, ggml_nbytes(t));
    for (int64_t e = 0; e < ggml_nelements(t); e++) dst[e] *= h->scale;
    pthread_mutex_lock(&h->lock);
    h->pending[h->bucket_of[i]]--;
    const bool last = ++h->arrived == h->n_grads;
    pthread_cond_broadcast(&h->cond);
    pthread_mutex_unlock(&h->lock);
    return last ? finish(h) : true;
}

/* The scheduler's callback: ask (is t a gradient?) then, once t is computed, take it. */
static bool hook_eval(struct ggml_tensor *t, bool ask, void *user) {
    struct dp_hook *h = user;
    const struct nn_graph *g = h->m->allocated;
    if (!g || !g->training) return ask ? false : true;
    if (!h->step_started) {
        h->step_started = true;
        pthread_mutex_lock(&h->lock); /* the worker reads the layout while it waits */
        const bool ok = g == h->graph || index_graph(h, g);
        if (!ok) hook_fail(h, GGMLC_ERR_NOMEM, "out of memory for the gradient buckets");
        pthread_mutex_unlock(&h->lock);
        if (!ok) return false;
        arm(h);
    }
    const int i = grad_index(h, t);
    if (ask) return i >= 0;
    if (i < 0) return true;
    const int64_t t0 = ggml_time_us();
    const bool ok = take_gradient(h, i);
    h->hook_us += (double)(ggml_time_us() - t0);
    return ok;
}

struct dp_hook *ggmlc__dp_hook_new(ggmlc_model *m, ggmlc_comm *comm, size_t bucket_bytes) {
    struct dp_hook *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    h->m = m;
    h->comm = comm;
    h->bucket_floats = (bucket_bytes ? bucket_bytes : (size_t)4 << 20) / sizeof(float);
    if (h->bucket_floats == 0) h->bucket_floats = 1;
    pthread_mutex_init(&h->lock, NULL);
    pthread_cond_init(&h->cond, NULL);
    if (pthread_create(&h->worker, NULL, worker_main, h) != 0) {
        ggmlc__dp_hook_free(h);
        return NULL;
    }
    h->worker_running = true;
    return h;
}

void ggmlc__dp_hook_free(struct dp_hook *h) {
    if (!h) return;
    if (h->worker_running) {
        pthread_mutex_lock(&h->lock);
        h->quit = true;
        pthread_cond_broadcast(&h->cond);
        pthread_mutex_unlock(&h->lock);
        pthread_join(h->worker, NULL);
    }
    pthread_mutex_destroy(&h->lock);
    pthread_cond_destroy(&h->cond);
    free_index(h);
    free(h);
}

enum ggmlc_status ggmlc__dp_hook_step(struct dp_hook *h, const struct nn_data *d, int64_t count,
                                      const int64_t *order, float scale, const float *class_weights,
                                      struct pass_stats *st) {
    h->scale = scale;
    h->step_started = false;
    pthread_mutex_lock(&h->lock);
    h->status = GGMLC_OK;
    pthread_mutex_unlock(&h->lock);
    ggml_backend_sched_set_eval_callback(h->m->sched, hook_eval, h);
    struct nn_data sub = *d;
    sub.n = count;
    enum ggmlc_status status =
        ggmlc__nn_run_pass(h->m, &sub, count, order, true, class_weights, st, NULL, NULL, 0, NULL);
    ggml_backend_sched_set_eval_callback(h->m->sched, NULL, NULL);
    pthread_mutex_lock(&h->lock); /* the worker may have failed the step */
    const enum ggmlc_status failed = h->status;
    pthread_mutex_unlock(&h->lock);
    if (failed != GGMLC_OK) return ggmlc_set_error(failed, "%s", h->error);
    if (status == GGMLC_OK && (!h->step_started || h->arrived != h->n_grads || h->armed))
        status = ggmlc_set_error(GGMLC_ERR_INTERNAL, "a data-parallel step saw %d of %d gradients",
                                 h->arrived, h->n_grads);
    return status;
}

void ggmlc__dp_hook_times(struct dp_hook *h, double *reduce_us, double *hook_us) {
    pthread_mutex_lock(&h->lock);
    *reduce_us = h->reduce_us;
    pthread_mutex_unlock(&h->lock);
    *hook_us = h->hook_us;
}
