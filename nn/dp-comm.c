/*
 * dp-comm.c - communicators of data-parallel training: the generic member object, the
 * in-process transport of a group of threads (optionally on top of another communicator), and
 * the all-reduce of gradient lists that the model API and eager loops share.
 *
 * The thread group's all-reduce: every member posts its buffer, then member k sums slice k of
 * all buffers in rank order (the same order for every slice, so every member gets the same bits)
 * into the group's scratch, member 0 reduces the scratch over the outer communicator if any,
 * and every member copies the result back.  Barriers wait with a deadline and wake at once when
 * a member aborts, so no failure leaves the others waiting.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml-backend.h"
#include "ggmlc-dp.h"
#include "ggmlc-internal.h"

#define DEFAULT_TIMEOUT_S    120.0
#define DEFAULT_BUCKET_BYTES ((size_t)4 << 20)

struct ggmlc_comm {
    const struct ggmlc_comm_ops *ops;
    void *impl;
    int rank, size;
    double timeout_s;
};

static double default_timeout(void) {
    const char *env = getenv("GGMLC_DP_TIMEOUT");
    const double v = env ? strtod(env, NULL) : 0;
    return v > 0 ? v : DEFAULT_TIMEOUT_S;
}

ggmlc_comm *ggmlc_comm_new(const struct ggmlc_comm_ops *ops, void *impl, int rank, int size) {
    if (!ops || !ops->allreduce || size <= 0 || rank < 0 || rank >= size) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                        "ggmlc_comm_new: no transport, or rank %d not in [0, %d)", rank, size);
        return NULL;
    }
    ggmlc_comm *c = calloc(1, sizeof *c);
    if (!c) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "ggmlc_comm_new: out of memory");
        return NULL;
    }
    *c = (ggmlc_comm){ops, impl, rank, size, default_timeout()};
    return c;
}

int ggmlc_comm_rank(const ggmlc_comm *c) { return c ? c->rank : 0; }
int ggmlc_comm_size(const ggmlc_comm *c) { return c ? c->size : 1; }
double ggmlc_comm_timeout(const ggmlc_comm *c) { return c ? c->timeout_s : DEFAULT_TIMEOUT_S; }

void ggmlc_comm_set_timeout(ggmlc_comm *c, double seconds) {
    if (c && seconds > 0) c->timeout_s = seconds;
}

enum ggmlc_status ggmlc_comm_allreduce(ggmlc_comm *c, float *data, size_t n,
                                       enum ggmlc_reduce_op op) {
    if (!c || (!data && n > 0))
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                               "ggmlc_comm_allreduce: NULL communicator or data");
    if (op != GGMLC_REDUCE_SUM && op != GGMLC_REDUCE_MAX)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_comm_allreduce: unknown operation %d",
                               (int)op);
    return c->ops->allreduce(c->impl, data, n, op, c->timeout_s);
}

void ggmlc_comm_abort(ggmlc_comm *c, const char *why) {
    if (c && c->ops->abort) c->ops->abort(c->impl, why ? why : "a replica gave up");
}

void ggmlc_comm_free(ggmlc_comm *c) {
    if (!c) return;
    if (c->ops->free) c->ops->free(c->impl);
    free(c);
}

bool ggmlc_comm_mpi_launched(void) {
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK",
                                       "MPI_LOCALNRANKS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i])) return true;
    return false;
}

/* ------------------------------------------------------- thread groups */

struct thread_group {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int n, refs;
    ggmlc_comm *outer;
    /* barrier */
    int arrived;
    unsigned long generation;
    /* the collective in progress */
    float **bufs;
    size_t count;
    float *scratch;
    size_t scratch_cap;
    enum ggmlc_status outer_status;
    char outer_error[512];
    bool aborted;
    char why[512];
};

struct thread_member {
    struct thread_group *group;
    int index;
};

static void deadline_after(double seconds, struct timespec *ts) {
    clock_gettime(CLOCK_REALTIME, ts);
    const double whole = floor(seconds);
    ts->tv_sec += (time_t)whole;
    ts->tv_nsec += (long)((seconds - whole) * 1e9);
    if (ts->tv_nsec >= 1000000000L) ts->tv_sec++, ts->tv_nsec -= 1000000000L;
}

/* Wait until all n members arrive (lock held); false on abort or timeout, with the error set. */
static bool group_barrier(struct thread_group *g, double timeout_s) {
    if (g->aborted) goto aborted;
    const unsigned long gen = g->generation;
    if (++g->arrived == g->n) {
        g->arrived = 0;
        g->generation++;
        pthread_cond_broadcast(&g->cond);
        return true;
    }
    struct timespec deadline;
    deadline_after(timeout_s, &deadline);
    while (g->generation == gen && !g->aborted) {
        if (pthread_cond_timedwait(&g->cond, &g->lock, &deadline) == ETIMEDOUT &&
            g->generation == gen) {
            snprintf(g->why, sizeof g->why, "a replica did not reach the all-reduce within %.1f s",
                     timeout_s);
            g->aborted = true;
            pthread_cond_broadcast(&g->cond);
        }
    }
    if (!g->aborted) return true;
aborted:
    ggmlc_set_error(GGMLC_ERR_BACKEND, "data-parallel group stopped: %s", g->why);
    return false;
}

