/*
 * graph.c - the CPU backend's graph walker.
 *
 * Every thread of the job walks the same node list.  Node i is split into
 * n_tasks(i) tasks and starts once node i - 1 is complete.  A node of one task
 * runs on the thread that completed the node before it (the owner; at first
 * the caller), straight after it, with no other thread taking part: a decode
 * step's chains of small nodes (additions, norms, activations) run on one
 * thread that is running already, its inputs warm in its cache, where each
 * such node used to wake all threads and have them race for its one task
 * (with 16 threads on the H100 host, 230 small nodes of 2-11 us a token).
 * The owner publishes the count of complete nodes (a cpu_counter) only where
 * the other threads need it: before a node of several tasks, which they wait
 * for.  Whichever thread completes that node owns the walk after it.  The
 * tasks of a node whose tasks never meet (the op's tasks_free: a decode step's
 * products and attention) go to whichever threads come first, one thread
 * taking several when another is late (its core taken by another process);
 * those of other nodes may meet at the node's barrier: task t runs on thread t.
 */
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "profile.h"
#include "threadpool.h"

/* The reason a node failed, from the task with the lowest ith that gave one (cpu_task_error). */
struct task_error {
    pthread_mutex_t lock;
    int task; /* INT_MAX: none yet */
    enum ggmlc_status status;
    char message[400];
};

/* A node of a job. */
struct node_state {
    int n_tasks;           /* 0: a view or empty, nothing to compute */
    bool shared;           /* several tasks, going to whichever threads come first */
    atomic_int next_task;  /* shared: the tasks claimed */
    atomic_int tasks_done;
    atomic_llong chunks;   /* the chunks its tasks claimed (cpu_claim_chunk) */
};

struct graph_job {
    struct ggml_tensor **nodes;
    int n_nodes;
    const struct cpu_op_table *table;
    const struct cpu_compute_params *params;
    struct node_state *state;        /* per node */
    struct cpu_counter complete;     /* the computed nodes complete, in order */
    struct cpu_barrier task_barrier; /* inside a node: the node's tasks (ggmlc_op_call.barrier) */
    atomic_bool stop;                /* aborted or failed: skip the remaining kernels */
    atomic_int status;
    atomic_int failed_node;          /* the node whose kernel failed (-1: none) */
    struct task_error error;
    bool profile; /* GGMLC_DEBUG=cpu-ops: the owner times the nodes */
    double mark;  /* profile: when the last node completed (the start at first) */
};

/* What a node's tasks get as ggmlc_op_call.impl. */
struct node_run {
    struct graph_job *job;
    int node;
};

/* The job a thread is running tasks of: where cpu_task_error leaves its message, so that it is
 * logged and set once, on the caller's thread (last errors are per thread). */
static _Thread_local struct graph_job *current_job
    /* static TLS: a dlopened plugin's dynamic TLS in worker threads makes the LeakSanitizer of
     * gcc 12 with glibc 2.36 read a garbage DTLS range and crash at exit (test-ggml-compat) */
    __attribute__((tls_model("initial-exec")));

void cpu_task_error(const struct ggmlc_op_call *call, enum ggmlc_status status, const char *fmt, ...) {
    char message[sizeof current_job->error.message];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    struct graph_job *job = current_job;
    if (!job) {
        ggmlc_set_error(status, "%s", message);
        return;
    }
    pthread_mutex_lock(&job->error.lock);
    if (call->ith < job->error.task) {
        job->error.task = call->ith;
        job->error.status = status;
        memcpy(job->error.message, message, sizeof message);
    }
    pthread_mutex_unlock(&job->error.lock);
}

/* Nodes that read and write fewer elements than this in all run as one task: a decode step's
 * additions, norms and activations of one 768-wide row take well under a microsecond, less
 * than the barrier that splitting them costs, and consecutive one-task nodes need none. */
#define CPU_SERIAL_ELEMENTS 16384

