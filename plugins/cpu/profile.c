/*
 * profile.c - GGMLC_DEBUG=cpu-ops: the CPU graph walker's wall time per kind of
 * node, printed at exit.
 *
 * Thread 0 notes when each computed node is complete (the walker's count of
 * complete nodes, which every thread waits on before the next node), so a node's
 * time runs from the completion of the node before it to its own: the wall time
 * the graph spent on it, waiting for its slowest task included.  The time from the
 * walker's start to its first node (waking the threads) is a kind of its own.
 * Kinds are an operation, the types of its result and first operand (which tell
 * a quantized product from a float one) and whether the result is one row (a
 * decode step's matrix-vector products).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph.h"
#include "profile.h"

#define PROFILE_KINDS 128

struct profile_kind {
    const char *op;                /* ggml_op_desc, or "(threads start)" */
    enum ggml_type type, src_type; /* GGML_TYPE_COUNT: none (no node, no src[0]) */
    bool one_row;                  /* the result's ne[1] is 1 */
    double seconds;
    long long count;
};

static struct {
    pthread_mutex_t lock;
    struct profile_kind kinds[PROFILE_KINDS];
    int n_kinds;
    long long graphs;
    double total;
} profile = {.lock = PTHREAD_MUTEX_INITIALIZER};

static atomic_int profile_on = -1; /* -1: not looked up yet */

static int by_time(const void *a, const void *b) {
    const double x = ((const struct profile_kind *)a)->seconds,
                 y = ((const struct profile_kind *)b)->seconds;
    return x < y ? 1 : x > y ? -1 : 0;
}

static const char *type_name(enum ggml_type type) {
    return type == GGML_TYPE_COUNT ? "-" : ggml_type_name(type);
}

static void profile_print(void) {
    pthread_mutex_lock(&profile.lock);
    qsort(profile.kinds, (size_t)profile.n_kinds, sizeof profile.kinds[0], by_time);
    fprintf(
        stderr,
        "ggmlc cpu-ops: %lld graphs, %.3f ms in the walker (wall time per kind of node, most first)\n",
        profile.graphs, profile.total * 1e3);
    for (int i = 0; i < profile.n_kinds; i++) {
        const struct profile_kind *k = &profile.kinds[i];
        fprintf(stderr, "  %-22s %-6s %-6s %-6s %10.3f ms %5.1f%% %9lld nodes %8.2f us each\n",
                k->op, type_name(k->type), type_name(k->src_type), k->one_row ? "1 row" : "",
                k->seconds * 1e3, profile.total > 0 ? 100.0 * k->seconds / profile.total : 0.0,
                k->count, 1e6 * k->seconds / (double)k->count);
    }
    pthread_mutex_unlock(&profile.lock);
}

bool cpu_profile_enabled(void) {
    if (profile_on < 0) {
        pthread_mutex_lock(&profile.lock);
        if (profile_on < 0) {
            profile_on = ggmlc_debug_enabled("cpu-ops");
            if (profile_on) atexit(profile_print);
        }
        pthread_mutex_unlock(&profile.lock);
    }
    return profile_on;
}

double cpu_profile_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The kind of node, or of the walker's start (node NULL); NULL when the table is full. */
static struct profile_kind *kind_of(const struct ggml_tensor *node) {
    const char *op = node ? ggml_op_desc(node) : "(threads start)";
    const enum ggml_type type = node ? node->type : GGML_TYPE_COUNT;
    const enum ggml_type src_type = node && node->src[0] ? node->src[0]->type : GGML_TYPE_COUNT;
    const bool one_row = node && node->ne[1] == 1;
    for (int i = 0; i < profile.n_kinds; i++) {
        struct profile_kind *k = &profile.kinds[i];
        if (k->type == type && k->src_type == src_type && k->one_row == one_row &&
            strcmp(k->op, op) == 0)
            return k;
    }
    if (profile.n_kinds == PROFILE_KINDS) return NULL;
    struct profile_kind *k = &profile.kinds[profile.n_kinds++];
    *k = (struct profile_kind){op, type, src_type, one_row, 0.0, 0};
    return k;
}

void cpu_profile_add(const struct ggml_tensor *node, double seconds) {
    pthread_mutex_lock(&profile.lock);
    struct profile_kind *k = kind_of(node);
    if (k) k->seconds += seconds, k->count++;
    profile.total += seconds;
    if (!node) profile.graphs++;
    pthread_mutex_unlock(&profile.lock);
}
