/*
 * graph-alloc.c - the graph allocator: places every unallocated tensor of a
 * graph in one compute buffer per buffer type, reusing memory by liveness.
 *
 * Planning walks the nodes in order.  Leafs, graph inputs, outputs and
 * parameters get memory that is never reused during the graph (the user
 * writes inputs before computing and reads outputs after).  Every other
 * tensor's memory returns to a free list after its last consumer and is
 * reused by later nodes (best fit, adjacent free blocks merged).  A node
 * whose operator may overwrite src[0] (or either operand of an elementwise
 * add, sub, mul, div) takes over that source's memory when this node is its
 * last consumer and the layouts are identical; a source that is a view at the
 * start of its storage hands over the storage when nothing else holds it.
 * Views own no memory: they keep their storage alive until their own last
 * consumer.
 *
 * Planning works on offsets only; buffers are (re)allocated afterwards with
 * the planned peak size, so a graph needing more memory than the last one
 * grows the buffer and a smaller one reuses it.
 */
#include <stdlib.h>

#include "backend-impl.h"
#include "graph-alloc-impl.h"

/* --------------------------------------------------------- free list */

struct free_block {
    size_t offset, size;
};

/* Offsets in one buffer: free blocks sorted by offset, none touching `top`. */
struct arena {
    struct free_block *blocks;
    int n_blocks, cap;
    size_t top;  /* end of the highest block in use */
    size_t peak; /* highest top so far: the buffer size this plan needs */
};

static size_t arena_alloc(struct arena *a, size_t size) {
    int best = -1;
    for (int i = 0; i < a->n_blocks; i++) {
        if (a->blocks[i].size >= size && (best < 0 || a->blocks[i].size < a->blocks[best].size)) best = i;
    }
    if (best < 0) {
        const size_t offset = a->top;
        a->top += size;
        if (a->top > a->peak) a->peak = a->top;
        return offset;
    }
    struct free_block *b = &a->blocks[best];
    const size_t offset = b->offset;
    b->offset += size;
    b->size -= size;
    if (b->size == 0) {
        memmove(b, b + 1, (size_t)(a->n_blocks - best - 1) * sizeof *b);
        a->n_blocks--;
    }
    return offset;
}

static bool arena_free(struct arena *a, size_t offset, size_t size) {
    if (offset + size == a->top) { /* give it back to the top, with a free block just below */
        a->top = offset;
        struct free_block *last = a->n_blocks ? &a->blocks[a->n_blocks - 1] : NULL;
        if (last && last->offset + last->size == a->top) {
            a->top = last->offset;
            a->n_blocks--;
        }
        return true;
    }
    int i = 0;
    while (i < a->n_blocks && a->blocks[i].offset < offset) i++;
    struct free_block *prev = i > 0 ? &a->blocks[i - 1] : NULL;
    struct free_block *next = i < a->n_blocks ? &a->blocks[i] : NULL;
    const bool join_prev = prev && prev->offset + prev->size == offset;
    const bool join_next = next && offset + size == next->offset;
    if (join_prev && join_next) {
        prev->size += size + next->size;
        memmove(next, next + 1, (size_t)(a->n_blocks - i - 1) * sizeof *next);
        a->n_blocks--;
    } else if (join_prev) {
        prev->size += size;
    } else if (join_next) {
        next->offset = offset;
        next->size += size;
    } else {
        if (a->n_blocks == a->cap) {
            const int cap = a->cap ? 2 * a->cap : 16;
            struct free_block *grown = realloc(a->blocks, (size_t)cap * sizeof *grown);
            if (!grown) return false;
            a->blocks = grown;
            a->cap = cap;
        }
        memmove(&a->blocks[i + 1], &a->blocks[i], (size_t)(a->n_blocks - i) * sizeof *a->blocks);
        a->blocks[i] = (struct free_block){offset, size};
        a->n_blocks++;
    }
    return true;
}

/* ------------------------------------------------------ tensor states */

struct tensor_state {
    int    buffer_id;
    size_t offset, size;
    int    n_children; /* consumers not yet computed */
    int    n_views;    /* views of this tensor not yet done with */
    bool   noted;      /* seen while counting consumers */
    bool   assigned;   /* buffer_id is set */
    bool   owned;      /* the allocator places it (no data, not a view) */
    bool   planned;    /* has an offset */
    bool   pinned;     /* never freed during the graph */
    bool   released;   /* its memory went back to the free list or to an in-place node */
};

