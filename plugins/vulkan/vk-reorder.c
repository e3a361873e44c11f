/*
 * vk-reorder.c - the nodes of a split put in an order whose dispatches share barriers, before
 * the scheduler's allocator places them (ggmlc_backend_iface.order_nodes).
 *
 * vk-order.c lets dispatches that touch different bytes share a barrier, but once the graph
 * allocator has placed a graph, memory it hands from a dead tensor to the next one chains
 * nodes that were independent: a llama layer's K product, its rope and its store into the
 * cache, then the V product in the K product's memory, then the Q product over both.  Taken
 * before placement, in the order of their dependencies, the Q, K and V products come one after
 * the other, are all alive at once and get memory of their own, and the three share a barrier.
 *
 * A node depends on an earlier one when it reads it (a source, through views too), or when the
 * two touch the same bytes of one tensor's storage and one of them writes them (a set_rows
 * into the KV cache and the attention reading a view of it; an in-place op over what an earlier
 * node reads).  Before placement, bytes are known as (storage tensor, offset in it): two nodes of
 * different storage touch the same bytes only when both are placed already and overlap.  Each
 * node gets a level, one more than the highest of what it depends on, and the nodes go out level
 * by level, in graph order within a level.  A node that a fused kernel takes together with the
 * computing node after it in graph order (vk-fuse.c) takes that node along (and the views in
 * between) when they depend on nothing left behind, so that the pair stays adjacent.  Ops that write more than their result (optimizer steps,
 * custom ops) keep their place with everything before and after them.  GGMLC_VK_REORDER=0 keeps
 * the graph's order; splits of more than VK_REORDER_MAX nodes are kept as they are.
 *
 * llama.cpp pins some nodes to a backend each token, which makes the scheduler plan every graph
 * anew: so the dependencies are found through hash tables (the accesses to each storage kept
 * together, a read compared only with the writes), not by comparing every pair of nodes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vk-impl.h"

#define VK_REORDER_MAX 8192

/* Ops that write memory besides their result, or whose effects are not known. */
static bool writes_elsewhere(enum ggml_op op) {
    switch (op) {
    case GGML_OP_OPT_STEP_ADAMW:
    case GGML_OP_OPT_STEP_SGD:
    case GGML_OP_MAP_CUSTOM1:
    case GGML_OP_MAP_CUSTOM2:
    case GGML_OP_MAP_CUSTOM3:
    case GGML_OP_CUSTOM: return true;
    default: return op >= GGML_OP_COUNT;
    }
}

/* A node that writes into another tensor's memory (set_rows into a cache, an in-place op): it
 * allocates nothing, and it is often the last reader of a tensor whose memory the allocator then
 * hands to the next node.  Such nodes go last in their level, so that the nodes of the level that
 * do allocate get memory that no node of the level still reads. */
static bool writes_into_storage(const struct ggml_tensor *node) {
    return node->view_src && !ggmlc_op_is_view(node->op);
}

/* ------------------------------------------------------- pointer tables */

struct slot {
    const void *key;
    int value, value2;
};

struct table {
    struct slot *slots;
    size_t mask;
};

static bool table_init(struct table *t, size_t entries) {
    size_t size = 16;
    while (size < 2 * entries) size *= 2;
    t->slots = calloc(size, sizeof *t->slots);
    t->mask = size - 1;
    return t->slots != NULL;
}

/* The slot of key: its own, or the empty one where it goes. */
static struct slot *table_slot(const struct table *t, const void *key) {
    size_t h = (size_t)(((uintptr_t)key >> 4) * 0x9E3779B97F4A7C15ull >> 17) & t->mask;
    while (t->slots[h].key && t->slots[h].key != key) h = (h + 1) & t->mask;
    return &t->slots[h];
}

/* ------------------------------------------------------------ dependencies */

/* One node's read or write of bytes [begin, end) of a storage, chained with the storage's other
 * reads or writes. */
struct access {
    int node, next;
    uintptr_t begin, end;
};

struct reorder {
    const struct vk_device *d;
    struct ggml_tensor **nodes, **out;
    int n, n_out;
    int *level, *dep_start, *deps, n_deps, cap_deps;
    bool *done;
    struct access *acc;
    int n_acc;
    struct table storages; /* storage key -> its last write (value) and last read (value2), + 1 */
    struct table index;    /* node -> its index + 1 */
};