static void reduce_slice(struct thread_group *g, size_t lo, size_t hi, enum ggmlc_reduce_op op) {
    for (size_t i = lo; i < hi; i++) {
        float acc = g->bufs[0][i];
        for (int r = 1; r < g->n; r++) {
            const float v = g->bufs[r][i];
            acc = op == GGMLC_REDUCE_SUM ? acc + v : (v > acc ? v : acc);
        }
        g->scratch[i] = acc;
    }
}

static bool grow_scratch(struct thread_group *g, size_t n) {
    if (n <= g->scratch_cap) return true;
    float *s = realloc(g->scratch, n * sizeof *s);
    if (!s) return false;
    g->scratch = s;
    g->scratch_cap = n;
    return true;
}

/* Member 0's part between the barriers: room for the sums, and the outer reduction. */
static void leader_outer(struct thread_group *g, enum ggmlc_reduce_op op) {
    g->outer_status = GGMLC_OK;
    if (!g->outer) return;
    pthread_mutex_unlock(&g->lock);
    const enum ggmlc_status st = ggmlc_comm_allreduce(g->outer, g->scratch, g->count, op);
    pthread_mutex_lock(&g->lock);
    if (st != GGMLC_OK) {
        g->outer_status = st;
        snprintf(g->outer_error, sizeof g->outer_error, "%s", ggmlc_last_error());
    }
}

static enum ggmlc_status threads_allreduce(void *impl, float *data, size_t n,
                                           enum ggmlc_reduce_op op, double timeout_s) {
    struct thread_member *me = impl;
    struct thread_group *g = me->group;
    enum ggmlc_status st = GGMLC_OK;
    pthread_mutex_lock(&g->lock);
    g->bufs[me->index] = data;
    if (me->index == 0) g->count = n;
    if (!group_barrier(g, timeout_s)) goto failed;
    if (g->count != n || (me->index == 0 && !grow_scratch(g, n))) {
        snprintf(g->why, sizeof g->why,
                 "replicas disagree on the all-reduce (%zu and %zu floats) or out of memory",
                 g->count, n);
        g->aborted = true;
        pthread_cond_broadcast(&g->cond);
    }
    if (!group_barrier(g, timeout_s)) goto failed;
    const size_t per = (n + (size_t)g->n - 1) / (size_t)g->n;
    const size_t lo = per * (size_t)me->index < n ? per * (size_t)me->index : n,
                 hi = lo + per < n ? lo + per : n;
    pthread_mutex_unlock(&g->lock); /* the slices are disjoint */
    reduce_slice(g, lo, hi, op);
    pthread_mutex_lock(&g->lock);
    if (!group_barrier(g, timeout_s)) goto failed;
    if (me->index == 0) leader_outer(g, op);
    if (!group_barrier(g, timeout_s)) goto failed;
    if (g->outer_status != GGMLC_OK) {
        st = ggmlc_set_error(g->outer_status, "%s", g->outer_error);
    } else {
        memcpy(data, g->scratch, n * sizeof *data);
    }
    if (!group_barrier(g, timeout_s)) goto failed; /* the scratch stays until all have copied it */
    pthread_mutex_unlock(&g->lock);
    return st;
failed:
    pthread_mutex_unlock(&g->lock);
    return GGMLC_ERR_BACKEND;
}

static void threads_abort(void *impl, const char *why) {
    struct thread_member *me = impl;
    struct thread_group *g = me->group;
    pthread_mutex_lock(&g->lock);
    if (!g->aborted) snprintf(g->why, sizeof g->why, "replica %d: %s", me->index, why);
    g->aborted = true;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
    if (g->outer) ggmlc_comm_abort(g->outer, why);
}

static void group_free(struct thread_group *g) {
    pthread_mutex_destroy(&g->lock);
    pthread_cond_destroy(&g->cond);
    free(g->bufs);
    free(g->scratch);
    free(g);
}

/* A member; the last one frees the group. */
static void threads_free(void *impl) {
    struct thread_member *me = impl;
    struct thread_group *g = me->group;
    pthread_mutex_lock(&g->lock);
    const bool last = --g->refs == 0;
    pthread_mutex_unlock(&g->lock);
    free(me);
    if (last) group_free(g);
}

static const struct ggmlc_comm_ops thread_ops = {"threads", threads_allreduce, threads_abort,
                                                 threads_free};

static struct thread_group *group_new(int n, ggmlc_comm *outer) {
    struct thread_group *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->bufs = calloc((size_t)n, sizeof *g->bufs);
    if (!g->bufs) {
        free(g);
        return NULL;
    }
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->cond, NULL);
    g->n = n;
    g->outer = outer;
    return g;
}