/* Where the last allocated graph's leafs, then nodes, went: offsets[i] in buffer ids[i]
 * (-1: not placed by this allocator), so that the same graph is placed again without planning. */
struct replay {
    const struct ggml_cgraph *graph; /* NULL: nothing to replay */
    int n_leafs, n_nodes, cap;
    int *ids;
    size_t *offsets;
};

struct ggml_gallocr {
    int n_buffers;
    ggml_backend_buffer_type_t *bufts;
    ggml_backend_buffer_t *buffers; /* per arena: ids sharing a type share the buffer */
    int *arena_of;                  /* buffer id -> the first id with the same type */
    struct arena *arenas;
    struct ggml_hash_set hash;
    struct tensor_state *states;    /* per hash slot */
    int *node_ids, *leaf_ids;       /* of the last reserve_n, for alloc_graph */
    int n_node_ids, n_leaf_ids;
    bool failed;                    /* the current plan ran out of host memory */
    bool outside;                   /* the current plan placed sources outside the graph's lists */
    struct replay replay;           /* the last alloc_graph_n's placement, for alloc_again */
};

/* t's state; a tensor new to this plan starts from a zeroed one (states are reset here, slot
 * by slot, rather than all of them for every graph). */
static struct tensor_state *state_of(ggml_gallocr_t g, const struct ggml_tensor *t) {
    bool fresh;
    const size_t slot = ggmlc__hash_claim(&g->hash, (struct ggml_tensor *)t, &fresh);
    if (slot == GGML_HASHSET_FULL) abort(); /* sized for every tensor of the graph: a bug */
    if (fresh) g->states[slot] = (struct tensor_state){0};
    return &g->states[slot];
}

static bool is_mine(ggml_gallocr_t g, ggml_backend_buffer_t buffer) {
    for (int i = 0; buffer && i < g->n_buffers; i++) {
        if (g->buffers[i] == buffer) return true;
    }
    return false;
}

bool ggmlc__gallocr_owns_buffer(ggml_gallocr_t g, ggml_backend_buffer_t buffer) { return is_mine(g, buffer); }

/* -------------------------------------------------------- construction */

ggml_gallocr_t ggml_gallocr_new_n(ggml_backend_buffer_type_t *bufts, int n_bufs) {
    if (!bufts || n_bufs <= 0) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_gallocr_new_n: no buffer types");
        return NULL;
    }
    ggml_gallocr_t g = calloc(1, sizeof *g);
    if (!g) goto nomem;
    g->n_buffers = n_bufs;
    g->bufts = calloc((size_t)n_bufs, sizeof *g->bufts);
    g->buffers = calloc((size_t)n_bufs, sizeof *g->buffers);
    g->arena_of = calloc((size_t)n_bufs, sizeof *g->arena_of);
    g->arenas = calloc((size_t)n_bufs, sizeof *g->arenas);
    if (!g->bufts || !g->buffers || !g->arena_of || !g->arenas) goto nomem;
    for (int i = 0; i < n_bufs; i++) {
        if (!bufts[i]) {
            ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_gallocr_new_n: buffer type %d is NULL", i);
            ggml_gallocr_free(g);
            return NULL;
        }
        g->bufts[i] = bufts[i];
        g->arena_of[i] = i;
        for (int j = 0; j < i; j++) {
            if (bufts[j] == bufts[i]) {
                g->arena_of[i] = g->arena_of[j];
                break;
            }
        }
    }
    return g;
nomem:
    ggml_gallocr_free(g);
    ggmlc_set_error(GGMLC_ERR_NOMEM, "ggml_gallocr_new_n: out of memory");
    return NULL;
}

ggml_gallocr_t ggml_gallocr_new(ggml_backend_buffer_type_t buft) { return ggml_gallocr_new_n(&buft, 1); }

void ggml_gallocr_free(ggml_gallocr_t g) {
    if (!g) return;
    for (int i = 0; g->buffers && g->arena_of && i < g->n_buffers; i++) {
        if (g->arena_of[i] == i) ggml_backend_buffer_free(g->buffers[i]);
    }
    for (int i = 0; g->arenas && i < g->n_buffers; i++) free(g->arenas[i].blocks);
    ggmlc__hash_set_free(&g->hash);
    free(g->states);
    free(g->replay.ids);
    free(g->replay.offsets);
    free(g->node_ids);
    free(g->leaf_ids);
    free(g->bufts);
    free(g->buffers);
    free(g->arena_of);
    free(g->arenas);
    free(g);
}

