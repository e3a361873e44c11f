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
 * the graph's order; splits of more than VK_REORDER_MAX nodes are kept as they are (the pairwise
 * dependencies cost n^2).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vk-impl.h"

#define VK_REORDER_MAX 2048

/* The bytes a tensor names: its storage tensor and where in it, and the absolute address when placed. */
struct bytes_of {
    const struct ggml_tensor *storage;
    size_t begin, end;
    uintptr_t at; /* 0: not placed yet */
};

static struct bytes_of bytes_of(const struct ggml_tensor *t) {
    const struct ggml_tensor *storage = t->view_src ? t->view_src : t;
    const size_t offs = t->view_src ? t->view_offs : 0, n = ggml_nbytes(t);
    return (struct bytes_of){.storage = storage, .begin = offs, .end = offs + n, .at = (uintptr_t)t->data};
}

static bool same_bytes(const struct bytes_of *a, const struct bytes_of *b) {
    if (a->storage == b->storage) return a->begin < b->end && b->begin < a->end;
    return a->at && b->at && a->at < b->at + (b->end - b->begin) && b->at < a->at + (a->end - a->begin);
}

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

static bool reads_node(const struct ggml_tensor *node, const struct ggml_tensor *t) {
    for (int s = 0; s < GGML_MAX_SRC; s++)
        if (node->src[s] == t) return true;
    return false;
}

/* Whether a reads bytes that b writes (or the other way round), or both write the same bytes. */
static bool touch_conflict(const struct ggml_tensor *a, const struct ggml_tensor *b) {
    const struct bytes_of wa = bytes_of(a), wb = bytes_of(b);
    if (same_bytes(&wa, &wb)) return true;
    for (int s = 0; s < GGML_MAX_SRC; s++) {
        if (a->src[s]) {
            const struct bytes_of r = bytes_of(a->src[s]);
            if (same_bytes(&r, &wb)) return true;
        }
        if (b->src[s]) {
            const struct bytes_of r = bytes_of(b->src[s]);
            if (same_bytes(&r, &wa)) return true;
        }
    }
    return false;
}

/* Whether node j (later) must stay after node i. */
static bool depends(const struct ggml_tensor *i, const struct ggml_tensor *j) {
    if (reads_node(j, i)) return true;
    if (writes_elsewhere(i->op) || writes_elsewhere(j->op)) return true;
    if (ggmlc_op_is_view(i->op) || ggmlc_op_is_view(j->op)) return false; /* views touch no bytes themselves */
    return touch_conflict(i, j);
}

struct reorder {
    const struct vk_device *d;
    struct ggml_tensor **nodes, **out;
    int n, n_out;
    int *level;
    uint8_t *dep; /* dep[j * n + i]: node j depends on node i < j */
    bool *done;
};

/* Whether node j depends only on nodes emitted already or on nodes [from, j), emitted just before it. */
static bool ready_after(const struct reorder *r, int j, int from) {
    for (int i = 0; i < from; i++)
        if (r->dep[(size_t)j * r->n + i] && !r->done[i]) return false;
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

/* A computing node that writes into another tensor's memory (set_rows into a cache, an in-place
 * op): it allocates nothing, and it is often the last reader of a tensor whose memory the
 * allocator then hands to the next node.  Such nodes go last in their level, so that the nodes
 * of the level that do allocate get memory that no node of the level still reads. */
static bool writes_into_storage(const struct ggml_tensor *node) {
    return node->view_src && !ggmlc_op_is_view(node->op);
}

static void order_levels(struct reorder *r) {
    int top = 0;
    for (int j = 0; j < r->n; j++) {
        r->level[j] = 0;
        for (int i = 0; i < j; i++) {
            r->dep[(size_t)j * r->n + i] = depends(r->nodes[i], r->nodes[j]);
            if (r->dep[(size_t)j * r->n + i] && r->level[i] + 1 > r->level[j]) r->level[j] = r->level[i] + 1;
        }
        if (r->level[j] > top) top = r->level[j];
    }
    for (int l = 0; l <= top; l++)
        for (int pass = 0; pass < 2; pass++)
            for (int j = 0; j < r->n; j++)
                if (r->level[j] == l && !r->done[j] && writes_into_storage(r->nodes[j]) == (pass == 1))
                    emit_with_partner(r, j); /* all it depends on is of lower levels */
}

void vk_order_nodes(ggml_backend_t backend, struct ggml_tensor **nodes, int n_nodes) {
    if (vk_tuning()->reorder_off || n_nodes < 3 || n_nodes > VK_REORDER_MAX) return;
    struct reorder r = {.d = ggmlc_backend_context(backend), .nodes = nodes, .n = n_nodes};
    r.out = malloc((size_t)n_nodes * sizeof *r.out);
    r.level = malloc((size_t)n_nodes * sizeof *r.level);
    r.dep = calloc((size_t)n_nodes * (size_t)n_nodes, 1);
    r.done = calloc((size_t)n_nodes, sizeof *r.done);
    if (r.out && r.level && r.dep && r.done) { /* without memory: the graph's own order */
        order_levels(&r);
        if (r.n_out == n_nodes) memcpy(nodes, r.out, (size_t)n_nodes * sizeof *nodes);
    }
    free(r.out);
    free(r.level);
    free(r.dep);
    free(r.done);
}