enum ggmlc_status ggmlc_comm_threads(int n, ggmlc_comm *outer, ggmlc_comm **members) {
    if (n <= 0 || !members)
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_comm_threads: %d members", n);
    struct thread_group *g = group_new(n, outer);
    if (!g) return ggmlc_set_error(GGMLC_ERR_NOMEM, "ggmlc_comm_threads: out of memory");
    const int base = outer ? ggmlc_comm_rank(outer) * n : 0,
              total = outer ? ggmlc_comm_size(outer) * n : n;
    for (int i = 0; i < n; i++) {
        struct thread_member *me = calloc(1, sizeof *me);
        members[i] = me ? ggmlc_comm_new(&thread_ops, me, base + i, total) : NULL;
        if (!members[i]) {
            free(me);
            for (int k = 0; k < i; k++) ggmlc_comm_free(members[k]); /* the last frees g */
            if (i == 0) group_free(g);
            return ggmlc_set_error(GGMLC_ERR_NOMEM, "ggmlc_comm_threads: out of memory");
        }
        *me = (struct thread_member){g, i};
        g->refs++;
        if (outer) ggmlc_comm_set_timeout(members[i], ggmlc_comm_timeout(outer));
    }
    return GGMLC_OK;
}

/* --------------------------------------------------------- gradients */

static size_t bucket_floats(size_t bucket_bytes) {
    const size_t b = (bucket_bytes ? bucket_bytes : DEFAULT_BUCKET_BYTES) / sizeof(float);
    return b > 0 ? b : 1;
}

/* Reduce the packed floats [0, used) of bucket and scatter them back: the pieces were copied
 * in from (get) and go back to (put) the caller's storage. */
struct packer {
    ggmlc_comm *comm;
    float *bucket;
    size_t cap, used;
    float scale;
};

enum ggmlc_status ggmlc_dp_allreduce_floats(ggmlc_comm *comm, float *const *bufs,
                                            const size_t *lens, int n, float scale) {
    if (!comm || n < 0 || (n > 0 && (!bufs || !lens)))
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_dp_allreduce_floats: NULL argument");
    for (int i = 0; i < n; i++) {
        for (size_t k = 0; k < lens[i]; k++) bufs[i][k] *= scale;
        const enum ggmlc_status st = ggmlc_comm_allreduce(comm, bufs[i], lens[i], GGMLC_REDUCE_SUM);
        if (st != GGMLC_OK) return st;
    }
    return GGMLC_OK;
}

static enum ggmlc_status flush_tensors(struct packer *p, struct ggml_tensor *const *t, int first,
                                       int last) {
    const enum ggmlc_status st =
        ggmlc_comm_allreduce(p->comm, p->bucket, p->used, GGMLC_REDUCE_SUM);
    size_t off = 0;
    for (int i = first; st == GGMLC_OK && i < last; i++) {
        ggml_backend_tensor_set(t[i], p->bucket + off, 0, ggml_nbytes(t[i]));
        off += (size_t)ggml_nelements(t[i]);
    }
    p->used = 0;
    return st;
}

static enum ggmlc_status check_tensors(struct ggml_tensor *const *t, int n) {
    for (int i = 0; i < n; i++) {
        if (!t[i] || t[i]->type != GGML_TYPE_F32 || !t[i]->buffer || !ggml_is_contiguous(t[i]))
            return ggmlc_set_error(GGMLC_ERR_INVALID_ARG,
                                   "ggmlc_dp_allreduce_tensors: tensor %d is not an allocated, "
                                   "contiguous float32 tensor",
                                   i);
    }
    return GGMLC_OK;
}

/* A tensor larger than a bucket goes alone in a bucket of its size. */
enum ggmlc_status ggmlc_dp_allreduce_tensors(ggmlc_comm *comm, struct ggml_tensor *const *t, int n,
                                             float scale, size_t bucket_bytes) {
    if (!comm || n < 0 || (n > 0 && !t))
        return ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggmlc_dp_allreduce_tensors: NULL argument");
    enum ggmlc_status st = check_tensors(t, n);
    size_t largest = bucket_floats(bucket_bytes);
    for (int i = 0; i < n && st == GGMLC_OK; i++)
        largest = (size_t)ggml_nelements(t[i]) > largest ? (size_t)ggml_nelements(t[i]) : largest;
    struct packer p = {comm, st == GGMLC_OK ? malloc(largest * sizeof(float)) : NULL,
                       bucket_floats(bucket_bytes), 0, scale};
    if (st == GGMLC_OK && !p.bucket)
        st = ggmlc_set_error(GGMLC_ERR_NOMEM, "ggmlc_dp_allreduce_tensors: out of memory");
    int first = 0;
    for (int i = 0; i < n && st == GGMLC_OK; i++) {
        const size_t k = (size_t)ggml_nelements(t[i]);
        if (p.used > 0 && p.used + k > p.cap) {
            st = flush_tensors(&p, t, first, i);
            first = i;
        }
        if (st != GGMLC_OK) break;
        ggml_backend_tensor_get(t[i], p.bucket + p.used, 0, ggml_nbytes(t[i]));
        for (size_t e = 0; e < k; e++) p.bucket[p.used + e] *= scale;
        p.used += k;
    }
    if (st == GGMLC_OK && p.used > 0) st = flush_tensors(&p, t, first, n);
    free(p.bucket);
    return st;
}