/* ------------------------------------------------------------ planning */

static size_t alloc_size(ggml_gallocr_t g, int id, const struct ggml_tensor *t) {
    const size_t align = ggml_backend_buft_get_alignment(g->bufts[id]);
    size_t size = ggml_backend_buft_get_alloc_size(g->bufts[id], t);
    size = (size + align - 1) / align * align;
    return size ? size : align; /* empty tensors still get a distinct, valid address */
}

static void place(ggml_gallocr_t g, struct tensor_state *st, const struct ggml_tensor *t, int consumer_id) {
    if (!st->assigned) {
        st->buffer_id = consumer_id;
        st->assigned = true;
    }
    st->size = alloc_size(g, st->buffer_id, t);
    st->offset = arena_alloc(&g->arenas[g->arena_of[st->buffer_id]], st->size);
    st->planned = true;
}

static void free_memory(ggml_gallocr_t g, struct tensor_state *st) {
    if (!st->owned || !st->planned || st->pinned || st->released) return;
    if (!arena_free(&g->arenas[g->arena_of[st->buffer_id]], st->offset, st->size)) g->failed = true;
    st->released = true;
}

/* t's last consumer is done: free it, or, for a view, drop its hold on its storage. */
static void release(ggml_gallocr_t g, const struct ggml_tensor *t) {
    if (state_of(g, t)->pinned) return; /* an output view keeps its storage to the end */
    if (t->view_src) {
        struct tensor_state *vs = state_of(g, t->view_src);
        if (--vs->n_views == 0 && vs->n_children == 0) free_memory(g, vs);
    } else {
        struct tensor_state *st = state_of(g, t);
        if (st->n_views == 0) free_memory(g, st);
    }
}

static bool same_layout(const struct ggml_tensor *a, const struct ggml_tensor *b) {
    if (a->type != b->type) return false;
    for (int d = 0; d < GGML_MAX_DIMS; d++) {
        if (a->ne[d] != b->ne[d] || a->nb[d] != b->nb[d]) return false;
    }
    return true;
}

/* Operators whose result may overwrite src[1] as well as src[0]: elementwise over two operands
 * of the result's layout, each element read before it is written, by the same task. */
static bool inplace_any_operand(enum ggml_op op) {
    return op == GGML_OP_ADD || op == GGML_OP_SUB || op == GGML_OP_MUL || op == GGML_OP_DIV;
}

/* The memory node may take over from its source s, or NULL: the source's own when node is its
 * last reader and no view of it is pending; for a view at the start of its storage, the
 * storage's, when that view is all that is left of it (as ggml's allocator does: a
 * reshaped or viewed intermediate is then overwritten too, not copied beside). */
static struct tensor_state *donor_of(ggml_gallocr_t g, const struct ggml_tensor *node, int s) {
    const struct ggml_tensor *parent = node->src[s];
    if (!parent || !same_layout(parent, node)) return NULL;
    struct tensor_state *ps = state_of(g, parent);
    if (ps->pinned || ps->n_children != 1 || ps->n_views != 0) return NULL;
    if (parent->view_src) {
        ps = state_of(g, parent->view_src);
        if (parent->view_offs != 0 || ps->n_views != 1 || ps->n_children != 0) return NULL;
    }
    return ps->owned && ps->planned && !ps->pinned && !ps->released ? ps : NULL;
}

/* Let node overwrite a source's memory when the operator allows it and nothing else needs it. */
static bool try_inplace(ggml_gallocr_t g, struct tensor_state *st, const struct ggml_tensor *node) {
    if (!ggmlc_op_get_info(node->op)->inplace_ok) return false;
    const int n_operands = inplace_any_operand(node->op) ? 2 : 1;
    for (int s = 0; s < n_operands; s++) {
        struct tensor_state *ds = donor_of(g, node, s);
        if (!ds) continue;
        if (!st->assigned) {
            st->buffer_id = ds->buffer_id;
            st->assigned = true;
        }
        if (ds->buffer_id != st->buffer_id || alloc_size(g, st->buffer_id, node) > ds->size)
            continue;
        st->offset = ds->offset;
        st->size = ds->size;
        st->planned = true;
        ds->released = true; /* handed over: the node frees it */
        return true;
    }
    return false;
}