static bool add_dep(struct reorder *r, int j, int i) {
    if (r->n_deps == r->cap_deps) {
        const int cap = r->cap_deps ? 2 * r->cap_deps : 4 * r->n + 16;
        int *grown = realloc(r->deps, (size_t)cap * sizeof *grown);
        if (!grown) return false;
        r->deps = grown;
        r->cap_deps = cap;
    }
    r->deps[r->n_deps++] = i;
    /* a view computes nothing: it and what reads it come in the level after what it views */
    const int after = r->level[i] + !ggmlc_op_is_view(r->nodes[i]->op);
    if (after > r->level[j]) r->level[j] = after;
    return true;
}

/* The bytes t names: keyed by its buffer with absolute addresses once its storage is placed (two
 * tensors of one buffer may overlap), else by its storage tensor with offsets in it. */
static void bytes_of(const struct ggml_tensor *t, const void **key, uintptr_t *begin, uintptr_t *end) {
    const struct ggml_tensor *storage = t->view_src ? t->view_src : t;
    const size_t offs = t->view_src ? t->view_offs : 0;
    *key = storage->data && storage->buffer ? (const void *)storage->buffer : (const void *)storage;
    *begin = (storage->data ? (uintptr_t)storage->data : 0) + offs;
    *end = *begin + ggml_nbytes(t);
}

/* Node j's dependencies on the earlier accesses in chain (from access a - 1 on) that overlap [begin, end). */
static bool chain_deps(struct reorder *r, int j, int a, uintptr_t begin, uintptr_t end) {
    for (a--; a >= 0; a = r->acc[a].next - 1) {
        const struct access *e = &r->acc[a];
        if (e->node != j && e->begin < end && begin < e->end && !add_dep(r, j, e->node)) return false;
    }
    return true;
}

/* Node j's dependencies on the earlier accesses that conflict with its access of t's bytes: a
 * read after the writes, a write after the writes and the reads. */
static bool conflicts(struct reorder *r, int j, const struct ggml_tensor *t, bool write) {
    const void *key;
    uintptr_t begin, end;
    bytes_of(t, &key, &begin, &end);
    const struct slot *s = table_slot(&r->storages, key);
    if (!s->key) return true;
    return chain_deps(r, j, s->value, begin, end) && (!write || chain_deps(r, j, s->value2, begin, end));
}

static void note_access(struct reorder *r, int j, const struct ggml_tensor *t, bool write) {
    const void *key;
    uintptr_t begin, end;
    bytes_of(t, &key, &begin, &end);
    struct slot *s = table_slot(&r->storages, key);
    int *last = write ? &s->value : &s->value2;
    if (!s->key) s->value = s->value2 = 0;
    s->key = key;
    r->acc[r->n_acc] = (struct access){.node = j, .begin = begin, .end = end, .next = *last};
    *last = ++r->n_acc;
}

/* Node j's dependencies (see the top of the file) and its level: one more than the highest
 * of the computing nodes it depends on, the same as the views'. */
static bool find_deps(struct reorder *r, int j, int *fence) {
    const struct ggml_tensor *node = r->nodes[j];
    r->level[j] = 0;
    r->dep_start[j] = r->n_deps;
    if (writes_elsewhere(node->op)) { /* a fence: after everything since the last one, and that one */
        for (int i = *fence >= 0 ? *fence : 0; i < j; i++)
            if (!add_dep(r, j, i)) return false;
        *fence = j;
    } else if (*fence >= 0 && !add_dep(r, j, *fence)) {
        return false;
    }
    const bool view = ggmlc_op_is_view(node->op); /* reads and writes no bytes itself */
    for (int s = 0; s < GGML_MAX_SRC; s++) {
        const struct ggml_tensor *src = node->src[s];
        if (!src) continue;
        const struct slot *at = table_slot(&r->index, src);
        if (at->key && !add_dep(r, j, at->value - 1)) return false;
        if (!view && !conflicts(r, j, src, false)) return false;
    }
    if (view) return true;
    if (!conflicts(r, j, node, true)) return false;
    for (int s = 0; s < GGML_MAX_SRC; s++)
        if (node->src[s]) note_access(r, j, node->src[s], false);
    note_access(r, j, node, true);
    return true;
}