static bool node_is_small(const struct ggml_tensor *node) {
    /* Row copies touch the rows they copy, not the whole table: set_rows its source rows (src[0];
     * src[1]: their indices), not its destination (src[2]; a decode step writes one row of an
     * n_ctx-row cache); get_rows its result, not the table it reads from (src[0]: a vocabulary). */
    if (node->op == GGML_OP_SET_ROWS) return ggml_nelements(node->src[0]) + ggml_nelements(node->src[1]) < CPU_SERIAL_ELEMENTS;
    if (node->op == GGML_OP_GET_ROWS) return ggml_nelements(node) + ggml_nelements(node->src[1]) < CPU_SERIAL_ELEMENTS;
    int64_t total = ggml_nelements(node);
    for (int i = 0; i < GGML_MAX_SRC && node->src[i]; i++) total += ggml_nelements(node->src[i]);
    return total < CPU_SERIAL_ELEMENTS;
}

int cpu_node_n_tasks(const struct ggml_tensor *node, int n_threads) {
    if (ggmlc_op_is_view(node->op) || ggml_is_empty(node)) return 1;
    const struct cpu_op_table *t = cpu_op_table();
    if (!t->n_tasks[node->op] && node_is_small(node)) return 1;
    int n = t->n_tasks[node->op] ? t->n_tasks[node->op](node, n_threads) : n_threads;
    return n < 1 ? 1 : n > n_threads ? n_threads : n;
}

/* Scratch bytes node needs when split into n_tasks tasks. */
static size_t node_work_size(const struct cpu_op_table *t, const struct ggml_tensor *node,
                             int n_tasks) {
    const bool none = ggmlc_op_is_view(node->op) || (unsigned)node->op >= GGML_OP_COUNT;
    if (none || !t->work_size[node->op]) return 0;
    return t->work_size[node->op](node, n_tasks);
}

size_t cpu_graph_work_size(struct ggml_cgraph *graph, int n_threads) {
    const struct cpu_op_table *t = cpu_op_table();
    struct ggml_tensor **nodes = ggml_graph_nodes(graph);
    size_t size = 0;
    for (int i = 0; i < ggml_graph_n_nodes(graph); i++) {
        const size_t s = node_work_size(t, nodes[i], cpu_node_n_tasks(nodes[i], n_threads));
        if (s > size) size = s;
    }
    return size;
}

static void task_barrier(const struct ggmlc_op_call *call) {
    const struct node_run *run = call->impl;
    cpu_barrier_wait(&run->job->task_barrier, call->nth);
}

int64_t cpu_claim_chunk(const struct ggmlc_op_call *call, int64_t n_chunks, int64_t *last) {
    const struct node_run *run = call->barrier == task_barrier ? call->impl : NULL;
    if (run && call->nth > 1)
        *last = atomic_fetch_add_explicit(&run->job->state[run->node].chunks, 1, memory_order_relaxed);
    else
        *last = *last < 0 ? call->ith : *last + call->nth;
    return *last < n_chunks ? *last : n_chunks;
}

static void run_node(struct graph_job *job, struct ggml_tensor *node, int i, int ith, int n_tasks) {
    const struct cpu_compute_params *p = job->params;
    struct node_run run = {job, i};
    const struct ggmlc_op_call call = {ith, n_tasks, p->wdata, p->wsize, p->backend_ctx, task_barrier, &run};
    const enum ggml_status st = job->table->compute[node->op](&call, node);
    if (st != GGML_STATUS_SUCCESS) {
        atomic_store(&job->failed_node, i);
        atomic_store(&job->status, st);
        atomic_store(&job->stop, true);
    }
}

/* Profile (GGMLC_DEBUG=cpu-ops): node i took from the end of the node before it (job->mark) until
 * now.  Only the walk's owner, or the thread that completes a node, calls this: the owner's writes of
 * mark reach the next one through the counter and the node's tasks_done. */
static void profile_node(struct graph_job *job, const struct ggml_tensor *node) {
    const double now = cpu_profile_now();
    cpu_profile_add(node, now - job->mark);
    job->mark = now;
}

/* Task t of node i; true when it completed the node (its fetch_add orders the other tasks' results
 * before this thread's next steps). */