static void note_tensor(ggml_gallocr_t g, const struct ggml_tensor *t, const int *ids, int index, bool pinned) {
    struct tensor_state *st = state_of(g, t);
    st->noted = true;
    st->owned = t->data == NULL && t->view_src == NULL;
    if (ids || g->n_buffers == 1) {
        st->buffer_id = ids ? ids[index] : 0;
        st->assigned = true;
    }
    if (pinned || (t->flags & (GGML_TENSOR_FLAG_INPUT | GGML_TENSOR_FLAG_OUTPUT | GGML_TENSOR_FLAG_PARAM))) st->pinned = true;
}

/* Forget placements in this allocator's buffers: they are re-planned now. */
static void unplace_graph(ggml_gallocr_t g, struct ggml_cgraph *graph) {
    for (int i = 0; i < graph->n_leafs + graph->n_nodes; i++) {
        struct ggml_tensor *t = i < graph->n_leafs ? graph->leafs[i] : graph->nodes[i - graph->n_leafs];
        for (int s = -1; s < GGML_MAX_SRC; s++) {
            struct ggml_tensor *x = s < 0 ? t : t->src[s];
            if (x && is_mine(g, x->buffer)) {
                x->buffer = NULL;
                x->data = NULL;
            }
        }
    }
}

static bool prepare_states(ggml_gallocr_t g, struct ggml_cgraph *graph) {
    const size_t want = (size_t)graph->n_leafs + (size_t)graph->n_nodes * (GGML_MAX_SRC + 1);
    if (g->hash.size < ggmlc__hash_size(want) || !g->states) {
        ggmlc__hash_set_free(&g->hash);
        free(g->states);
        g->hash = ggmlc__hash_set_new(want);
        g->states = g->hash.size ? calloc(g->hash.size, sizeof *g->states) : NULL;
        if (!g->states) {
            ggmlc_set_error(GGMLC_ERR_NOMEM, "ggml_gallocr: out of memory for a graph of %d nodes", graph->n_nodes);
            return false;
        }
    } else {
        ggmlc__hash_set_reset(&g->hash); /* state_of zeroes each state when its tensor comes back */
    }
    for (int i = 0; i < g->n_buffers; i++) {
        g->arenas[i].n_blocks = 0;
        g->arenas[i].top = g->arenas[i].peak = 0;
    }
    g->failed = g->outside = false;
    g->replay.graph = NULL; /* planning anew: the last placement is gone */
    return true;
}

static bool plan_graph(ggml_gallocr_t g, struct ggml_cgraph *graph, const int *node_ids, const int *leaf_ids) {
    unplace_graph(g, graph);
    if (!prepare_states(g, graph)) return false;
    for (int i = 0; i < graph->n_leafs; i++) note_tensor(g, graph->leafs[i], leaf_ids, i, true);
    for (int i = 0; i < graph->n_nodes; i++) {
        struct ggml_tensor *node = graph->nodes[i];
        note_tensor(g, node, node_ids, i, false);
        for (int s = 0; s < GGML_MAX_SRC; s++) {
            if (!node->src[s]) continue;
            struct tensor_state *ss = state_of(g, node->src[s]);
            if (!ss->noted) { /* a source outside the graph's lists */
                note_tensor(g, node->src[s], NULL, 0, false);
                g->outside = true;
            }
            ss->n_children++;
        }
        if (node->view_src) state_of(g, node->view_src)->n_views++;
    }
    /* memory that lives through the whole graph first: leafs, then inputs */
    for (int i = 0; i < graph->n_leafs; i++) {
        struct tensor_state *st = state_of(g, graph->leafs[i]);
        if (st->owned && !st->planned) place(g, st, graph->leafs[i], 0);
    }
    for (int i = 0; i < graph->n_nodes; i++) {
        struct tensor_state *st = state_of(g, graph->nodes[i]);
        if ((graph->nodes[i]->flags & GGML_TENSOR_FLAG_INPUT) && st->owned && !st->planned) place(g, st, graph->nodes[i], 0);
    }
    for (int i = 0; i < graph->n_nodes; i++) {
        struct ggml_tensor *node = graph->nodes[i];
        struct tensor_state *st = state_of(g, node);
        const int id = st->assigned ? st->buffer_id : 0;
        for (int s = 0; s < GGML_MAX_SRC; s++) {
            struct tensor_state *ss = node->src[s] ? state_of(g, node->src[s]) : NULL;
            if (ss && ss->owned && !ss->planned) place(g, ss, node->src[s], id);
        }
        if (st->owned && !st->planned && !try_inplace(g, st, node)) place(g, st, node, id);
        for (int s = 0; s < GGML_MAX_SRC; s++) {
            if (node->src[s] && --state_of(g, node->src[s])->n_children == 0) release(g, node->src[s]);
        }
    }
    if (g->failed) ggmlc_set_error(GGMLC_ERR_NOMEM, "ggml_gallocr: out of memory while planning");
    return !g->failed;
}