/* ------------------------------------------------------------------ order */

/* Whether node j depends only on nodes emitted already or on nodes [from, j), emitted just before it. */
static bool ready_after(const struct reorder *r, int j, int from) {
    for (int k = r->dep_start[j]; k < r->dep_start[j + 1]; k++)
        if (r->deps[k] < from && !r->done[r->deps[k]]) return false;
    return true;
}

static void emit(struct reorder *r, int i) {
    r->done[i] = true;
    r->out[r->n_out++] = r->nodes[i];
}

/* Emit node i, and when the computing node after it in graph order is its partner in a fused
 * kernel, that node and the views between them, if they depend on nothing left behind. */
static void emit_with_partner(struct reorder *r, int i) {
    emit(r, i);
    int j = i + 1;
    while (j < r->n && ggmlc_op_is_view(r->nodes[j]->op)) j++;
    if (j == r->n || r->done[j] || !vk_fuse_fits(r->d, r->nodes[i], r->nodes[j])) return;
    for (int k = i + 1; k <= j; k++)
        if (r->done[k] || !ready_after(r, k, i + 1)) return;
    for (int k = i + 1; k <= j; k++) emit(r, k);
}

static bool order_levels(struct reorder *r) {
    int top = 0, fence = -1;
    for (int j = 0; j < r->n; j++) {
        if (!find_deps(r, j, &fence)) return false;
        table_slot(&r->index, r->nodes[j])->key = r->nodes[j];
        table_slot(&r->index, r->nodes[j])->value = j + 1;
        if (r->level[j] > top) top = r->level[j];
    }
    r->dep_start[r->n] = r->n_deps;
    /* the nodes by level, in graph order (a counting sort), into by_level */
    int *first = calloc((size_t)top + 2, sizeof *first), *by_level = malloc((size_t)r->n * sizeof *by_level);
    if (first && by_level) {
        for (int j = 0; j < r->n; j++) first[r->level[j] + 1]++;
        for (int l = 0; l <= top; l++) first[l + 1] += first[l];
        for (int j = 0; j < r->n; j++) by_level[first[r->level[j]]++] = j; /* first[l]: now the end of level l */
        for (int l = 0, begin = 0; l <= top; begin = first[l++])
            for (int pass = 0; pass < 2; pass++)
                for (int k = begin; k < first[l]; k++) {
                    const int j = by_level[k];
                    /* all it depends on is of lower levels, or a view of this level before it */
                    if (!r->done[j] && writes_into_storage(r->nodes[j]) == (pass == 1) && ready_after(r, j, j))
                        emit_with_partner(r, j);
                }
    }
    free(first);
    free(by_level);
    return r->n_out == r->n;
}

void vk_order_nodes(ggml_backend_t backend, struct ggml_tensor **nodes, int n_nodes) {
    if (vk_tuning()->reorder_off || n_nodes < 3 || n_nodes > VK_REORDER_MAX) return;
    const size_t n = (size_t)n_nodes;
    struct reorder r = {.d = ggmlc_backend_context(backend), .nodes = nodes, .n = n_nodes};
    r.out = malloc(n * sizeof *r.out);
    r.level = malloc(n * sizeof *r.level);
    r.dep_start = malloc((n + 1) * sizeof *r.dep_start);
    r.done = calloc(n, sizeof *r.done);
    r.acc = malloc(n * (GGML_MAX_SRC + 1) * sizeof *r.acc);
    const bool tables = table_init(&r.storages, n * (GGML_MAX_SRC + 1)) && table_init(&r.index, n);
    /* without memory: the graph's own order */
    if (tables && r.out && r.level && r.dep_start && r.done && r.acc && order_levels(&r))
        memcpy(nodes, r.out, n * sizeof *nodes);
    free(r.out);
    free(r.level);
    free(r.dep_start);
    free(r.done);
    free(r.acc);
    free(r.deps);
    free(r.storages.slots);
    free(r.index.slots);
}