static bool run_task(struct graph_job *job, int i, int t) {
    struct node_state *ns = &job->state[i];
    if (!atomic_load_explicit(&job->stop, memory_order_relaxed)) run_node(job, job->nodes[i], i, t, ns->n_tasks);
    return atomic_fetch_add(&ns->tasks_done, 1) + 1 == ns->n_tasks;
}

/* This thread's tasks of node i (several tasks); true when it completed the node. */
static bool run_tasks(struct graph_job *job, int i, int ith) {
    struct node_state *ns = &job->state[i];
    bool completed = false;
    if (ns->shared) {
        for (int t; (t = atomic_fetch_add_explicit(&ns->next_task, 1, memory_order_relaxed)) <
                    ns->n_tasks;)
            completed |= run_task(job, i, t);
    } else if (ith < ns->n_tasks) {
        completed = run_task(job, i, ith);
    }
    return completed;
}

/* The caller's thread asks the abort callback after each node it passes (as ggml's CPU backend does,
 * only there). */
static void poll_abort(struct graph_job *job, int ith) {
    const struct cpu_compute_params *p = job->params;
    if (ith != 0 || !p->abort_callback || atomic_load_explicit(&job->stop, memory_order_relaxed))
        return;
    if (p->abort_callback(p->abort_callback_data)) {
        atomic_store(&job->status, GGML_STATUS_ABORTED);
        atomic_store(&job->stop, true);
    }
}

static void graph_thread(void *arg, int ith, int nth) {
    struct graph_job *job = arg;
    struct graph_job *outer_job = current_job;
    current_job = job;
    unsigned ordinal = 0; /* computed nodes up to this one */
    /* owner: this thread completed the computed node before (at first the caller) */
    bool owner = ith == 0;
    for (int i = 0; i < job->n_nodes; i++) {
        struct node_state *ns = &job->state[i];
        if (ns->n_tasks == 0) continue;
        if (job->profile && owner && ordinal == 0) profile_node(job, NULL);
        ordinal++;
        if (ns->n_tasks == 1) {
            if (owner) {
                if (!atomic_load_explicit(&job->stop, memory_order_relaxed))
                    run_node(job, job->nodes[i], i, 0, 1);
                if (job->profile) profile_node(job, job->nodes[i]);
            }
        } else {
            /* The caller owns the walk's start only until the first node of several tasks: when
             * no single-task node comes before it, the others need nothing from the caller and
             * may be far ahead by the time it arrives (the counter never goes back, though). */
            if (owner && ordinal > 1)
                cpu_counter_raise(&job->complete, ordinal - 1);
            else if (!owner)
                cpu_counter_wait(&job->complete, ordinal - 1, nth);
            owner = run_tasks(job, i, ith);
            if (owner && job->profile) profile_node(job, job->nodes[i]);
        }
        poll_abort(job, ith);
    }
    current_job = outer_job;
}

/* A computed node and its operands need memory (an unallocated input would crash a kernel). */
static bool has_data(const struct ggml_tensor *node, int i) {
    const struct ggml_tensor *missing = !ggml_is_empty(node) && !node->data ? node : NULL;
    for (int s = 0; s < GGML_MAX_SRC && !missing; s++)
        if (node->src[s] && !ggml_is_empty(node->src[s]) && !node->src[s]->data) missing = node->src[s];
    if (!missing) return true;
    ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "CPU backend: node %d '%s' (%s): tensor '%s' has no data", i, node->name,
                    ggml_op_desc(node), missing->name);
    return false;
}

/* Refuse the graph before any thread starts when a node cannot be computed; state gets each
 * node's tasks with nth threads and *max_tasks the most of them.  One pass over the nodes
 * (support, memory, tasks and scratch): it runs for every graph computed. */