/* Grow each buffer to its planned peak (buffers never shrink). */
static bool ensure_buffers(ggml_gallocr_t g) {
    for (int i = 0; i < g->n_buffers; i++) {
        if (g->arena_of[i] != i) continue;
        const size_t need = g->arenas[i].peak;
        if (need == 0 || (g->buffers[i] && ggml_backend_buffer_get_size(g->buffers[i]) >= need)) continue;
        ggml_backend_buffer_free(g->buffers[i]);
        g->buffers[i] = ggml_backend_buft_alloc_buffer(g->bufts[i], need);
        for (int j = i + 1; j < g->n_buffers; j++) {
            if (g->arena_of[j] == i) g->buffers[j] = g->buffers[i];
        }
        if (!g->buffers[i]) {
            ggmlc_set_error(GGMLC_ERR_NOMEM, "ggml_gallocr: cannot allocate %zu bytes of %s", need, ggml_backend_buft_name(g->bufts[i]));
            return false;
        }
        ggml_backend_buffer_set_usage(g->buffers[i], GGML_BACKEND_BUFFER_USAGE_COMPUTE);
    }
    return true;
}

static bool apply_tensor(ggml_gallocr_t g, struct ggml_tensor *t) {
    if (t->data) return true;
    struct tensor_state *st = state_of(g, t);
    if (st->planned && st->owned) {
        ggml_backend_buffer_t buffer = g->buffers[st->buffer_id];
        char *base = ggml_backend_buffer_get_base(buffer);
        return ggml_backend_tensor_alloc(buffer, t, base + st->offset) == GGML_STATUS_SUCCESS;
    }
    return true;
}

static bool apply_view(struct ggml_tensor *t) {
    return !t->view_src || t->data || !t->view_src->data || ggml_backend_view_init(t) == GGML_STATUS_SUCCESS;
}

static bool apply_plan(ggml_gallocr_t g, struct ggml_cgraph *graph) {
    for (int pass = 0; pass < 2; pass++) { /* storage first, then the views into it */
        for (int i = 0; i < graph->n_leafs + graph->n_nodes; i++) {
            struct ggml_tensor *t = i < graph->n_leafs ? graph->leafs[i] : graph->nodes[i - graph->n_leafs];
            for (int s = -1; s < GGML_MAX_SRC; s++) {
                struct ggml_tensor *x = s < 0 ? t : t->src[s];
                if (x && !(pass == 0 ? apply_tensor(g, x) : apply_view(x))) return false;
            }
        }
    }
    return true;
}

/* ------------------------------------------------------------- public */

static bool remember_ids(int **dst, int *n_dst, const int *ids, int n) {
    free(*dst);
    *dst = NULL;
    *n_dst = 0;
    if (!ids) return true;
    *dst = malloc((size_t)(n ? n : 1) * sizeof **dst);
    if (!*dst) return false;
    memcpy(*dst, ids, (size_t)n * sizeof **dst);
    *n_dst = n;
    return true;
}

bool ggml_gallocr_reserve_n(ggml_gallocr_t g, struct ggml_cgraph *graph, const int *node_ids, const int *leaf_ids) {
    if (!g || !graph) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_gallocr_reserve_n: NULL allocator or graph");
        return false;
    }
    if (!remember_ids(&g->node_ids, &g->n_node_ids, node_ids, graph->n_nodes) ||
        !remember_ids(&g->leaf_ids, &g->n_leaf_ids, leaf_ids, graph->n_leafs)) {
        ggmlc_set_error(GGMLC_ERR_NOMEM, "ggml_gallocr_reserve_n: out of memory");
        return false;
    }
    /* no replay record: nothing is placed */
    return plan_graph(g, graph, node_ids, leaf_ids) && ensure_buffers(g);
}

void ggml_gallocr_reserve_n_size(ggml_gallocr_t g, struct ggml_cgraph *graph, const int *node_ids, const int *leaf_ids,
                                 size_t *sizes) {
    if (!g || !graph || !sizes) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_gallocr_reserve_n_size: NULL allocator, graph or sizes");
        return;
    }
    const bool ok = plan_graph(g, graph, node_ids, leaf_ids);
    for (int i = 0; i < g->n_buffers; i++) /* a shared buffer counts once, at its first id */
        sizes[i] = ok && g->arena_of[i] == i ? g->arenas[i].peak : 0;
}