static bool check_graph(struct ggml_tensor **nodes, int n_nodes, int nth, struct node_state *state, int *max_tasks,
                        size_t work_given) {
    const struct cpu_op_table *t = cpu_op_table();
    size_t work_needed = 0;
    *max_tasks = 1;
    for (int i = 0; i < n_nodes; i++) {
        if (!cpu_supports_node(nodes[i])) {
            ggmlc_set_error(GGMLC_ERR_UNSUPPORTED, "CPU backend: node %d '%s' (%s, %s) is not supported", i, nodes[i]->name,
                            ggml_op_desc(nodes[i]), ggml_type_name(nodes[i]->type));
            return false;
        }
        if (!ggmlc_op_is_view(nodes[i]->op) && !has_data(nodes[i], i)) return false;
        const int n_tasks = cpu_node_n_tasks(nodes[i], nth);
        const bool computed = !ggmlc_op_is_view(nodes[i]->op) && !ggml_is_empty(nodes[i]);
        state[i].n_tasks = computed ? n_tasks : 0;
        state[i].shared = t->tasks_free[nodes[i]->op] && t->tasks_free[nodes[i]->op](nodes[i]);
        if (n_tasks > *max_tasks) *max_tasks = n_tasks;
        const size_t work = node_work_size(t, nodes[i], n_tasks);
        if (work > work_needed) work_needed = work;
    }
    if (work_given < work_needed) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "CPU backend: the work buffer has %zu bytes, the graph needs %zu", work_given,
                        work_needed);
        return false;
    }
    return true;
}

/* A failed node's reason, set (and logged) once on the caller's thread; a kernel that gave
 * none gets a generic one. */
static void report_failure(struct graph_job *job) {
    const enum ggml_status st = (enum ggml_status)atomic_load(&job->status);
    const int i = atomic_load(&job->failed_node);
    if (st == GGML_STATUS_SUCCESS || st == GGML_STATUS_ABORTED || i < 0) return;
    if (job->error.task != INT_MAX) {
        ggmlc_set_error(job->error.status, "%s", job->error.message);
        return;
    }
    const enum ggmlc_status why = st == GGML_STATUS_ALLOC_FAILED ? GGMLC_ERR_NOMEM : GGMLC_ERR_BACKEND;
    ggmlc_set_error(why, "CPU backend: node %d '%s' (%s) failed", i, job->nodes[i]->name,
                    ggml_op_desc(job->nodes[i]));
}

enum ggml_status cpu_graph_compute(struct ggml_cgraph *graph, const struct cpu_compute_params *params) {
    struct graph_job job = {
        .nodes = ggml_graph_nodes(graph),
        .n_nodes = ggml_graph_n_nodes(graph),
        .table = cpu_op_table(),
        .params = params,
    };
    const int nth = params->n_threads < 1 ? 1 : params->n_threads;
    int max_tasks;
    job.state = calloc(job.n_nodes > 0 ? (size_t)job.n_nodes : 1, sizeof *job.state);
    if (!job.state) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "CPU backend: no memory for the state of %d nodes", job.n_nodes);
        return GGML_STATUS_ALLOC_FAILED;
    }
    if (!check_graph(job.nodes, job.n_nodes, nth, job.state, &max_tasks, params->wdata ? params->wsize : 0)) {
        free(job.state);
        return GGML_STATUS_FAILED;
    }
    atomic_init(&job.stop, false);
    atomic_init(&job.status, GGML_STATUS_SUCCESS);
    atomic_init(&job.failed_node, -1);
    pthread_mutex_init(&job.error.lock, NULL);
    job.error.task = INT_MAX;
    cpu_counter_init(&job.complete);
    cpu_barrier_init(&job.task_barrier);
    job.profile = cpu_profile_enabled();
    if (job.profile) job.mark = cpu_profile_now();
    /* A graph of single-task nodes runs on the caller alone.  Otherwise every node that
     * depends on the thread count asks for all nth threads, so max_tasks is then nth. */
    cpu_pool_run(params->pool, max_tasks, graph_thread, &job);
    cpu_counter_destroy(&job.complete);
    cpu_barrier_destroy(&job.task_barrier);
    free(job.state);
    report_failure(&job);
    pthread_mutex_destroy(&job.error.lock);
    return (enum ggml_status)atomic_load(&job.status);
}