bool ggml_gallocr_reserve(ggml_gallocr_t g, struct ggml_cgraph *graph) { return ggml_gallocr_reserve_n(g, graph, NULL, NULL); }

static struct ggml_tensor *listed_tensor(const struct ggml_cgraph *graph, int i) {
    return i < graph->n_leafs ? graph->leafs[i] : graph->nodes[i - graph->n_leafs];
}

/* Keep the placement of graph's listed tensors for alloc_again (not when sources outside the
 * lists were placed too: those would be missed; nor without memory: then never replayed). */
static void record_replay(ggml_gallocr_t g, struct ggml_cgraph *graph) {
    struct replay *r = &g->replay;
    const int n = graph->n_leafs + graph->n_nodes;
    r->graph = NULL;
    if (g->outside) return;
    if (n > r->cap) {
        int *ids = realloc(r->ids, (size_t)n * sizeof *ids);
        if (ids) r->ids = ids;
        size_t *offsets = ids ? realloc(r->offsets, (size_t)n * sizeof *offsets) : NULL;
        if (!offsets) return;
        r->offsets = offsets;
        r->cap = n;
    }
    for (int i = 0; i < n; i++) {
        const struct tensor_state *st = state_of(g, listed_tensor(graph, i));
        r->ids[i] = st->owned && st->planned ? st->buffer_id : -1;
        r->offsets[i] = st->offset;
    }
    r->graph = graph;
    r->n_leafs = graph->n_leafs;
    r->n_nodes = graph->n_nodes;
}

bool ggmlc__gallocr_alloc_graph_n(ggml_gallocr_t g, struct ggml_cgraph *graph, const int *node_ids, const int *leaf_ids) {
    const bool ok = plan_graph(g, graph, node_ids, leaf_ids) && ensure_buffers(g) &&
                    apply_plan(g, graph);
    if (ok) record_replay(g, graph);
    return ok;
}

bool ggmlc__gallocr_alloc_again(ggml_gallocr_t g, struct ggml_cgraph *graph) {
    if (!g || !graph) return false;
    const struct replay *r = &g->replay;
    if (r->graph != graph || r->n_leafs != graph->n_leafs || r->n_nodes != graph->n_nodes)
        return false;
    const int n = r->n_leafs + r->n_nodes;
    for (int i = 0; i < n; i++) { /* storage first, then the views into it */
        struct ggml_tensor *t = listed_tensor(graph, i);
        if (t->data || r->ids[i] < 0) continue;
        ggml_backend_buffer_t buffer = g->buffers[r->ids[i]];
        char *base = ggml_backend_buffer_get_base(buffer);
        const enum ggml_status st = ggml_backend_tensor_alloc(buffer, t, base + r->offsets[i]);
        if (st != GGML_STATUS_SUCCESS) return false;
    }
    for (int i = 0; i < n; i++)
        if (!apply_view(listed_tensor(graph, i))) return false;
    return true;
}

bool ggml_gallocr_alloc_graph(ggml_gallocr_t g, struct ggml_cgraph *graph) {
    if (!g || !graph) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_gallocr_alloc_graph: NULL allocator or graph");
        return false;
    }
    if (g->n_buffers == 1) return ggmlc__gallocr_alloc_graph_n(g, graph, NULL, NULL);
    /* several buffers: the choice per node comes from the last reserve_n */
    if (!g->node_ids || g->n_node_ids != graph->n_nodes || g->n_leaf_ids != graph->n_leafs) {
        ggmlc_set_error(GGMLC_ERR_INVALID_ARG, "ggml_gallocr_alloc_graph: with several buffers, call ggml_gallocr_reserve_n "
                        "with this graph's buffer ids first");
        return false;
    }
    return ggmlc__gallocr_alloc_graph_n(g, graph, g->node_ids, g->leaf_ids);
}

size_t ggml_gallocr_get_buffer_size(ggml_gallocr_t g, int buffer_id) {
    if (!g || buffer_id < 0 || buffer_id >= g->n_buffers) return 0;
    /* a buffer shared by several ids counts once, at its first id */
    if (g->arena_of[buffer_id] != buffer_id || !g->buffers[buffer_id]) return 0;
    return ggml_backend_buffer_get_size(g->buffers[buffer_id]);
}
